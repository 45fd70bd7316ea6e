//! ARCHITECTURE.md stays true: every file or folder it names exists, and every function
//! it names beside a file (`path.rs` `name()`) is defined in that file. README.md stays
//! the five-minute page, and no relative link in it or in docs/ is broken.

use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The backticked spans of a text, in order.
fn spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn is_path(s: &str) -> bool {
    s.contains('/')
        && !s.contains(' ')
        && !s.contains('*')
        && !s.contains("NAME")
        && (s.ends_with(".rs") || s.ends_with(".md") || s.ends_with('/'))
}

#[test]
fn architecture_names_only_what_exists() {
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    // Paragraphs: a path applies to the function names after it until the next path.
    let mut paths = 0;
    let mut fns = 0;
    let mut missing = vec![];
    let sp = spans(&text);
    let mut current: Option<String> = None;
    for s in sp {
        if is_path(s) {
            paths += 1;
            if !repo().join(s).exists() {
                missing.push(format!("no such file or folder: {s}"));
            }
            current = s.ends_with(".rs").then(|| s.to_string());
        } else if let (Some(name), Some(file)) = (s.strip_suffix("()"), &current) {
            fns += 1;
            let code = std::fs::read_to_string(repo().join(file)).unwrap_or_default();
            if !code.contains(&format!("fn {name}(")) && !code.contains(&format!("fn {name}<")) {
                missing.push(format!("{file} has no fn {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md:\n{}",
        missing.join("\n")
    );
    // The page really names the flow (a guard against the parser above matching nothing).
    assert!(paths >= 40 && fns >= 15, "{paths} paths, {fns} functions");
}

#[test]
fn the_checker_finds_a_wrong_name() {
    let sp = spans("see `src/run.rs` `main()` and `src/nope.rs`");
    assert_eq!(sp, ["src/run.rs", "main()", "src/nope.rs"]);
    assert!(is_path("src/nope.rs") && !repo().join("src/nope.rs").exists());
    assert!(!is_path("results::run::RunDoc") && !is_path("src/audio/NAME/"));
}

/// The targets of a markdown text's links and images, `](target)`, in order: the text up
/// to the first `)`, space or quote (a title), with any `#anchor` cut off. Links outside
/// the repository (a scheme, `mailto:`) and links within the page (`#anchor` alone) are
/// left out; inside code blocks and spans `](` is code, not a link.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = vec![];
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: the odd pieces between backticks.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for piece in prose.split("](").skip(1) {
            let end = piece.find([')', ' ', '"']).unwrap_or(piece.len());
            let target = piece[..end].split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            out.push(target.to_string());
        }
    }
    out
}

/// The link targets of `file` (relative to the repository) that do not exist, each
/// resolved from the file's own folder.
fn broken_links(file: &str, text: &str) -> Vec<String> {
    let dir = repo().join(file).parent().unwrap().to_path_buf();
    link_targets(text)
        .into_iter()
        .filter(|t| !dir.join(t).exists())
        .map(|t| format!("{file}: no such file or folder: {t}"))
        .collect()
}

/// The pages a reader follows: README.md and every docs/*.md.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// README.md is the five-minute page (issue 26): under 300 lines, the rest in docs/;
/// and every relative link and image in README.md and docs/*.md points at a file or
/// folder that exists.
#[test]
fn readme_is_short_and_every_link_resolves() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines; move detail into docs/"
    );
    let pages = pages();
    assert!(pages.len() >= 5, "docs/ holds the rest: {pages:?}");
    let mut links = 0;
    let mut broken = vec![];
    for page in &pages {
        let text = std::fs::read_to_string(repo().join(page)).unwrap();
        links += link_targets(&text).len();
        broken.extend(broken_links(page, &text));
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    // A guard against the parser above matching nothing.
    assert!(links >= 20, "only {links} links found in {pages:?}");
}

#[test]
fn the_link_checker_finds_a_wrong_link() {
    let text = "see [the rigs](rigs/README.md#top), [gone](docs/nope.md), \
                ![plot](analysis/figures/nope.png), [web](https://example.org/x), \
                [here](#more) and `[code](not/a/link.md)`\n```\n[fenced](also/not.md)\n```\n";
    assert_eq!(
        link_targets(text),
        [
            "rigs/README.md",
            "docs/nope.md",
            "analysis/figures/nope.png"
        ]
    );
    assert_eq!(
        broken_links("README.md", text),
        [
            "README.md: no such file or folder: docs/nope.md",
            "README.md: no such file or folder: analysis/figures/nope.png"
        ]
    );
    // From docs/ a path is resolved from docs/: the same image needs `../`.
    let from_docs = "![timeline](analysis/figures/watch-jackd-dummy-timeline.png) \
                     ![timeline](../analysis/figures/watch-jackd-dummy-timeline.png)";
    assert_eq!(
        broken_links("docs/watch.md", from_docs),
        ["docs/watch.md: no such file or folder: analysis/figures/watch-jackd-dummy-timeline.png"]
    );
}

/// The rooms of src/ (a folder, or a file beside lib.rs), bottom first: a room names
/// (`crate::ROOM…`, `use crate::{ROOM, …}`) only rooms before it here. main.rs and
/// src/bin/ sit above them all; test code (`#[cfg(test)]` on, tests.rs) may name any.
/// Where new code goes is where its imports point down from (ARCHITECTURE.md).
const ROOMS: &[&str] = &[
    "sys",
    "exit",
    "rig",
    "engine",
    "output",
    "testkit",
    "audio",
    "knobs",
    "instruments",
    "options",
    "doctor",
    "sweep",
    "trials",
    "livefx",
    "kinds",
    "watch",
    "check",
    "guest",
    "bisect",
    "run",
    "calibrate",
    "cli",
    "rerun",
    "shell",
];

/// Every .rs file under `d`.
fn rs_files(d: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rs_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// Every (file, room it names) of src/'s rooms, outside test code and comments.
fn room_imports() -> Vec<(String, String, String)> {
    let src = repo().join("src");
    let files = rs_files(&src);
    let mut out = vec![];
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let room = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if ["bin", "main", "lib"].contains(&room.as_str()) || rel.ends_with("/tests.rs") {
            continue;
        }
        let code = production_code(&f);
        let mut named: Vec<String> = vec![];
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let name: String = item
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect();
                    named.push(name);
                }
            } else {
                named.push(
                    rest.chars()
                        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                        .collect(),
                );
            }
        }
        for n in named {
            // `note!` is output's macro, exported at the crate's root.
            let n = if n == "note" { "output".to_string() } else { n };
            if !n.is_empty() && n != room {
                out.push((format!("src/{rel}"), room.clone(), n));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A source file without its test code (from the first `#[cfg(test)]`) and comments.
fn production_code(f: &Path) -> String {
    let text = std::fs::read_to_string(f).unwrap();
    let code = text.split("#[cfg(test)]").next().unwrap();
    code.lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where `code` names a rig kind's variant (`Kind::Trials`, `rig::Kind::Livefx`, …):
/// the line numbers.
fn kind_variants_named(code: &str) -> Vec<usize> {
    let mut at = vec![];
    for (n, line) in code.lines().enumerate() {
        for (i, _) in line.match_indices("Kind::") {
            let before = line[..i].chars().next_back();
            let whole = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
            let rest = &line[i + "Kind::".len()..];
            if whole && (rest.starts_with("Trials") || rest.starts_with("Livefx")) {
                at.push(n + 1);
            }
        }
    }
    at
}

/// Issue 26: a rig kind is matched in one place, its registration (`src/kinds.rs`), and
/// named where rigs are parsed (`src/rig/`); everything else asks the plan's
/// `sweep::RigKind`. A `match rig.kind` or `== Kind::Livefx` anywhere else fails here
/// with its file and line.
#[test]
fn rig_kinds_are_matched_only_where_they_are_registered() {
    assert_eq!(
        kind_variants_named(
            "match k { Kind::Trials => 1, rig::Kind::Livefx => 2 }\nBackendKind::Jack"
        ),
        [1, 1]
    );
    assert!(kind_variants_named("BackendKind::Livefx; ThreadKind::Trials").is_empty());
    let src = repo().join("src");
    let files = rs_files(&src);
    let mut found = vec![];
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel == "kinds.rs" || rel.starts_with("rig/") || rel.ends_with("/tests.rs") {
            continue;
        }
        for n in kind_variants_named(&production_code(&f)) {
            found.push(format!("src/{rel}:{n}"));
        }
    }
    assert!(
        found.is_empty(),
        "rig kinds matched outside src/kinds.rs (ask the plan's `kind`, a sweep::RigKind, \
         instead): {found:?}"
    );
}

/// The imports of `imports` that run up `rooms`, or name a room it does not list.
fn upward(rooms: &[&str], imports: &[(String, String, String)]) -> Vec<(String, String)> {
    let floor = |r: &str| rooms.iter().position(|x| *x == r);
    let mut up = vec![];
    for (file, from, to) in imports {
        match (floor(from), floor(to)) {
            (Some(a), Some(b)) if b < a => {}
            _ => up.push((file.clone(), to.clone())),
        }
    }
    up
}

/// Issue 26: layers only point down. An import that runs up (or a room not placed in
/// `ROOMS`) fails here with its file and the room it names; so does a circle, which
/// always has one import running up.
#[test]
fn rooms_import_only_rooms_below_them() {
    let imports = room_imports();
    assert!(
        imports.len() > 100,
        "the scan found {} imports",
        imports.len()
    );
    let up: Vec<String> = upward(ROOMS, &imports)
        .iter()
        .map(|(f, r)| {
            let from = &imports.iter().find(|i| &i.0 == f).unwrap().1;
            format!("{f} (room {from}) names crate::{r}, which is not below it")
        })
        .collect();
    assert!(
        up.is_empty(),
        "imports that run up (move the code down, or place the room in ROOMS):\n{}",
        up.join("\n")
    );
}

#[test]
fn the_layer_check_finds_an_import_that_runs_up() {
    let imports = vec![
        (
            "src/rig/a.rs".to_string(),
            "rig".to_string(),
            "sys".to_string(),
        ),
        (
            "src/sys.rs".to_string(),
            "sys".to_string(),
            "rig".to_string(),
        ),
        (
            "src/new/b.rs".to_string(),
            "new".to_string(),
            "sys".to_string(),
        ),
    ];
    assert_eq!(
        upward(&["sys", "rig"], &imports),
        vec![
            ("src/sys.rs".to_string(), "rig".to_string()),
            ("src/new/b.rs".to_string(), "sys".to_string())
        ]
    );
}
