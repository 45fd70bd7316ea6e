//! Issue 13, items 1 and 2, end to end with the real binary and real sysctls: one run at
//! a time per machine (the run lock), results directories that cannot collide, and a
//! journal that is checked before anything in it is written back (boot id, version,
//! the fixed knob list), with `xrunrig restore --discard` for one that cannot be
//! restored. Needs root (it writes kernel.sched_rr_timeslice_ms, which is safe to change
//! here, and always puts it back).

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::{Duration, Instant};
use support::run::{BIN, SLEEPER, assert_root, serial, text, xrunrig_in as xrunrig};
use support::sysctl::{self, RR_TIMESLICE as RR, Saved};

const ROOT: &str = "these tests write sysctls and check root's refusals";

/// A private, root-owned 0700 directory (the state directory root accepts).
fn tmp(tag: &str) -> PathBuf {
    xrunrig::testkit::private_dir(&format!("trust-{tag}"))
}

fn rr() -> String {
    sysctl::read(RR)
}

fn repo(p: &str) -> String {
    support::run::repo().join(p).display().to_string()
}

/// The quick rig with no gap between trials.
static QUICK: LazyLock<String> = LazyLock::new(|| {
    support::run::QUICK.replacen("trials = 1\n", "trials = 1\ntrial_gap = \"0 ms\"\n", 1)
});

fn journal(state: &Path, body: serde_json::Value) {
    std::fs::write(state.join("journal.json"), body.to_string()).unwrap();
}

fn rr_entry(original: &str) -> serde_json::Value {
    serde_json::json!({"knob": {"kind": "sysctl", "name": "kernel.sched_rr_timeslice_ms",
        "path": RR}, "original": original})
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

/// The issue's reproduction: six pairs of `xrunrig run rigs/pi-inversion.toml --profile
/// profiles/rr-timeslice.toml --trials 2` started together. Before the lock, run B could
/// journal A's 37 as "the original" and the machine kept it.
#[test]
fn concurrent_runs_with_a_profile_leave_the_originals() {
    assert_root(ROOT);
    let _g = serial();
    let original = rr();
    let _back = Saved::now(&[RR]);
    let d = tmp("pairs");
    let mut refused = 0;
    for pair in 0..6 {
        let spawn = |i: usize| {
            Command::new(BIN)
                .args([
                    "run",
                    &repo("rigs/pi-inversion.toml"),
                    "--profile",
                    &repo("profiles/rr-timeslice.toml"),
                    "--trials",
                    "2",
                    "--out",
                ])
                .arg(d.join(format!("res-{pair}-{i}")))
                .env("XRUNRIG_STATE_DIR", &d)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(0), spawn(1));
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        assert_eq!(
            rr(),
            original,
            "pair {pair}: the timeslice was left changed\n{}\n{}",
            text(&outs[0]),
            text(&outs[1])
        );
        assert!(
            !d.join("journal.json").exists(),
            "pair {pair}: a journal was left behind"
        );
        for o in &outs {
            let err = String::from_utf8_lossy(&o.stderr);
            if err.contains("another xrunrig run holds") {
                refused += 1;
                assert_eq!(o.status.code(), Some(2), "{}", text(o));
                assert!(err.contains("pid ") && err.contains("started "), "{err}");
                assert!(
                    err.contains("pi-inversion.toml"),
                    "names the holder's command: {err}"
                );
            } else {
                assert!(o.status.success(), "{}", text(o));
            }
        }
    }
    assert!(refused >= 1, "runs started together were never refused");
}

/// Runs without a profile take the lock too, and so does `xrunrig restore`.
#[test]
fn a_run_without_a_profile_holds_the_lock_against_runs_and_restore() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("noprof");
    std::fs::write(d.join("sleeper.toml"), SLEEPER).unwrap();
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    let mut holder = Command::new(BIN)
        .args(["run", "sleeper.toml", "--out", "res-sleep"])
        .current_dir(&d)
        .env("XRUNRIG_STATE_DIR", &d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !d.join("run.lock.info").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no lock info written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = xrunrig(&["run", "quick.toml", "--out", "res-q"], &d, &d);
    let restore = xrunrig(&["restore"], &d, &d);
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(holder.id() as i32, libc::SIGKILL) };
    holder.wait().unwrap();
    for o in [&second, &restore] {
        assert_eq!(o.status.code(), Some(2), "{}", text(o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("pid {}", holder.id())),
            "names the holder: {err}"
        );
        assert!(err.contains("sleeper.toml"), "{err}");
    }
    assert!(!d.join("res-q").exists(), "the refused run created nothing");
    // SIGKILL drops the lock: the next run goes.
    let o = xrunrig(&["run", "quick.toml", "--out", "res-q"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
}

/// Default results directories are named to the second: runs started together get
/// distinct ones, each complete.
#[test]
fn results_directories_started_together_do_not_collide() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("collide");
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    // Separate state directories, so the lock does not serialise them.
    let kids: Vec<_> = (0..4)
        .map(|i| {
            let s = d.join(format!("state{i}"));
            std::fs::create_dir_all(&s).unwrap();
            Command::new(BIN)
                .args(["run", "quick.toml"])
                .current_dir(&d)
                .env("XRUNRIG_STATE_DIR", &s)
                .output()
                .unwrap()
        })
        .collect();
    for o in &kids {
        assert!(o.status.success(), "{}", text(o));
    }
    // Started one after the other they may straddle a second; started together they
    // share it. Do both.
    let together: Vec<_> = (4..8)
        .map(|i| {
            let s = d.join(format!("state{i}"));
            std::fs::create_dir_all(&s).unwrap();
            Command::new(BIN)
                .args(["run", "quick.toml"])
                .current_dir(&d)
                .env("XRUNRIG_STATE_DIR", &s)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for k in together {
        let o = k.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let dirs: Vec<PathBuf> = std::fs::read_dir(d.join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(dirs.len(), 8, "{dirs:?}");
    for r in &dirs {
        assert!(!r.join("INCOMPLETE").exists(), "{}", r.display());
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(r.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(
            s["rows"][0]["n"],
            1,
            "one trial per directory: {}",
            r.display()
        );
    }
}

/// A journal entry whose path is not its knob's is refused, reported and not written;
/// the listed knob beside it is restored.
#[test]
fn a_forged_journal_entry_is_refused_and_not_written() {
    assert_root(ROOT);
    let _g = serial();
    let original = rr();
    let _back = Saved::now(&[RR]);
    let d = tmp("forged");
    // A stand-in for /etc/shadow that this test owns.
    let victim = d.join("shadow");
    std::fs::write(&victim, "root:secret\n").unwrap();
    std::fs::write(RR, "41").unwrap();
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s", "command": "c",
        "boot_id": boot_id(), "entries": [
            rr_entry(&original),
            {"knob": {"kind": "sysctl", "name": "kernel.sched_rt_runtime_us",
                "path": victim}, "original": "root::0:"},
        ]}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
    assert_eq!(rr(), original, "the valid entry is restored: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused, not written"), "{err}");
    assert!(err.contains(victim.to_str().unwrap()), "{err}");
    assert!(err.contains("xrunrig restore --discard"), "{err}");
    // Runs with a profile stay refused until it is dealt with; --settings-as-is goes,
    // saying what to do.
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    let prof = repo("profiles/rr-timeslice.toml");
    let o = xrunrig(
        &["run", "quick.toml", "--profile", &prof, "--out", "r1"],
        &d,
        &d,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(rr(), original);
    let o = xrunrig(
        &[
            "run",
            "quick.toml",
            "--profile",
            &prof,
            "--settings-as-is",
            "--out",
            "r2",
        ],
        &d,
        &d,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("xrunrig restore --discard"),
        "{}",
        text(&o)
    );
    // --discard prints every entry it drops and removes the journal.
    let o = xrunrig(&["restore", "--discard"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("kernel.sched_rr_timeslice_ms") && out.contains(RR),
        "{out}"
    );
    assert!(
        out.contains(victim.to_str().unwrap()) && out.contains("root::0:"),
        "{out}"
    );
    assert!(!d.join("journal.json").exists());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
}

/// Issue 35, item 3: each journal stands alone. The issue's reproduction: a knob journal
/// left by a killed profiled run (rr-timeslice at 37) beside a forged trace journal.
/// restore refuses the trace journal and still puts the knob back (exit 1, saying what it
/// refused); `--discard PATH` drops the one named and nothing else.
#[test]
fn a_refused_trace_journal_does_not_keep_the_knobs_from_coming_back() {
    assert_root(ROOT);
    let _g = serial();
    let original = rr();
    let _back = Saved::now(&[RR]);
    let d = tmp("alone");
    let left = if original == "37" { "39" } else { "37" };
    std::fs::write(RR, left).unwrap();
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s", "command": "c",
            "boot_id": boot_id(), "entries": [rr_entry(&original)]}),
    );
    let forged = d.join("trace-journal-999999998.json");
    std::fs::write(
        &forged,
        serde_json::json!({"version": 2, "pid": 999999998u32, "started": "s",
            "boot_id": boot_id(), "root": "/sys/kernel/tracing", "mounted_by_us": false,
            "instance": "/etc/xrunrig-1"})
        .to_string(),
    )
    .unwrap();
    let o = xrunrig(&["restore"], &d, &d);
    assert_eq!(
        rr(),
        original,
        "the knob journal was not read: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let named = format!("xrunrig restore --discard {}", forged.display());
    assert!(err.contains("refused") && err.contains(&named), "{err}");
    assert!(!d.join("journal.json").exists(), "{}", text(&o));
    assert!(forged.exists(), "a refused journal is kept");
    // A name that is not a journal here is refused, nothing dropped.
    let o = xrunrig(&["restore", "--discard", "/etc/passwd"], &d, &d);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(forged.exists());
    // A settings journal written again is left alone by --discard of the trace one.
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s", "command": "c",
            "boot_id": boot_id(), "entries": [rr_entry(&original)]}),
    );
    let o = xrunrig(&["restore", "--discard", forged.to_str().unwrap()], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(forged.to_str().unwrap()),
        "{}",
        text(&o)
    );
    assert!(!forged.exists());
    assert!(
        d.join("journal.json").exists(),
        "the other journal was dropped too"
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!d.join("journal.json").exists());
}

/// A journal from another boot is reported and discarded: the reboot reset the knobs,
/// and its "originals" are stale.
#[test]
fn a_journal_from_another_boot_is_discarded_not_replayed() {
    assert_root(ROOT);
    let _g = serial();
    let original = rr();
    let _back = Saved::now(&[RR]);
    let d = tmp("boot");
    let stale = if original == "41" { "43" } else { "41" };
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s", "command": "c",
            "boot_id": "00000000-0000-0000-0000-000000000000", "entries": [rr_entry(stale)]}),
    );
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    let o = xrunrig(&["run", "quick.toml", "--out", "r"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(rr(), original, "not replayed: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("before the last reboot"), "{err}");
    assert!(err.contains("kernel.sched_rr_timeslice_ms"), "{err}");
    assert!(!d.join("journal.json").exists());
}

/// A journal of a newer version is refused, nothing written, with what to do.
#[test]
fn a_newer_journal_is_refused() {
    assert_root(ROOT);
    let _g = serial();
    let original = rr();
    let _back = Saved::now(&[RR]);
    let d = tmp("newer");
    let other = if original == "41" { "43" } else { "41" };
    journal(
        &d,
        serde_json::json!({"version": 99, "pid": 999999999u32, "started": "s", "command": "c",
            "boot_id": boot_id(), "entries": [rr_entry(other)]}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(rr(), original);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("version is 99"), "{err}");
    assert!(err.contains("--discard"), "{err}");
    assert!(d.join("journal.json").exists());
}

/// Root does not take a journal from a directory others can write.
#[test]
fn a_state_dir_others_can_write_is_refused_for_root() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("perm");
    let state = d.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    for args in [&["run", "quick.toml", "--out", "r"][..], &["restore"][..]] {
        let o = xrunrig(args, &state, &d);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("is refused for root"), "{err}");
        assert!(err.contains("install -d -m 0700"), "says what to do: {err}");
    }
    assert!(!d.join("r").exists());
}

/// Issue 25, item 3: a root-owned 0700 state directory inside a group-writable parent
/// is refused too (the group could rename it away and put its own journal in its
/// place); the same under a 0755 parent is taken.
#[test]
fn a_state_dir_under_a_parent_others_can_write_is_refused_for_root() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("parent");
    let parent = d.join("parent");
    let state = parent.join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o775)).unwrap();
    let o = xrunrig(&["restore"], &state, &d);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is refused for root") && err.contains("parent: its mode is 775"),
        "{err}"
    );
    std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let o = xrunrig(&["restore"], &state, &d);
    assert!(o.status.success(), "{}", text(&o));
}

/// The analysis side refuses a directory still marked INCOMPLETE.
#[test]
fn report_refuses_an_incomplete_directory() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("incomplete");
    std::fs::write(d.join("quick.toml"), &*QUICK).unwrap();
    let o = xrunrig(&["run", "quick.toml", "--out", "r"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !d.join("r/INCOMPLETE").exists(),
        "a finished run is complete"
    );
    let rep = xrunrig(&["report", "r"], &d, &d);
    assert!(rep.status.success(), "{}", text(&rep));
    std::fs::write(d.join("r/INCOMPLETE"), "").unwrap();
    let rep = xrunrig(&["report", "r"], &d, &d);
    assert!(!rep.status.success(), "{}", text(&rep));
    assert!(
        String::from_utf8_lossy(&rep.stderr).contains("INCOMPLETE"),
        "{}",
        text(&rep)
    );
}

/// Copies a committed results fixture into `to`.
fn fixture(name: &str, to: &Path) {
    let from = support::run::repo()
        .join("analysis/tests/fixtures")
        .join(name);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(&from).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Issue 25, item 2: a results directory received from someone else whose report.txt
/// links to a file outside and whose export/ links to a directory outside: root's
/// `xrunrig report` refuses, naming the link, and neither target changes; `compare`
/// into a directory whose compare.txt is a link the same.
#[test]
fn report_and_compare_never_write_through_a_link() {
    let d = tmp("links");
    let outside = d.join("outside");
    std::fs::create_dir(&outside).unwrap();
    // Stand-ins for /etc/shadow and /etc.
    let victim = outside.join("shadow");
    std::fs::write(&victim, "root:secret\n").unwrap();
    let victim_dir = outside.join("etc");
    std::fs::create_dir(&victim_dir).unwrap();
    std::fs::write(victim_dir.join("trials.csv"), "keep\n").unwrap();
    let r = d.join("r");
    fixture("pi-boost-synthetic", &r);
    let linked = |what: &str| {
        let e = std::fs::read_dir(&victim_dir).unwrap().count();
        assert_eq!(e, 1, "{what}: a file was written into the linked directory");
        assert_eq!(
            std::fs::read_to_string(victim_dir.join("trials.csv")).unwrap(),
            "keep\n",
            "{what}"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "root:secret\n",
            "{what}"
        );
    };
    std::os::unix::fs::symlink(&victim_dir, r.join("export")).unwrap();
    let o = xrunrig(&["report", "r"], &d, &d);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("r/export") && err.contains("symbolic link"),
        "{err}"
    );
    linked("export/");
    std::fs::remove_file(r.join("export")).unwrap();
    std::os::unix::fs::symlink(&victim, r.join("report.txt")).unwrap();
    let o = xrunrig(&["report", "r"], &d, &d);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("r/report.txt") && err.contains("symbolic link"),
        "{err}"
    );
    linked("report.txt");
    // Without the link the same directory reports.
    std::fs::remove_file(r.join("report.txt")).unwrap();
    let o = xrunrig(&["report", "r"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        std::fs::symlink_metadata(r.join("report.txt"))
            .unwrap()
            .is_file()
    );
    // compare (of a copy started a day later: a directory with itself, or a copy, is
    // refused before anything is written) into --out whose compare.txt is a link.
    fixture("pi-boost-synthetic", &d.join("r2"));
    let rj = d.join("r2/run.json");
    let later = std::fs::read_to_string(&rj)
        .unwrap()
        .replace("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z");
    std::fs::write(&rj, later).unwrap();
    let out = d.join("cmp");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("compare.txt")).unwrap();
    let o = xrunrig(&["compare", "r", "r2", "--out", "cmp"], &d, &d);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("symbolic link"),
        "{}",
        text(&o)
    );
    linked("compare.txt");
}
