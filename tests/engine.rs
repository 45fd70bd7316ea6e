//! End-to-end tests of `xrunrig run` on this machine: the real binary, real SCHED_FIFO
//! threads, real PI mutexes, real sysctls. Needs root (CI runs as root).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::run::{BIN, QUICK, SLEEPER, json, serial, text, xrunrig};
use xrunrig::testkit;

/// The test's own directory, 0700: it is also the run's XRUNRIG_STATE_DIR, so the
/// machine's real journal is never read or restored by a test.
fn tmp(tag: &str) -> PathBuf {
    testkit::private_dir(&format!("e2e-{tag}"))
}

fn rr_timeslice() -> String {
    support::sysctl::read(support::sysctl::RR_TIMESLICE)
}

fn fmt_val(v: f64) -> String {
    xrunrig::output::table::fmt_val(v)
}

#[test]
fn pi_inversion_inherit_waits_less_than_half_of_none() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("pi");
    let out = d.join("res");
    let o = xrunrig(
        &[
            "run",
            "rigs/pi-inversion.toml",
            "--trials",
            "8",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert!(o.status.success(), "{}", text(&o));
    let s = json(&out.join("summary.json"));
    let rows = s["rows"].as_array().unwrap();
    let row = |v: &str| rows.iter().find(|r| r["variant"] == v).unwrap().clone();
    let (inh, none) = (row("inherit"), row("none"));
    assert_eq!(inh["n"], 8);
    assert_eq!(none["n"], 8);
    assert_eq!(inh["values"].as_array().unwrap().len(), 8);
    // Without PI the wait passes its 200 ms bound (~380 ms): end_early cuts each such
    // trial there, its wait censored at 200 ms, never a value.
    assert_eq!(none["within_bound"], 0, "{s}");
    assert_eq!(
        none["censored"].as_array().map_or(0, |c| c.len())
            + none["values"].as_array().unwrap().len(),
        8,
        "{s}"
    );
    let (mi, mn) = (
        inh["median"].as_f64().unwrap(),
        none["median"].as_f64().unwrap(),
    );
    assert!(
        mi < mn / 2.0,
        "inherit median {mi} ms is not under half of none {mn} ms"
    );
    // The owner had ~90 ms of work left: PI cannot make the wait shorter than that.
    assert!(
        mi > 80.0,
        "inherit median {mi} ms is shorter than the owner's remaining work"
    );
    // The printed table holds the same numbers as summary.json.
    let stdout = String::from_utf8_lossy(&o.stdout);
    for r in [&inh, &none] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == r["variant"].as_str())
            .unwrap_or_else(|| panic!("no table row for {}:\n{stdout}", r["variant"]));
        let med = format!("{} ms", fmt_val(r["median"].as_f64().unwrap()));
        assert!(line.contains(&med), "table row {line:?} lacks median {med}");
        let within = format!("{}/8", r["within_bound"]);
        assert!(line.contains(&within), "table row {line:?} lacks {within}");
    }
    // samples.jsonl has one line per trial with its marks.
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    assert_eq!(samples.lines().count(), 16);
    let run = json(&out.join("run.json"));
    assert_eq!(run["rig"]["name"], "pi-inversion");
    assert_eq!(run["rig"]["sha256"].as_str().unwrap().len(), 64);
    assert!(run["kernel"]["release"].as_str().unwrap().len() > 3);
}

/// A waiter's wait for a lock whose holder is starved on CPU 1 by a FIFO 20 spinner:
/// with the PI mutex the waiter lifts the holder above the spinner and gets the lock in
/// ~20 ms; without it the holder never runs, and the trial would wait out its whole
/// 1.5 s (the trial timeout: the spinner spins until the waiter is done). Two CPUs.
const HELD: &str = r#"
name = "held-lock"
description = "a bounded wait for a lock whose holder a spinner starves; it ends the trial early"
trials = 3
trial_timeout = "1500 ms"
trial_gap = "20 ms"

[locks.M]
protocol = "inherit"

[[threads]]
name = "holder"
policy = "fifo"
priority = 10
cpus = [1]
steps = [ { lock = "M" }, { signal = "locked" }, { run = "20 ms" }, { unlock = "M" } ]

[[threads]]
name = "spinner"
policy = "fifo"
priority = 20
cpus = [1]
steps = [ { wait = "locked" }, { spin_until = "done" } ]

[[threads]]
name = "waiter"
policy = "fifo"
priority = 30
cpus = [0]
steps = [ { wait = "locked" }, { sleep = "1 ms" }, { mark = "want" }, { lock = "M" },
          { mark = "got" }, { unlock = "M" }, { signal = "done" } ]

[metrics.wait]
from = "waiter.want"
to = "waiter.got"
bound = "< 100 ms"
unit = "ms"
end_early = true

[[variants]]
name = "pi"
description = "the waiter boosts the holder above the spinner"

[[variants]]
name = "no-pi"
description = "PTHREAD_PRIO_NONE: the holder stays behind the spinner"
locks.M.protocol = "none"
"#;

/// end_early on real FIFO threads: a failing wait ends its trial at the bound, far
/// before the 1.5 s it would otherwise sit out, recorded censored at the bound (never
/// a value), counted as outside it; a passing one is measured as before.
#[test]
fn a_failing_wait_ends_its_trial_at_the_bound_recorded_as_censored() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("held");
    let rig = d.join("held-lock.toml");
    std::fs::write(&rig, HELD).unwrap();
    let out = d.join("res");
    let t0 = Instant::now();
    let o = xrunrig(
        &["run", rig.to_str().unwrap(), "--out", out.to_str().unwrap()],
        &d,
    );
    let took = t0.elapsed();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = samples
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 6, "{samples}");
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
        let ms = r["duration_ms"].as_f64().unwrap();
        if r["variant"] == "no-pi" {
            assert_eq!(r["censored"]["wait"], 100.0, "{r}");
            assert!(
                r["metrics"].get("wait").is_none(),
                "a censored wait is no value: {r}"
            );
            assert!(
                r["marks"]["waiter.got"].as_array().unwrap().is_empty(),
                "{r}"
            );
            assert!(
                (100.0..750.0).contains(&ms),
                "ended at the bound, not at 1.5 s: {r}"
            );
            assert!(
                r["detail"].as_str().unwrap().contains("wait ≥ 100 ms"),
                "{r}"
            );
        } else {
            assert!(r.get("censored").is_none(), "{r}");
            let w = r["metrics"]["wait"][0].as_f64().unwrap();
            assert!(w > 15.0 && w < 100.0, "the holder's 20 ms, boosted: {r}");
        }
    }
    let s = json(&out.join("summary.json"));
    let row = |v: &str| {
        s["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["variant"] == v)
            .unwrap()
            .clone()
    };
    let (pi, nopi) = (row("pi"), row("no-pi"));
    assert_eq!(
        (pi["within_bound"].as_u64(), pi["n"].as_u64()),
        (Some(3), Some(3)),
        "{s}"
    );
    assert_eq!(
        (nopi["within_bound"].as_u64(), nopi["missing"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(
        nopi["censored"],
        serde_json::json!([100.0, 100.0, 100.0]),
        "{s}"
    );
    assert_eq!(
        (nopi["median"].as_f64(), nopi["median_at_least"].as_bool()),
        (Some(100.0), Some(true)),
        "{s}"
    );
    // The table says so.
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("no-pi"))
        .unwrap_or_else(|| panic!("no no-pi row in\n{stdout}"));
    assert!(
        line.contains("3 (3 censored)") && line.contains("0/3") && line.contains("≥ 100.0 ms"),
        "{line}"
    );
    assert!(
        stdout.contains("censored: the trial ended early"),
        "{stdout}"
    );
    // Three no-pi trials at 1.5 s each would take 4.5 s alone.
    assert!(took < Duration::from_secs(4), "{took:?}\n{t}");
}

/// A rig that needs CPUs this machine does not have is refused and nothing changes.
/// The refusal used to be tested with rigs/pi-boost-affinity.toml on a machine with
/// fewer than 4 CPUs only (a skip, so a failure in CI, on a bigger one): here the same
/// rig with its CPU numbers moved past the machine's last online CPU, so it runs on any
/// machine. The message for pi-boost-affinity itself on 2 CPUs is tested on a stand-in
/// machine (src/sweep/prepare.rs).
#[test]
fn a_rig_past_the_machines_cpus_is_refused_and_changes_nothing() {
    let _g = serial();
    let online = xrunrig::sys::online_cpus();
    let shift = online.iter().max().copied().unwrap_or(0);
    let d = tmp("refuse");
    let out = d.join("res");
    // Every `cpus = [a, b]` list of the rig, each CPU moved up by `shift`: CPU 1 becomes
    // one past the last online CPU.
    let orig =
        std::fs::read_to_string(support::run::repo().join("rigs/pi-boost-affinity.toml")).unwrap();
    let moved: Vec<String> = orig
        .lines()
        .map(|l| match (l.split_once("cpus = ["), l.rfind(']')) {
            (Some((head, rest)), Some(_)) if !l.trim_start().starts_with('#') => {
                let (list, tail) = rest.split_once(']').unwrap();
                let cpus: Vec<String> = list
                    .split(',')
                    .map(|c| (c.trim().parse::<usize>().unwrap() + shift).to_string())
                    .collect();
                format!("{head}cpus = [{}]{tail}", cpus.join(", "))
            }
            _ => l.to_string(),
        })
        .collect();
    assert_ne!(
        moved.join("\n"),
        orig.trim_end(),
        "the rig's CPU lists were found"
    );
    let rig = d.join("pi-boost-affinity.toml");
    std::fs::write(&rig, moved.join("\n") + "\n").unwrap();
    let before = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    let o = xrunrig(
        &[
            "run",
            rig.to_str().unwrap(),
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let last = 3 + shift;
    assert!(
        err.contains(&format!(
            "uses CPU {{{last}}}, which this machine does not have"
        )),
        "{err}"
    );
    assert!(err.contains("--kernel"), "{err}");
    assert!(err.contains("Nothing was changed"), "{err}");
    assert!(!out.exists(), "no results directory for a refused run");
    assert!(
        !d.join("journal.json").exists(),
        "no journal: nothing was touched"
    );
    let after = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    assert_eq!(before, after);
}

/// `--settings-as-is` runs without applying the profile and records the sched features
/// as the machine has them: unreadable under lockdown (here), the features elsewhere.
/// The refusal without it when the features cannot be read is tested on a stand-in
/// locked-down machine (src/sweep/prepare.rs), so it does not need this one to be
/// locked down.
#[test]
fn settings_as_is_applies_nothing_and_records_the_features_as_found() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("asis");
    let out = d.join("res");
    let o = xrunrig(
        &[
            "run",
            "rigs/pi-inversion.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--trials",
            "1",
            "--variant",
            "inherit",
            "--settings-as-is",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert!(o.status.success(), "{}", text(&o));
    let run = json(&out.join("run.json"));
    assert_eq!(run["settings_applied"], false);
    assert!(
        run["settings_note"]
            .as_str()
            .unwrap()
            .contains("NOT in force")
    );
    match xrunrig::knobs::features_snapshot() {
        Err(_) => assert!(run["sched_features_before"]["unreadable"].is_string()),
        Ok(f) => assert_eq!(run["sched_features_before"], f),
    }
    let s = json(&out.join("summary.json"));
    assert_eq!(s["rows"][0]["setting"], "as-is");
    assert!(!d.join("journal.json").exists());
}

/// Writes the sleeper rig and a profile that sets the RR timeslice to a value other
/// than the current one. Returns (rig, profile, original, target).
fn knob_fixture(d: &Path) -> (PathBuf, PathBuf, String, String) {
    let original = rr_timeslice();
    let target = if original == "37" { "41" } else { "37" }.to_string();
    let rig = d.join("sleeper.toml");
    std::fs::write(&rig, SLEEPER).unwrap();
    let prof = d.join("rr.toml");
    std::fs::write(
        &prof,
        format!("[[settings]]\nname = \"rr\"\nsysctl = {{ \"kernel.sched_rr_timeslice_ms\" = {target} }}\n"),
    )
    .unwrap();
    (rig, prof, original, target)
}

/// Starts a run that changes the knob and waits until the change is visible.
fn start_changed(d: &Path, rig: &Path, prof: &Path, target: &str) -> std::process::Child {
    let child = Command::new(BIN)
        .args([
            "run",
            rig.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--out",
        ])
        .arg(d.join("res"))
        .env("XRUNRIG_STATE_DIR", d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while rr_timeslice() != target {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the run never applied the knob"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn sigkill_leaves_a_journal_and_the_next_start_restores_it() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("kill");
    let (rig, prof, original, target) = knob_fixture(&d);
    let mut child = start_changed(&d, &rig, &prof, &target);
    assert!(
        d.join("journal.json").exists(),
        "journal written before the change"
    );
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    assert_eq!(rr_timeslice(), target, "SIGKILL gives no chance to restore");
    let j = json(&d.join("journal.json"));
    assert_eq!(j["entries"][0]["original"], original.as_str());

    // The next start, of any rig, restores it before doing anything else.
    let quick = d.join("quick.toml");
    std::fs::write(&quick, QUICK).unwrap();
    let o = xrunrig(
        &[
            "run",
            quick.to_str().unwrap(),
            "--out",
            d.join("res2").to_str().unwrap(),
        ],
        &d,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(rr_timeslice(), original, "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("ended without restoring its settings"),
        "{err}"
    );
    assert!(err.contains("kernel.sched_rr_timeslice_ms"), "{err}");
    assert!(!d.join("journal.json").exists());
}

#[test]
fn ctrl_c_restores_and_keeps_what_was_recorded() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("int");
    let (rig, prof, original, target) = knob_fixture(&d);
    let child = start_changed(&d, &rig, &prof, &target);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "Ctrl-C must end the run promptly"
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(rr_timeslice(), original);
    assert!(!d.join("journal.json").exists());
    let run = json(&d.join("res/run.json"));
    assert_eq!(run["interrupted"], true);
    assert_eq!(
        run["settings"][0]["in_force"]["kernel.sched_rr_timeslice_ms"],
        target.as_str()
    );
}

#[test]
fn profile_is_applied_read_back_interleaved_and_restored() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("sweep");
    let original = rr_timeslice();
    let quick = d.join("quick.toml");
    std::fs::write(&quick, QUICK).unwrap();
    let out = d.join("res");
    let o = xrunrig(
        &[
            "run",
            quick.to_str().unwrap(),
            "--profile",
            "profiles/rr-timeslice.toml",
            "--trials",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(rr_timeslice(), original);
    // A B A B: settings alternate across trials.
    let order: Vec<String> = std::fs::read_to_string(out.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["setting"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(order, ["rr-37ms", "rr-100ms", "rr-37ms", "rr-100ms"]);
    let run = json(&out.join("run.json"));
    assert_eq!(
        run["settings"][0]["in_force"]["kernel.sched_rr_timeslice_ms"],
        "37"
    );
    assert_eq!(
        run["settings"][1]["in_force"]["kernel.sched_rr_timeslice_ms"],
        "100"
    );
    assert_eq!(run["settings_applied"], true);
}

#[test]
fn bad_rig_is_refused_with_position_and_nothing_is_run() {
    let d = tmp("bad");
    let bad = d.join("bad.toml");
    std::fs::write(
        &bad,
        QUICK.replace("policy = \"other\"", "policy = \"other\"\ncolour = 1"),
    )
    .unwrap();
    let out = d.join("res");
    let o = xrunrig(
        &["run", bad.to_str().unwrap(), "--out", out.to_str().unwrap()],
        &d,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:7:1: unknown field `colour`"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn existing_results_are_never_overwritten() {
    let d = tmp("exists");
    let quick = d.join("quick.toml");
    std::fs::write(&quick, QUICK).unwrap();
    let out = d.join("res");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("summary.json"), "{\"keep\": true}").unwrap();
    let o = xrunrig(
        &[
            "run",
            quick.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        "{\"keep\": true}"
    );
}

#[test]
fn hard_time_bound_stops_a_spinning_run_and_restores() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = tmp("bound");
    let (_, prof, original, _) = knob_fixture(&d);
    // A FIFO thread that would spin for 20 s on CPU 1; the run may take 1 s.
    let rig = d.join("spinner.toml");
    std::fs::write(
        &rig,
        r#"
name = "spinner"
trials = 1
trial_timeout = "30 s"
[[threads]]
name = "spin"
policy = "fifo"
priority = 5
cpus = [1]
steps = [ { mark = "a" }, { spin = "20 s" }, { mark = "b" } ]
[metrics.spun]
from = "spin.a"
to = "spin.b"
"#,
    )
    .unwrap();
    let t0 = Instant::now();
    let o = xrunrig(
        &[
            "run",
            rig.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--max-time",
            "1 s",
            "--out",
            d.join("res").to_str().unwrap(),
        ],
        &d,
    );
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}: {}", text(&o));
    // The bound reached is the run failing to finish in its time (3), not Ctrl-C (130).
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("time bound (1 s) was reached"));
    assert_eq!(rr_timeslice(), original);
    let s = std::fs::read_to_string(d.join("res/samples.jsonl")).unwrap();
    assert!(s.contains("\"aborted\""), "{s}");
}
