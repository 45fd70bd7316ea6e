//! report.md: the same report for a bug tracker; plots as image links.

use super::{Block, Doc};

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

pub fn render(doc: &Doc) -> String {
    let mut o = format!("# {}\n\n", doc.title);
    if let Some(s) = &doc.subtitle {
        o += &format!("{s}\n\n");
    }
    for sec in &doc.sections {
        o += &format!("## {}\n\n", sec.title);
        for b in &sec.blocks {
            match b {
                Block::Para(p) => o += &format!("{p}\n\n"),
                Block::Bullets(items) => {
                    for it in items {
                        o += &format!("- {it}\n");
                    }
                    o += "\n";
                }
                Block::KeyVals(kv) => {
                    for (k, v) in kv {
                        // Command lines and identifiers as code; prose as prose.
                        let code = ["command", "cmdline", "rig sha256", "release", "in force"]
                            .iter()
                            .any(|c| k == c)
                            && !v.contains('`');
                        if code {
                            o += &format!("- **{k}**: `{v}`\n");
                        } else {
                            o += &format!("- **{k}**: {v}\n");
                        }
                    }
                    o += "\n";
                }
                Block::Pre(lines) => {
                    o += "```\n";
                    for l in lines {
                        o += l;
                        o += "\n";
                    }
                    o += "```\n\n";
                }
                Block::Table { head, rows, right } => {
                    o += &format!(
                        "| {} |\n",
                        head.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")
                    );
                    o += &format!(
                        "|{}|\n",
                        (0..head.len())
                            .map(|i| if right.get(i).copied().unwrap_or(false) {
                                "---:"
                            } else {
                                "---"
                            })
                            .collect::<Vec<_>>()
                            .join("|")
                    );
                    for r in rows {
                        o += &format!(
                            "| {} |\n",
                            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
                        );
                    }
                    o += "\n";
                }
                Block::Image { file, caption } => o += &format!("![{caption}]({file}.png)\n\n"),
            }
        }
    }
    o
}
