//! A user's kernel tree as the bisect tests hand it over: `nobody`'s (as a tree is
//! sudo's user's), with hooks and an fsmonitor that leave a line in `marks/ran` when
//! anything runs them; and the check that a bisection left it as it was.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

pub const NOBODY: u32 = 65534;

/// `git -C dir args…` with a committer, its stdout; a failure fails the test.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Recording hooks and fsmonitor in `repo`, then `repo` given to `nobody`; `marks`
/// (made here, writable by all) gets `before`, the hand-over's time.
pub fn hand_to_nobody(repo: &Path, marks: &Path) {
    let _ = std::fs::remove_dir_all(marks);
    std::fs::create_dir_all(marks).unwrap();
    std::fs::set_permissions(marks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let recorder = marks.join("record.sh");
    std::fs::write(
        &recorder,
        format!("#!/bin/sh\necho \"$0 $*\" >> {}/ran\n", marks.display()),
    )
    .unwrap();
    std::fs::set_permissions(&recorder, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for h in [
        "post-checkout",
        "reference-transaction",
        "post-commit",
        "pre-commit",
        "post-rewrite",
        "pre-auto-gc",
        "post-index-change",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
    ] {
        std::fs::copy(&recorder, hooks.join(h)).unwrap();
    }
    git(
        repo,
        &["config", "core.fsmonitor", recorder.to_str().unwrap()],
    );
    let o = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(marks.join("before"), b"").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
}

/// Nothing under `repo/.git` newer than the hand-over, no hook or fsmonitor ran, and
/// every file of `repo` is still `nobody`'s.
pub fn untouched(repo: &Path, marks: &Path) {
    let newer = Command::new("find")
        .arg(repo.join(".git"))
        .arg("-newer")
        .arg(marks.join("before"))
        .output()
        .unwrap();
    let newer = String::from_utf8_lossy(&newer.stdout).trim().to_string();
    assert!(newer.is_empty(), "written under the user's .git: {newer}");
    let ran = std::fs::read_to_string(marks.join("ran")).unwrap_or_default();
    assert!(ran.is_empty(), "a hook or the fsmonitor ran: {ran}");
    let foreign = Command::new("find")
        .arg(repo)
        .arg("!")
        .args(["-uid", &NOBODY.to_string()])
        .output()
        .unwrap();
    let foreign = String::from_utf8_lossy(&foreign.stdout).trim().to_string();
    assert!(foreign.is_empty(), "no longer the user's: {foreign}");
}
