use super::knob::{KnobIo, glob_dirs, parse_features};
use super::profile::{self, Profile};
use super::*;
use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

/// A machine in memory. The features file behaves as the kernel's does: writing
/// `NAME` or `NO_NAME` flips one feature, anything else is EINVAL. Paths listed in
/// `denied` fail with EPERM, as under lockdown.
#[derive(Default)]
pub struct FakeIo {
    pub files: Mutex<BTreeMap<PathBuf, String>>,
    pub denied: Vec<PathBuf>,
    pub writes: Mutex<Vec<(PathBuf, String)>>,
    /// This "boot"'s id.
    pub boot: Mutex<Option<String>>,
    /// JACK servers running, by name, and their periods.
    pub jack: Mutex<BTreeMap<String, u32>>,
    /// Asking a JACK server fails with EACCES (a server this user may not open).
    pub jack_denied: bool,
}

pub const FEAT: &str = "/sys/kernel/debug/sched/features";

impl FakeIo {
    pub fn machine() -> FakeIo {
        let f = FakeIo::default();
        {
            let mut m = f.files.lock().unwrap();
            m.insert(
                FEAT.into(),
                "GENTLE_FAIR_SLEEPERS NO_HRTICK NO_RT_PUSH_IPI RT_RUNTIME_SHARE\n".into(),
            );
            m.insert(
                "/proc/sys/kernel/sched_rt_runtime_us".into(),
                "950000\n".into(),
            );
            m.insert(
                "/sys/kernel/debug/sched/base_slice_ns".into(),
                "750000\n".into(),
            );
            m.insert(
                "/sys/kernel/debug/sched/fair_server/cpu0/runtime".into(),
                "50000000\n".into(),
            );
            m.insert(
                "/sys/kernel/debug/sched/fair_server/cpu1/runtime".into(),
                "50000000\n".into(),
            );
            m.insert(
                "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
                "100\n".into(),
            );
            m.insert("/etc/shadow".into(), "root:secret\n".into());
        }
        *f.boot.lock().unwrap() = Some("boot-a".into());
        f
    }
    fn get(&self, p: &str) -> String {
        self.files.lock().unwrap()[Path::new(p)].clone()
    }
}

impl KnobIo for FakeIo {
    fn read(&self, path: &Path) -> io::Result<String> {
        if self.denied.iter().any(|d| path.starts_with(d)) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        self.files
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn write(&self, path: &Path, value: &str) -> io::Result<()> {
        if self.denied.iter().any(|d| path.starts_with(d)) {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        self.writes
            .lock()
            .unwrap()
            .push((path.into(), value.into()));
        let mut m = self.files.lock().unwrap();
        let cur = m
            .get(path)
            .cloned()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if path == Path::new(FEAT) {
            let (name, on) = match value.strip_prefix("NO_") {
                Some(n) => (n, false),
                None => (value, true),
            };
            let feats = parse_features(&cur);
            if !feats.iter().any(|(n, _)| n == name) {
                return Err(io::Error::from_raw_os_error(libc::EINVAL));
            }
            let text: Vec<String> = feats
                .into_iter()
                .map(|(n, o)| {
                    let o = if n == name { on } else { o };
                    if o { n } else { format!("NO_{n}") }
                })
                .collect();
            m.insert(path.into(), text.join(" ") + "\n");
        } else {
            m.insert(path.into(), format!("{value}\n"));
        }
        Ok(())
    }
    fn probe_write(&self, path: &Path) -> io::Result<()> {
        self.read(path).map(|_| ())
    }
    fn boot_id(&self) -> Option<String> {
        self.boot.lock().unwrap().clone()
    }
    fn jack_period(&self, server: &str) -> io::Result<u32> {
        if self.jack_denied {
            return Err(io::Error::from_raw_os_error(libc::EACCES));
        }
        self.jack
            .lock()
            .unwrap()
            .get(server)
            .copied()
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn set_jack_period(&self, server: &str, frames: u32) -> io::Result<()> {
        let mut m = self.jack.lock().unwrap();
        let p = m
            .get_mut(server)
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        *p = frames;
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        let m = self.files.lock().unwrap();
        m.keys().any(|k| k.starts_with(path))
    }
    fn glob(&self, pattern: &Path) -> Vec<PathBuf> {
        glob_dirs(pattern, |d| {
            let m = self.files.lock().unwrap();
            let mut v: Vec<String> = m
                .keys()
                .filter_map(|k| k.strip_prefix(d).ok())
                .filter_map(|r| r.components().next())
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            v.dedup();
            v
        })
    }
}

fn profile(text: &str) -> Profile {
    profile::parse(Path::new("p.toml"), text).unwrap()
}

const PUSH: &str = r#"
[common]
sysctl = { "kernel.sched_rt_runtime_us" = -1 }
debugfs = { "fair_server/cpu*/runtime" = 0 }
[[settings]]
name = "RT_PUSH_IPI"
features = ["RT_PUSH_IPI"]
[[settings]]
name = "NO_RT_PUSH_IPI"
features = ["NO_RT_PUSH_IPI"]
"#;

/// The state directory `dir`, opened as the journal uses it.
fn sd(dir: &Path) -> StateDir {
    StateDir::open(dir, false).unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrunrig-knobs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn apply_reads_back_and_restore_puts_everything_back() {
    let io = FakeIo::machine();
    let p = profile(PUSH);
    let knobs = preflight(&io, &p, true).unwrap();
    assert_eq!(knobs.len(), 4, "{knobs:?}");
    let dir = tmpdir("apply");
    let mut s = KnobSession::begin(&io, &sd(&dir), &knobs).unwrap();
    assert!(
        journal_path(&dir).exists(),
        "journal before the first write"
    );
    let on = s.apply(&p.settings[0].changes).unwrap();
    assert!(
        on.contains(&("sched feature RT_PUSH_IPI".into(), "on".into())),
        "{on:?}"
    );
    assert!(io.get(FEAT).contains(" RT_PUSH_IPI"));
    assert_eq!(io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(), "-1");
    assert_eq!(
        io.get("/sys/kernel/debug/sched/fair_server/cpu1/runtime")
            .trim(),
        "0"
    );
    s.apply(&p.settings[1].changes).unwrap();
    assert!(io.get(FEAT).contains("NO_RT_PUSH_IPI"));
    let lines = s.restore().unwrap();
    assert_eq!(lines.len(), 4);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(),
        "950000"
    );
    assert_eq!(
        io.get("/sys/kernel/debug/sched/fair_server/cpu0/runtime")
            .trim(),
        "50000000"
    );
    assert!(io.get(FEAT).contains("NO_RT_PUSH_IPI"));
    assert!(!journal_path(&dir).exists());
}

#[test]
fn values_already_in_force_are_not_written_again() {
    let io = FakeIo::machine();
    let p = profile(PUSH);
    let knobs = preflight(&io, &p, true).unwrap();
    let dir = tmpdir("again");
    let mut s = KnobSession::begin(&io, &sd(&dir), &knobs).unwrap();
    s.apply(&p.settings[0].changes).unwrap();
    let first = io.writes.lock().unwrap().len();
    assert_eq!(first, 4, "rt_runtime, two fair servers and the feature");
    // The next setting shares [common]: only the feature changes.
    let f = s.apply(&p.settings[1].changes).unwrap();
    assert_eq!(io.writes.lock().unwrap().len(), first + 1);
    assert_eq!(
        f.len(),
        4,
        "every knob is still reported as in force: {f:?}"
    );
    s.restore().unwrap();
}

#[test]
fn drop_restores_on_error_and_panic_paths() {
    let io = FakeIo::machine();
    let p = profile(PUSH);
    let knobs = preflight(&io, &p, true).unwrap();
    let dir = tmpdir("drop");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut s = KnobSession::begin(&io, &sd(&dir), &knobs).unwrap();
        s.apply(&p.settings[0].changes).unwrap();
        panic!("boom");
    }));
    assert!(r.is_err());
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(),
        "950000"
    );
    assert!(io.get(FEAT).contains("NO_RT_PUSH_IPI"));
    assert!(!journal_path(&dir).exists());
}

#[test]
fn journal_left_by_a_killed_run_is_restored() {
    let io = FakeIo::machine();
    let p = profile(PUSH);
    let knobs = preflight(&io, &p, true).unwrap();
    let dir = tmpdir("killed");
    let mut s = KnobSession::begin(&io, &sd(&dir), &knobs).unwrap();
    s.apply(&p.settings[0].changes).unwrap();
    // A killed run: no drop, no restore. Pretend the journal's owner is gone.
    std::mem::forget(s);
    let jp = journal_path(&dir);
    forget_active(&dir);
    let mut j: Journal = serde_json::from_str(&std::fs::read_to_string(&jp).unwrap()).unwrap();
    j.pid = 999_999_999;
    std::fs::write(&jp, serde_json::to_string(&j).unwrap()).unwrap();
    let r = recover(&io, &sd(&dir)).unwrap().unwrap();
    assert!(!r.other_boot);
    assert_eq!(r.journal.pid, 999_999_999);
    assert_eq!(r.lines.len(), 4);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(),
        "950000"
    );
    assert!(io.get(FEAT).contains("NO_RT_PUSH_IPI"));
    assert!(recover(&io, &sd(&dir)).unwrap().is_none());
}

#[test]
fn preflight_names_lockdown_not_root_and_unknown_features() {
    let mut io = FakeIo::machine();
    io.denied.push("/sys/kernel/debug".into());
    let e = preflight(&io, &profile(PUSH), true).unwrap_err();
    assert!(e.contains("Operation not permitted"), "{e}");
    assert!(e.contains("lockdown"), "{e}");
    assert!(e.contains("--settings-as-is"), "{e}");
    assert!(
        io.writes.lock().unwrap().is_empty(),
        "preflight writes nothing"
    );

    let io = FakeIo::machine();
    let e = preflight(&io, &profile(PUSH), false).unwrap_err();
    assert!(e.contains("not root"), "{e}");

    let e = preflight(
        &io,
        &profile("[[settings]]\nname = \"x\"\nfeatures = [\"RT_PUSH\"]\n"),
        true,
    )
    .unwrap_err();
    assert!(e.contains("RT_PUSH is not known"), "{e}");
    assert!(e.contains("RT_PUSH_IPI"), "suggests the close name: {e}");
}

#[test]
fn a_value_the_kernel_rejects_is_an_error_and_restored() {
    let io = FakeIo::machine();
    let p = profile(PUSH);
    let knobs = preflight(&io, &p, true).unwrap();
    let dir = tmpdir("refuse");
    let mut s = KnobSession::begin(&io, &sd(&dir), &knobs).unwrap();
    // Feature writes of unknown names are EINVAL in the kernel (and in the fake).
    let bad = Knob {
        kind: KnobKind::Feature,
        name: "NOT_A_FEATURE".into(),
        path: FEAT.into(),
    };
    assert!(write_knob(&io, &bad, "on").is_err());
    s.apply(&p.settings[0].changes).unwrap();
    drop(s);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(),
        "950000"
    );
    assert!(!journal_path(&dir).exists());
}

#[test]
fn every_shipped_profile_loads() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let prof = crate::knobs::profile::load(&p).unwrap_or_else(|e| panic!("{e}"));
            assert!(!prof.settings.is_empty(), "{}", p.display());
            n += 1;
        }
    }
    assert!(n >= 6, "found {n} profiles in {}", dir.display());
}

/// What a killed process leaves: its journal on disk, no longer this process's.
fn forget_active(dir: &Path) {
    super::journal::tests_forget_active(&sd(dir));
}

fn rr_knob() -> Knob {
    Knob {
        kind: KnobKind::Sysctl,
        name: "kernel.sched_rr_timeslice_ms".into(),
        path: "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
    }
}

/// A journal written by hand, as a forger or another version would: `entries` is the
/// entries array's JSON text (not the typed journal, which could not hold a forgery).
fn write_raw_journal(dir: &Path, boot: Option<&str>, version: u32, entries: &str) {
    let boot = boot
        .map(|b| format!(r#""boot_id": "{b}", "#))
        .unwrap_or_default();
    let j = format!(
        r#"{{{boot}"version": {version}, "pid": 999999999, "started": "2026-01-01T00:00:00Z",
            "command": "xrunrig run x", "entries": {entries}}}"#
    );
    let _: serde_json::Value = serde_json::from_str(&j).expect("the test's journal is JSON");
    std::fs::write(journal_path(dir), j).unwrap();
}

#[test]
fn begin_refuses_to_overwrite_another_runs_journal() {
    // The issue's race: run B journaled A's applied values as "originals".
    let io = FakeIo::machine();
    let dir = tmpdir("overwrite");
    let mut a = KnobSession::begin(&io, &sd(&dir), &[rr_knob()]).unwrap();
    let ch =
        profile("[[settings]]\nname = \"x\"\nsysctl = { \"kernel.sched_rr_timeslice_ms\" = 37 }\n");
    a.apply(&ch.settings[0].changes).unwrap();
    std::mem::forget(a);
    forget_active(&dir);
    let before = std::fs::read_to_string(journal_path(&dir)).unwrap();
    let e = match KnobSession::begin(&io, &sd(&dir), &[rr_knob()]) {
        Ok(_) => panic!("a second journal was begun over the first"),
        Err(e) => e,
    };
    assert!(e.contains("xrunrig restore"), "{e}");
    assert_eq!(std::fs::read_to_string(journal_path(&dir)).unwrap(), before);
    let r = recover(&io, &sd(&dir)).unwrap().unwrap();
    assert_eq!(r.journal.entries[0].original, "100");
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rr_timeslice_ms").trim(),
        "100"
    );
}

#[test]
fn journal_records_the_boot_and_another_boots_journal_is_discarded_not_replayed() {
    let io = FakeIo::machine();
    let dir = tmpdir("boot");
    let s = KnobSession::begin(&io, &sd(&dir), &[rr_knob()]).unwrap();
    std::mem::forget(s);
    forget_active(&dir);
    let j = parse_journal(&std::fs::read_to_string(journal_path(&dir)).unwrap()).unwrap();
    assert_eq!(j.boot_id.as_deref(), Some("boot-a"));
    assert_eq!(j.version, super::journal::JOURNAL_VERSION);
    // Reboot; the new boot's value differs from the stale "original".
    *io.boot.lock().unwrap() = Some("boot-b".into());
    io.files.lock().unwrap().insert(
        "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
        "90\n".into(),
    );
    let r = recover(&io, &sd(&dir)).unwrap().unwrap();
    assert!(r.other_boot);
    assert!(r.lines[0].contains("discarded"), "{:?}", r.lines);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rr_timeslice_ms").trim(),
        "90"
    );
    assert!(io.writes.lock().unwrap().is_empty(), "nothing replayed");
    assert!(!journal_path(&dir).exists());
}

#[test]
fn a_newer_journal_version_is_refused_with_what_to_do() {
    let io = FakeIo::machine();
    let dir = tmpdir("version");
    write_raw_journal(
        &dir,
        Some("boot-a"),
        99,
        r#"[{"knob": {"kind": "sysctl", "name": "kernel.sched_rr_timeslice_ms",
            "path": "/proc/sys/kernel/sched_rr_timeslice_ms"}, "original": "5"}]"#,
    );
    let e = recover(&io, &sd(&dir)).unwrap_err();
    assert!(e.contains("version is 99"), "{e}");
    assert!(e.contains("xrunrig restore --discard"), "{e}");
    assert!(io.writes.lock().unwrap().is_empty());
    assert!(journal_path(&dir).exists(), "kept for --discard");
    assert!(
        parse_journal("{\"version\": 3}")
            .unwrap_err()
            .contains("version is 3")
    );
    assert!(parse_journal("{\"version\": 0, \"entries\": []}").is_err());
}

#[test]
fn restore_refuses_entries_off_the_fixed_list_and_writes_the_rest() {
    let io = FakeIo::machine();
    let dir = tmpdir("forged");
    io.files.lock().unwrap().insert(
        "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
        "37\n".into(),
    );
    // The second entry is a listed name with another path: the path is what resolving
    // gives, or nothing.
    write_raw_journal(
        &dir,
        Some("boot-a"),
        2,
        r#"[
            {"knob": {"kind": "sysctl", "name": "kernel.sched_rr_timeslice_ms",
                "path": "/proc/sys/kernel/sched_rr_timeslice_ms"}, "original": "100"},
            {"knob": {"kind": "sysctl", "name": "kernel.sched_rt_runtime_us",
                "path": "/etc/shadow"}, "original": "root::0:"},
            {"knob": {"kind": "sysctl", "name": "kernel.core_pattern",
                "path": "/proc/sys/kernel/core_pattern"}, "original": "|/tmp/x"},
            {"knob": {"kind": "debugfs", "name": "fair_server/cpu0/../../../x",
                "path": "/sys/kernel/debug/sched/fair_server/cpu0/../../../x"}, "original": "1"},
            {"knob": {"kind": "feature", "name": "NOT_IN_KERNEL",
                "path": "/sys/kernel/debug/sched/features"}, "original": "on"},
            {"knob": {"kind": "feature", "name": "HRTICK",
                "path": "/etc/shadow"}, "original": "on"}
        ]"#,
    );
    let e = recover(&io, &sd(&dir)).unwrap_err();
    assert_eq!(e.matches("refused, not written").count(), 5, "{e}");
    assert!(e.contains("/etc/shadow"), "reported: {e}");
    assert!(e.contains("xrunrig restore --discard"), "{e}");
    let writes = io.writes.lock().unwrap().clone();
    assert_eq!(
        writes,
        vec![(
            PathBuf::from("/proc/sys/kernel/sched_rr_timeslice_ms"),
            "100".to_string()
        )],
        "only the listed knob at its own path was written"
    );
    assert_eq!(io.get("/etc/shadow"), "root:secret\n");
    assert!(journal_path(&dir).exists(), "kept for --discard");
    // --discard drops it, listing every entry with name, path and original.
    let lines = super::journal::discard(&sd(&dir)).unwrap().unwrap();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(
        lines[1].contains("/etc/shadow") && lines[1].contains("root::0:"),
        "{lines:?}"
    );
    assert!(!journal_path(&dir).exists());
    assert!(super::journal::discard(&sd(&dir)).unwrap().is_none());
}

#[test]
fn sched_features_on_the_list_are_the_running_kernels() {
    let io = FakeIo::machine();
    let entry = |name: &str, v: &str| JournalEntry {
        knob: Knob {
            kind: KnobKind::Feature,
            name: name.into(),
            path: FEAT.into(),
        },
        original: v.into(),
    };
    assert!(super::journal::check_entry(&io, &entry("RT_PUSH_IPI", "on")).is_ok());
    assert!(super::journal::check_entry(&io, &entry("RT_PUSH_IPI", "maybe")).is_err());
    let e = super::journal::check_entry(&io, &entry("TTWU_QUEUE", "on")).unwrap_err();
    assert!(e.contains("not one this kernel has"), "{e}");
    // Only the features file's own path, even where another file lists the name.
    io.files
        .lock()
        .unwrap()
        .insert("/tmp/features".into(), "RT_PUSH_IPI\n".into());
    let elsewhere = JournalEntry {
        knob: Knob {
            path: "/tmp/features".into(),
            ..entry("RT_PUSH_IPI", "on").knob
        },
        original: "on".into(),
    };
    let e = super::journal::check_entry(&io, &elsewhere).unwrap_err();
    assert!(e.contains("not the sched features file"), "{e}");
}

#[test]
fn a_damaged_journal_is_kept_and_discard_prints_its_text() {
    let io = FakeIo::machine();
    let dir = tmpdir("damaged");
    std::fs::write(journal_path(&dir), "{\"version\": 2, \"entries\": [tru").unwrap();
    let e = recover(&io, &sd(&dir)).unwrap_err();
    assert!(e.contains("cannot be used"), "{e}");
    assert!(e.contains("--discard"), "{e}");
    assert!(io.writes.lock().unwrap().is_empty());
    let lines = super::journal::discard(&sd(&dir)).unwrap().unwrap();
    assert!(lines.iter().any(|l| l.contains("[tru")), "{lines:?}");
    assert!(!journal_path(&dir).exists());
}

#[test]
fn jack_period_is_journaled_and_put_back_when_the_server_runs() {
    let io = FakeIo::machine();
    io.jack.lock().unwrap().insert("studio".into(), 256);
    let dir = tmpdir("jack");
    let entry = JournalEntry {
        knob: Knob {
            kind: KnobKind::JackPeriod,
            name: "studio".into(),
            path: PathBuf::new(),
        },
        original: "256".into(),
    };
    super::journal::journal_add(&io, &sd(&dir), std::slice::from_ref(&entry)).unwrap();
    io.jack.lock().unwrap().insert("studio".into(), 64);
    let text = std::fs::read_to_string(journal_path(&dir)).unwrap();
    assert!(text.contains("\"jack-period\""), "{text}");
    // Killed: the next start restores it as a client.
    forget_active(&dir);
    let r = recover(&io, &sd(&dir)).unwrap().unwrap();
    assert_eq!(io.jack.lock().unwrap()["studio"], 256);
    assert!(
        r.lines[0].contains("256") && r.lines[0].contains("was 64"),
        "{:?}",
        r.lines
    );

    // The server is gone: the user is told, nothing blocks.
    super::journal::journal_add(&io, &sd(&dir), std::slice::from_ref(&entry)).unwrap();
    forget_active(&dir);
    io.jack.lock().unwrap().clear();
    let r = recover(&io, &sd(&dir)).unwrap().unwrap();
    assert!(r.lines[0].contains("not running"), "{:?}", r.lines);
    assert!(!journal_path(&dir).exists());

    // A server that cannot be asked is not one that is gone: the journal is kept.
    super::journal::journal_add(&io, &sd(&dir), std::slice::from_ref(&entry)).unwrap();
    forget_active(&dir);
    let denied = FakeIo {
        jack_denied: true,
        ..FakeIo::machine()
    };
    let e = recover(&denied, &sd(&dir)).unwrap_err();
    assert!(
        e.contains("JACK server 'studio'") && e.contains("kept"),
        "{e}"
    );
    assert!(journal_path(&dir).exists());
    recover(&io, &sd(&dir)).unwrap().unwrap();

    // A normal stop: the entry goes once the period is back.
    super::journal::journal_add(&io, &sd(&dir), std::slice::from_ref(&entry)).unwrap();
    super::journal::journal_forget(&sd(&dir), &entry.knob).unwrap();
    assert!(!journal_path(&dir).exists());
}

#[test]
fn a_jack_entry_is_only_ever_a_named_servers_period() {
    let io = FakeIo::machine();
    let e = |name: &str, path: &str, v: &str| JournalEntry {
        knob: Knob {
            kind: KnobKind::JackPeriod,
            name: name.into(),
            path: path.into(),
        },
        original: v.into(),
    };
    assert!(super::journal::check_entry(&io, &e("default", "", "1024")).is_ok());
    assert!(super::journal::check_entry(&io, &e("default", "/etc/shadow", "1024")).is_err());
    assert!(super::journal::check_entry(&io, &e("../x", "", "1024")).is_err());
    assert!(super::journal::check_entry(&io, &e("default", "", "0")).is_err());
    assert!(super::journal::check_entry(&io, &e("default", "", "99999999")).is_err());
}

#[test]
fn parse_journal_never_panics_on_garbage() {
    for t in [
        "",
        "{",
        "null",
        "[]",
        "{\"version\": -1}",
        "{\"version\": 1e99}",
        "{\"version\": 2, \"pid\": 1, \"started\": \"\", \"command\": \"\", \"entries\": [{}]}",
        "\u{0}\u{ffff}",
    ] {
        assert!(parse_journal(t).is_err(), "{t:?}");
    }
    let big = " ".repeat(super::journal::JOURNAL_MAX_BYTES + 1);
    assert!(parse_journal(&big).unwrap_err().contains("bytes"));
    // Version 1 (no boot id) still reads.
    let v1 =
        "{\"version\": 1, \"pid\": 1, \"started\": \"s\", \"command\": \"c\", \"entries\": []}";
    assert!(parse_journal(v1).unwrap().boot_id.is_none());
}

#[test]
fn the_run_lock_admits_one_holder_and_names_it() {
    let dir = tmpdir("lock");
    let a = super::lock::RunLock::acquire(&sd(&dir)).unwrap();
    let e = match super::lock::RunLock::acquire(&sd(&dir)) {
        Ok(_) => panic!("two holders"),
        Err(e) => e,
    };
    assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
    assert!(e.contains("started 20"), "{e}");
    assert!(e.contains("changed nothing"), "{e}");
    drop(a);
    assert!(!dir.join(super::lock::LOCK_INFO).exists());
    // flock belongs to the open file, which a child forked by another test thread shares
    // until its exec closes it (O_CLOEXEC): on a loaded machine that takes a while, so
    // the lock comes free within a bound, not at once (CI saw it still held).
    let t0 = std::time::Instant::now();
    loop {
        match super::lock::RunLock::acquire(&sd(&dir)) {
            Ok(_) => break,
            Err(e) if t0.elapsed() > std::time::Duration::from_secs(10) => panic!("{e}"),
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
}

#[test]
fn a_state_dir_others_can_write_is_refused_for_root() {
    use std::os::unix::fs::PermissionsExt;
    assert!(
        crate::sys::is_root(),
        "this test checks root's refusal: run it as root"
    );
    let dir = tmpdir("perm");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    StateDir::open(&dir, true).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = StateDir::open(&dir, true).unwrap_err();
    assert!(
        e.contains("777") && e.contains("only root can write"),
        "{e}"
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // SAFETY: chown of our own temp dir.
    let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 1000, 1000) }, 0);
    let e = StateDir::open(&dir, true).unwrap_err();
    assert!(e.contains("owned by uid 1000"), "{e}");
}

/// The journal checks' edges: the largest journal, value, CPU number and server name
/// accepted, and the first refused (cargo-mutants found these unpinned).
#[test]
fn journal_checks_hold_at_their_limits() {
    use super::journal::{JOURNAL_MAX_BYTES, check_entry, valid_server_name};
    let j = "{\"version\": 2, \"pid\": 1, \"started\": \"s\", \"command\": \"c\", \"entries\": []}";
    let at = format!("{j}{}", " ".repeat(JOURNAL_MAX_BYTES - j.len()));
    assert!(parse_journal(&at).is_ok());
    assert!(
        parse_journal(&format!("{at} "))
            .unwrap_err()
            .contains("bytes")
    );

    let io = FakeIo::machine();
    let rr = |v: &str| JournalEntry {
        knob: rr_knob(),
        original: v.into(),
    };
    assert!(check_entry(&io, &rr(&"1".repeat(64))).is_ok());
    assert!(check_entry(&io, &rr(&"1".repeat(65))).is_err());
    assert!(check_entry(&io, &rr("1\t2")).is_ok(), "a tab is a value's");
    assert!(check_entry(&io, &rr("1\n2")).is_err());

    let runtime = |cpu: &str| JournalEntry {
        knob: Knob {
            kind: KnobKind::Debugfs,
            name: format!("fair_server/cpu{cpu}/runtime"),
            path: format!("/sys/kernel/debug/sched/fair_server/cpu{cpu}/runtime").into(),
        },
        original: "0".into(),
    };
    assert!(check_entry(&io, &runtime("0")).is_ok());
    assert!(check_entry(&io, &runtime("999999")).is_ok());
    for bad in ["", "1234567", "1a", "-1"] {
        assert!(check_entry(&io, &runtime(bad)).is_err(), "cpu{bad:?}");
    }
    let slice = JournalEntry {
        knob: Knob {
            kind: KnobKind::Debugfs,
            name: "base_slice_ns".into(),
            path: "/sys/kernel/debug/sched/base_slice_ns".into(),
        },
        original: "3000000".into(),
    };
    assert!(check_entry(&io, &slice).is_ok());
    let elsewhere = JournalEntry {
        knob: Knob {
            path: "/sys/kernel/debug/sched/latency_ns".into(),
            ..slice.knob.clone()
        },
        ..slice.clone()
    };
    assert!(check_entry(&io, &elsewhere).is_err());

    assert!(valid_server_name(&"a".repeat(64)));
    assert!(!valid_server_name(&"a".repeat(65)));
    assert!(!valid_server_name(""));
    assert!(valid_server_name("my-server_2.0"));
    assert!(!valid_server_name("a b"));
    let period = |v: &str| JournalEntry {
        knob: Knob {
            kind: KnobKind::JackPeriod,
            name: "default".into(),
            path: PathBuf::new(),
        },
        original: v.into(),
    };
    assert!(check_entry(&io, &period("1")).is_ok());
    assert!(check_entry(&io, &period("16384")).is_ok());
    assert!(check_entry(&io, &period("16385")).is_err());
}

/// A journal write that fails leaves no entry behind that was not written: a new
/// journal is not this process's, an existing one keeps only what is on disk.
#[test]
fn a_journal_that_cannot_be_written_keeps_only_what_was() {
    use super::journal::{journal_active, journal_add, tests_forget_active};
    let io = FakeIo::machine();
    let rr = JournalEntry {
        knob: rr_knob(),
        original: "100".into(),
    };
    let runtime = JournalEntry {
        knob: Knob {
            kind: KnobKind::Sysctl,
            name: "kernel.sched_rt_runtime_us".into(),
            path: "/proc/sys/kernel/sched_rt_runtime_us".into(),
        },
        original: "950000".into(),
    };
    // The directory removed after it was opened: nothing can be created in it.
    let dir = tmpdir("unwritable-new");
    let s = sd(&dir);
    std::fs::remove_dir(&dir).unwrap();
    assert!(journal_add(&io, &s, std::slice::from_ref(&rr)).is_err());
    assert!(!journal_active(&s));

    let dir = tmpdir("unwritable-old");
    let s = sd(&dir);
    journal_add(&io, &s, std::slice::from_ref(&rr)).unwrap();
    std::fs::remove_file(journal_path(&dir)).unwrap();
    std::fs::remove_dir(&dir).unwrap();
    assert!(journal_add(&io, &s, std::slice::from_ref(&runtime)).is_err());
    assert!(
        journal_active(&s),
        "the journal already written stays this run's"
    );
    // The entry that was not written is not held as journaled: adding it tries again.
    assert!(journal_add(&io, &s, std::slice::from_ref(&runtime)).is_err());
    tests_forget_active(&s);
}

/// After a normal restore the journal is gone and no longer this process's.
#[test]
fn restore_active_leaves_no_journal_behind() {
    use super::journal::{journal_active, journal_add, restore_active};
    let io = FakeIo::machine();
    let dir = tmpdir("restore-active");
    let s = sd(&dir);
    let rr = JournalEntry {
        knob: rr_knob(),
        original: "100".into(),
    };
    journal_add(&io, &s, std::slice::from_ref(&rr)).unwrap();
    assert!(journal_active(&s));
    io.files.lock().unwrap().insert(
        "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
        "37\n".into(),
    );
    let lines = restore_active(&io, &s).unwrap();
    assert!(lines[0].contains("= 100 (was 37)"), "{lines:?}");
    assert!(!journal_active(&s));
    assert!(!journal_path(&dir).exists());
}

/// The watchdog's last resort restores every journal this process holds. It would undo
/// the journals of the tests running beside it, so it runs in a child process of this
/// test binary running only this test.
#[test]
fn emergency_restore_puts_back_every_journal() {
    const CHILD: &str = "XRUNRIG_TEST_EMERGENCY_CHILD";
    let name = "knobs::tests::emergency_restore_puts_back_every_journal";
    if std::env::var_os(CHILD).is_none() {
        let o = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && out.contains("1 passed"),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        return;
    }
    let io = FakeIo::machine();
    let rr = JournalEntry {
        knob: rr_knob(),
        original: "100".into(),
    };
    let dirs = [tmpdir("emergency-a"), tmpdir("emergency-b")];
    for d in &dirs {
        super::journal::journal_add(&io, &sd(d), std::slice::from_ref(&rr)).unwrap();
    }
    io.files.lock().unwrap().insert(
        "/proc/sys/kernel/sched_rr_timeslice_ms".into(),
        "37\n".into(),
    );
    super::journal::emergency_restore(&io);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rr_timeslice_ms").trim(),
        "100"
    );
    for d in &dirs {
        assert!(!journal_path(d).exists(), "{}", d.display());
    }
}
