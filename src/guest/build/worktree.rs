//! A bisection's one build tree: a `git worktree` of the bisection's own repository
//! (`repo::OwnRepo`, which borrows the user's objects read-only) in the build cache
//! (`bisect/trees/<key>`, the key hashing the repository's path and the config recipe),
//! checked out in place at each step so make recompiles only what changed since the
//! last step, never a copy per step, never the user's checkout, and nothing written
//! under the user's `.git` (the worktree is registered in the own repository).
//!
//! A new tree starts warm when it can: from a copy of a cached build of the same
//! kernel version (`trees/*` of `--kernel debian-src:…`/`src:…` runs), whose files git
//! then brings to the commit's (`sync`): only the files whose content differs are
//! rewritten, so only they and what depends on them are compiled again.
//!
//! Each step's kernel is kept (`bisect/kernels/<key>`, the key hashing the commit, the
//! config and what was applied on top): a resumed or repeated bisection boots it again
//! without building.

use super::{config_sha, lock, make, patches, sha256_hex};
use crate::guest::kernel::Kernel;
use results::kbuild::KernelBuild;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A built step's kernel, kept apart from the tree (which the next step rewrites).
const KEPT: &str = ".xrunrig-kept";

pub fn bisect_root() -> PathBuf {
    super::cache_root().join("bisect")
}

/// `git -C dir args…`, its stdout; an error with git's own words. Never a hook, an
/// fsmonitor or an automatic gc (`repo::SAFE`).
pub fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut c = Command::new("git");
    c.args(super::repo::SAFE).arg("-C").arg(dir).args(args);
    as_owner_of(&mut c, dir);
    stdout_of(&mut c, dir, args)
}

/// The owner of `dir` when root runs and `dir` is someone else's: the bisection's own
/// repository and build tree belong to the user whose tree is bisected, so git, patch
/// and make run there as that user, never as root.
pub fn owner_of(dir: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let m = std::fs::metadata(dir).ok()?;
    (me == 0 && m.uid() != 0).then_some((m.uid(), m.gid()))
}

/// `c`, a command that works in `dir`, as `dir`'s owner (`owner_of`), with no config,
/// home or working directory of root's.
pub fn as_owner_of(c: &mut Command, dir: &Path) {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = owner_of(dir) {
        c.env("HOME", "/nonexistent")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .current_dir(dir)
            // gid before uid; std drops root's supplementary groups with the uid.
            .gid(gid)
            .uid(uid);
    }
}

/// `rel` inside `tree` opened by root without following any link on the way and
/// without leaving `tree` (`openat2` RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), and only
/// if it is a regular file: a build tree is its user's, and what their Makefiles
/// leave there (a link to /etc/shadow named `vmlinux`) must not make root read or
/// write elsewhere. `write`: created or truncated, mode 0644.
pub fn open_beneath(tree: &Path, rel: &str, write: bool) -> std::io::Result<std::fs::File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let c = |s: &str| {
        CString::new(s).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let t = c(&tree.display().to_string())?;
    // SAFETY: a valid NUL-terminated path; the fd is owned below.
    let d = unsafe {
        libc::open(
            t.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if d < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    let dir = unsafe { OwnedFd::from_raw_fd(d) };
    let flags = if write {
        libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC
    } else {
        libc::O_RDONLY | libc::O_NONBLOCK
    } | libc::O_CLOEXEC
        | libc::O_NOFOLLOW;
    // SAFETY: open_how is plain data; zeroed is valid.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if write { 0o644 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    let r = c(rel)?;
    // SAFETY: valid fd, NUL-terminated path and a live open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            r.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    let f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    if !f.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{}: not a regular file",
            tree.join(rel).display()
        )));
    }
    Ok(f)
}

/// `dir` and everything in it given to `owner` (what root copied or moved in).
pub fn give(dir: &Path, owner: Option<(u32, u32)>) -> Result<(), String> {
    let Some((uid, gid)) = owner else {
        return Ok(());
    };
    let o = Command::new("chown")
        .arg("-R")
        .arg("--no-dereference")
        .arg(format!("{uid}:{gid}"))
        .arg(dir)
        .output()
        .map_err(|e| format!("cannot run chown: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "cannot give {} to uid {uid}: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(())
}

/// Runs a git command `c` (made with `args`, in `dir`): its stdout, trimmed; an error
/// with git's own words. Shared with `repo`'s read of the user's repository.
pub fn stdout_of(c: &mut Command, dir: &Path, args: &[&str]) -> Result<String, String> {
    let o = c
        .output()
        .map_err(|e| format!("cannot run git (apt-get install git): {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "`git {}` in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim_end().to_string())
}

/// Why a step's tree could not be made.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeError {
    /// git could not set the tree (a lock, a broken worktree, a full disk): nothing is
    /// known of the commit, and the bisection cannot go on.
    Git(String),
    /// The commit's own content cannot be made (a revert that conflicts, a patch that
    /// does not apply): that step is skipped, as one that does not build.
    Content(String),
    /// The machine failed the build (a full disk, memory, make killed): nothing is
    /// known of the commit; the bisection stops, to be resumed.
    Transient(String),
}

fn tree_error(f: make::Failure) -> TreeError {
    match f {
        make::Failure::Content(s) => TreeError::Content(s),
        make::Failure::Transient(s) => TreeError::Transient(s),
    }
}

/// What the tree holds on top of a commit.
#[derive(Debug, Clone, PartialEq)]
pub enum Extra {
    None,
    /// `git revert --no-commit` of this commit.
    Revert(String),
}

pub struct Worktree {
    /// The user's tree, as given (what provenance names).
    pub repo: PathBuf,
    /// The repository the tree belongs to and every history question is asked of.
    pub own: super::repo::OwnRepo,
    pub dir: PathBuf,
    pub log_path: PathBuf,
    patches: Vec<patches::Patch>,
    /// Said once, on the first build: where the tree started from.
    pub started_from: Option<String>,
}

fn common_dir(dir: &Path) -> Option<PathBuf> {
    let s = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    )
    .ok()?;
    std::fs::canonicalize(s).ok()
}

/// VERSION.PATCHLEVEL.SUBLEVEL of the top Makefile's text.
pub fn makefile_version(text: &str) -> Option<String> {
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.trim_start().strip_prefix('='))
            .map(|v| v.trim().to_string())
    };
    Some(format!(
        "{}.{}.{}",
        field("VERSION")?,
        field("PATCHLEVEL")?,
        field("SUBLEVEL")?
    ))
}

/// A finished cached build of kernel `version` with this config recipe to start from:
/// the one with fewest patches, then the newest.
fn warm_source(version: &str) -> Option<PathBuf> {
    let trees = super::cache_root().join("trees");
    let mut found: Vec<(usize, std::time::SystemTime, PathBuf)> = vec![];
    for e in std::fs::read_dir(&trees).ok()?.flatten() {
        let t = e.path();
        if !t.join(super::DONE).exists() {
            continue;
        }
        let Ok(b) = std::fs::read_to_string(t.join(super::PROVENANCE)) else {
            continue;
        };
        let Ok(b) = serde_json::from_str::<KernelBuild>(&b) else {
            continue;
        };
        if b.version.as_deref() != Some(version) || b.config.as_deref() != Some(make::RECIPE) {
            continue;
        }
        let when = std::fs::metadata(t.join(super::DONE))
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        found.push((b.patches.len(), when, t));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    found.into_iter().next().map(|x| x.2)
}

impl Worktree {
    /// The bisection's tree for `repo`, made (a worktree at `commit`) when missing,
    /// adopted again when its repository was made anew at the same path.
    pub fn open(
        own: &super::repo::OwnRepo,
        commit: &str,
        patch_files: &[PathBuf],
    ) -> Result<Worktree, String> {
        let repo = own.user.clone();
        let patches: Vec<patches::Patch> = patch_files
            .iter()
            .map(|p| patches::read(p))
            .collect::<Result<_, _>>()?;
        let root = bisect_root();
        let key = &sha256_hex(format!("{}\n{}", repo.display(), config_sha()).as_bytes())[..16];
        let dir = root.join("trees").join(key);
        let logs = root.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
        let log_path = logs.join(format!("{key}.log"));
        // A tree's log grows with every step of every bisection: past 16 MB it starts
        // again, the previous one kept as `.log.1` (bounded at two).
        if std::fs::metadata(&log_path).is_ok_and(|m| m.len() > 16 << 20) {
            let _ = std::fs::rename(&log_path, log_path.with_extension("log.1"));
        }
        let mut w = Worktree {
            repo: repo.clone(),
            own: own.clone(),
            dir: dir.clone(),
            log_path,
            patches,
            started_from: None,
        };
        let repo_common = std::fs::canonicalize(&own.git_dir)
            .map_err(|e| format!("{}: {e}", own.git_dir.display()))?;
        let owner = own.owner();
        // A tree an older xrunrig made as root: the user's, like its repository.
        if dir.exists() && owner.is_some() && owner_of(&dir) != owner {
            give(&dir, owner)?;
        }
        if dir.exists() && common_dir(&dir).as_deref() == Some(repo_common.as_path()) {
            w.started_from = Some(format!("this bisection's tree {}", dir.display()));
            w.settle()?;
            return Ok(w);
        }
        // Only the own repository's registrations: the user's are the user's.
        let _ = own.git(&["worktree", "prune"]);
        // Files to start from: a stale tree of this path (its repository made anew, or
        // a tree of an older xrunrig registered in the user's repository), moved; else
        // a cached build of the same version, copied.
        let stale = dir.with_extension("stale");
        let _ = std::fs::remove_dir_all(&stale);
        let from = if dir.exists() {
            std::fs::rename(&dir, &stale).map_err(|e| format!("{}: {e}", dir.display()))?;
            let _ = std::fs::remove_file(stale.join(".git"));
            Some((stale.clone(), true))
        } else {
            let mk = own.git(&["show", &format!("{commit}:Makefile")])?;
            makefile_version(&mk)
                .and_then(|v| warm_source(&v))
                .map(|t| (t, false))
        };
        std::fs::create_dir_all(dir.parent().expect("trees"))
            .map_err(|e| format!("{}: {e}", root.display()))?;
        // Made here, empty, and given to the user: git adds the worktree into it as them.
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        give(&dir, owner)?;
        own.git(&[
            "worktree",
            "add",
            "--detach",
            "--no-checkout",
            &dir.display().to_string(),
            commit,
        ])?;
        match from {
            Some((src, moved)) => {
                w.log(&format!(
                    "starting from {} ({})",
                    src.display(),
                    if moved { "moved" } else { "copied" }
                ));
                eprintln!(
                    "xrunrig: bisect: starting the build tree from {} ({})",
                    src.display(),
                    if moved {
                        "this path's earlier tree"
                    } else {
                        "a cached build of the same version: only what differs is compiled"
                    }
                );
                if moved {
                    for e in std::fs::read_dir(&src)
                        .map_err(|e| e.to_string())?
                        .flatten()
                    {
                        std::fs::rename(e.path(), dir.join(e.file_name()))
                            .map_err(|e| format!("{}: {e}", dir.display()))?;
                    }
                    let _ = std::fs::remove_dir_all(&src);
                } else {
                    let o = Command::new("cp")
                        .arg("-a")
                        .arg(format!("{}/.", src.display()))
                        .arg(&dir)
                        .output()
                        .map_err(|e| format!("cannot run cp: {e}"))?;
                    if !o.status.success() {
                        return Err(format!(
                            "cannot copy {}: {}",
                            src.display(),
                            String::from_utf8_lossy(&o.stderr).trim()
                        ));
                    }
                    super::repoint_tools(&src, &dir);
                }
                for m in [super::DONE, super::READY, super::PROVENANCE] {
                    let _ = std::fs::remove_file(dir.join(m));
                }
                give(&dir, owner)?;
                w.started_from = Some(src.display().to_string());
                w.sync(commit)?;
            }
            None => {
                w.started_from = Some("from scratch".into());
                git(&dir, &["checkout", "-f", "-q", "--detach", commit])?;
            }
        }
        Ok(w)
    }

    fn log(&self, line: &str) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
        {
            let _ = writeln!(f, "{line}");
        }
    }

    /// A killed bisection's git may still be at work in the tree (it is not killed with
    /// its parent: cut short it would leave the tree half checked out), holding the
    /// index's lock. Waits for every process in the tree to leave; a lock left with no
    /// one there is a dead git's (this run holds the one-run lock) and is removed.
    /// Seen in CI: a resumed bisection's `git reset --hard` refused by the killed run's
    /// lock, and two steps wrongly skipped as not building.
    fn settle(&self) -> Result<(), String> {
        let t0 = Instant::now();
        let mut said = false;
        while let Some(pid) = process_in(&self.dir) {
            if t0.elapsed() > std::time::Duration::from_secs(300) {
                return Err(format!(
                    "process {pid} is still at work in the build tree {} after 5 minutes: end it, then give the same command again",
                    self.dir.display()
                ));
            }
            if !said {
                eprintln!(
                    "xrunrig: bisect: waiting for process {pid} (an earlier run's) to leave the build tree {}",
                    self.dir.display()
                );
                said = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let gitdir = git(
            &self.dir,
            &["rev-parse", "--path-format=absolute", "--git-dir"],
        )?;
        let lock = Path::new(&gitdir).join("index.lock");
        if lock.exists() {
            std::fs::remove_file(&lock).map_err(|e| format!("{}: {e}", lock.display()))?;
            let line = format!(
                "removed {}: left by a git that died (no process is in the tree)",
                lock.display()
            );
            self.log(&line);
            eprintln!("xrunrig: bisect: {line}");
        }
        Ok(())
    }

    /// Files not written by git: the index is set to `commit`, refreshed against the
    /// files (equal content keeps its file and time), and only what differs is
    /// checked out.
    fn sync(&mut self, commit: &str) -> Result<(), String> {
        git(&self.dir, &["reset", "-q", commit])?;
        // Exit 1 lists files that differ: expected.
        let _ = git(&self.dir, &["update-index", "-q", "--refresh"]);
        git(&self.dir, &["reset", "-q", "--hard", commit])?;
        git(&self.dir, &["clean", "-fdq"])?;
        Ok(())
    }

    /// The tree at `commit` with `extra` on top and the bisection's patches applied.
    /// git rewrites only the files that differ from what the tree holds, so make
    /// recompiles only those (a patch applied at the last step is undone here too).
    pub fn checkout(&mut self, commit: &str, extra: &Extra) -> Result<(), TreeError> {
        // A revert left by a killed run would refuse the next one ("in progress").
        let _ = git(&self.dir, &["revert", "--quit"]);
        // To the step's commit, not HEAD: HEAD may name a commit that is gone (the
        // repository made anew at the same path since this tree was last used).
        git(&self.dir, &["reset", "-q", "--hard", commit]).map_err(TreeError::Git)?;
        // Files the last step's patches created are no commit's: gone before this one
        // (ignored files, the build's outputs, stay: make rebuilds what changed).
        git(&self.dir, &["clean", "-fdq"]).map_err(TreeError::Git)?;
        git(&self.dir, &["checkout", "-f", "-q", "--detach", commit]).map_err(TreeError::Git)?;
        if let Extra::Revert(c) = extra
            && let Err(e) = git(&self.dir, &["revert", "--no-commit", c])
        {
            let _ = git(&self.dir, &["revert", "--abort"]);
            let _ = git(&self.dir, &["reset", "-q", "--hard"]);
            return Err(TreeError::Content(format!(
                "{c} does not revert cleanly on {commit}: {e}"
            )));
        }
        let label = format!(
            "{}{}",
            &commit[..commit.len().min(12)],
            match extra {
                Extra::None => String::new(),
                Extra::Revert(c) => format!(" with {} reverted", &c[..c.len().min(12)]),
            }
        );
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
            .map_err(|e| TreeError::Git(format!("{}: {e}", self.log_path.display())))?;
        for p in &self.patches {
            patches::apply(p, &self.dir, &label, &mut log).map_err(TreeError::Content)?;
        }
        Ok(())
    }

    /// The kept kernel's key: what is built (commit, what is on top, patches, config).
    pub fn key(&self, commit: &str, extra: &Extra) -> String {
        let mut s = format!("xrunrig-bisect-1\n{commit}\n{}\n", config_sha());
        if let Extra::Revert(c) = extra {
            s.push_str(&format!("revert {c}\n"));
        }
        for p in &self.patches {
            s.push_str(&p.info.sha256);
            s.push('\n');
        }
        sha256_hex(s.as_bytes())[..16].to_string()
    }

    pub fn kept(&self, commit: &str, extra: &Extra) -> Option<Kernel> {
        let k = bisect_root().join("kernels").join(self.key(commit, extra));
        if !k.join(KEPT).exists() {
            return None;
        }
        // Used now: the last to go when the kept kernels are pruned (`prune_kept`).
        let _ = std::fs::File::options()
            .write(true)
            .open(k.join(KEPT))
            .and_then(|f| f.set_modified(std::time::SystemTime::now()));
        let mut b: KernelBuild = std::fs::read_to_string(k.join(super::PROVENANCE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())?;
        b.cached = true;
        b.build_s = Some(0.0);
        super::kernel_from_tree(&b.source.clone(), &k, b).ok()
    }

    /// Builds what `checkout` left in the tree and keeps the kernel; `source` and
    /// `detail` say what it is, for provenance.
    pub fn build(
        &mut self,
        commit: &str,
        extra: &Extra,
        source: &str,
        detail: &str,
    ) -> Result<Kernel, TreeError> {
        let _lock = lock(&super::cache_root()).map_err(TreeError::Transient)?;
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
            .map_err(|e| TreeError::Transient(format!("{}: {e}", self.log_path.display())))?;
        let (_, stamp) = crate::sys::utc_now();
        let _ = writeln!(
            log,
            "== {stamp} building {detail} in {}",
            self.dir.display()
        );
        let t0 = Instant::now();
        if !self.dir.join(".config").exists() {
            eprintln!("xrunrig: bisect: configuring ({})", make::RECIPE);
            make::configure(&self.dir, &mut log).map_err(tree_error)?;
        }
        let version = super::kernelversion(&self.dir);
        let what = format!("{detail} ({})", version.as_deref().unwrap_or("?"));
        make::make(&self.dir, &self.log_path, &what).map_err(tree_error)?;
        let cfg = open_beneath(&self.dir, ".config", false)
            .and_then(|mut f| {
                let mut v = vec![];
                std::io::Read::read_to_end(&mut f, &mut v).map(|_| v)
            })
            .map_err(|e| TreeError::Content(format!("{}: .config: {e}", self.dir.display())))?;
        let key = self.key(commit, extra);
        let info = KernelBuild {
            source: source.to_string(),
            source_detail: Some(detail.to_string()),
            source_sha256: None,
            version,
            patches: self.patches.iter().map(|p| p.info.clone()).collect(),
            config_sha256: Some(sha256_hex(&cfg)),
            config: Some(make::RECIPE.into()),
            key: Some(key.clone()),
            build_dir: Some(self.dir.display().to_string()),
            cached: false,
            started_from: self.started_from.take(),
            build_s: Some((t0.elapsed().as_secs_f64() * 10.0).round() / 10.0),
            log: Some(self.log_path.display().to_string()),
        };
        let kept = bisect_root().join("kernels").join(&key);
        keep(&self.dir, &kept, &info).map_err(TreeError::Transient)?;
        let gone = prune_kept(&bisect_root().join("kernels"), keep_kernels(), &kept);
        if gone > 0 {
            let _ = writeln!(
                log,
                "== removed the {gone} least recently used kept kernel(s): at most {} are kept",
                keep_kernels()
            );
        }
        let _ = writeln!(
            log,
            "== built in {:.1} s, kept in {}",
            t0.elapsed().as_secs_f64(),
            kept.display()
        );
        super::kernel_from_tree(source, &kept, info).map_err(TreeError::Content)
    }
}

/// How many step kernels the cache keeps (about 34 MB each for the guest config):
/// `XRUNRIG_BISECT_KEEP_KERNELS`, else 64.
pub fn keep_kernels() -> usize {
    std::env::var("XRUNRIG_BISECT_KEEP_KERNELS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or(64)
}

/// Removes the least recently used kept kernels in `dir` (by their mark's time: made
/// or last used) until at most `n` are left, never `except` (the one just kept), and
/// any half-kept `.part`; returns how many went. Runs under the build lock.
pub fn prune_kept(dir: &Path, n: usize, except: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != except && p.extension().is_none())
        .filter_map(|p| {
            let t = std::fs::metadata(p.join(KEPT)).ok()?.modified().ok()?;
            Some((t, p))
        })
        .collect();
    // `except` counts towards n.
    let room = n.saturating_sub(1);
    if kept.len() <= room {
        return 0;
    }
    kept.sort();
    let extra = kept.len() - room;
    kept.into_iter()
        .take(extra)
        .filter(|(_, p)| std::fs::remove_dir_all(p).is_ok())
        .count()
}

/// A process (other than this one) whose working directory is `dir` or below it: git
/// runs with `-C dir`, make in the tree.
fn process_in(dir: &Path) -> Option<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
        (pid != me && cwd.starts_with(dir)).then_some(pid)
    })
}

/// The files a boot needs, out of the tree into `kept` (laid out as in a tree).
fn keep(tree: &Path, kept: &Path, info: &KernelBuild) -> Result<(), String> {
    let part = kept.with_extension("part");
    let _ = std::fs::remove_dir_all(&part);
    for f in [
        "arch/x86/boot/bzImage",
        "vmlinux",
        "include/config/kernel.release",
        "modules.builtin",
    ] {
        let to = part.join(f);
        std::fs::create_dir_all(to.parent().expect("a file in a folder"))
            .map_err(|e| format!("{}: {e}", to.display()))?;
        // Through `open_beneath`: the tree is its user's, the copy root's.
        if let Ok(mut from) = open_beneath(tree, f, false) {
            let mut out = std::fs::File::create(&to).map_err(|e| format!("{f}: {e}"))?;
            std::io::copy(&mut from, &mut out).map_err(|e| format!("{f}: {e}"))?;
        }
    }
    std::fs::write(
        part.join(super::PROVENANCE),
        serde_json::to_string_pretty(info).unwrap_or_default(),
    )
    .map_err(|e| format!("{}: {e}", part.display()))?;
    std::fs::write(part.join(KEPT), b"").map_err(|e| format!("{}: {e}", part.display()))?;
    let _ = std::fs::remove_dir_all(kept);
    std::fs::rename(&part, kept).map_err(|e| format!("{}: {e}", kept.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_in_a_tree_is_found_and_none_once_it_left() {
        let d = std::env::temp_dir().join(format!("xrunrig-settle-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sub")).unwrap();
        let d = std::fs::canonicalize(&d).unwrap();
        let mut c = Command::new("sleep")
            .arg("30")
            .current_dir(d.join("sub"))
            .spawn()
            .unwrap();
        assert_eq!(process_in(&d), Some(c.id()));
        c.kill().unwrap();
        c.wait().unwrap();
        assert_eq!(process_in(&d), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_dead_gits_index_lock_is_removed_when_the_tree_is_opened_again() {
        let d = std::env::temp_dir().join(format!("xrunrig-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let d = std::fs::canonicalize(&d).unwrap();
        git(&d, &["init", "-q"]).unwrap();
        let lock = d.join(".git/index.lock");
        std::fs::write(&lock, b"").unwrap();
        let own = super::super::repo::OwnRepo::open(&d, &d.join(".own")).unwrap();
        let w = Worktree {
            repo: d.clone(),
            own,
            dir: d.clone(),
            log_path: d.join("log"),
            patches: vec![],
            started_from: None,
        };
        w.settle().unwrap();
        assert!(!lock.exists());
        // Git works in the tree again.
        git(&d, &["add", "-A"]).unwrap();
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The least recently used kept kernels go first, the one just kept never, and a
    /// directory without the mark (not a kept kernel) is left alone.
    #[test]
    fn kept_kernels_are_pruned_least_recently_used_first() {
        let d = crate::testkit::private_dir("prune-kept");
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(1000);
        for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            std::fs::create_dir_all(d.join(name)).unwrap();
            let f = std::fs::File::create(d.join(name).join(KEPT)).unwrap();
            // b is the oldest, then a (used since), c, d, e.
            let age = match *name {
                "a" => 30,
                "b" => 0,
                _ => 10 * (i as u64 + 1) + 30,
            };
            f.set_modified(t0 + std::time::Duration::from_secs(age))
                .unwrap();
        }
        std::fs::create_dir_all(d.join("other")).unwrap();
        let gone = prune_kept(&d, 3, &d.join("e"));
        assert_eq!(gone, 2);
        let left: Vec<bool> = ["a", "b", "c", "d", "e", "other"]
            .iter()
            .map(|n| d.join(n).exists())
            .collect();
        assert_eq!(left, [false, false, true, true, true, true]);
        assert_eq!(prune_kept(&d, 3, &d.join("e")), 0);
    }

    /// Root reads and writes a user's build tree only through `open_beneath`: a link
    /// anywhere on the way, a path out of the tree or something not a regular file is
    /// refused.
    #[test]
    fn open_beneath_refuses_links_escapes_and_fifos() {
        let d = crate::testkit::private_dir("open-beneath");
        std::fs::create_dir_all(d.join("arch/x86")).unwrap();
        std::fs::write(d.join("arch/x86/bzImage"), b"kernel").unwrap();
        let outside = d.with_extension("secret");
        std::fs::write(&outside, b"secret").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("vmlinux")).unwrap();
        std::os::unix::fs::symlink(d.join("arch"), d.join("linked")).unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(
            &mut open_beneath(&d, "arch/x86/bzImage", false).unwrap(),
            &mut s,
        )
        .unwrap();
        assert_eq!(s, "kernel");
        assert!(
            open_beneath(&d, "vmlinux", false).is_err(),
            "a link at the end"
        );
        assert!(
            open_beneath(&d, "linked/x86/bzImage", false).is_err(),
            "a link on the way"
        );
        assert!(
            open_beneath(&d, "../open-beneath.secret", false).is_err(),
            "out of the tree"
        );
        assert!(
            open_beneath(&d, "vmlinux", true).is_err(),
            "no write through a link"
        );
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
        let fifo = std::ffi::CString::new(d.join("fifo").display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(
            open_beneath(&d, "fifo", false).is_err(),
            "a FIFO would hang root"
        );
        let mut w = open_beneath(&d, "new.config", true).unwrap();
        std::io::Write::write_all(&mut w, b"x").unwrap();
        assert_eq!(std::fs::read(d.join("new.config")).unwrap(), b"x");
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_file(&outside);
    }

    #[test]
    fn reads_the_makefile_version() {
        let mk = "# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\nEXTRAVERSION =\nNAME = Baby Opossum Posse\n";
        assert_eq!(makefile_version(mk).as_deref(), Some("6.12.118"));
        assert_eq!(makefile_version("VERSION = 6\n"), None);
    }
}
