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
}

const FEAT: &str = "/sys/kernel/debug/sched/features";

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
        }
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
    let mut s = KnobSession::begin(&io, &dir, &knobs).unwrap();
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
    let mut s = KnobSession::begin(&io, &dir, &knobs).unwrap();
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
        let mut s = KnobSession::begin(&io, &dir, &knobs).unwrap();
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
    let mut s = KnobSession::begin(&io, &dir, &knobs).unwrap();
    s.apply(&p.settings[0].changes).unwrap();
    // A killed run: no drop, no restore. Pretend the journal's owner is gone.
    std::mem::forget(s);
    let jp = journal_path(&dir);
    let mut j: Journal = serde_json::from_str(&std::fs::read_to_string(&jp).unwrap()).unwrap();
    j.pid = 999_999_999;
    std::fs::write(&jp, serde_json::to_string(&j).unwrap()).unwrap();
    let (old, lines) = recover(&io, &dir).unwrap().unwrap();
    assert_eq!(old.pid, 999_999_999);
    assert_eq!(lines.len(), 4);
    assert_eq!(
        io.get("/proc/sys/kernel/sched_rt_runtime_us").trim(),
        "950000"
    );
    assert!(io.get(FEAT).contains("NO_RT_PUSH_IPI"));
    assert!(recover(&io, &dir).unwrap().is_none());
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
    let mut s = KnobSession::begin(&io, &dir, &knobs).unwrap();
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
