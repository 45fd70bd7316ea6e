//! tracefs for the trace instrument and `xrunrig watch`: mounted if it is not (and
//! unmounted only if we mounted it, in this boot), and all tracing done in a private
//! instance (`instances/xrunrig-PID`), so the top-level tracing state other tools use
//! (tracing_on, buffer size, events, pid filters, clock) is never touched. Removing the
//! instance undoes everything it set. A journal in the state directory
//! (`trace-journal-PID.json`), written before the first change, lets the next start (or
//! `xrunrig restore`) clean up after a process killed with SIGKILL; it is read back as
//! untrusted input (`trace_journal::check`), and undone through file descriptors that
//! are checked to be on tracefs, never through a path that could be a link.

use super::trace_journal::{self, Journal, Plan};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";
/// statfs(2)'s f_type of a tracefs.
const TRACEFS_MAGIC: i64 = 0x7472_6163;

/// This process's journal.
pub fn journal_path() -> PathBuf {
    crate::knobs::state_dir().join(journal_name(std::process::id()))
}

fn journal_name(pid: u32) -> String {
    format!("{}-{pid}.json", trace_journal::PREFIX)
}

/// The state directory the journals live in, checked as the knob journal's is
/// (`knobs::state`): every read, write and removal goes through its descriptor.
fn state() -> Result<crate::knobs::StateDir, String> {
    crate::knobs::state()
}

/// The journals in the state directory (their names), this process's excluded.
fn journal_files(dir: &crate::knobs::StateDir) -> Vec<String> {
    let own = journal_name(std::process::id());
    dir.names()
        .into_iter()
        .filter(|n| trace_journal::is_journal_name(n) && *n != own)
        .collect()
}

/// The sessions in progress in this process, for `emergency_restore`.
static ACTIVE: Mutex<Vec<Journal>> = Mutex::new(Vec::new());

/// Every tracefs mount point, from /proc/mounts, the canonical place first.
pub fn mount_points() -> Vec<PathBuf> {
    let Ok(m) = std::fs::read_to_string("/proc/mounts") else {
        return vec![];
    };
    let mut found: Vec<PathBuf> = m
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
        })
        .collect();
    found.sort_by_key(|p| p != Path::new(DEFAULT_MOUNT));
    found.dedup();
    found
}

/// Where tracefs is mounted now (the canonical place when it is mounted several times).
pub fn mounted_at() -> Option<PathBuf> {
    mount_points().into_iter().next()
}

fn write_journal(dir: &crate::knobs::StateDir, j: &Journal) -> std::io::Result<()> {
    dir.write_atomic(
        &journal_name(j.pid),
        serde_json::to_string_pretty(j)
            .unwrap_or_default()
            .as_bytes(),
    )
}

pub fn write_file(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("cannot write '{value}' to {}: {e}", path.display()))
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn mount_tracefs(at: &Path) -> Result<(), String> {
    let target = cstr(&at.display().to_string());
    let (src, fs) = (cstr("none"), cstr("tracefs"));
    // SAFETY: valid NUL-terminated strings; no mount data.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fs.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "tracefs is not mounted and mounting it at {} failed: {} (run as root, or mount it: mount -t tracefs none {})",
            at.display(),
            std::io::Error::last_os_error(),
            at.display()
        ))
    }
}

fn umount(at: &Path) -> Result<(), String> {
    let t = cstr(&at.display().to_string());
    // SAFETY: valid NUL-terminated path. UMOUNT_NOFOLLOW: the mount point itself, not
    // where a link there would lead.
    if unsafe { libc::umount2(t.as_ptr(), libc::UMOUNT_NOFOLLOW) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot unmount tracefs at {}: {}",
            at.display(),
            std::io::Error::last_os_error()
        ))
    }
}

/// `name` under the tracefs directory `dir`, opened with `openat2`: no link followed
/// anywhere on the way (RESOLVE_NO_SYMLINKS), nothing outside `dir` (RESOLVE_BENEATH),
/// and no other file system mounted over a part of it (RESOLVE_NO_XDEV). O_NOFOLLOW
/// alone guards only the last component, and crosses a mount (a file bind-mounted over
/// `tracing_on` would be written in place of it).
fn open_under(dir: &OwnedFd, name: &str, flags: i32) -> std::io::Result<OwnedFd> {
    let c = cstr(name);
    // SAFETY: open_how is plain data; zeroed is valid.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_XDEV;
    // SAFETY: valid fd, NUL-terminated path and a live open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// What a refused open under tracefs says: a mount crossed or a link met is named as
/// not being tracefs, which is what it means here.
fn open_error(path: &Path, e: std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EXDEV) => format!(
            "{} is not on a tracefs (another file system is mounted there)",
            path.display()
        ),
        Some(libc::ELOOP) => format!("{} is not on a tracefs (a link is there)", path.display()),
        _ => format!("cannot open or write {}: {e}", path.display()),
    }
}

/// Opens `path` (when `dir` is None) or `path` under `dir` (`open_under`) as a
/// directory without following a link, and checks it is on a tracefs.
fn open_tracefs_dir(dir: Option<&OwnedFd>, path: &Path) -> Result<OwnedFd, String> {
    let fd = match dir {
        Some(d) => open_under(
            d,
            &path.display().to_string(),
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .map_err(|e| open_error(path, e))?,
        None => {
            let c = cstr(&path.display().to_string());
            let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: valid NUL-terminated path; the fd is owned below.
            let fd = unsafe { libc::open(c.as_ptr(), flags) };
            if fd < 0 {
                return Err(open_error(path, std::io::Error::last_os_error()));
            }
            // SAFETY: a fresh fd we own.
            unsafe { OwnedFd::from_raw_fd(fd) }
        }
    };
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and out-pointer.
    if unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(format!(
            "cannot statfs {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    if st.f_type as i64 != TRACEFS_MAGIC {
        return Err(format!("{} is not on a tracefs", path.display()));
    }
    Ok(fd)
}

/// Writes `value` to `name` inside the tracefs directory `dir` (`open_under`: no link,
/// no mount crossed).
fn write_at(dir: &OwnedFd, name: &str, value: &str) -> std::io::Result<()> {
    let fd = open_under(dir, name, libc::O_WRONLY)?;
    let mut f = std::fs::File::from(fd);
    std::io::Write::write_all(&mut f, value.as_bytes())
}

/// Turns an instance off and removes it; then unmounts tracefs when `unmount`. Every
/// step goes through descriptors checked to be on tracefs. One line per thing done.
fn undo_instance(root: &Path, name: &str, unmount: bool) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    if !trace_journal::instance_name_ok(name) {
        return Err(format!("'{name}' is not an instance xrunrig names"));
    }
    let instances = root.join("instances");
    let inst = instances.join(name);
    if std::fs::symlink_metadata(&inst).is_ok() {
        let dir = open_tracefs_dir(None, &instances)?;
        let idir = open_tracefs_dir(Some(&dir), Path::new(name))?;
        // Removing the instance frees its buffers and drops its events, filters and
        // triggers; switching it off first stops new events while it goes.
        // A write refused (a link, a mount over a control file) means the instance is
        // not what xrunrig made: nothing more is done to it. ENOENT: already going.
        for f in ["tracing_on", "events/enable"] {
            match write_at(&idir, f, "0") {
                Err(e) if e.raw_os_error() != Some(libc::ENOENT) => {
                    return Err(format!(
                        "{}; the trace instance {} was left as it is",
                        open_error(&inst.join(f), e),
                        inst.display()
                    ));
                }
                _ => {}
            }
        }
        drop(idir);
        let c = cstr(name);
        // SAFETY: valid fd and NUL-terminated name.
        if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
            return Err(format!(
                "cannot remove the trace instance {}: {}",
                inst.display(),
                std::io::Error::last_os_error()
            ));
        }
        lines.push(format!("trace instance {} removed", inst.display()));
    }
    if unmount && mount_points().iter().any(|m| m == root) {
        // The last user unmounts: another xrunrig (or any tool) still tracing in an
        // instance of this mount keeps it, and is told nothing is pulled from under it.
        let others: Vec<String> = std::fs::read_dir(&instances)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !others.is_empty() {
            lines.push(format!(
                "tracefs at {} left mounted (this run had mounted it): instances {} still \
                 there",
                root.display(),
                others.join(", ")
            ));
            return Ok(lines);
        }
        umount(root)?;
        lines.push(format!(
            "tracefs at {} unmounted (this run had mounted it)",
            root.display()
        ));
    }
    Ok(lines)
}

fn undo(j: &Journal) -> Result<Vec<String>, String> {
    match trace_journal::check(j, &mount_points(), crate::sys::boot_id().as_deref())? {
        Plan::OtherBoot => Ok(vec![format!(
            "the trace journal of pid {} (started {}) is from before the last reboot, which \
             removed its instance: nothing done",
            j.pid, j.started
        )]),
        Plan::Gone { root } => Ok(vec![format!(
            "the trace journal of pid {} (started {}) names tracefs at {}, which is not mounted \
             now: its instance went with that mount, nothing done",
            j.pid,
            j.started,
            root.display()
        )]),
        Plan::Undo {
            root,
            instance,
            unmount,
        } => undo_instance(&root, &instance, unmount),
    }
}

/// Cleans up after processes that could not: each journal's instance and mount (checked
/// first; a journal that fails the checks is reported, nothing in it touched, and kept
/// for `xrunrig restore --discard`), and any `xrunrig-PID` instance whose process is
/// gone. Leaves live processes' state alone. Call it at start (before any rig runs) and
/// from `xrunrig restore`. Err: journals that were refused or could not be undone.
pub fn recover() -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let mut refused = Vec::new();
    let dir = state()?;
    for name in journal_files(&dir) {
        let path = dir.join(&name);
        let refuse = |e: String| {
            format!(
                "trace journal {} refused: {e}; nothing in it was touched. Drop it with \
                 `xrunrig restore --discard {}`",
                path.display(),
                path.display()
            )
        };
        let text = match read_capped(&dir, &name) {
            Ok(t) => t,
            Err(e) => {
                refused.push(format!("trace journal {}: {e}", path.display()));
                continue;
            }
        };
        let j = match trace_journal::parse(&text) {
            Ok(j) => j,
            Err(e) => {
                refused.push(refuse(e));
                continue;
            }
        };
        // The file's name, the journal's pid and its instance's name say one process:
        // a journal naming a dead pid cannot take a live run's instance with it.
        if name != journal_name(j.pid) && name != format!("{}.json", trace_journal::PREFIX) {
            refused.push(refuse(format!("it says pid {}, its name another", j.pid)));
            continue;
        }
        if j.pid != std::process::id() && crate::sys::pid_is_xrunrig(j.pid) {
            continue; // a live run's
        }
        match undo(&j) {
            Ok(l) => {
                lines.extend(l);
                let _ = dir.remove(&name);
            }
            Err(e) => refused.push(refuse(e)),
        }
    }
    // Instances of processes that died without their journal (a state directory that
    // changed, a journal lost).
    if let Some(root) = mounted_at()
        && let Ok(rd) = std::fs::read_dir(root.join("instances"))
    {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = n
                .strip_prefix("xrunrig-")
                .and_then(|p| p.parse::<u32>().ok())
                .filter(|_| trace_journal::instance_name_ok(&n))
            else {
                continue;
            };
            if pid != std::process::id() && !crate::sys::pid_is_xrunrig(pid) {
                match undo_instance(&root, &n, false) {
                    Ok(l) => lines.extend(l),
                    Err(e) => refused.push(e),
                }
            }
        }
    }
    if refused.is_empty() {
        Ok(lines)
    } else {
        let mut all = lines;
        all.extend(refused);
        Err(all.join("\n"))
    }
}

/// Says what `recover()` did, at a run's start: a refused journal does not stop a run
/// (its own instance has its own name), it is reported until `xrunrig restore` deals
/// with it.
pub fn warn_recovered(r: Result<Vec<String>, String>) {
    match r {
        Ok(lines) => {
            for l in lines {
                eprintln!("xrunrig: a previous run left tracing state behind; restored: {l}");
            }
        }
        Err(e) => eprintln!("xrunrig: warning: {e}"),
    }
}

/// Reads a journal file through the state directory's descriptor (a link is refused),
/// up to the size cap.
fn read_capped(dir: &crate::knobs::StateDir, name: &str) -> Result<String, String> {
    let b = dir
        .read(name)
        .map_err(|e| format!("cannot read it: {e}"))?
        .ok_or("it is gone")?;
    if b.len() > trace_journal::MAX_BYTES {
        return Err(format!(
            "it is {} bytes, more than any trace journal ({})",
            b.len(),
            trace_journal::MAX_BYTES
        ));
    }
    String::from_utf8(b).map_err(|_| "it is not text".to_string())
}

/// `xrunrig restore --discard`: drops every trace journal not of a live process,
/// returning a line for each (what it named, left as it is).
pub fn discard(only: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = state() else {
        return out;
    };
    for name in journal_files(&dir) {
        if only.is_some_and(|n| name != n) {
            continue;
        }
        let text = read_capped(&dir, &name).unwrap_or_default();
        let what = match trace_journal::parse(&text) {
            Ok(j) if crate::sys::pid_is_xrunrig(j.pid) => continue,
            Ok(j) => format!(
                "trace instance {} (tracefs {}, mounted by that run: {})",
                j.instance, j.root, j.mounted_by_us
            ),
            Err(e) => format!("an unreadable trace journal ({e})"),
        };
        if dir.remove(&name).is_ok() {
            out.push(format!("{}: {what}", dir.join(&name).display()));
        }
    }
    out
}

/// The emergency path (watchdog, second signal): undo this process's sessions now.
pub fn emergency_restore() {
    let js = ACTIVE.lock().map(|g| g.clone()).unwrap_or_default();
    for j in js {
        match undo(&j) {
            Ok(lines) => {
                if let Ok(d) = state() {
                    let _ = d.remove(&journal_name(j.pid));
                }
                for l in lines {
                    eprintln!("xrunrig: {l}");
                }
            }
            Err(e) => eprintln!("xrunrig: {e}"),
        }
    }
}

/// A tracing instance. Dropping it removes the instance (and unmounts tracefs if it
/// mounted it).
pub struct Session {
    pub root: PathBuf,
    pub instance: PathBuf,
    pub mounted_by_us: bool,
    journal: Journal,
    active: bool,
}

impl Session {
    /// Mounts tracefs if needed, creates the instance with `buffer_kb` per CPU and the
    /// `mono` clock (CLOCK_MONOTONIC, the clock of the rig's marks), tracing off. One
    /// session per process.
    pub fn begin(buffer_kb: u32) -> Result<Session, String> {
        if ACTIVE.lock().is_ok_and(|g| !g.is_empty()) {
            return Err("this process already has a trace session".into());
        }
        warn_recovered(recover());
        let (root, mounted_by_us) = match mounted_at() {
            Some(r) => (r, false),
            None => (PathBuf::from(DEFAULT_MOUNT), true),
        };
        let pid = std::process::id();
        let instance = root.join("instances").join(format!("xrunrig-{pid}"));
        let journal = Journal {
            version: trace_journal::VERSION,
            pid,
            started: crate::sys::utc_now().0,
            boot_id: crate::sys::boot_id(),
            root: root.display().to_string(),
            mounted_by_us,
            instance: instance.display().to_string(),
        };
        // On disk before the first change, so a SIGKILL at any later point is undone.
        let dir = state()?;
        write_journal(&dir, &journal).map_err(|e| {
            format!(
                "cannot write the trace journal {}: {e} (set XRUNRIG_STATE_DIR to a writable directory)",
                journal_path().display()
            )
        })?;
        if let Ok(mut g) = ACTIVE.lock() {
            g.push(journal.clone());
        }
        let mut s = Session {
            root,
            instance,
            mounted_by_us,
            journal,
            active: true,
        };
        let setup = (|| {
            if s.mounted_by_us {
                mount_tracefs(&s.root)?;
            }
            std::fs::create_dir(&s.instance).map_err(|e| {
                format!(
                    "cannot create the trace instance {}: {e} (tracefs needs root)",
                    s.instance.display()
                )
            })?;
            write_file(&s.instance.join("tracing_on"), "0")?;
            write_file(&s.instance.join("buffer_size_kb"), &buffer_kb.to_string())?;
            write_file(&s.instance.join("trace_clock"), "mono")
        })();
        if let Err(e) = setup {
            let _ = s.end();
            return Err(e);
        }
        Ok(s)
    }

    /// Removes the instance, unmounts what we mounted, deletes the journal.
    pub fn end(&mut self) -> Result<Vec<String>, String> {
        if !self.active {
            return Ok(vec![]);
        }
        let lines = undo(&self.journal)?;
        self.active = false;
        if let Ok(d) = state() {
            let _ = d.remove(&journal_name(self.journal.pid));
        }
        if let Ok(mut g) = ACTIVE.lock() {
            g.clear();
        }
        Ok(lines)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            eprintln!("xrunrig: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that mounted tracefs unmounts it only when no instance is left in it: with
    /// another run's instance still there it says so and leaves the mount; the last one
    /// out unmounts. A mount of the test's own (tracefs mounted again at a private
    /// point shares the instances); root only.
    #[test]
    fn the_last_instance_out_unmounts_and_not_before() {
        if !crate::testkit::root() {
            return;
        }
        let at = crate::testkit::private_dir("tracefs-last-user");
        mount_tracefs(&at).unwrap();
        assert!(mount_points().contains(&at));
        let (a, b) = ("xrunrig-4000000001", "xrunrig-4000000002");
        for n in [a, b] {
            std::fs::create_dir(at.join("instances").join(n)).unwrap();
        }
        let lines = undo_instance(&at, a, true).unwrap();
        assert!(!at.join("instances").join(a).exists(), "{lines:?}");
        assert!(mount_points().contains(&at), "unmounted under b: {lines:?}");
        assert!(
            lines
                .iter()
                .any(|l| l.contains("left mounted") && l.contains(b)),
            "{lines:?}"
        );
        let lines = undo_instance(&at, b, true).unwrap();
        let others: Vec<String> = std::fs::read_dir(at.join("instances"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if others.is_empty() {
            assert!(!mount_points().contains(&at), "the last one out: {lines:?}");
            assert!(lines.iter().any(|l| l.contains("unmounted")), "{lines:?}");
        } else {
            // Some other tool is tracing on this machine: the mount stays, saying whose.
            assert!(mount_points().contains(&at), "{lines:?} {others:?}");
            let _ = umount(&at);
        }
        let _ = std::fs::remove_dir(&at);
    }
}
