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
        git(&root, &["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty())
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
    // A worktree's HEAD and index live in its own git dir, the refs in the common one.
    for (arg, files) in [
        ("--git-dir", &["HEAD", "index"][..]),
        (
            "--git-common-dir",
            &["HEAD", "packed-refs", "refs/heads"][..],
        ),
    ] {
        if let Some(d) = git(&root, &["rev-parse", arg]) {
            let d = root.join(d);
            for f in files {
                println!("cargo:rerun-if-changed={}", d.join(f).display());
            }
        }
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
