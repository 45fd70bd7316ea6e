//! The journal of original values: on disk (written atomically) before the first
//! change, every change a run makes listed with the value it had (kernel knobs and the
//! JACK server's period). A run killed outright is restored by the next start or
//! `xrunrig restore`. The journal is read as untrusted input: every entry is checked
//! against the fixed knob list before anything is written, a journal from another boot
//! is discarded (the reboot reset everything), and a newer version is refused.

use super::knob::{DEBUGFS, FEATURES_PATHS, Knob, KnobIo, KnobKind, SYSCTLS, norm, parse_features};
use super::state::StateDir;
use super::{read_knob, write_knob};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The version this xrunrig writes: 2 added `boot_id` and `jack-period` entries.
pub const JOURNAL_VERSION: u32 = 2;
/// A real journal is a few kilobytes; anything far bigger is not one.
pub const JOURNAL_MAX_BYTES: usize = 1 << 20;

/// The journal's name in the state directory.
pub const JOURNAL_FILE: &str = "journal.json";

pub fn journal_path(dir: &Path) -> PathBuf {
    dir.join(JOURNAL_FILE)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JournalEntry {
    pub knob: Knob,
    pub original: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    pub version: u32,
    pub pid: u32,
    pub started: String,
    pub command: String,
    /// /proc/sys/kernel/random/boot_id when written; absent in version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    pub entries: Vec<JournalEntry>,
}

/// Reads a journal's text: no I/O, no panics whatever the text (the fuzzers feed it).
/// A version this xrunrig does not know is refused, saying what to do.
pub fn parse_journal(text: &str) -> Result<Journal, String> {
    if text.len() > JOURNAL_MAX_BYTES {
        return Err(format!(
            "it is {} bytes, more than any journal ({JOURNAL_MAX_BYTES})",
            text.len()
        ));
    }
    // The version first, so a newer journal is named as such even when its shape changed.
    #[derive(Deserialize)]
    struct Head {
        version: u32,
    }
    let head: Head =
        serde_json::from_str(text).map_err(|e| format!("it is not a journal ({e})"))?;
    if head.version == 0 || head.version > JOURNAL_VERSION {
        return Err(format!(
            "its version is {}, and this xrunrig reads versions 1 to {JOURNAL_VERSION}: restore \
             it with the xrunrig that wrote it, or drop it with `xrunrig restore --discard`",
            head.version
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("it is not a journal ({e})"))
}

/// Whether `name` is a value of pattern `pat`, where `*` stands for decimal digits
/// (`fair_server/cpu*/runtime`).
fn matches_pattern(pat: &str, name: &str) -> bool {
    match pat.split_once('*') {
        None => pat == name,
        Some((pre, post)) => name
            .strip_prefix(pre)
            .and_then(|r| r.strip_suffix(post))
            .is_some_and(|d| {
                !d.is_empty() && d.len() <= 6 && d.bytes().all(|b| b.is_ascii_digit())
            }),
    }
}

/// A JACK server name as libjack takes it: no path separators or control characters.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// The periods JACK servers run at (frames).
pub const JACK_PERIOD_RANGE: std::ops::RangeInclusive<u32> = 1..=16384;

/// Checks one journal entry against the fixed knob list: the kind and name must be on
/// it, the path must be the one that kind and name resolve to, and the value must look
/// like one that file holds. Nothing else is ever written back.
pub fn check_entry(io: &dyn KnobIo, e: &JournalEntry) -> Result<(), String> {
    let k = &e.knob;
    let v = &e.original;
    if v.len() > 64 || v.chars().any(|c| c.is_control() && c != '\t') {
        return Err("its original value is not a knob's value".into());
    }
    match k.kind {
        KnobKind::Sysctl => {
            if !SYSCTLS.contains(&k.name.as_str()) {
                return Err(format!("{} is not a sysctl xrunrig changes", k.name));
            }
            let want = Path::new("/proc/sys").join(k.name.replace('.', "/"));
            if k.path != want {
                return Err(format!("its path should be {}", want.display()));
            }
        }
        KnobKind::Debugfs => {
            if k.name.contains("..") || !DEBUGFS.iter().any(|p| matches_pattern(p, &k.name)) {
                return Err(format!(
                    "{} is not a scheduler tunable xrunrig changes",
                    k.name
                ));
            }
            let want = Path::new("/sys/kernel/debug/sched").join(&k.name);
            if k.path != want {
                return Err(format!("its path should be {}", want.display()));
            }
        }
        KnobKind::Feature => {
            if !FEATURES_PATHS
                .iter()
                .any(|p| k.path == Path::new("/").join(p))
            {
                return Err("its path is not the sched features file".into());
            }
            if v != "on" && v != "off" {
                return Err("a feature's original is on or off".into());
            }
            // The features a profile may name are the running kernel's.
            let text = io
                .read(&k.path)
                .map_err(|e| format!("cannot read {}: {e}", k.path.display()))?;
            if !parse_features(&text).iter().any(|(n, _)| *n == k.name) {
                return Err(format!(
                    "sched feature {} is not one this kernel has",
                    k.name
                ));
            }
        }
        KnobKind::JackPeriod => {
            // Only ever the buffer size of a named server; the path is unused.
            if !valid_server_name(&k.name) {
                return Err("not a JACK server name".into());
            }
            if !k.path.as_os_str().is_empty() {
                return Err("a JACK period entry has no path".into());
            }
            if !v
                .parse::<u32>()
                .is_ok_and(|n| JACK_PERIOD_RANGE.contains(&n))
            {
                return Err("not a JACK period".into());
            }
        }
    }
    Ok(())
}

fn describe(e: &JournalEntry) -> String {
    if e.knob.kind == KnobKind::JackPeriod {
        format!("JACK server '{}' period = {}", e.knob.name, e.original)
    } else {
        format!(
            "{} ({}) = {}",
            e.knob.label(),
            e.knob.path.display(),
            e.original
        )
    }
}

/// Puts one entry's original back. Ok: a line for the user; Err: why it could not.
fn restore_entry(io: &dyn KnobIo, e: &JournalEntry) -> Result<String, String> {
    if e.knob.kind == KnobKind::JackPeriod {
        let want: u32 = e
            .original
            .parse()
            .map_err(|_| "not a JACK period".to_string())?;
        let server = &e.knob.name;
        let now = match io.jack_period(server) {
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(format!(
                    "JACK server '{server}' is not running, so its period was not put back: it \
                     was {want} before the run (a server started again starts with its own settings)"
                ));
            }
            Err(err) => return Err(format!("JACK server '{server}': {err}")),
        };
        if now == want {
            return Ok(format!(
                "JACK server '{server}' period = {want} (unchanged)"
            ));
        }
        io.set_jack_period(server, want).map_err(|err| {
            format!("JACK server '{server}': cannot set the period to {want}: {err}")
        })?;
        return Ok(format!(
            "JACK server '{server}' period = {want} (was {now}; put back as a JACK client)"
        ));
    }
    let now = read_knob(io, &e.knob).ok();
    if now.as_deref().map(norm) == Some(norm(&e.original)) {
        return Ok(format!("{} = {} (unchanged)", e.knob.label(), e.original));
    }
    write_knob(io, &e.knob, &e.original).map_err(|err| format!("{}: {err}", e.knob.label()))?;
    let back = read_knob(io, &e.knob).ok();
    if back.as_deref().map(norm) == Some(norm(&e.original)) {
        Ok(format!(
            "{} = {} (was {})",
            e.knob.label(),
            e.original,
            now.unwrap_or_else(|| "?".into())
        ))
    } else {
        Err(format!(
            "{}: wrote {} but it reads {}",
            e.knob.label(),
            e.original,
            back.unwrap_or_else(|| "?".into())
        ))
    }
}

/// Restores every entry that passes the fixed-list check, newest first. Returns the
/// lines said, and the problems (entries refused or that could not be written).
fn restore_entries(io: &dyn KnobIo, j: &Journal) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for e in j.entries.iter().rev() {
        if let Err(why) = check_entry(io, e) {
            failed.push(format!("refused, not written: {}: {why}", describe(e)));
            continue;
        }
        match restore_entry(io, e) {
            Ok(l) => lines.push(l),
            Err(f) => failed.push(f),
        }
        crate::sys::test_stall("restore");
    }
    (lines, failed)
}

fn write_journal(dir: &StateDir, j: &Journal) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(j).map_err(std::io::Error::other)?;
    dir.write_atomic(JOURNAL_FILE, text.as_bytes())
}

/// Serialises restores between the main thread and the watchdog's emergency path.
static RESTORE_LOCK: Mutex<()> = Mutex::new(());

/// The journals this process has on disk (one per state directory; tests use several).
struct Active {
    dir: StateDir,
    j: Journal,
}
static ACTIVE: Mutex<Vec<Active>> = Mutex::new(Vec::new());

fn active() -> std::sync::MutexGuard<'static, Vec<Active>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Journals `entries` (their values now) before anything is changed: a new journal in
/// `dir`, or added to the one this process already has there. An entry already journaled
/// keeps its first original. Refuses while a journal this process did not write is in
/// `dir`: that is another run's, to be restored first, never overwritten.
pub fn journal_add(
    io: &dyn KnobIo,
    dir: &StateDir,
    entries: &[JournalEntry],
) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    let path = dir.join(JOURNAL_FILE);
    let mut act = active();
    let i = match act.iter().position(|a| a.dir.same(dir)) {
        Some(i) => i,
        None => {
            if dir.exists(JOURNAL_FILE) {
                return Err(format!(
                    "a settings journal is already in {} (another run's, not restored yet), so \
                     nothing was changed: run `xrunrig restore` to put its values back (or \
                     `xrunrig restore --discard` if they cannot be)",
                    path.display()
                ));
            }
            let (started, _) = crate::sys::utc_now();
            act.push(Active {
                dir: dir.clone(),
                j: Journal {
                    version: JOURNAL_VERSION,
                    pid: std::process::id(),
                    started,
                    command: std::env::args().collect::<Vec<_>>().join(" "),
                    boot_id: io.boot_id(),
                    entries: vec![],
                },
            });
            act.len() - 1
        }
    };
    let before = act[i].j.entries.len();
    for e in entries {
        if !act[i].j.entries.iter().any(|x| x.knob == e.knob) {
            act[i].j.entries.push(e.clone());
        }
    }
    if act[i].j.entries.len() == before {
        return Ok(());
    }
    if let Err(e) = write_journal(dir, &act[i].j) {
        act[i].j.entries.truncate(before);
        if before == 0 {
            act.remove(i);
        }
        return Err(format!("cannot write the journal {}: {e}", path.display()));
    }
    Ok(())
}

/// Drops the entries for `knob` from this process's journal in `dir` once their values
/// are back; removes the journal when it is empty.
pub fn journal_forget(dir: &StateDir, knob: &Knob) -> Result<(), String> {
    let path = dir.join(JOURNAL_FILE);
    let mut act = active();
    let Some(i) = act.iter().position(|a| a.dir.same(dir)) else {
        return Ok(());
    };
    act[i].j.entries.retain(|e| e.knob != *knob);
    if act[i].j.entries.is_empty() {
        act.remove(i);
        dir.remove(JOURNAL_FILE)
            .map_err(|e| format!("cannot remove the journal {}: {e}", path.display()))
    } else {
        write_journal(dir, &act[i].j)
            .map_err(|e| format!("cannot write the journal {}: {e}", path.display()))
    }
}

/// Whether this process has a journal on disk in `dir`.
pub fn journal_active(dir: &StateDir) -> bool {
    active().iter().any(|a| a.dir.same(dir))
}

/// Restores everything in this process's journal in `dir` and removes it. On failure
/// the journal stays, for the next start.
pub fn restore_active(io: &dyn KnobIo, dir: &StateDir) -> Result<Vec<String>, String> {
    let _g = RESTORE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = dir.join(JOURNAL_FILE);
    let Some(j) = active()
        .iter()
        .find(|a| a.dir.same(dir))
        .map(|a| a.j.clone())
    else {
        return Ok(vec![]);
    };
    let (lines, failed) = restore_entries(io, &j);
    if !failed.is_empty() {
        return Err(format!(
            "could not restore: {}; the journal {} is kept so the next start tries again",
            failed.join("; "),
            path.display()
        ));
    }
    active().retain(|a| !a.dir.same(dir));
    dir.remove(JOURNAL_FILE)
        .map_err(|e| format!("cannot remove the journal {}: {e}", path.display()))?;
    Ok(lines)
}

/// The emergency path (watchdog, second signal): restore from every active journal.
pub fn emergency_restore(io: &dyn KnobIo) {
    let dirs: Vec<StateDir> = active().iter().map(|a| a.dir.clone()).collect();
    for d in dirs {
        match restore_active(io, &d) {
            Ok(lines) => {
                for l in lines {
                    eprintln!("xrunrig: restored {l}");
                }
            }
            Err(e) => eprintln!("xrunrig: {e}"),
        }
    }
}

/// What the start of a run (or `xrunrig restore`) did with a journal left behind.
#[derive(Debug)]
pub struct Recovered {
    pub journal: Journal,
    /// One line per entry: restored, unchanged, or (from another boot) discarded.
    pub lines: Vec<String>,
    /// The journal was from another boot: nothing was written, it was discarded.
    pub other_boot: bool,
}

fn read_journal_text(dir: &StateDir) -> Result<Option<String>, String> {
    match dir.read(JOURNAL_FILE) {
        Ok(b) => Ok(b.map(|b| String::from_utf8_lossy(&b).into_owned())),
        Err(e) => Err(format!(
            "cannot read the journal {}: {e}",
            dir.join(JOURNAL_FILE).display()
        )),
    }
}

/// Restores what a run killed outright left behind in `dir`. The caller holds the run
/// lock, so the journal's run is gone. A journal from another boot is reported and
/// discarded; one that cannot be read, is of a newer version or holds entries off the
/// fixed list is refused (the valid entries are still restored), and kept for
/// `xrunrig restore --discard`.
pub fn recover(io: &dyn KnobIo, dir: &StateDir) -> Result<Option<Recovered>, String> {
    let _g = RESTORE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = dir.join(JOURNAL_FILE);
    let Some(text) = read_journal_text(dir)? else {
        return Ok(None);
    };
    let j = parse_journal(&text).map_err(|e| {
        format!(
            "the settings journal {} cannot be used: {e}. Nothing in it was written back; what it \
             holds:\n{}\nPut the values back by hand if needed, then drop it with `xrunrig restore \
             --discard {}`",
            path.display(),
            text.chars().take(4000).collect::<String>(),
            path.display()
        )
    })?;
    let now = io.boot_id();
    if let (Some(was), Some(now)) = (&j.boot_id, &now)
        && was != now
    {
        let lines = j
            .entries
            .iter()
            .map(|e| format!("discarded {}", describe(e)))
            .collect();
        dir.remove(JOURNAL_FILE)
            .map_err(|e| format!("cannot remove the journal {}: {e}", path.display()))?;
        return Ok(Some(Recovered {
            journal: j,
            lines,
            other_boot: true,
        }));
    }
    let (lines, failed) = restore_entries(io, &j);
    if !failed.is_empty() {
        return Err(format!(
            "the settings journal {} (run pid {}, started {}) could not be fully restored:\n  - {}{}\n\
             It is kept. Once you have checked those settings, drop it with `xrunrig restore \
             --discard {}`",
            path.display(),
            j.pid,
            j.started,
            failed.join("\n  - "),
            if lines.is_empty() {
                String::new()
            } else {
                format!("\nRestored: {}", lines.join("; "))
            },
            path.display()
        ));
    }
    dir.remove(JOURNAL_FILE)
        .map_err(|e| format!("cannot remove the journal {}: {e}", path.display()))?;
    Ok(Some(Recovered {
        journal: j,
        lines,
        other_boot: false,
    }))
}

/// `xrunrig restore --discard`: drops the journal in `dir` without writing anything,
/// returning one line per entry dropped (name, path, original), or its raw text when it
/// cannot be read as a journal. The caller holds the run lock.
pub fn discard(dir: &StateDir) -> Result<Option<Vec<String>>, String> {
    let path = dir.join(JOURNAL_FILE);
    let Some(text) = read_journal_text(dir)? else {
        return Ok(None);
    };
    let lines = match parse_journal(&text) {
        Ok(j) => j
            .entries
            .iter()
            .map(|e| {
                format!(
                    "{} ({}) original {}",
                    if e.knob.kind == KnobKind::JackPeriod {
                        format!("JACK server '{}' period", e.knob.name)
                    } else {
                        e.knob.label()
                    },
                    if e.knob.path.as_os_str().is_empty() {
                        "-".into()
                    } else {
                        e.knob.path.display().to_string()
                    },
                    e.original
                )
            })
            .collect(),
        Err(why) => std::iter::once(format!("(not readable as a journal: {why}; its text:)"))
            .chain(
                text.chars()
                    .take(JOURNAL_MAX_BYTES)
                    .collect::<String>()
                    .lines()
                    .map(String::from),
            )
            .collect(),
    };
    dir.remove(JOURNAL_FILE)
        .map_err(|e| format!("cannot remove the journal {}: {e}", path.display()))?;
    Ok(Some(lines))
}

/// Tests: forget this process's journal in `dir` as a killed process would (the file stays).
#[cfg(test)]
pub(crate) fn tests_forget_active(dir: &StateDir) {
    active().retain(|a| !a.dir.same(dir));
}
