//! Where a report's or a comparison's files go: plots and texts written into one
//! directory, every text through the redactor, each file listed as written. Below both
//! `report` and `export` (and `compare`), so none of them reaches back into another.
//!
//! Nothing is written through a link. A results directory can come from someone else
//! (attached to a bug report) and root runs `xrunrig report` on it: a `report.txt` or an
//! `export/` that is a symbolic link must not make root overwrite what it points to.
//! So the output directory is opened once without following a link, every
//! subdirectory and file under it is reached from that descriptor (`openat` with
//! `O_NOFOLLOW`), a link where a file or directory is to go is refused by name, and
//! each file is written to a new temporary name (`O_EXCL`) and renamed into place, so a
//! hard link to a file elsewhere is replaced, never written into.

use crate::plot::{self, Plot};
use crate::redact::Redactor;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The output directory and what has been written into it.
pub struct Ctx {
    pub dir: PathBuf,
    pub out: OutDir,
    pub red: Redactor,
    pub rig: String,
    /// Files written, relative to `dir` (plots as they are rendered: `flush` writes them).
    pub files: Vec<String>,
    /// Plots rendered and not yet written, so building a document writes nothing.
    pending: Vec<(String, Vec<u8>)>,
}

impl Ctx {
    /// The context writing into `dir` (which must exist and not be a link).
    pub fn new(dir: &Path, red: Redactor, rig: String) -> Result<Ctx, String> {
        Ok(Ctx {
            dir: dir.to_path_buf(),
            out: OutDir::open(dir)?,
            red,
            rig,
            files: vec![],
            pending: vec![],
        })
    }
    /// Renders `p` as `rel`.png and `rel`.svg, written by the next `flush`.
    pub fn save(&mut self, p: &impl Plot, rel: &str) -> Result<(), String> {
        let (png, svg) = plot::render(p)?;
        let svg = self.red.apply(&svg).into_bytes();
        for (name, bytes) in [(format!("{rel}.png"), png), (format!("{rel}.svg"), svg)] {
            self.files.push(name.clone());
            self.pending.push((name, bytes));
        }
        Ok(())
    }
    /// Writes the plots rendered since the last flush (their folder made if missing).
    pub fn flush(&mut self) -> Result<(), String> {
        for (rel, bytes) in std::mem::take(&mut self.pending) {
            if let Some((folder, _)) = rel.rsplit_once('/') {
                self.mkdir(folder)?;
            }
            self.out.write(&rel, &bytes)?;
        }
        Ok(())
    }
    pub fn write(&mut self, rel: &str, text: &str) -> Result<(), String> {
        self.out.write(rel, self.red.apply(text).as_bytes())?;
        self.files.push(rel.to_string());
        Ok(())
    }
    /// A subdirectory (`plots`, `export`), created if missing.
    pub fn mkdir(&self, rel: &str) -> Result<(), String> {
        self.out.subdir(rel, true).map(drop)
    }
}

/// A directory opened once, without following a link; everything under it is created
/// through its descriptor.
pub struct OutDir {
    path: PathBuf,
    fd: OwnedFd,
}

fn cstr(s: &[u8], shown: &Path) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{}: a name with a NUL byte", shown.display()))
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Whether `name` in `dirfd` is a symbolic link (not followed).
fn is_link(dirfd: i32, name: &CString) -> bool {
    // SAFETY: st is plain data filled by fstatat; name is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dirfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// A refusal naming the link and where it points.
fn refuse_link(dirfd: i32, name: &CString, shown: &Path) -> String {
    let mut buf = [0u8; 4096];
    // SAFETY: buf is valid for buf.len() bytes; name is NUL-terminated.
    let n =
        unsafe { libc::readlinkat(dirfd, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len() - 1) };
    let to = if n > 0 {
        format!(" (to {})", String::from_utf8_lossy(&buf[..n as usize]))
    } else {
        String::new()
    };
    format!(
        "refusing to write through {}: it is a symbolic link{to}; report, compare and \
         export never write through a link (it could point at a file this user must not \
         overwrite); remove the link (rm {}) or give another output directory, and run again",
        shown.display(),
        shown.display()
    )
}

impl OutDir {
    /// Opens `path`, which must be a directory and not a symbolic link.
    pub fn open(path: &Path) -> Result<OutDir, String> {
        let c = cstr(path.as_os_str().as_bytes(), path)?;
        // SAFETY: c is NUL-terminated; the flags open a directory read-only.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = errno();
            // O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR (ELOOP without
            // O_DIRECTORY): ask what the name is.
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "refusing to write into {}: it is a symbolic link; give the directory \
                     itself (e.g. {}), so nothing is written through a link",
                    path.display(),
                    std::fs::canonicalize(path)
                        .map_or_else(|_| "its real path".into(), |p| p.display().to_string())
                ));
            }
            return Err(format!("cannot open {}: {e}", path.display()));
        }
        Ok(OutDir {
            path: path.to_path_buf(),
            // SAFETY: fd was just opened and is owned by nobody else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// The directory `rel` (components separated by `/`) under this one, each component
    /// opened without following a link; created when `create`.
    fn subdir(&self, rel: &str, create: bool) -> Result<OwnedFd, String> {
        // SAFETY: dup of a descriptor we own.
        let first = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if first < 0 {
            return Err(format!("cannot open {}: {}", self.path.display(), errno()));
        }
        // SAFETY: first was just duplicated and is owned by nobody else.
        let mut cur = unsafe { OwnedFd::from_raw_fd(first) };
        let mut shown = self.path.clone();
        for comp in rel.split('/').filter(|c| !c.is_empty() && *c != ".") {
            shown.push(comp);
            if comp == ".." {
                return Err(format!("{}: '..' in an output path", shown.display()));
            }
            let name = cstr(comp.as_bytes(), &shown)?;
            if create {
                // SAFETY: name is NUL-terminated; cur is an open directory.
                let r = unsafe { libc::mkdirat(cur.as_raw_fd(), name.as_ptr(), 0o777) };
                if r < 0 && errno().raw_os_error() != Some(libc::EEXIST) {
                    return Err(format!("cannot create {}: {}", shown.display(), errno()));
                }
            }
            // SAFETY: as above; O_NOFOLLOW makes a link fail with ELOOP.
            let fd = unsafe {
                libc::openat(
                    cur.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            if fd < 0 {
                let e = errno();
                if is_link(cur.as_raw_fd(), &name) {
                    return Err(refuse_link(cur.as_raw_fd(), &name, &shown));
                }
                return Err(match e.raw_os_error() {
                    Some(libc::ENOTDIR) => format!(
                        "cannot write into {}: it is not a directory; move it away and run again",
                        shown.display()
                    ),
                    _ => format!("cannot open {}: {e}", shown.display()),
                });
            }
            // SAFETY: fd was just opened and is owned by nobody else.
            cur = unsafe { OwnedFd::from_raw_fd(fd) };
        }
        Ok(cur)
    }

    /// A new file at `rel` (its directories must exist), written to a temporary name and
    /// put in place by `OutFile::commit`. A link at `rel` is refused.
    pub fn create(&self, rel: &str) -> Result<OutFile, String> {
        let shown = self.path.join(rel);
        let (parent, base) = rel.rsplit_once('/').unwrap_or(("", rel));
        if base.is_empty() || base == "." || base == ".." {
            return Err(format!("{}: not a file name", shown.display()));
        }
        let dir = self.subdir(parent, false)?;
        let name = cstr(base.as_bytes(), &shown)?;
        // Replacing the link by renaming would not write through it either; refusing
        // tells the user their results directory holds one.
        if is_link(dir.as_raw_fd(), &name) {
            return Err(refuse_link(dir.as_raw_fd(), &name, &shown));
        }
        let tmp = cstr(
            format!(".{base}.tmp-{}", std::process::id()).as_bytes(),
            &shown,
        )?;
        let open = || {
            // SAFETY: tmp is NUL-terminated; O_EXCL|O_NOFOLLOW never opens an existing
            // file or a link.
            unsafe {
                libc::openat(
                    dir.as_raw_fd(),
                    tmp.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o666 as libc::c_uint,
                )
            }
        };
        let mut fd = open();
        if fd < 0 && errno().raw_os_error() == Some(libc::EEXIST) {
            // A leftover of a killed run with this pid (or something planted): remove
            // the name itself (unlinkat never follows a link) and create it anew.
            // SAFETY: as above.
            unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
            fd = open();
        }
        if fd < 0 {
            return Err(format!("cannot write {}: {}", shown.display(), errno()));
        }
        Ok(OutFile {
            // SAFETY: fd was just opened and is owned by nobody else.
            file: Some(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) })),
            dir,
            tmp,
            name,
            shown,
        })
    }

    /// Writes `bytes` as the file `rel`, whole.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
        let mut f = self.create(rel)?;
        f.write_all(bytes)
            .map_err(|e| format!("cannot write {}: {e}", f.shown.display()))?;
        f.commit()
    }
}

/// A file being written under its temporary name; `commit` renames it into place,
/// dropping it uncommitted removes it.
pub struct OutFile {
    file: Option<std::fs::File>,
    dir: OwnedFd,
    tmp: CString,
    name: CString,
    shown: PathBuf,
}

impl OutFile {
    /// The path it will have, for messages.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Puts the file in place (replacing what had the name, without writing into it).
    pub fn commit(mut self) -> Result<(), String> {
        // No fsync: these files are made again by running the command again.
        drop(self.file.take());
        // SAFETY: both names are NUL-terminated and relative to the same open directory.
        let r = unsafe {
            libc::renameat(
                self.dir.as_raw_fd(),
                self.tmp.as_ptr(),
                self.dir.as_raw_fd(),
                self.name.as_ptr(),
            )
        };
        if r < 0 {
            let e = errno();
            // SAFETY: as above.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.tmp.as_ptr(), 0) };
            return Err(format!("cannot write {}: {e}", self.shown.display()));
        }
        Ok(())
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(f) => f.write(buf),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // SAFETY: as in commit.
            unsafe { libc::unlinkat(self.dir.as_raw_fd(), self.tmp.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("analysis-out-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn writes_files_and_subdirectories() {
        let d = tmp("plain");
        let o = OutDir::open(&d).unwrap();
        o.subdir("export", true).unwrap();
        o.write("export/a.csv", b"x\n").unwrap();
        o.write("report.txt", b"one").unwrap();
        o.write("report.txt", b"two").unwrap();
        assert_eq!(std::fs::read(d.join("export/a.csv")).unwrap(), b"x\n");
        assert_eq!(std::fs::read(d.join("report.txt")).unwrap(), b"two");
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Dropped uncommitted: nothing appears.
        let mut f = o.create("half.txt").unwrap();
        f.write_all(b"x").unwrap();
        drop(f);
        assert!(!d.join("half.txt").exists());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
    }

    #[test]
    fn never_writes_through_a_link() {
        let d = tmp("links");
        let outside = tmp("links-outside");
        let victim = outside.join("shadow");
        std::fs::write(&victim, "root:secret\n").unwrap();
        std::fs::create_dir(d.join("r")).unwrap();
        let r = d.join("r");
        symlink(&victim, r.join("report.txt")).unwrap();
        symlink(&outside, r.join("export")).unwrap();
        let o = OutDir::open(&r).unwrap();
        let e = o.write("report.txt", b"x").unwrap_err();
        assert!(
            e.contains("report.txt") && e.contains("symbolic link") && e.contains("shadow"),
            "{e}"
        );
        let e = o.subdir("export", true).unwrap_err();
        assert!(e.contains("export") && e.contains("symbolic link"), "{e}");
        let e = o.write("export/shadow", b"x").unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        // A hard link is replaced, not written into.
        std::fs::hard_link(&victim, r.join("report.md")).unwrap();
        o.write("report.md", b"new").unwrap();
        assert_eq!(std::fs::read(r.join("report.md")).unwrap(), b"new");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
        // A planted link at the temporary name is removed, not followed.
        symlink(
            &victim,
            r.join(format!(".report.html.tmp-{}", std::process::id())),
        )
        .unwrap();
        o.write("report.html", b"h").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
        // The output directory itself must not be a link.
        symlink(&r, d.join("r-link")).unwrap();
        let e = OutDir::open(&d.join("r-link")).err().unwrap();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    }
}
