//! report.txt: at most 80 columns, no markup, ready to paste into a mail.

use super::{Block, Doc, WIDTH, wrap};

pub fn render(doc: &Doc) -> String {
    let mut out: Vec<String> = Vec::new();
    for l in wrap(&doc.title, WIDTH, 0, 0) {
        out.push(l);
    }
    out.push("=".repeat(doc.title.chars().count().min(WIDTH)));
    if let Some(s) = &doc.subtitle {
        out.extend(wrap(s, WIDTH, 0, 0));
    }
    for sec in &doc.sections {
        out.push(String::new());
        out.push(sec.title.clone());
        out.push("-".repeat(sec.title.chars().count().min(WIDTH)));
        for (i, b) in sec.blocks.iter().enumerate() {
            if i > 0 {
                out.push(String::new());
            }
            block(b, &mut out);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

fn block(b: &Block, out: &mut Vec<String>) {
    match b {
        Block::Para(p) => out.extend(wrap(p, WIDTH, 0, 0)),
        Block::Bullets(items) => {
            for it in items {
                let mut l = wrap(it, WIDTH, 2, 2);
                if let Some(f) = l.first_mut() {
                    f.replace_range(0..1, "-");
                }
                out.extend(l);
            }
        }
        Block::KeyVals(kv) => {
            let kw = kv
                .iter()
                .map(|(k, _)| k.chars().count())
                .max()
                .unwrap_or(0)
                .min(16);
            for (k, v) in kv {
                let klen = k.chars().count();
                if klen > kw {
                    out.push(k.clone());
                    out.extend(wrap(v, WIDTH, kw + 2, kw + 2));
                    continue;
                }
                let mut lines = wrap(v, WIDTH, kw + 2, kw + 2);
                let pad = format!("{k}{}", " ".repeat(kw + 2 - klen));
                if let Some(first) = lines.first_mut() {
                    *first = format!("{pad}{}", first.trim_start());
                }
                out.extend(lines);
            }
        }
        Block::Pre(lines) => {
            for l in lines {
                if l.chars().count() <= WIDTH {
                    out.push(l.clone());
                } else {
                    let lead = l.chars().take_while(|c| *c == ' ').count();
                    out.extend(wrap(l, WIDTH, lead, lead + 4));
                }
            }
        }
        Block::Table { head, rows, right } => table(head, rows, right, out),
        Block::Image { file, caption } => {
            out.extend(wrap(&format!("{file}.png: {caption}"), WIDTH, 0, 2));
        }
    }
}

/// Aligned columns when they fit in 80; otherwise one block per row.
pub fn table(head: &[String], rows: &[Vec<String>], right: &[bool], out: &mut Vec<String>) {
    let cols = head.len();
    let mut w = vec![0usize; cols];
    for r in std::iter::once(head).chain(rows.iter().map(|r| r.as_slice())) {
        for (i, c) in r.iter().enumerate().take(cols) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let total: usize = w.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
    if total <= WIDTH {
        let line = |r: &[String]| -> String {
            let mut s = String::new();
            for (i, c) in r.iter().enumerate().take(cols) {
                let pad = w[i] - c.chars().count();
                if right.get(i).copied().unwrap_or(false) {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
                if i + 1 < cols {
                    s.push_str("  ");
                }
            }
            s.trim_end().to_string()
        };
        out.push(line(head));
        for r in rows {
            out.push(line(r));
        }
        return;
    }
    // Stacked: "first column" line, then "head value" pairs wrapped under it.
    for (ri, r) in rows.iter().enumerate() {
        if ri > 0 {
            out.push(String::new());
        }
        out.extend(wrap(r.first().map_or("", |s| s.as_str()), WIDTH, 0, 2));
        let rest: Vec<String> = r
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, c)| !c.is_empty() && c.as_str() != "-")
            .map(|(i, c)| match head.get(i).map_or("", |h| h.as_str()) {
                "" => c.clone(),
                h => format!("{h}: {c}"),
            })
            .collect();
        out.extend(wrap(&rest.join(", "), WIDTH, 2, 4));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Section;

    #[test]
    fn every_line_fits_80_columns() {
        let long = "word ".repeat(60);
        let doc = Doc {
            title: "t".into(),
            subtitle: Some(long.clone()),
            sections: vec![Section {
                title: "s".into(),
                blocks: vec![
                    Block::Para(long.clone()),
                    Block::KeyVals(vec![
                        ("cmdline".into(), "k=v ".repeat(50)),
                        ("a very long key name here".into(), long.clone()),
                    ]),
                    Block::Pre(vec![format!("  {}", "x".repeat(200))]),
                    Block::Bullets(vec![long.clone()]),
                    Block::Table {
                        head: vec!["a".into(), "b".into()],
                        rows: vec![vec!["x".repeat(50), "y".repeat(50)]],
                        right: vec![false, true],
                    },
                ],
            }],
        };
        let t = render(&doc);
        for l in t.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} cols: {l}",
                l.chars().count()
            );
        }
        assert!(
            t.lines()
                .any(|l| l.starts_with("cmdline ") && l.ends_with("k=v")),
            "{t}"
        );
        assert!(t.contains("b: yyyy"));
    }

    #[test]
    fn narrow_tables_align() {
        let mut out = Vec::new();
        table(
            &["name".into(), "n".into()],
            &[
                vec!["a".into(), "8".into()],
                vec!["bbbbbb".into(), "16".into()],
            ],
            &[false, true],
            &mut out,
        );
        assert_eq!(out, vec!["name     n", "a        8", "bbbbbb  16"]);
    }
}
