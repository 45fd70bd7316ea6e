//! The state directory (the knob journal, the run lock), checked and opened once.
//!
//! Root replays the journal kept there, so for root the directory and every directory
//! above it must be root's and writable by nobody else: whoever could write one of them
//! could swap the journal, or the directory itself, for their own and make root write
//! anywhere. A parent that others may write is accepted only with the sticky bit (as
//! /tmp has it), where nobody but root can rename or remove a root-owned entry. The
//! path is walked from `/` one component at a time without following links (a link is
//! followed only when root owns it), each directory checked through the descriptor
//! that was opened, and every later use goes through the final descriptor (`openat`),
//! never through the path again: a directory swapped after the check is not used.

use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// An opened, checked state directory. Clones share the descriptor.
#[derive(Debug, Clone)]
pub struct StateDir {
    path: PathBuf,
    fd: Arc<OwnedFd>,
}

fn cname(name: &str) -> std::io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(std::io::Error::other(format!(
            "{name:?} is not a file name"
        )));
    }
    CString::new(name).map_err(std::io::Error::other)
}

fn last() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn fd_or_err(fd: i32) -> std::io::Result<OwnedFd> {
    if fd < 0 {
        Err(last())
    } else {
        // SAFETY: fd was just returned by the kernel and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

fn fstat(fd: i32) -> std::io::Result<libc::stat> {
    // SAFETY: st is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Err(last());
    }
    Ok(st)
}

fn lstat_at(dirfd: i32, name: &CString) -> std::io::Result<libc::stat> {
    // SAFETY: as in fstat; name is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatat(dirfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } < 0 {
        return Err(last());
    }
    Ok(st)
}

const DIR_FLAGS: i32 = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

/// Links followed in one walk, as the kernel's own limit.
const MAX_LINKS: u32 = 40;

/// Why a directory on the way is not safe for root's journal, or None.
fn unsafe_dir(st: &libc::stat, last: bool) -> Option<String> {
    if st.st_uid != 0 {
        return Some(format!("it is owned by uid {}", st.st_uid));
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o022 != 0 && (last || mode & libc::S_ISVTX == 0) {
        return Some(format!(
            "its mode is {mode:o}: group or others can write it{}",
            if last { "" } else { " (and it is not sticky)" }
        ));
    }
    None
}

impl StateDir {
    /// Opens `path`, creating it (0700, with missing parents) when missing. With
    /// `root_checks`, the walk described above; without (a user's own state directory),
    /// the directory is opened as named.
    pub fn open(path: &Path, root_checks: bool) -> Result<StateDir, String> {
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?
                .join(path)
        };
        if std::fs::symlink_metadata(&abs).is_err() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&abs)
                .map_err(|e| {
                    format!("cannot create the state directory {}: {e}", path.display())
                })?;
        }
        let fd = if root_checks {
            walk_checked(&abs).map_err(|why| {
                format!(
                    "the state directory {} is refused for root: {why}. Root restores the \
                     settings journal kept there, so whoever can write it or a directory \
                     above it could make root write anywhere. Use a directory owned by root \
                     that only root can write, under directories only root can write (e.g. \
                     `install -d -m 0700 -o root /var/lib/xrunrig-test`), or unset \
                     XRUNRIG_STATE_DIR to use /var/lib/xrunrig",
                    path.display()
                )
            })?
        } else {
            let c = CString::new(abs.as_os_str().as_bytes())
                .map_err(|_| format!("{}: a name with a NUL byte", path.display()))?;
            // SAFETY: c is NUL-terminated.
            fd_or_err(unsafe {
                libc::open(
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            })
            .map_err(|e| format!("cannot open the state directory {}: {e}", path.display()))?
        };
        Ok(StateDir {
            path: path.to_path_buf(),
            fd: Arc::new(fd),
        })
    }

    /// The path as named, for messages only: nothing is opened through it again.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A file's path, for messages only.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether two handles are the same directory (device and inode).
    pub fn same(&self, other: &StateDir) -> bool {
        match (fstat(self.fd.as_raw_fd()), fstat(other.fd.as_raw_fd())) {
            (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
            _ => false,
        }
    }

    fn openat(&self, name: &str, flags: i32, mode: libc::c_uint) -> std::io::Result<File> {
        let c = cname(name)?;
        // SAFETY: c is NUL-terminated; the descriptor is an open directory.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode,
            )
        };
        fd_or_err(fd).map(File::from)
    }

    /// Whether `name` exists (a link counts: it is not followed).
    pub fn exists(&self, name: &str) -> bool {
        cname(name).is_ok_and(|c| lstat_at(self.fd.as_raw_fd(), &c).is_ok())
    }

    /// The file's bytes, None when it does not exist; a link is an error (ELOOP).
    pub fn read(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        use std::io::Read;
        match self.openat(name, libc::O_RDONLY, 0) {
            Ok(mut f) => {
                let mut b = Vec::new();
                f.read_to_end(&mut b)?;
                Ok(Some(b))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens (creating, 0600) a file for the run lock.
    pub fn open_rw(&self, name: &str) -> std::io::Result<File> {
        self.openat(name, libc::O_RDWR | libc::O_CREAT, 0o600)
    }

    /// Writes `name` whole or not at all: a new temporary file (never an existing file
    /// or a link), fsync, rename over `name`, fsync the directory.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> std::io::Result<()> {
        let c = cname(name)?;
        let tmp = format!(".{name}.tmp-{}", std::process::id());
        let ct = cname(&tmp)?;
        let dirfd = self.fd.as_raw_fd();
        let create = || self.openat(&tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600);
        let f = match create() {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                // A killed run's leftover with this pid: the name itself goes.
                // SAFETY: ct is NUL-terminated; unlinkat does not follow links.
                unsafe { libc::unlinkat(dirfd, ct.as_ptr(), 0) };
                create()
            }
            r => r,
        };
        let r = f.and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()?;
            // SAFETY: both names are NUL-terminated, relative to the same directory.
            if unsafe { libc::renameat(dirfd, ct.as_ptr(), dirfd, c.as_ptr()) } < 0 {
                return Err(last());
            }
            Ok(())
        });
        if r.is_err() {
            // SAFETY: as above.
            unsafe { libc::unlinkat(dirfd, ct.as_ptr(), 0) };
        }
        r?;
        self.sync();
        Ok(())
    }

    /// The names of the directory's entries, read through the checked descriptor.
    pub fn names(&self) -> Vec<String> {
        // /proc/self/fd/N is the opened directory itself, not the path again.
        let Ok(rd) = std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd())) else {
            return vec![];
        };
        let mut v: Vec<String> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        v.sort();
        v
    }

    /// Removes `name` (a link itself, never what it points to).
    pub fn remove(&self, name: &str) -> std::io::Result<()> {
        let c = cname(name)?;
        // SAFETY: c is NUL-terminated.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } < 0 {
            return Err(last());
        }
        self.sync();
        Ok(())
    }

    /// fsync the directory, so a rename or removal survives a crash (best effort).
    fn sync(&self) {
        // SAFETY: fsync on a descriptor we own.
        unsafe { libc::fsync(self.fd.as_raw_fd()) };
    }
}

/// Walks `abs` from `/`, checking every directory on the way (see the module comment).
fn walk_checked(abs: &Path) -> Result<OwnedFd, String> {
    let root = || {
        // SAFETY: a constant NUL-terminated path.
        fd_or_err(unsafe { libc::open(c"/".as_ptr(), DIR_FLAGS) })
            .map_err(|e| format!("cannot open /: {e}"))
    };
    // Components still to walk, last first (so a link's target is pushed in front).
    let mut todo: Vec<String> = vec![];
    let push = |todo: &mut Vec<String>, p: &Path| {
        let comps: Vec<String> = p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        todo.extend(comps.into_iter().rev());
    };
    push(&mut todo, abs);
    let mut cur = root()?;
    let mut shown = PathBuf::from("/");
    let mut links = 0;
    let check = |fd: &OwnedFd, shown: &Path, last: bool| -> Result<(), String> {
        let st =
            fstat(fd.as_raw_fd()).map_err(|e| format!("cannot stat {}: {e}", shown.display()))?;
        match unsafe_dir(&st, last) {
            Some(why) => Err(format!("{}: {why}", shown.display())),
            None => Ok(()),
        }
    };
    check(&cur, &shown, todo.is_empty())?;
    while let Some(comp) = todo.pop() {
        let c = CString::new(comp.as_bytes()).map_err(|_| "a name with a NUL byte".to_string())?;
        // SAFETY: c is NUL-terminated; cur is an open directory.
        let opened = fd_or_err(unsafe { libc::openat(cur.as_raw_fd(), c.as_ptr(), DIR_FLAGS) });
        let st = lstat_at(cur.as_raw_fd(), &c);
        let next = shown.join(&comp);
        match (opened, st) {
            (Ok(fd), _) => {
                shown = next;
                check(&fd, &shown, todo.is_empty())?;
                cur = fd;
            }
            (Err(_), Ok(st)) if st.st_mode & libc::S_IFMT == libc::S_IFLNK => {
                // The link sits in a directory already checked; only root's is followed.
                if st.st_uid != 0 {
                    return Err(format!(
                        "{} is a symbolic link owned by uid {}",
                        next.display(),
                        st.st_uid
                    ));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(format!("{}: too many symbolic links", next.display()));
                }
                let mut buf = vec![0u8; libc::PATH_MAX as usize];
                // SAFETY: buf is valid for its length; c is NUL-terminated.
                let n = unsafe {
                    libc::readlinkat(
                        cur.as_raw_fd(),
                        c.as_ptr(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                    )
                };
                if n < 0 {
                    return Err(format!(
                        "cannot read the link {}: {}",
                        next.display(),
                        last()
                    ));
                }
                buf.truncate(n as usize);
                let target = PathBuf::from(std::ffi::OsStr::from_bytes(&buf));
                push(&mut todo, &target);
                if target.is_absolute() {
                    cur = root()?;
                    shown = PathBuf::from("/");
                    check(&cur, &shown, todo.is_empty())?;
                }
            }
            (Err(e), _) => return Err(format!("cannot open {}: {e}", next.display())),
        }
    }
    Ok(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn parents_are_checked_for_root() {
        assert!(
            crate::sys::is_root(),
            "this test checks root's refusals: run it as root"
        );
        let top = crate::testkit::private_dir("state-parents");
        let parent = top.join("parent");
        let state = parent.join("state");
        std::fs::create_dir_all(&state).unwrap();
        chmod(&parent, 0o755);
        chmod(&state, 0o700);
        let d = StateDir::open(&state, true).unwrap();
        d.write_atomic("journal.json", b"{}").unwrap();
        // A group-writable parent: its group could rename state/ away and put its own
        // in its place.
        chmod(&parent, 0o775);
        let e = StateDir::open(&state, true).unwrap_err();
        assert!(
            e.contains(&format!("{}: its mode is 775", parent.display())),
            "{e}"
        );
        // Sticky, as /tmp: accepted (only root can rename a root-owned entry).
        chmod(&parent, 0o1777);
        StateDir::open(&state, true).unwrap();
        // The directory itself may never be writable by others, sticky or not.
        chmod(&state, 0o1777);
        assert!(StateDir::open(&state, true).unwrap_err().contains("1777"));
        chmod(&state, 0o700);
        chmod(&parent, 0o755);
        // A link to it: root's is followed, anyone else's refused.
        let link = top.join("link");
        std::os::unix::fs::symlink(&state, &link).unwrap();
        let d2 = StateDir::open(&link, true).unwrap();
        assert!(d2.same(&d));
        let c = CString::new(link.as_os_str().as_bytes()).unwrap();
        // SAFETY: lchown of our own temp link.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 1000, 1000) }, 0);
        let e = StateDir::open(&link, true).unwrap_err();
        assert!(e.contains("symbolic link owned by uid 1000"), "{e}");
        // A parent owned by another user.
        let c = CString::new(parent.as_os_str().as_bytes()).unwrap();
        // SAFETY: chown of our own temp dir.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 1000, 1000) }, 0);
        let e = StateDir::open(&state, true).unwrap_err();
        assert!(e.contains("owned by uid 1000"), "{e}");
    }

    #[test]
    fn a_directory_swapped_after_the_check_is_not_used() {
        let top = crate::testkit::private_dir("state-swap");
        let state = top.join("state");
        std::fs::create_dir(&state).unwrap();
        let d = StateDir::open(&state, crate::sys::is_root()).unwrap();
        // Swapped for another directory (as someone able to write the parent could).
        std::fs::rename(&state, top.join("old")).unwrap();
        let other = top.join("other");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(&other, &state).unwrap();
        d.write_atomic("journal.json", b"j").unwrap();
        assert!(!other.join("journal.json").exists());
        assert_eq!(std::fs::read(top.join("old/journal.json")).unwrap(), b"j");
        assert_eq!(d.read("journal.json").unwrap().unwrap(), b"j");
        // Files are never opened through a link inside it either.
        std::os::unix::fs::symlink(other.join("x"), top.join("old/run.lock")).unwrap();
        assert!(d.open_rw("run.lock").is_err());
        assert!(!other.join("x").exists());
        d.remove("journal.json").unwrap();
        assert!(!d.exists("journal.json"));
        assert!(d.read("journal.json").unwrap().is_none());
    }
}
