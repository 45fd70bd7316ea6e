//! A report as a small document model, rendered three ways: plain text of at most 80
//! columns (for mail to a kernel list), Markdown (bug trackers) and self-contained HTML.

pub mod html;
pub mod markdown;
pub mod text;

pub const WIDTH: usize = 80;

#[derive(Debug, Clone)]
pub enum Block {
    Para(String),
    KeyVals(Vec<(String, String)>),
    /// `right[i]`: column i is numeric and right-aligned.
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
        right: Vec<bool>,
    },
    /// Verbatim lines (trace evidence); wrapped only when wider than the page.
    Pre(Vec<String>),
    Bullets(Vec<String>),
    /// A plot written as `<file>.png` and `<file>.svg`, relative to the report.
    Image {
        file: String,
        caption: String,
    },
}

#[derive(Debug, Clone)]
pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, Default)]
pub struct Doc {
    pub title: String,
    pub subtitle: Option<String>,
    pub sections: Vec<Section>,
}

impl Doc {
    pub fn section(&mut self, title: &str, blocks: Vec<Block>) {
        if !blocks.is_empty() {
            self.sections.push(Section {
                title: title.to_string(),
                blocks,
            });
        }
    }
}

/// Greedy word wrap; words longer than the line are cut.
pub fn wrap(text: &str, width: usize, first_indent: usize, rest_indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = " ".repeat(first_indent);
    let mut cur_len = first_indent;
    let mut indent = first_indent;
    let mut empty = true;
    for word in text.split_whitespace() {
        let mut w: Vec<char> = word.chars().collect();
        loop {
            let room = width.saturating_sub(cur_len + usize::from(!empty));
            if w.len() <= room {
                if !empty {
                    cur.push(' ');
                    cur_len += 1;
                }
                cur.extend(w.iter());
                cur_len += w.len();
                empty = false;
                break;
            }
            if !empty {
                lines.push(std::mem::take(&mut cur));
                indent = rest_indent;
                cur = " ".repeat(indent);
                cur_len = indent;
                empty = true;
                continue;
            }
            // A word longer than a whole line: cut it.
            let take = width.saturating_sub(indent).max(1);
            let rest = w.split_off(take.min(w.len()));
            cur.extend(w.iter());
            lines.push(std::mem::take(&mut cur));
            indent = rest_indent;
            cur = " ".repeat(indent);
            cur_len = indent;
            w = rest;
            if w.is_empty() {
                break;
            }
        }
    }
    if !empty || lines.is_empty() {
        lines.push(cur);
    }
    lines
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_width_and_cuts_long_words() {
        let t = "aaa bbb ccc ddd";
        assert_eq!(wrap(t, 8, 0, 2), vec!["aaa bbb", "  ccc", "  ddd"]);
        let long = "x".repeat(25);
        let l = wrap(&long, 10, 2, 2);
        assert!(l.iter().all(|x| x.chars().count() <= 10), "{l:?}");
        assert_eq!(l.concat().replace(' ', ""), long);
        assert_eq!(wrap("", 10, 0, 0), vec![""]);
    }
}
