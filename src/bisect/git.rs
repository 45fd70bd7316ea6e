//! What a bisection asks of history. A commit name (a ref, a tag) is resolved in the
//! user's repository, read only and as its owner (`OwnRepo::resolve`); everything else
//! is asked of the bisection's own repository by full object name (`repo` here is its
//! git directory, `OwnRepo::git_dir`), which borrows the user's objects and writes
//! nothing of theirs (the build tree is its worktree, `guest::build::worktree`).

use crate::guest::build::repo::OwnRepo;
use crate::guest::build::worktree::git;
use results::bisect::Commit;
use std::path::Path;

/// REF as a commit, with its subject; an error that says what to give.
pub fn commit(own: &OwnRepo, r: &str) -> Result<Commit, String> {
    let sha = own
        .resolve(r)
        .ok()
        .filter(|s| {
            Commit {
                sha: s.clone(),
                subject: String::new(),
            }
            .is_object_name()
        })
        .ok_or_else(|| {
            format!(
                "{r}: not a commit in {} (give a commit, tag or branch)",
                own.user.display()
            )
        })?;
    Ok(Commit {
        subject: subject(&own.git_dir, &sha),
        sha,
    })
}

pub fn subject(repo: &Path, sha: &str) -> String {
    git(repo, &["log", "-1", "--format=%s", sha]).unwrap_or_default()
}

pub fn is_ancestor(repo: &Path, a: &str, b: &str) -> bool {
    git(repo, &["merge-base", "--is-ancestor", a, b]).is_ok()
}

/// Commits in `bad` not in any of `goods`, `bad` left out, best bisection point
/// first (git's own choice: `rev-list --bisect-all`).
pub fn candidates(repo: &Path, bad: &str, goods: &[String]) -> Result<Vec<String>, String> {
    let mut args = vec!["rev-list", "--bisect-all", bad, "--not"];
    args.extend(goods.iter().map(String::as_str));
    let out = git(repo, &args)?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| *s != bad)
        .map(str::to_string)
        .collect())
}

/// How many commits `bad` has that `good` has not (the bad end counted).
pub fn range(repo: &Path, good: &str, bad: &str) -> Result<u32, String> {
    git(repo, &["rev-list", "--count", &format!("{good}..{bad}")])?
        .trim()
        .parse()
        .map_err(|e| format!("git rev-list --count: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn sh(dir: &Path, args: &[&str]) {
        let o = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    #[test]
    fn the_midpoint_comes_first_and_the_ends_are_left_out() {
        let d = crate::testkit::private_dir("bisect-git");
        sh(&d, &["init", "-q"]);
        let mut shas = vec![];
        for i in 0..9 {
            std::fs::write(d.join("f"), format!("{i}\n")).unwrap();
            sh(&d, &["add", "f"]);
            sh(&d, &["commit", "-q", "-m", &format!("change {i}")]);
            shas.push(git(&d, &["rev-parse", "HEAD"]).unwrap());
        }
        let (good, bad) = (&shas[0], &shas[8]);
        assert_eq!(range(&d, good, bad).unwrap(), 8);
        let c = candidates(&d, bad, std::slice::from_ref(good)).unwrap();
        assert_eq!(c.len(), 7);
        assert!(!c.contains(bad) && !c.contains(good));
        assert_eq!(c[0], shas[4], "git's midpoint");
        let own = OwnRepo::open(&d, &d.join(".own")).unwrap();
        assert_eq!(commit(&own, "HEAD~1").unwrap().subject, "change 7");
        assert!(is_ancestor(&d, good, bad) && !is_ancestor(&d, bad, good));
        let e = commit(&own, "nope").unwrap_err();
        assert!(e.contains("nope: not a commit"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
