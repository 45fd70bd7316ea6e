//! ARCHITECTURE.md stays true: every file or folder it names exists, and every function
//! it names beside a file (`path.rs` `name()`) is defined in that file.

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
