//! The bisection's own repository: a bare repository in the build cache
//! (`bisect/repos/<key>`) that borrows the user's objects read-only through
//! `objects/info/alternates`, so that its worktree's registration, a revert's new
//! objects and every lock live in the cache and nothing is written under the user's
//! `.git`.
//!
//! The user's repository is only read, and only for what a commit name needs (a ref, a
//! tag, `HEAD~3`): `git rev-parse` as the repository's owner (under sudo the tree is the
//! user's, and git refuses a tree owned by someone else as "dubious ownership"; running
//! as its owner needs no `safe.directory` in anyone's config), with no hooks, no
//! fsmonitor, no global config and no `GIT_*` variables of the caller. Everything else
//! (history, subjects, the bisection's candidates, checkouts) asks the own repository
//! by full object name.

use super::worktree::git;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options every git call carries: no hook runs (the user's or a template's), no
/// fsmonitor daemon is started, nothing is garbage-collected behind the bisection.
pub const SAFE: [&str; 6] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "gc.auto=0",
];

#[derive(Debug, Clone)]
pub struct OwnRepo {
    /// The user's tree, as given (canonical).
    pub user: PathBuf,
    /// The user's object store, borrowed read-only.
    pub user_objects: PathBuf,
    /// The bisection's bare repository.
    pub git_dir: PathBuf,
    /// Who the user's repository belongs to, when that is not the caller (root).
    owner: Option<(u32, u32)>,
}

/// `git args` on the user's repository `tree`, read only, as `owner` when given.
fn read_user(tree: &Path, owner: Option<(u32, u32)>, args: &[&str]) -> Result<String, String> {
    let mut c = Command::new("git");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    c.env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("HOME", "/nonexistent")
        // A working directory the owner can enter (the caller's may be root's 0700).
        .current_dir(tree)
        .args(SAFE)
        .arg("-C")
        .arg(tree)
        .args(args);
    if let Some((uid, gid)) = owner {
        // gid before uid, and no supplementary groups of root's (std drops them when
        // it changes the uid).
        c.gid(gid).uid(uid);
    }
    super::worktree::stdout_of(&mut c, tree, args)
}

impl OwnRepo {
    /// The own repository of the user's `tree` under `root` (`bisect/` of the build
    /// cache), made when missing and pointed at the user's objects again each time (a
    /// repository moved or made anew at the same path).
    pub fn open(tree: &Path, root: &Path) -> Result<OwnRepo, String> {
        let user =
            std::fs::canonicalize(tree).map_err(|e| format!("--tree {}: {e}", tree.display()))?;
        let meta =
            std::fs::metadata(&user).map_err(|e| format!("--tree {}: {e}", user.display()))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let owner = (meta.uid() != me && me == 0).then_some((meta.uid(), meta.gid()));
        let common = read_user(
            &user,
            owner,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .map_err(|e| {
            format!(
                "--tree {}: not a git repository it can read: {e}",
                user.display()
            )
        })?;
        let user_objects = PathBuf::from(common).join("objects");
        if !user_objects.is_dir() {
            return Err(format!(
                "--tree {}: its object store {} is not a directory",
                user.display(),
                user_objects.display()
            ));
        }
        let key = &super::sha256_hex(user.display().to_string().as_bytes())[..16];
        let git_dir = root.join("repos").join(key);
        if !git_dir.join("HEAD").exists() {
            std::fs::create_dir_all(&git_dir).map_err(|e| format!("{}: {e}", git_dir.display()))?;
            // The user's, so that git runs in it as them (`worktree::as_owner_of`).
            super::worktree::give(&git_dir, owner)?;
            // An empty template: no sample hooks, no description.
            git(&git_dir, &["init", "-q", "--bare", "--template="])?;
        }
        for (k, v) in [
            ("core.hooksPath", "/dev/null"),
            ("core.fsmonitor", "false"),
            ("gc.auto", "0"),
            ("maintenance.auto", "false"),
        ] {
            git(&git_dir, &["config", k, v])?;
        }
        let info = git_dir.join("objects/info");
        std::fs::create_dir_all(&info).map_err(|e| format!("{}: {e}", info.display()))?;
        let alt = format!("{}\n", user_objects.display());
        let path = info.join("alternates");
        if std::fs::read_to_string(&path).ok().as_deref() != Some(alt.as_str()) {
            std::fs::write(&path, alt).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        // Everything root wrote here, and a repository an older xrunrig made as root.
        super::worktree::give(&git_dir, owner)?;
        Ok(OwnRepo {
            user,
            user_objects,
            git_dir,
            owner,
        })
    }

    /// REF of the user's repository as a full object name (the one thing read there).
    pub fn resolve(&self, r: &str) -> Result<String, String> {
        if r.starts_with('-') {
            return Err(format!(
                "{r}: not a commit (a name does not start with '-')"
            ));
        }
        read_user(
            &self.user,
            self.owner,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &format!("{r}^{{commit}}"),
            ],
        )
    }

    /// Who git, patch and make run as in the own repository and its build tree: the
    /// user's repository's owner when root runs and it is someone else's; None: the
    /// caller itself.
    pub fn owner(&self) -> Option<(u32, u32)> {
        self.owner
    }

    /// `git args` in the own repository.
    pub fn git(&self, args: &[&str]) -> Result<String, String> {
        git(&self.git_dir, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) -> String {
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

    /// The own repository sees the user's commits, and what it writes (a revert's
    /// objects) stays in it: the user's object store is as it was.
    #[test]
    fn the_own_repository_reads_the_users_objects_and_writes_its_own() {
        let d = crate::testkit::private_dir("own-repo");
        let user = d.join("user");
        std::fs::create_dir_all(&user).unwrap();
        sh(&user, &["init", "-q"]);
        for i in 0..3 {
            std::fs::write(user.join("f"), format!("{i}\n")).unwrap();
            sh(&user, &["add", "f"]);
            sh(&user, &["commit", "-q", "-m", &format!("change {i}")]);
        }
        let count = |p: &Path| walk(p).len();
        let before = count(&user.join(".git/objects"));
        let own = OwnRepo::open(&user, &d.join("cache")).unwrap();
        let head = own.resolve("HEAD").unwrap();
        assert_eq!(head, sh(&user, &["rev-parse", "HEAD"]));
        assert_eq!(
            own.git(&["log", "-1", "--format=%s", &head]).unwrap(),
            "change 2"
        );
        assert!(own.resolve("--output=/tmp/x").is_err());
        assert!(own.resolve("nope").is_err());
        // A new object, written where the own repository keeps its own.
        let o = Command::new("git")
            .arg("-C")
            .arg(&own.git_dir)
            .args(["hash-object", "-w", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b"new\n")?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(o.status.success());
        assert_eq!(count(&user.join(".git/objects")), before);
        // Opened again: the same repository.
        let again = OwnRepo::open(&user, &d.join("cache")).unwrap();
        assert_eq!(again.git_dir, own.git_dir);
        let _ = std::fs::remove_dir_all(&d);
    }

    fn walk(p: &Path) -> Vec<PathBuf> {
        let mut out = vec![];
        if let Ok(rd) = std::fs::read_dir(p) {
            for e in rd.flatten() {
                out.push(e.path());
                out.extend(walk(&e.path()));
            }
        }
        out
    }
}
