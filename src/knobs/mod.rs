//! Kernel knobs: resolving a profile's changes to files, checking before anything is
//! touched that they can be written, applying with read-back, and restoring on every
//! exit path. A journal of original values is on disk before the first write, so a
//! run killed outright is restored by the next start (or `xrunrig restore`).

pub mod journal;
pub mod knob;
pub mod lock;
pub mod profile;
pub mod state;

pub use journal::{Journal, JournalEntry, Recovered, journal_path, parse_journal, recover};
use knob::{FEATURES_PATHS, Knob, KnobIo, KnobKind, RealIo, norm, parse_features};
use profile::{Change, Profile};
pub use state::StateDir;
use std::path::{Path, PathBuf};

/// Where the journal lives: `$XRUNRIG_STATE_DIR`, else /var/lib/xrunrig for root,
/// else `$XDG_STATE_HOME/xrunrig` (~/.local/state/xrunrig).
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XRUNRIG_STATE_DIR") {
        return PathBuf::from(d);
    }
    if crate::sys::is_root() {
        return PathBuf::from("/var/lib/xrunrig");
    }
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("xrunrig")
}

/// The state directory, checked (for root: it and every directory above it root's and
/// writable by nobody else, `state.rs`) and opened once per process; the journal and the
/// run lock are reached through that opened directory, never through the path again.
pub fn state() -> Result<StateDir, String> {
    static STATE: std::sync::Mutex<Option<StateDir>> = std::sync::Mutex::new(None);
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(d) = &*g {
        return Ok(d.clone());
    }
    let d = StateDir::open(&state_dir(), crate::sys::is_root())?;
    *g = Some(d.clone());
    Ok(d)
}

fn features_path(io: &dyn KnobIo) -> Option<PathBuf> {
    FEATURES_PATHS
        .iter()
        .map(|p| Path::new("/").join(p))
        .find(|p| io.exists(p))
}

/// The running kernel's sched features (name, on), or why they cannot be read here.
pub fn features_here(io: &dyn KnobIo) -> Result<Vec<(String, bool)>, String> {
    let path = features_path(io).ok_or_else(|| {
        "no sched features file (/sys/kernel/debug/sched/features): debugfs is not mounted"
            .to_string()
    })?;
    io.read(&path)
        .map(|t| parse_features(&t))
        .map_err(|e| explain_denied(&path, &e))
}

/// Reads one knob's current value ("on"/"off" for a feature).
pub fn read_knob(io: &dyn KnobIo, k: &Knob) -> std::io::Result<String> {
    let text = io.read(&k.path)?;
    match k.kind {
        KnobKind::Feature => parse_features(&text)
            .into_iter()
            .find(|(n, _)| *n == k.name)
            .map(|(_, on)| if on { "on" } else { "off" }.to_string())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("feature {} is not in {}", k.name, k.path.display()),
                )
            }),
        _ => Ok(norm(&text)),
    }
}

pub fn write_knob(io: &dyn KnobIo, k: &Knob, value: &str) -> std::io::Result<()> {
    match k.kind {
        KnobKind::Feature => {
            let tok = if value == "on" {
                k.name.clone()
            } else {
                format!("NO_{}", k.name)
            };
            io.write(&k.path, &tok)
        }
        _ => io.write(&k.path, value),
    }
}

/// Resolves one change to the knob(s) and value it writes.
pub fn resolve(io: &dyn KnobIo, c: &Change) -> Result<Vec<(Knob, String)>, String> {
    match c {
        Change::Feature(n, on) => {
            let path = features_path(io).ok_or_else(|| {
                "no sched features file (/sys/kernel/debug/sched/features): is debugfs mounted? \
                 Mount it with: mount -t debugfs none /sys/kernel/debug"
                    .to_string()
            })?;
            Ok(vec![(
                Knob {
                    kind: KnobKind::Feature,
                    name: n.clone(),
                    path,
                },
                if *on { "on" } else { "off" }.into(),
            )])
        }
        Change::Sysctl(k, v) => Ok(vec![(
            Knob {
                kind: KnobKind::Sysctl,
                name: k.clone(),
                path: Path::new("/proc/sys").join(k.replace('.', "/")),
            },
            v.clone(),
        )]),
        Change::Debugfs(k, v) => {
            let base = Path::new("/sys/kernel/debug/sched");
            let paths = io.glob(&base.join(k));
            if paths.is_empty() || (paths.len() == 1 && !io.exists(&paths[0])) {
                return Err(format!(
                    "{} does not exist on this kernel{}",
                    base.join(k).display(),
                    if io.exists(Path::new("/sys/kernel/debug/sched")) {
                        ""
                    } else {
                        ": is debugfs mounted? (mount -t debugfs none /sys/kernel/debug)"
                    }
                ));
            }
            Ok(paths
                .into_iter()
                .map(|p| {
                    let name = p
                        .strip_prefix(base)
                        .map_or(k.clone(), |r| r.display().to_string());
                    (
                        Knob {
                            kind: KnobKind::Debugfs,
                            name,
                            path: p,
                        },
                        v.clone(),
                    )
                })
                .collect())
        }
    }
}

/// The kernel's lockdown mode, if securityfs shows it (e.g. "confidentiality").
pub fn lockdown_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/security/lockdown").ok()?;
    let a = s.find('[')?;
    let b = s[a..].find(']')?;
    Some(s[a + 1..a + b].to_string())
}

fn explain_denied(path: &Path, e: &std::io::Error) -> String {
    let debugfs = path.starts_with("/sys/kernel/debug");
    if debugfs && e.raw_os_error() == Some(libc::EPERM) {
        let mode = match lockdown_mode() {
            Some(m) => format!("kernel lockdown is '{m}'"),
            None => "this is what kernel lockdown does (check: mount -t securityfs none /sys/kernel/security; cat /sys/kernel/security/lockdown)".into(),
        };
        format!(
            "{}: {e}: {mode}. Lockdown (often switched on by Secure Boot) forbids debugfs \
             access even to root. Boot with lockdown=none / Secure Boot off, or run the rig \
             in a guest kernel with --kernel",
            path.display()
        )
    } else {
        format!("{}: {e}", path.display())
    }
}

/// Everything the profile would write, resolved, checked readable and writable and,
/// for features, present in the running kernel. Writes nothing.
pub fn preflight(io: &dyn KnobIo, profile: &Profile, root: bool) -> Result<Vec<Knob>, String> {
    let mut problems = Vec::new();
    let mut knobs: Vec<Knob> = Vec::new();
    if profile.changes_anything() && !root {
        problems.push("not root: writing kernel knobs needs root (run with sudo)".to_string());
    }
    let mut seen_feature_file = false;
    for s in &profile.settings {
        for c in &s.changes {
            match resolve(io, c) {
                Ok(v) => {
                    for (k, _) in v {
                        if !knobs.contains(&k) {
                            knobs.push(k);
                        }
                    }
                }
                Err(e) => {
                    if !problems.contains(&e) {
                        problems.push(e);
                    }
                }
            }
        }
    }
    for k in &knobs {
        if k.kind == KnobKind::Feature {
            if seen_feature_file {
                continue;
            }
            seen_feature_file = true;
            match io.read(&k.path) {
                Err(e) => problems.push(explain_denied(&k.path, &e)),
                Ok(text) => {
                    let have = parse_features(&text);
                    for f in knobs.iter().filter(|x| x.kind == KnobKind::Feature) {
                        if !have.iter().any(|(n, _)| *n == f.name) {
                            let close: Vec<&str> = have
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .filter(|n| n.contains(&f.name) || f.name.contains(n))
                                .collect();
                            problems.push(format!(
                                "sched feature {} is not known to this kernel{}",
                                f.name,
                                if close.is_empty() {
                                    format!(
                                        " (it has: {})",
                                        have.iter()
                                            .map(|(n, _)| n.as_str())
                                            .collect::<Vec<_>>()
                                            .join(" ")
                                    )
                                } else {
                                    format!("; did you mean {}?", close.join(" or "))
                                }
                            ));
                        }
                    }
                    if root && let Err(e) = io.probe_write(&k.path) {
                        problems.push(explain_denied(&k.path, &e));
                    }
                }
            }
        } else {
            match io.read(&k.path) {
                Err(e) => problems.push(explain_denied(&k.path, &e)),
                Ok(_) => {
                    if root && let Err(e) = io.probe_write(&k.path) {
                        problems.push(explain_denied(&k.path, &e));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(knobs)
    } else {
        Err(format!(
            "the profile '{}' cannot be applied here, so nothing was run and nothing was changed:\n  - {}\n\
             To measure with the settings as they are (recorded as such in run.json), pass --settings-as-is.",
            profile.name,
            problems.join("\n  - ")
        ))
    }
}

/// The emergency path (watchdog, second signal): restore from the active journal.
pub fn emergency_restore() {
    journal::emergency_restore(&RealIo);
}

/// The run's journal as a JACK stream's (`audio::JournalPeriod`): the period a stream
/// found is journaled before it changes it, and forgotten once it is back.
pub struct JackPeriodJournal;

impl JackPeriodJournal {
    pub fn shared() -> crate::audio::PeriodJournal {
        crate::audio::PeriodJournal(std::sync::Arc::new(JackPeriodJournal))
    }
}

impl crate::audio::JournalPeriod for JackPeriodJournal {
    fn journal(&self, server: &str, original: u32) -> Result<(), String> {
        journal::journal_add(&RealIo, &state()?, &[jack_entry(server, original)])
    }
    fn forget(&self, server: &str) -> Result<(), String> {
        journal::journal_forget(&state()?, &jack_entry(server, 0).knob)
    }
}

/// The end of a sweep: anything still journaled by this process (a JACK period a
/// stream could not put back) is restored now rather than at the next start.
pub fn restore_leftovers() -> Result<Vec<String>, String> {
    let dir = state()?;
    if journal::journal_active(&dir) {
        journal::restore_active(&RealIo, &dir)
    } else {
        Ok(vec![])
    }
}

fn jack_entry(server: &str, original: u32) -> JournalEntry {
    JournalEntry {
        knob: Knob {
            kind: KnobKind::JackPeriod,
            name: server.to_string(),
            path: PathBuf::new(),
        },
        original: original.to_string(),
    }
}

/// Knobs in force for one setting, as read back.
pub type InForce = Vec<(String, String)>;

/// A run's hold on the knobs: journal written at `begin`, originals restored at
/// `restore` or, failing that, on drop (error returns and panics unwind through it).
pub struct KnobSession<'a> {
    io: &'a dyn KnobIo,
    dir: StateDir,
    pub originals: Vec<(Knob, String)>,
    active: bool,
}

impl<'a> KnobSession<'a> {
    /// Reads every knob's value and journals them all before anything is written.
    /// Refuses (changing nothing) when another run's journal is in `dir`.
    pub fn begin(io: &'a dyn KnobIo, dir: &StateDir, knobs: &[Knob]) -> Result<Self, String> {
        let mut originals = Vec::new();
        for k in knobs {
            let v = read_knob(io, k).map_err(|e| format!("cannot read {}: {e}", k.label()))?;
            originals.push((k.clone(), v));
        }
        let entries: Vec<JournalEntry> = originals
            .iter()
            .map(|(k, v)| JournalEntry {
                knob: k.clone(),
                original: v.clone(),
            })
            .collect();
        journal::journal_add(io, dir, &entries)?;
        Ok(KnobSession {
            io,
            dir: dir.clone(),
            active: !originals.is_empty(),
            originals,
        })
    }

    /// Applies every change, then reads each back. Returns what is in force.
    pub fn apply(&mut self, changes: &[Change]) -> Result<InForce, String> {
        let mut out = Vec::new();
        for c in changes {
            for (k, v) in resolve(self.io, c)? {
                if !self.originals.iter().any(|(o, _)| *o == k) {
                    return Err(format!("{} was not in the journal", k.label()));
                }
                // A value already in force is not written again: 6.12 refuses
                // sched_rt_runtime_us = -1 over -1 (EBUSY) once the fair servers'
                // runtime is 0, as the strict profile's later rounds would do.
                let already = read_knob(self.io, &k).is_ok_and(|cur| norm(&cur) == norm(&v));
                if !already {
                    write_knob(self.io, &k, &v)
                        .map_err(|e| format!("cannot write {} = {v}: {e}", k.label()))?;
                    crate::sys::test_stall("apply");
                }
                let back = read_knob(self.io, &k)
                    .map_err(|e| format!("cannot read back {}: {e}", k.label()))?;
                if norm(&back) != norm(&v) {
                    return Err(format!(
                        "the kernel did not take {} = {v}: it reads {back}",
                        k.label()
                    ));
                }
                out.push((k.label(), back));
            }
        }
        Ok(out)
    }

    /// Puts every original value back and removes the journal.
    pub fn restore(&mut self) -> Result<Vec<String>, String> {
        if !self.active {
            return Ok(vec![]);
        }
        let r = journal::restore_active(self.io, &self.dir);
        if r.is_ok() {
            self.active = false;
        }
        r
    }
}

impl Drop for KnobSession<'_> {
    fn drop(&mut self) {
        if self.active {
            match self.restore() {
                Ok(lines) => {
                    for l in lines {
                        eprintln!("xrunrig: restored {l}");
                    }
                }
                Err(e) => eprintln!("xrunrig: {e}"),
            }
        }
    }
}

/// The full features file, or why it cannot be read.
pub fn features_snapshot() -> Result<String, String> {
    let io = RealIo;
    let p = features_path(&io).ok_or_else(|| {
        "no /sys/kernel/debug/sched/features (debugfs not mounted, or no permission)".to_string()
    })?;
    io.read(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| explain_denied(&p, &e))
}

#[cfg(test)]
pub(crate) mod tests;
