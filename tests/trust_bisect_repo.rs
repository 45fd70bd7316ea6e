//! `xrunrig bisect` reads the user's kernel tree and writes nothing into it (issue 35):
//! a repository owned by another user (as a tree is under sudo), with hooks and an
//! fsmonitor that record if they run, goes through what a bisection does to git — its
//! ends resolved, its build tree made and checked out at two steps, one with a commit
//! reverted (the confirmation) — and afterwards nothing under its `.git` is newer than
//! before, no hook or fsmonitor ran, and every file still belongs to its owner. Root:
//! the repository is handed to `nobody` (65534), as sudo's user owns theirs.

mod support;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use xrunrig::guest::build::repo::OwnRepo;
use xrunrig::guest::build::worktree::{Extra, Worktree};
use xrunrig::testkit;

use support::git::{NOBODY, git as sh, hand_to_nobody, untouched};

fn walk(p: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = std::fs::read_dir(p) {
        for e in rd.flatten() {
            out.push(e.path());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&e.path(), out);
            }
        }
    }
}

#[test]
fn a_bisections_git_writes_nothing_into_a_tree_owned_by_another_user() {
    if !testkit::root() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    // Readable by nobody all the way down (a private test dir is root's 0700).
    let base = std::env::temp_dir().join(format!("xrunrig-userrepo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (user, marks) = (base.join("linux"), base.join("marks"));
    for d in [&base, &user, &marks] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o777)).unwrap();
    sh(&user, &["init", "-q"]);
    let mut commits = vec![];
    for i in 0..3 {
        std::fs::write(
            user.join("Makefile"),
            "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
        )
        .unwrap();
        std::fs::write(user.join(format!("f{i}")), format!("{i}\n")).unwrap();
        sh(&user, &["add", "-A"]);
        sh(&user, &["commit", "-q", "-m", &format!("change {i}")]);
        commits.push(sh(&user, &["rev-parse", "HEAD"]));
    }
    // Hooks and an fsmonitor that leave a mark when anything runs them; nobody's.
    hand_to_nobody(&user, &marks);

    let cache = testkit::private_dir("bisect-repo-cache");
    // As /var/cache/xrunrig/kbuild is: root's, that others may enter.
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o755)).unwrap();
    // SAFETY: this test binary's one test; no other thread reads the environment.
    unsafe { std::env::set_var("XRUNRIG_KBUILD_DIR", &cache) };
    let own = OwnRepo::open(&user, &cache.join("bisect")).unwrap();
    // The ends by name, in a tree git would refuse as root ("dubious ownership").
    let head = xrunrig::bisect::git::commit(&own, "HEAD").unwrap();
    assert_eq!(head.sha, commits[2]);
    assert_eq!(head.subject, "change 2");
    let first = xrunrig::bisect::git::commit(&own, "HEAD~2").unwrap();
    assert_eq!(first.sha, commits[0]);
    let mut tree = Worktree::open(&own, &commits[0], &[]).unwrap();
    tree.checkout(&commits[2], &Extra::Revert(commits[1].clone()))
        .unwrap();
    assert!(!tree.dir.join("f1").exists(), "the revert took f1 away");
    assert!(tree.dir.join("f2").exists());
    // A file a patch created at that step is gone at the next.
    std::fs::write(tree.dir.join("new-from-a-patch.c"), b"int x;\n").unwrap();
    tree.checkout(&commits[1], &Extra::None).unwrap();
    assert!(tree.dir.join("f1").exists());
    assert!(!tree.dir.join("new-from-a-patch.c").exists());
    // Opened again (a resumed bisection): the same tree, adopted.
    let tree = Worktree::open(&own, &commits[0], &[]).unwrap();
    assert!(
        tree.started_from
            .as_deref()
            .is_some_and(|s| s.contains("this bisection's tree")),
        "{:?}",
        tree.started_from
    );

    untouched(&user, &marks);
    // The bisection's own repository and its build tree are the user's too: git (and
    // patch and make) ran there as the user, not as root.
    let mut made = vec![own.git_dir.clone(), tree.dir.clone()];
    walk(&own.git_dir, &mut made);
    walk(&tree.dir, &mut made);
    let roots: Vec<_> = made
        .iter()
        .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.uid() != NOBODY))
        .collect();
    assert!(
        roots.is_empty(),
        "made as root in the bisection's own places: {roots:?}"
    );
    // A patch applied in the tree is applied as its owner too.
    let p = base.join("add-g.patch");
    std::fs::write(&p, "--- a/g\n+++ b/g\n@@ -0,0 +1 @@\n+g\n").unwrap();
    let patch = xrunrig::guest::build::patches::read(&p).unwrap();
    xrunrig::guest::build::patches::apply(&patch, &tree.dir, "test", &mut std::io::sink()).unwrap();
    assert_eq!(
        std::fs::metadata(tree.dir.join("g")).unwrap().uid(),
        NOBODY,
        "patch ran as the tree's owner"
    );
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_dir_all(&cache);
}
