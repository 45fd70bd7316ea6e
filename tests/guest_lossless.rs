//! End-to-end: a guest run loses nothing when its guest dies mid-run. A real kernel
//! crash (sysrq `c`, made on purpose after trial k) keeps trials 1..k and reports the
//! crash with the console; the emulator's faults resume the remaining trials in a fresh
//! boot, all in one results directory: the stale-breakpoint int3 Oops and the RCU stall
//! of a guest whose timers stopped (printed by the guest after trial k, as the kernel
//! prints them: they cannot be made on demand), and QEMU aborting on its own assertion
//! (a stand-in for qemu-system-x86_64 that aborts as QEMU does, then runs the real one).
//! A second emulator fault in one test fails it, after the first was retried.
//!
//! Needs root, qemu-system-x86_64 and a Debian 6.12 kernel package in
//! /var/cache/xrunrig/kernels (`.ci/fetch-kernel`); a missing one FAILS the test.
//! Each test boots TCG guests (about 15 s each here): run them one at a time.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::run::{BIN, json, repo, text as show};

static ONE_GUEST_AT_A_TIME: Mutex<()> = Mutex::new(());

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "xrunrig-test-lossless-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// pi-inversion, 2 trials × 2 variants (4 trials in all) in a 6.12 guest, with the
/// test-only fault `inject` (`injected`: the emulator faults it makes); another
/// emulator fault is retried once (support::guest::attempt).
fn guest_run(inject: &str, injected: usize, out: &Path) -> (Output, String) {
    let o = support::guest::attempt(out, injected, || {
        support::run::command(state_dir())
            .env("XRUNRIG_GUEST_TEST_INJECT", inject)
            .args([
                "run",
                "rigs/pi-inversion.toml",
                "--kernel",
                "debian:6.12",
                "--trials",
                "2",
                "--out",
            ])
            .arg(out)
            .output()
            .unwrap()
    });
    let text = show(&o);
    eprintln!("{text}");
    (o, text)
}

/// `cmd` run to its end with each line of its stderr timed from the start.
fn timed_stderr(cmd: &mut Command) -> (Output, Vec<(Duration, String)>) {
    use std::io::BufRead;
    let t0 = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut so = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = vec![];
        let _ = std::io::Read::read_to_end(&mut so, &mut v);
        v
    });
    let mut lines = vec![];
    for l in std::io::BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        lines.push((t0.elapsed(), l));
    }
    let status = child.wait().unwrap();
    let stderr = lines
        .iter()
        .map(|(_, l)| format!("{l}\n"))
        .collect::<String>();
    let o = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: stderr.into_bytes(),
    };
    (o, lines)
}

/// run.json's `guest.resumed`, checked to be one emulator fault after trial `after`
/// whose line is `line`; returns it.
fn one_resume(run: &Value, after: u64, line: &str) -> Value {
    let r = &run["guest"]["resumed"];
    assert_eq!(r.as_array().map(|a| a.len()), Some(1), "{run}");
    assert_eq!(r[0]["after_trial"], after, "{run}");
    assert_eq!(r[0]["of"], 4, "{run}");
    assert_eq!(r[0]["cause"], "emulator", "{run}");
    assert_eq!(r[0]["line"], line, "{run}");
    assert_eq!(r[0]["console_log"], "guest-console.log");
    assert!(run["guest"]["crash"].is_null(), "{run}");
    assert!(run["error"].is_null(), "{run}");
    r[0].clone()
}

/// The run lock and journal of these runs are the test's own, not the machine's.
fn state_dir() -> &'static Path {
    static D: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    D.get_or_init(|| xrunrig::testkit::private_dir("lossless-state"))
}

/// samples.jsonl's (setting, variant, trial), in order.
fn trials(dir: &Path) -> Vec<(String, String, u64)> {
    let p = dir.join("samples.jsonl");
    let t = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}: the finished trials were lost", p.display()));
    t.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["setting"].as_str().unwrap().to_string(),
                v["variant"].as_str().unwrap().to_string(),
                v["trial"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn t(v: &str, n: u64) -> (String, String, u64) {
    ("as-is".into(), v.into(), n)
}

/// summary.json's n of the wait row per variant.
fn wait_n(dir: &Path, variant: &str) -> u64 {
    let s = json(&dir.join("summary.json"));
    s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["variant"] == variant && r["metric"] == "wait")
        .unwrap_or_else(|| panic!("no {variant}/wait row in {s}"))["n"]
        .as_u64()
        .unwrap()
}

/// `xrunrig report DIR`'s text.
fn report(dir: &Path) -> String {
    let o = Command::new(BIN)
        .args(["report"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    std::fs::read_to_string(dir.join("report.txt")).unwrap()
}

#[test]
fn a_kernel_crash_after_trial_2_keeps_trials_1_and_2_and_reports_the_crash() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("crash");
    let (o, text) = guest_run("crash:2", 0, &out);
    assert_eq!(trials(&out), [t("inherit", 0), t("none", 0)], "{text}");
    // A crash is a failed run (exit 3), said with the trials kept and the console.
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("the guest kernel crashed after trial 2 of 4")
            && text.contains("sysrq triggered crash")
            && text.contains("The 2 finished trials are kept"),
        "{text}"
    );
    assert_eq!((wait_n(&out, "inherit"), wait_n(&out, "none")), (1, 1));
    let console = std::fs::read_to_string(out.join("guest-console.log")).unwrap();
    assert!(console.contains("sysrq: Trigger a crash"), "{console}");
    let run = json(&out.join("run.json"));
    let c = &run["guest"]["crash"];
    assert_eq!(c["after_trial"], 2, "{run}");
    assert_eq!(c["of"], 4, "{run}");
    assert_eq!(c["console_log"], "guest-console.log");
    let ex: Vec<&str> = c["console_excerpt"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert_eq!(
        ex.first().copied(),
        Some("Kernel panic - not syncing: sysrq triggered crash")
    );
    assert!(
        ex.iter().any(|l| l.contains("sysrq_handle_crash")),
        "{ex:?}"
    );
    assert!(
        c["reason"].as_str().unwrap().contains("not the emulator"),
        "{c}"
    );
    // A kernel crash is the kernel's: not retried by the runner, nor by the test.
    assert_eq!(c["cause"], "kernel", "{c}");
    assert!(support::guest::emulator_faults(&out).is_empty());
    assert!(run["guest"]["resumed"].is_null(), "{run}");
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("crashed after trial 2 of 4")),
        "{run}"
    );
    assert!(
        run["kernel"]["release"]
            .as_str()
            .is_some_and(|r| r.starts_with("6.12."))
    );
    let r = report(&out);
    assert!(
        r.contains("guest crashed") && r.contains("after trial 2 of 4"),
        "{r}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_emulator_int3_fault_after_trial_3_resumes_in_a_fresh_boot_with_nothing_lost() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("int3");
    // After 3 of 4: the resumed boot runs the rest of round 2 (variant "none" only).
    let (o, text) = guest_run("int3:3", 1, &out);
    assert_eq!(
        trials(&out),
        [t("inherit", 0), t("none", 0), t("inherit", 1), t("none", 1)],
        "{text}"
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("after trial 3 of 4; resuming the remaining trials in a fresh boot"),
        "{text}"
    );
    assert_eq!((wait_n(&out, "inherit"), wait_n(&out, "none")), (2, 2));
    let run = json(&out.join("run.json"));
    let r = &run["guest"]["resumed"];
    assert_eq!(r.as_array().map(|a| a.len()), Some(1), "{run}");
    assert_eq!(r[0]["after_trial"], 3, "{run}");
    assert_eq!(r[0]["of"], 4, "{run}");
    assert!(
        r[0]["reason"]
            .as_str()
            .unwrap()
            .contains("stale breakpoint"),
        "{r}"
    );
    assert_eq!(
        r[0]["console_excerpt"][0],
        "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI"
    );
    assert_eq!(r[0]["console_log"], "guest-console.log");
    assert!(run["guest"]["crash"].is_null(), "{run}");
    assert!(run["error"].is_null(), "{run}");
    assert_eq!(run["trials"], 2);
    assert_eq!(run["variants"].as_array().unwrap().len(), 2, "{run}");
    // Both boots' consoles are kept: the faulted one and the one that finished.
    let first = std::fs::read_to_string(out.join("guest-console.log")).unwrap();
    assert!(first.contains("Oops: int3"), "{first}");
    let second = std::fs::read_to_string(out.join("guest-console-boot2.log")).unwrap();
    assert!(
        second.contains("XRUNRIG-SHIPPED") && !second.contains("Oops"),
        "{second}"
    );
    let rep = report(&out);
    assert!(
        rep.contains("guest resumed") && rep.contains("after trial 3 of 4"),
        "{rep}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// QEMU aborting on its own assertion mid-run (the stand-in aborts once the guest has
/// shipped a frame; the guest holds its run there, so the trials home are known): the
/// trials home are kept, the rest resumed in a fresh boot under the real QEMU.
#[test]
fn qemu_aborting_on_its_own_assertion_mid_run_resumes_in_a_fresh_boot() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("abort");
    let qemu = support::guest::QemuStandIn::new(
        &tmp("abort-qemu"),
        &["abort-on XRUNRIG-FRAME trials=", "real"],
    );
    let o = support::guest::attempt(&out, 1, || {
        support::run::command(state_dir())
            .env("XRUNRIG_QEMU", &qemu.path)
            .env("XRUNRIG_GUEST_TEST_INJECT", "hold:1")
            .args(["run", "rigs/pi-inversion.toml", "--kernel", "debian:6.12"])
            .args(["--trials", "2", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    });
    let text = show(&o);
    eprintln!("{text}");
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(qemu.starts(), 2, "{text}");
    assert_eq!(
        trials(&out),
        [t("inherit", 0), t("none", 0), t("inherit", 1), t("none", 1)],
        "{text}"
    );
    let run = json(&out.join("run.json"));
    // The hold freezes the run at its first trial home; a second may have finished
    // before the freeze took.
    let after = run["guest"]["resumed"][0]["after_trial"]
        .as_u64()
        .unwrap_or(0);
    assert!((1..=2).contains(&after), "{run}");
    let abort = xrunrig::guest::crash::QEMU_ABORT_SAMPLE;
    let r = one_resume(&run, after, abort);
    assert_eq!(r["console_excerpt"][0], abort, "{r}");
    assert!(
        r["reason"]
            .as_str()
            .unwrap()
            .contains("QEMU aborted on its own assertion")
            && r["reason"].as_str().unwrap().contains("SIGABRT"),
        "{r}"
    );
    assert!(
        text.contains(&format!(
            "after trial {after} of 4; resuming the remaining trials in a fresh boot"
        )),
        "{text}"
    );
    // QEMU's stderr is kept with the console of the boot it ended.
    let first = std::fs::read_to_string(out.join("guest-console.log")).unwrap();
    assert!(
        first.contains("--- qemu stderr ---") && first.contains(abort),
        "{first}"
    );
    let rep = report(&out);
    assert!(
        rep.contains("guest resumed")
            && rep.contains(&format!("after trial {after} of 4: qemu-system-x86_64:")),
        "{rep}"
    );
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&qemu.dir);
}

/// A guest whose timers stopped (it prints the RCU stall report after trial 1, as the
/// kernel prints it, and goes quiet): stopped at the stall's line, well within the
/// silence bound the rig gives (pi-inversion: (3 s + 0.3 s) × 2 + 60 s), and resumed.
#[test]
fn a_guest_whose_timers_stopped_is_caught_at_its_stall_and_resumed() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("stall");
    let mut caught: Option<Duration> = None;
    let o = support::guest::attempt(&out, 1, || {
        let (o, lines) = timed_stderr(
            support::run::command(state_dir())
                .env("XRUNRIG_GUEST_TEST_INJECT", "stall:1")
                .args(["run", "rigs/pi-inversion.toml", "--kernel", "debian:6.12"])
                .args(["--trials", "2", "--out"])
                .arg(&out),
        );
        // From the guest's first trial line (its frame and the stall follow at once)
        // to the host's word that it resumes.
        let at = |needle: &str| lines.iter().find(|(_, l)| l.contains(needle)).map(|x| x.0);
        if let (Some(a), Some(b)) = (at("trial 1/2"), at("resuming the remaining trials")) {
            caught = Some(b.saturating_sub(a));
        }
        o
    });
    let text = show(&o);
    eprintln!("{text}");
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(
        trials(&out),
        [t("inherit", 0), t("none", 0), t("inherit", 1), t("none", 1)],
        "{text}"
    );
    let run = json(&out.join("run.json"));
    let after = run["guest"]["resumed"][0]["after_trial"]
        .as_u64()
        .unwrap_or(0);
    assert!((1..=2).contains(&after), "{run}");
    let r = one_resume(
        &run,
        after,
        "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    );
    assert!(
        r["reason"].as_str().unwrap().contains("timers stopped"),
        "{r}"
    );
    assert!(
        r["console_excerpt"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("timer wakeup didn't happen")),
        "{r}"
    );
    let caught = caught.expect("the first trial's line and the resume, timed");
    let bound = Duration::from_millis(2 * 3300 + 60_000);
    eprintln!("stall caught {caught:?} after the first trial's line (silence bound {bound:?})");
    assert!(caught < bound, "{caught:?}: {text}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A second emulator fault in the same test fails it: the stand-in aborts the first
/// boot of each of the test's two runs (the first run resumed by the runner, retried
/// by the test, the retry faulting again). The retry is in the retries log, once.
#[test]
fn a_second_emulator_fault_in_the_same_test_fails_it() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("twice");
    let dir = tmp("twice-qemu");
    let qemu =
        support::guest::QemuStandIn::new(&dir, &["abort-after 1", "real", "abort-after 1", "real"]);
    let log = dir.join("retries.log");
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        support::guest::attempt_logged(Some(&log), &out, 0, || {
            support::run::command(state_dir())
                .env("XRUNRIG_QEMU", &qemu.path)
                .args(["run", "rigs/pi-inversion.toml", "--kernel", "debian:6.12"])
                .args(["--trials", "1", "--variant", "inherit", "--out"])
                .arg(&out)
                .output()
                .unwrap()
        })
    }));
    let msg = match failed {
        Ok(o) => panic!("two faults passed: {}", show(&o)),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "?".into()),
    };
    assert!(
        msg.contains("a second emulator fault in the same test"),
        "{msg}"
    );
    assert_eq!(qemu.starts(), 4, "{msg}");
    let retries = std::fs::read_to_string(&log).unwrap();
    assert_eq!(retries.lines().count(), 1, "{retries}");
    assert!(
        retries.starts_with("RETRY a_second_emulator_fault_in_the_same_test_fails_it: emulator fault: qemu-system-x86_64:")
            && retries.contains("resumed in a fresh boot"),
        "{retries}"
    );
    // Each run itself came through: the runner resumed it (after trial 0 of 1).
    let run = json(&out.join("run.json"));
    assert_eq!(run["guest"]["resumed"][0]["after_trial"], 0, "{run}");
    assert_eq!(trials(&out), [t("inherit", 0)]);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A livefx guest run merged from two boots, the first dead after 3 of its 4 trials
/// (with the 4th's cycles file cut short), the second the resumed rest, has the
/// summary.json (rows and trials) and histograms.json the same run has uninterrupted.
/// The boots are made from a real run on this host (clock backend, 1 s trials, an
/// injected overrun every 20 cycles so there are misses and their causes), split as the
/// guest's parts write them: a guest run would take minutes under TCG and could not
/// be compared with the same trials run whole.
#[test]
fn a_livefx_run_merged_from_two_boots_has_the_summary_and_histograms_of_one_run() {
    use xrunrig::guest::resume::{self, Boot, Order};
    if !xrunrig::testkit::root() {
        return;
    }
    let base = tmp("livefx-merge");
    let whole = base.join("whole");
    // Its own state directory: the guest tests of this file hold theirs' run lock.
    let state = xrunrig::testkit::private_dir("lossless-livefx-state");
    let o = support::run::command(&state)
        .args(["run", "rigs/livefx.toml", "--backend", "clock"])
        .args(["--duration", "1 s", "--trials", "2", "--inject-every", "20"])
        .arg("--out")
        .arg(&whole)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let rig = xrunrig::rig::load(&repo().join("rigs/livefx.toml")).unwrap();
    let choices = xrunrig::options::Choices {
        trials: Some(2),
        ..Default::default()
    };
    let plan = xrunrig::sweep::Plan::build(rig, None, choices, xrunrig::kinds::of).unwrap();
    let order = Order::of(&plan);
    assert_eq!(
        order,
        Order {
            trials: 2,
            settings: vec!["as-is".into()],
            variants: vec!["pi".into(), "no-pi".into()],
        }
    );
    let boots = [
        Boot {
            dir: base.join("b0"),
            parts: resume::parts_from(&order, 0),
        },
        Boot {
            dir: base.join("b1"),
            parts: resume::parts_from(&order, 3),
        },
    ];
    let samples = std::fs::read_to_string(whole.join("samples.jsonl")).unwrap();
    let events = std::fs::read_to_string(whole.join("events.jsonl")).unwrap();
    let mut parts_text = [
        (String::new(), String::new()),
        (String::new(), String::new()),
    ];
    for (i, line) in samples.lines().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        let (s, var, t) = (
            v["setting"].as_str().unwrap(),
            v["variant"].as_str().unwrap(),
            v["trial"].as_u64().unwrap() as u32,
        );
        // Trials 1-3 in the first boot, the 4th in the second (its trial 0).
        let b = usize::from(i >= 3);
        let t_part = t - boots[b].parts[0].round0;
        let renumber = |l: &str| {
            let mut e: Value = serde_json::from_str(l).unwrap();
            e["trial"] = t_part.into();
            e.to_string() + "\n"
        };
        parts_text[b].0.push_str(&renumber(line));
        for l in events.lines() {
            let e: Value = serde_json::from_str(l).unwrap();
            if e["setting"] == s && e["variant"] == var && e["trial"] == t {
                parts_text[b].1.push_str(&renumber(l));
            }
        }
        let from = whole.join(format!("cycles/{s}__{var}__{t}.bin"));
        let to = boots[b]
            .part_dir(0)
            .join(format!("cycles/{s}__{var}__{t_part}.bin"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
        if i == 3 {
            // The first boot died in this trial: half its cycles, no record.
            let bytes = std::fs::read(&from).unwrap();
            let cut = boots[0]
                .part_dir(0)
                .join(format!("cycles/{s}__{var}__{t}.bin"));
            std::fs::write(cut, &bytes[..bytes.len() / 2 + 5]).unwrap();
        }
    }
    for (b, (s, e)) in parts_text.iter().enumerate() {
        let d = boots[b].part_dir(0);
        std::fs::write(d.join("samples.jsonl"), s).unwrap();
        std::fs::write(d.join("events.jsonl"), e).unwrap();
    }
    // Only the second boot's run ended and wrote run.json.
    std::fs::copy(
        whole.join("run.json"),
        boots[1].part_dir(0).join("run.json"),
    )
    .unwrap();
    let dest = base.join("merged");
    let m = resume::merge(&plan, &boots, "6.12.0", ("a", "b"), &dest).unwrap();
    assert_eq!(m.records, 4);
    assert_eq!(m.dropped, ["cycles/as-is__no-pi__1.bin"]);
    let merged = json(&dest.join("summary.json"));
    let one = json(&whole.join("summary.json"));
    assert_eq!(merged["kind"], "livefx", "{merged}");
    assert_eq!(one["rows"].as_array().map(|r| r.len()), Some(2), "{one}");
    assert_eq!(one["trials"].as_array().map(|r| r.len()), Some(4), "{one}");
    assert_eq!(merged["rows"], one["rows"]);
    assert_eq!(merged["trials"], one["trials"]);
    assert_eq!(
        json(&dest.join("histograms.json")),
        json(&whole.join("histograms.json"))
    );
    // The report reads the merged directory (before: no summary.json, refused).
    let r = report(&dest);
    assert!(r.contains("no-pi"), "{r}");
    let _ = std::fs::remove_dir_all(&base);
}
