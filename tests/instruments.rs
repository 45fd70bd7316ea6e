//! The instruments end to end: interval derivation against a recorded trace with known
//! intervals, IPI counters moving when IPIs are sent, a real hrtick-repick trial whose
//! metric is re-derived from the raw trace kept in the results directory, and tracing
//! state after a run (also one killed with SIGKILL and restarted) equal to before.
//! Tests that need root (tracefs, SCHED_*) skip through `xrunrig::testkit` without it:
//! a visible, logged skip, and a failure under XRUNRIG_REQUIRE_ALL=1.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use xrunrig::instruments::{evidence, intervals, ipi, parse};
use xrunrig::testkit;

/// Runs of the binary use tracefs: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Root (tracefs, SCHED_*) and two CPUs, or a visible skip.
fn root_and_two_cpus() -> bool {
    testkit::root()
        && testkit::have(
            xrunrig::sys::online_cpus().len() >= 2,
            "a second online CPU",
        )
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trace")
        .join(name)
}

/// The test's own directory (0700); its `state` subdirectory is the runs' state dir.
fn tmp(name: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let d = testkit::private_dir(&format!("inst-{name}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(d.join("state"))
        .unwrap();
    d
}

#[test]
fn derivation_matches_the_recorded_trace() {
    let text = std::fs::read_to_string(fixture("two-on-cpu1.txt")).unwrap();
    let exp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("two-on-cpu1.expect.json")).unwrap())
            .unwrap();
    let (recs, bad) = parse::parse_text(&text);
    assert_eq!(bad, 0);
    let d = intervals::derive(&recs, &[201, 202, 203]);
    let us = |tid: i32| -> Vec<u64> {
        d.intervals[&tid]
            .iter()
            .map(|i| i.len_ns() / 1000)
            .collect()
    };
    let want = |k: &str| -> Vec<u64> {
        exp[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    assert_eq!(us(201), want("a_us"));
    assert_eq!(us(202), want("b_us"));
    assert_eq!(us(203), vec![700]);
    let above = |tid| {
        intervals::lengths(&d, &[tid])
            .iter()
            .filter(|&&l| l > 8_000_000)
            .count() as u64
    };
    assert_eq!(above(201), exp["a_above_8ms"].as_u64().unwrap());
    assert_eq!(above(202), exp["b_above_8ms"].as_u64().unwrap());
    assert_eq!(d.unmatched as u64, exp["unmatched"].as_u64().unwrap());
    assert!(d.intervals[&201].iter().all(|i| i.cpu == 1));
    assert_eq!(d.boosts.len(), 1);
    assert_eq!((d.boosts[0].oldprio, d.boosts[0].newprio), (89, 9));
    assert_eq!(d.migrations.len(), 1);
    let m = &d.migrations[0];
    assert_eq!(
        (m.orig_cpu, m.dest_cpu, m.hardirq, m.by_pid),
        (2, 3, true, 204)
    );
    let names = vec![("x".to_string(), 203), ("hog".to_string(), 204)];
    let line = evidence::mechanism(&d, 203, "x", 100_000_000_000, &names);
    assert!(line.contains("boosted prio 89->9"), "{line}");
    assert!(line.contains("migrated CPU2->CPU3"), "{line}");
    assert!(line.contains("in hog's context"), "{line}");
    assert!(line.contains("resumed on CPU3"), "{line}");
}

#[test]
fn ipi_counters_move_when_ipis_are_sent() {
    let cpus = xrunrig::sys::online_cpus();
    if !testkit::have(cpus.len() >= 2, "a second online CPU to send an IPI to") {
        return;
    }
    let (c0, c1) = (cpus[0], cpus[1]);
    let rows = vec!["RES".to_string(), "CAL".to_string(), "IWI".to_string()];
    let sampler = ipi::Sampler::start(rows.clone(), 100_000_000, Some(c0)).unwrap();
    // A thread on c1 sleeps; one on c0 wakes it 1500 times. Waking a task on another
    // CPU that is idle or busy sends it a rescheduling or function-call IPI.
    const WAKES: u64 = 1500;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let sleeper = std::thread::spawn(move || {
        xrunrig::engine::thread::set_affinity(0, &[c1]).unwrap();
        while !d2.load(std::sync::atomic::Ordering::SeqCst) {
            std::thread::park();
        }
    });
    let st = sleeper.thread().clone();
    let waker = std::thread::spawn(move || {
        xrunrig::engine::thread::set_affinity(0, &[c0]).unwrap();
        for _ in 0..WAKES {
            std::thread::sleep(std::time::Duration::from_micros(300));
            st.unpark();
        }
    });
    waker.join().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    sleeper.thread().unpark();
    sleeper.join().unwrap();
    let snaps = sampler.stop(&rows);
    assert!(snaps.len() >= 2, "at least one interval");
    let sent: u64 = ["RES", "CAL"]
        .iter()
        .map(|r| ipi::deltas(&snaps, r, c1).iter().sum::<u64>())
        .sum();
    // Some wake-ups find the sleeper still running (no IPI); most must not.
    assert!(
        sent >= WAKES / 3,
        "RES+CAL on CPU{c1} rose by {sent} for {WAKES} cross-CPU wake-ups"
    );
}

/// Top-level tracing state that a run must leave as it found it.
fn tracing_state() -> String {
    let Some(root) = xrunrig::instruments::tracefs::mounted_at() else {
        return "tracefs not mounted".into();
    };
    let mut s = format!("mounted at {}\n", root.display());
    for f in [
        "tracing_on",
        "buffer_size_kb",
        "trace_clock",
        "set_event",
        "set_event_pid",
        "current_tracer",
        "events/sched/sched_switch/enable",
        "events/sched/sched_switch/filter",
        "events/sched/sched_pi_setprio/enable",
    ] {
        let v = std::fs::read_to_string(root.join(f)).unwrap_or_else(|e| format!("<{e}>"));
        s.push_str(&format!("{f}: {}\n", v.trim()));
    }
    let mut inst: Vec<String> = std::fs::read_dir(root.join("instances"))
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    inst.sort();
    s.push_str(&format!("instances: {inst:?}\n"));
    s
}

const SHORT_RIG: &str = r#"
name = "trace-state"
trials = 2
trial_timeout = "8 s"
trial_gap = "100 ms"
[[threads]]
name = "a"
policy = "other"
cpus = [1]
steps = [ { spin = "1500 ms" } ]
[[threads]]
name = "b"
policy = "other"
cpus = [1]
steps = [ { spin = "1500 ms" } ]
[instruments]
cpu = 0
ipi = { interval = "500 ms", cpus = [0, 1] }
[instruments.trace]
metrics.n = { of = "intervals", thread = "a" }
"#;

fn run_rig(rig: &Path, out: &Path, state: &Path) -> std::process::Output {
    support::run::xrunrig(
        &["run", rig.to_str().unwrap(), "--out", out.to_str().unwrap()],
        state,
    )
}

#[test]
fn tracing_state_is_restored_after_a_run_and_after_sigkill() {
    if !root_and_two_cpus() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("state");
    let state = dir.join("state");
    let rig = dir.join("rig.toml");
    std::fs::write(&rig, SHORT_RIG).unwrap();
    let before = tracing_state();

    // 1. A normal run.
    let o = run_rig(&rig, &dir.join("r1"), &state);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tracing_state(), before, "after a normal run");
    let samples = std::fs::read_to_string(dir.join("r1/samples.jsonl")).unwrap();
    assert_eq!(samples.lines().count(), 2);
    for l in samples.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["metrics"]["n"][0].as_f64().unwrap() >= 1.0, "{l}");
        assert!(v["metrics"]["ipi_RES_cpu1"][0].as_f64().is_some(), "{l}");
    }
    // Per trial: the raw capture, the derived intervals, the IPI counts.
    let names = |d: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir.join("r1").join(d))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names("trace").len(), 4, "{:?}", names("trace"));
    assert!(names("trace").iter().any(|n| n.ends_with("__1.txt")));
    assert_eq!(names("ipi").len(), 2, "{:?}", names("ipi"));

    // 2. Killed with SIGKILL mid-trial: the instance and journal stay behind...
    let mut child = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .args([
            "run",
            rig.to_str().unwrap(),
            "--out",
            dir.join("r2").to_str().unwrap(),
        ])
        .env("XRUNRIG_STATE_DIR", &state)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let inst_name = format!("xrunrig-{}", child.id());
    let t0 = std::time::Instant::now();
    let mut seen = false;
    while t0.elapsed() < std::time::Duration::from_secs(20) {
        if tracing_state().contains(&inst_name) && dir.join("r2/trace").exists() {
            seen = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(seen, "the run never created its trace instance");
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        tracing_state().contains(&inst_name),
        "SIGKILL left the instance (as it must)"
    );
    let journal = state.join(format!("trace-journal-{}.json", child.id()));
    assert!(journal.exists(), "and the journal");

    // ...and the next run restores them first, then leaves everything as before.
    let o = run_rig(&rig, &dir.join("r3"), &state);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("trace instance") && err.contains(&inst_name),
        "{err}"
    );
    assert_eq!(tracing_state(), before, "after a killed run and a restart");
    assert!(!journal.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hrtick_repick_as_is_counts_come_from_the_kept_trace() {
    if !root_and_two_cpus() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("hrtick");
    let rig = Path::new(env!("CARGO_MANIFEST_DIR")).join("rigs/hrtick-repick.toml");
    let profile = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/hrtick.toml");
    let out = dir.join("res");
    let o = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .args([
            "run",
            rig.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "--settings-as-is",
            "--trials",
            "1",
            "--variant",
            "two",
            "--out",
            out.to_str().unwrap(),
        ])
        .env("XRUNRIG_STATE_DIR", dir.join("state"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let rec: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    assert_eq!(rec["status"], "ok", "{line}");
    // Re-derive from the raw capture kept in the results directory.
    let raw = std::fs::read_to_string(out.join("trace/as-is__two__0.txt")).unwrap();
    let derived: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("trace/as-is__two__0.derived.json")).unwrap(),
    )
    .unwrap();
    let tid = |n: &str| -> i32 {
        derived["tids"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == n)
            .unwrap()[1]
            .as_i64()
            .unwrap() as i32
    };
    let (a, b) = (tid("a"), tid("b"));
    let (recs, _) = parse::parse_text(&raw);
    let d = intervals::derive(&recs, &[a, b]);
    let la = intervals::lengths(&d, &[a]);
    let lb = intervals::lengths(&d, &[b]);
    let m = |k: &str| rec["metrics"][k][0].as_f64().unwrap();
    assert_eq!(
        m("long_a"),
        la.iter().filter(|&&l| l > 8_000_000).count() as f64
    );
    assert_eq!(
        m("long_b"),
        lb.iter().filter(|&&l| l > 8_000_000).count() as f64
    );
    assert_eq!(m("intervals_a"), la.len() as f64);
    // Two CPU-bound tasks sharing a CPU for 10 s switch at least at every tick or
    // slice: hundreds of intervals each, all on CPU1. Together they cannot have run
    // longer than the 10 s on one CPU; other agents' builds may take some of it.
    assert!(
        la.len() > 100 && lb.len() > 100,
        "{} {}",
        la.len(),
        lb.len()
    );
    assert!(d.intervals[&a].iter().all(|i| i.cpu == 1));
    let covered: u64 = la.iter().chain(&lb).sum();
    assert!(
        (1_000_000_000..10_500_000_000).contains(&covered),
        "a and b ran {covered} ns of the 10 s"
    );
    let ev = rec["evidence"].as_array().unwrap();
    assert!(
        ev.iter().any(|e| e.as_str().unwrap().starts_with("a: ")),
        "{ev:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn seccomp_looping_thread_is_migrate_disabled_while_it_runs() {
    use xrunrig::engine::migrate_disable;
    use xrunrig::instruments::{trace, tracefs};
    if !root_and_two_cpus() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmp("md");
    // SAFETY: the variable is only read by this crate, and these tests hold SERIAL.
    unsafe { std::env::set_var("XRUNRIG_STATE_DIR", dir.join("state")) };
    let before = tracing_state();
    let mut s = tracefs::Session::begin(4096).unwrap();
    // The local timer interrupt fires in whatever task runs; its latency column shows
    // that task's migrate-disable depth. Count the ticks that land in the victim.
    let ev = "irq_vectors/local_timer_entry".to_string();
    if !testkit::have(
        s.instance.join("events").join(&ev).exists(),
        &format!("the {ev} trace event on this kernel"),
    ) {
        s.end().unwrap();
        return;
    }
    let cpus = xrunrig::sys::online_cpus();
    let victim_cpu = cpus[1];
    let (tx, rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        xrunrig::engine::thread::set_affinity(0, &[victim_cpu]).unwrap();
        migrate_disable::install_on_current_thread().unwrap();
        tx.send(xrunrig::sys::gettid()).unwrap();
        go_rx.recv().unwrap();
        migrate_disable::syscalls_until(xrunrig::sys::now_ns() + 1_500_000_000);
    });
    // The control: the same loop on the same CPU without filters.
    let (ctx, crx) = std::sync::mpsc::channel();
    let (cgo_tx, cgo_rx) = std::sync::mpsc::channel::<()>();
    let control = std::thread::spawn(move || {
        xrunrig::engine::thread::set_affinity(0, &[victim_cpu]).unwrap();
        ctx.send(xrunrig::sys::gettid()).unwrap();
        cgo_rx.recv().unwrap();
        migrate_disable::syscalls_until(xrunrig::sys::now_ns() + 1_500_000_000);
    });
    let tid = rx.recv().unwrap();
    let ctid = crx.recv().unwrap();
    let out = dir.join("md.txt");
    let mut c = trace::Capture::start(
        &s.instance,
        &[],
        std::slice::from_ref(&ev),
        &[tid],
        out.clone(),
        Some(cpus[0]),
    )
    .unwrap();
    go_tx.send(()).unwrap();
    cgo_tx.send(()).unwrap();
    h.join().unwrap();
    control.join().unwrap();
    c.stop().unwrap();
    drop(c);
    s.end().unwrap();
    assert_eq!(tracing_state(), before);
    let (recs, _) = parse::parse_text(&std::fs::read_to_string(&out).unwrap());
    let ticks = |t: i32| -> (usize, usize) {
        let v: Vec<&parse::Record> = recs.iter().filter(|r| r.pid == t).collect();
        (
            v.len(),
            v.iter()
                .filter(|r| r.migrate_disable().unwrap_or(0) > 0)
                .count(),
        )
    };
    let (n, md) = ticks(tid);
    let (cn, cmd) = ticks(ctid);
    eprintln!("ticks in the victim: {n}, with migration disabled: {md}; control: {cn}, {cmd}");
    assert!(
        cn >= 20 && cmd * 5 <= cn,
        "the control without filters: {cmd} of {cn} ticks migrate-disabled"
    );
    // 1.5 s shared with the control at HZ >= 100 is >= 75 ticks; nearly all of the
    // victim's land inside its filters.
    assert!(n >= 20, "only {n} ticks in the victim");
    assert!(md * 10 >= n * 8, "{md} of {n} ticks had migration disabled");
    let _ = std::fs::remove_dir_all(&dir);
}
