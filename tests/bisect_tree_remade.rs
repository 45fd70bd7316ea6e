//! A bisection's build tree outlives the repository it was made from: when the user's
//! repository is made anew at the same path (a fresh clone, a rewritten history, a
//! test's history made again), the commit the tree was last at is gone, and the tree
//! must still be adopted and set to the new history's commits (CI stop 54: every
//! bisection stopped at once with "`git reset -q --hard`: Could not parse object
//! 'HEAD'").

mod support;

use std::path::Path;
use support::git::git as sh;
use xrunrig::guest::build::repo::OwnRepo;
use xrunrig::guest::build::worktree::{Extra, Worktree};
use xrunrig::testkit;

/// A repository at `dir` made from nothing, its commits' files named `tag`.
fn history(dir: &Path, tag: &str) -> Vec<String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    sh(dir, &["init", "-q"]);
    let mut commits = vec![];
    for i in 0..2 {
        std::fs::write(
            dir.join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
        )
        .unwrap();
        std::fs::write(dir.join(format!("{tag}{i}")), format!("{i}\n")).unwrap();
        sh(dir, &["add", "-A"]);
        sh(dir, &["commit", "-q", "-m", &format!("{tag} {i}")]);
        commits.push(sh(dir, &["rev-parse", "HEAD"]));
    }
    commits
}

#[test]
fn a_tree_whose_commit_is_gone_is_adopted_and_set_to_the_new_history() {
    let base = testkit::private_dir("bisect-tree-remade");
    let (user, cache) = (base.join("linux"), base.join("cache"));
    // SAFETY: this test binary's one test; no other thread reads the environment.
    unsafe { std::env::set_var("XRUNRIG_KBUILD_DIR", &cache) };
    let old = history(&user, "old");
    let own = OwnRepo::open(&user, &cache.join("bisect")).unwrap();
    let mut tree = Worktree::open(&own, &old[0], &[]).unwrap();
    tree.checkout(&old[1], &Extra::None).unwrap();
    assert!(tree.dir.join("old1").exists());

    let new = history(&user, "new");
    assert!(!new.contains(&old[1]));
    let own = OwnRepo::open(&user, &cache.join("bisect")).unwrap();
    let mut tree = Worktree::open(&own, &new[0], &[]).unwrap();
    tree.checkout(&new[1], &Extra::Revert(new[0].clone()))
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert!(tree.dir.join("new1").exists());
    assert!(!tree.dir.join("new0").exists(), "new0 reverted");
    assert!(
        !tree.dir.join("old1").exists(),
        "the old history's files are gone"
    );
    tree.checkout(&new[0], &Extra::None).unwrap();
    assert!(tree.dir.join("new0").exists());
}
