//! report.html: one self-contained file; plots are inlined as SVG.

use super::{Block, Doc};

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em}\
td.r{text-align:right;font-variant-numeric:tabular-nums}th{background:#f0f0f0}\
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}\
dt{font-weight:bold}dd{margin:0;word-break:break-word}figure{margin:1em 0}figure svg{max-width:100%;height:auto}\
figcaption{color:#555;font-size:90%}";

/// `svg_of(file)` returns the plot's SVG text (already redacted), if it exists.
pub fn render(doc: &Doc, svg_of: &dyn Fn(&str) -> Option<String>) -> String {
    let mut o = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        esc(&doc.title),
        esc(&doc.title)
    );
    if let Some(s) = &doc.subtitle {
        o += &format!("<p>{}</p>\n", esc(s));
    }
    for sec in &doc.sections {
        o += &format!("<h2>{}</h2>\n", esc(&sec.title));
        for b in &sec.blocks {
            match b {
                Block::Para(p) => o += &format!("<p>{}</p>\n", esc(p)),
                Block::Bullets(items) => {
                    o += "<ul>\n";
                    for it in items {
                        o += &format!("<li>{}</li>\n", esc(it));
                    }
                    o += "</ul>\n";
                }
                Block::KeyVals(kv) => {
                    o += "<dl>\n";
                    for (k, v) in kv {
                        o += &format!("<dt>{}</dt><dd>{}</dd>\n", esc(k), esc(v));
                    }
                    o += "</dl>\n";
                }
                Block::Pre(lines) => o += &format!("<pre>{}</pre>\n", esc(&lines.join("\n"))),
                Block::Table { head, rows, right } => {
                    o += "<table><tr>";
                    for h in head {
                        o += &format!("<th>{}</th>", esc(h));
                    }
                    o += "</tr>\n";
                    for r in rows {
                        o += "<tr>";
                        for (i, c) in r.iter().enumerate() {
                            let cls = if right.get(i).copied().unwrap_or(false) {
                                " class=\"r\""
                            } else {
                                ""
                            };
                            o += &format!("<td{cls}>{}</td>", esc(c));
                        }
                        o += "</tr>\n";
                    }
                    o += "</table>\n";
                }
                Block::Image { file, caption } => {
                    let body = match svg_of(file) {
                        Some(svg) => strip_xml_decl(&svg).to_string(),
                        None => format!("<p>(plot {} missing)</p>", esc(file)),
                    };
                    o += &format!(
                        "<figure>{body}<figcaption>{}</figcaption></figure>\n",
                        esc(caption)
                    );
                }
            }
        }
    }
    o += "</body></html>\n";
    o
}

fn strip_xml_decl(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}
