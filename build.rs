//! Embeds the git commit and whether the work tree had uncommitted changes, for
//! `--version` and run.json: a regression report needs the exact code that measured.
//! Outside a git checkout (a source tarball, no git installed) both say "unknown": this
//! never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = git(&root, &["rev-parse", "HEAD"])
        .filter(|c| c.len() >= 40 && c.chars().all(|ch| ch.is_ascii_hexdigit()));
    // Tracked files only: build products and scratch files in the tree are not code.
    let dirty = commit.as_ref().and_then(|_| {
        git(
            &root,
            &[
                "--no-optional-locks",
                "status",
                "--porcelain",
                "--untracked-files=no",
            ],
        )
        .map(|s| !s.is_empty())
    });
    println!(
        "cargo:rustc-env=XRUNRIG_GIT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=XRUNRIG_GIT_DIRTY={}",
        match dirty {
            Some(true) => "true",
            Some(false) => "false",
            None => "unknown",
        }
    );
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!(
        "cargo:rustc-env=XRUNRIG_VERSION={version} (commit {}{})",
        commit.as_deref().unwrap_or("unknown"),
        if dirty == Some(true) { ", dirty" } else { "" }
    );
    // Rerun when HEAD moves, the index changes or any source changes (dirty may flip).
    // A worktree's HEAD and index live in its own git dir, the branch's ref in the
    // common one; only files that exist (a missing one would rerun every build), and
    // only this branch's ref (other branches' commits change nothing here).
    let mut watch: Vec<PathBuf> = vec![];
    if let Some(d) = git(&root, &["rev-parse", "--git-dir"]) {
        let d = root.join(d);
        watch.extend([d.join("HEAD"), d.join("index")]);
    }
    if let (Some(d), Some(r)) = (
        git(&root, &["rev-parse", "--git-common-dir"]),
        git(&root, &["rev-parse", "--symbolic-full-name", "HEAD"]),
    ) {
        let d = root.join(d);
        watch.extend([d.join(&r), d.join("packed-refs")]);
    }
    for f in watch.iter().filter(|f| f.exists()) {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    for p in [
        "build.rs",
        "Cargo.toml",
        "src",
        "analysis",
        "results-format",
        "tests",
        "rigs",
        "profiles",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(p).display());
    }
}
