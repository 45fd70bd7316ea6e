//! `--patch FILE`s: read and hashed up front (a missing file is refused before
//! anything is unpacked), checked with `patch --dry-run` and applied in order; a patch
//! that does not apply is refused with the failing hunk's text.

use super::sha256_hex;
use results::kbuild::PatchInfo;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone)]
pub struct Patch {
    pub path: PathBuf,
    pub text: String,
    pub info: PatchInfo,
}

/// The patch's `Subject:` (git format-patch) with its "[PATCH …]" tag dropped.
fn subject(text: &str) -> Option<String> {
    let l = text
        .lines()
        .take_while(|l| !l.starts_with("diff ") && !l.starts_with("--- "))
        .find_map(|l| l.strip_prefix("Subject:"))?
        .trim();
    let l = match l.strip_prefix('[') {
        Some(r) => r.split_once(']').map_or(r, |x| x.1).trim(),
        None => l,
    };
    (!l.is_empty()).then(|| l.to_string())
}

pub fn read(p: &Path) -> Result<Patch, String> {
    let bytes =
        std::fs::read(p).map_err(|e| format!("--patch {}: cannot read it: {e}", p.display()))?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    if !text.lines().any(|l| l.starts_with("@@ ")) {
        return Err(format!(
            "--patch {}: no hunk (@@ line) in it: give a unified diff (diff -u, git format-patch)",
            p.display()
        ));
    }
    // patch(1) runs inside the kernel tree: a relative --patch must not be read from there.
    let path = std::fs::canonicalize(p)
        .map_err(|e| format!("--patch {}: cannot resolve it: {e}", p.display()))?;
    Ok(Patch {
        path,
        info: PatchInfo {
            file: p.display().to_string(),
            sha256: sha256_hex(&bytes),
            subject: subject(&text),
        },
        text,
    })
}

/// The text of hunk number `n` (1-based) of the patch's section for `file`.
pub fn hunk(patch: &str, file: &str, n: usize) -> Option<String> {
    let mut in_file = false;
    let mut count = 0;
    let mut out: Vec<&str> = vec![];
    for l in patch.lines() {
        if let Some(f) = l.strip_prefix("+++ ") {
            if count >= n && !out.is_empty() {
                break;
            }
            let f = f.split('\t').next().unwrap_or(f).trim();
            in_file = f == file || f.split_once('/').is_some_and(|(_, rest)| rest == file);
            continue;
        }
        if !in_file {
            continue;
        }
        if l.starts_with("@@") {
            count += 1;
            if count > n {
                break;
            }
        } else if l.starts_with("diff ") || l.starts_with("--- ") || l == "-- " {
            if count >= n {
                break;
            }
            continue;
        }
        if count == n {
            out.push(l);
        }
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

/// What `patch` said, turned into an error: each failing hunk with its text.
pub fn explain_failure(p: &Patch, output: &str, tree: &str) -> String {
    let mut msg = format!(
        "--patch {} does not apply to {tree}; nothing was built or booted.\n",
        p.path.display()
    );
    let mut file = String::new();
    let mut shown = 0;
    for l in output.lines() {
        if let Some(f) = l.strip_prefix("checking file ") {
            file = f.trim().to_string();
        } else if let Some(f) = l.strip_prefix("patching file ") {
            file = f.trim().to_string();
        }
        if l.contains("Reversed (or previously applied) patch detected") {
            msg.push_str(&format!(
                "{file}: the change is already there (reversed or previously applied patch)\n"
            ));
        }
        if l.starts_with("can't find file to patch") {
            msg.push_str(&format!("{l}\n"));
        }
        if let Some(rest) = l.strip_prefix("Hunk #") {
            let (num, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            if tail.starts_with("FAILED") {
                msg.push_str(&format!("{file}: hunk #{num} {tail}\n"));
                if shown < 3
                    && let Some(h) = num.parse().ok().and_then(|n| hunk(&p.text, &file, n))
                {
                    msg.push_str(&h);
                    msg.push('\n');
                    shown += 1;
                }
            }
        }
    }
    msg.push_str(&format!("patch said:\n{}", output.trim_end()));
    msg
}

fn run(p: &Patch, tree: &Path, dry: bool) -> std::io::Result<std::process::Output> {
    let mut c = Command::new("patch");
    // --fuzz=0: a hunk whose lines moved still applies, one whose context changed does
    // not (as with git apply): fuzz could put the change in the wrong place unseen.
    c.args([
        "-p1",
        "--forward",
        "--batch",
        "--fuzz=0",
        "--no-backup-if-mismatch",
        "-r",
        "-",
    ]);
    if dry {
        c.arg("--dry-run");
    }
    // The text read here, given on stdin: patch may run as the tree's owner
    // (`worktree::as_owner_of`), who need not be able to read the file.
    c.current_dir(tree)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    super::worktree::as_owner_of(&mut c, tree);
    let mut child = c.spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let text = p.text.clone();
    // Written from a thread: patch may answer before it has read it all.
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(text.as_bytes());
    });
    let o = child.wait_with_output();
    let _ = writer.join();
    o
}

/// `patch --dry-run` of `p` in `tree` (which it leaves as it is).
pub fn check(
    p: &Patch,
    tree: &Path,
    label: &str,
    log: &mut dyn std::io::Write,
) -> Result<(), String> {
    let o =
        run(p, tree, true).map_err(|e| format!("cannot run patch (apt-get install patch): {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = writeln!(
        log,
        "$ patch -p1 --dry-run -i {}  (in {})\n{text}",
        p.path.display(),
        tree.display()
    );
    if !o.status.success() {
        return Err(explain_failure(p, &text, label));
    }
    Ok(())
}

/// Checks then applies `p` in `tree`; the tree is untouched when it does not apply.
pub fn apply(
    p: &Patch,
    tree: &Path,
    label: &str,
    log: &mut dyn std::io::Write,
) -> Result<(), String> {
    check(p, tree, label, log)?;
    let o = run(p, tree, false).map_err(|e| format!("cannot run patch: {e}"))?;
    let _ = writeln!(
        log,
        "$ patch -p1 -i {}\n{}{}",
        p.path.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if !o.status.success() {
        return Err(format!(
            "--patch {}: applying failed after a clean dry run: {}",
            p.path.display(),
            String::from_utf8_lossy(&o.stdout).trim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "From: x\nSubject: [PATCH 1/2] sched/rt: push it\n\n---\n\
        --- a/kernel/a.c\n+++ b/kernel/a.c\n@@ -1,2 +1,3 @@\n one\n+two\n three\n\
        @@ -10,2 +11,3 @@\n ten\n+eleven\n twelve\n\
        --- a/kernel/b.c\n+++ b/kernel/b.c\n@@ -5,1 +5,1 @@\n-old\n+new\n-- \n2.43.0\n";

    #[test]
    fn a_relative_patch_path_is_made_absolute() {
        // The A/B test's `--patch patches/6.12/…` failed: patch ran in the tree.
        let rel = Path::new("patches/6.12/0001-sched-rt-push-boosted-task.patch");
        let p = read(rel).unwrap();
        assert!(p.path.is_absolute(), "{}", p.path.display());
        assert!(p.path.is_file());
        assert_eq!(p.info.file, rel.display().to_string());
    }

    #[test]
    fn finds_subject_and_hunks() {
        assert_eq!(subject(P).as_deref(), Some("sched/rt: push it"));
        assert_eq!(
            hunk(P, "kernel/a.c", 2).as_deref(),
            Some("@@ -10,2 +11,3 @@\n ten\n+eleven\n twelve")
        );
        assert_eq!(
            hunk(P, "kernel/b.c", 1).as_deref(),
            Some("@@ -5,1 +5,1 @@\n-old\n+new")
        );
        assert_eq!(hunk(P, "kernel/b.c", 2), None);
    }

    #[test]
    fn a_failing_hunk_is_shown() {
        let p = Patch {
            path: "fix.patch".into(),
            text: P.into(),
            info: PatchInfo::default(),
        };
        let m = explain_failure(
            &p,
            "checking file kernel/a.c\nHunk #2 FAILED at 10.\n1 out of 2 hunks FAILED\n",
            "6.12.117",
        );
        assert!(
            m.contains("does not apply to 6.12.117; nothing was built or booted"),
            "{m}"
        );
        assert!(m.contains("kernel/a.c: hunk #2 FAILED at 10."), "{m}");
        assert!(m.contains("+eleven"), "{m}");
    }
}
