//! tracefs for the trace instrument: mounted if it is not (and unmounted only if we
//! mounted it), and all tracing done in a private instance (`instances/xrunrig-PID`),
//! so the top-level tracing state other tools use (tracing_on, buffer size, events,
//! pid filters, clock) is never touched. Removing the instance undoes everything it
//! set. A journal in the state directory, written before the first change, lets the
//! next start (or `xrunrig restore`) clean up after a run killed with SIGKILL.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const DEFAULT_MOUNT: &str = "/sys/kernel/tracing";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    pub version: u32,
    pub pid: u32,
    pub started: String,
    /// The tracefs mount point in use.
    pub root: String,
    /// True when this run mounted tracefs there (and so must unmount it).
    pub mounted_by_us: bool,
    /// The instance directory this run created.
    pub instance: String,
}

pub fn journal_path() -> PathBuf {
    crate::knobs::state_dir().join("trace-journal.json")
}

/// The journal of the session in progress, for `emergency_restore`.
static ACTIVE: Mutex<Option<Journal>> = Mutex::new(None);

/// Where tracefs is mounted now, from /proc/mounts.
pub fn mounted_at() -> Option<PathBuf> {
    let m = std::fs::read_to_string("/proc/mounts").ok()?;
    let mut found: Vec<PathBuf> = m
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "tracefs").then(|| PathBuf::from(f[1]))
        })
        .collect();
    // Prefer the canonical place when it is mounted several times.
    found.sort_by_key(|p| p != Path::new(DEFAULT_MOUNT));
    found.into_iter().next()
}

fn write_journal(path: &Path, j: &Journal) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_string_pretty(j).unwrap_or_default())?;
    if let Ok(f) = std::fs::File::open(&tmp) {
        let _ = f.sync_all();
    }
    std::fs::rename(&tmp, path)
}

pub fn write_file(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("cannot write '{value}' to {}: {e}", path.display()))
}

fn mount_tracefs(at: &Path) -> Result<(), String> {
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let target = c(&at.display().to_string());
    let (src, fs) = (c("none"), c("tracefs"));
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
    let t = std::ffi::CString::new(at.display().to_string()).unwrap_or_default();
    // SAFETY: valid NUL-terminated path.
    if unsafe { libc::umount2(t.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot unmount tracefs at {}: {}",
            at.display(),
            std::io::Error::last_os_error()
        ))
    }
}

/// Turns an instance off and removes it; then unmounts tracefs if the journal says
/// this run mounted it. One line per thing done.
fn undo(j: &Journal) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    let inst = Path::new(&j.instance);
    if inst.is_dir() {
        // Removing the instance frees its buffer and drops its events and filters;
        // switching it off first stops new events while it goes.
        let _ = std::fs::write(inst.join("tracing_on"), "0");
        let _ = std::fs::write(inst.join("events/enable"), "0");
        std::fs::remove_dir(inst)
            .map_err(|e| format!("cannot remove the trace instance {}: {e}", inst.display()))?;
        lines.push(format!("trace instance {} removed", inst.display()));
    }
    if j.mounted_by_us && mounted_at().as_deref() == Some(Path::new(&j.root)) {
        umount(Path::new(&j.root))?;
        lines.push(format!(
            "tracefs at {} unmounted (this run had mounted it)",
            j.root
        ));
    }
    Ok(lines)
}

/// The journal's run, if it is another xrunrig process still alive.
fn live_owner() -> Option<Journal> {
    let text = std::fs::read_to_string(journal_path()).ok()?;
    let j: Journal = serde_json::from_str(&text).ok()?;
    (j.pid != std::process::id() && crate::sys::pid_is_xrunrig(j.pid)).then_some(j)
}

/// Cleans up after a run that could not: the journal's instance and mount, and any
/// `xrunrig-PID` instance whose run is gone. Leaves a live run's state alone (and
/// returns nothing for it). Call it at start (before any rig runs) and from
/// `xrunrig restore`.
pub fn recover() -> Result<Vec<String>, String> {
    let path = journal_path();
    if live_owner().is_some() {
        return Ok(vec![]);
    }
    let mut lines = Vec::new();
    if let Ok(text) = std::fs::read_to_string(&path) {
        let j: Journal = serde_json::from_str(&text).map_err(|e| {
            format!(
                "trace journal {} is damaged ({e}): it reads\n{text}\nRemove the instance it names (rmdir), unmount tracefs if it says mounted_by_us, then delete the file",
                path.display()
            )
        })?;
        lines.extend(undo(&j).map_err(|e| {
            format!(
                "{e}; the journal {} is kept so the next start tries again",
                path.display()
            )
        })?);
        let _ = std::fs::remove_file(&path);
    }
    // Instances of runs that died without their journal (e.g. a state dir that changed).
    if let Some(root) = mounted_at()
        && let Ok(rd) = std::fs::read_dir(root.join("instances"))
    {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = n
                .strip_prefix("xrunrig-")
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !crate::sys::pid_is_xrunrig(pid) {
                let j = Journal {
                    version: 1,
                    pid,
                    started: String::new(),
                    root: root.display().to_string(),
                    mounted_by_us: false,
                    instance: e.path().display().to_string(),
                };
                lines.extend(undo(&j)?);
            }
        }
    }
    Ok(lines)
}

/// The emergency path (watchdog, second signal): undo the active session now.
pub fn emergency_restore() {
    let j = ACTIVE.lock().ok().and_then(|g| g.clone());
    if let Some(j) = j {
        match undo(&j) {
            Ok(lines) => {
                let _ = std::fs::remove_file(journal_path());
                for l in lines {
                    eprintln!("xrunrig: {l}");
                }
            }
            Err(e) => eprintln!("xrunrig: {e}"),
        }
    }
}

/// A run's tracing instance. Dropping it removes the instance (and unmounts tracefs if
/// it mounted it).
pub struct Session {
    pub root: PathBuf,
    pub instance: PathBuf,
    pub mounted_by_us: bool,
    journal: Journal,
    active: bool,
}

impl Session {
    /// Mounts tracefs if needed, creates the instance with `buffer_kb` per CPU and the
    /// `mono` clock (CLOCK_MONOTONIC, the clock of the rig's marks), tracing off.
    pub fn begin(buffer_kb: u32) -> Result<Session, String> {
        if let Some(j) = live_owner() {
            return Err(format!(
                "another xrunrig run (pid {}, started {}) is tracing (journal {}); wait for it or stop it (kill -INT {}) first",
                j.pid,
                j.started,
                journal_path().display(),
                j.pid
            ));
        }
        for l in recover()? {
            eprintln!("xrunrig: a previous run left tracing state behind; restored: {l}");
        }
        let (root, mounted_by_us) = match mounted_at() {
            Some(r) => (r, false),
            None => (PathBuf::from(DEFAULT_MOUNT), true),
        };
        let pid = std::process::id();
        let instance = root.join("instances").join(format!("xrunrig-{pid}"));
        let journal = Journal {
            version: 1,
            pid,
            started: crate::sys::utc_now().0,
            root: root.display().to_string(),
            mounted_by_us,
            instance: instance.display().to_string(),
        };
        // On disk before the first change, so a SIGKILL at any later point is undone.
        write_journal(&journal_path(), &journal).map_err(|e| {
            format!(
                "cannot write the trace journal {}: {e} (set XRUNRIG_STATE_DIR to a writable directory)",
                journal_path().display()
            )
        })?;
        if let Ok(mut g) = ACTIVE.lock() {
            *g = Some(journal.clone());
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
        let _ = std::fs::remove_file(journal_path());
        if let Ok(mut g) = ACTIVE.lock() {
            *g = None;
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
