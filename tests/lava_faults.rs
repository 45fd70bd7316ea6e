//! The LAVA job (tests/lava.rs) with the emulator's faults made on purpose: a stand-in
//! for qemu-system-x86_64 as the QEMU device's command (tests/support/guest.rs
//! `QemuStandIn`) aborts the way QEMU aborted in this test's run of issue 28
//! (`system/physmem.c:2678: iotlb_to_section: Assertion … failed.`, SIGABRT) or stalls
//! the way its guest stalled (the RCU stall of stopped timers, then silence), then runs
//! the real QEMU. Each job must end with the retry said and why (`RETRY` on stderr, the
//! retries log): the abort while booting by LAVA's own failure_retry, the stall by its
//! test action's timeout (which fits the run: not 20 minutes) and the job run a second
//! time; two faults in one test fail it.
//!
//! Needs root, lava-dispatcher (`.ci/setup`) and the Debian 6.12 kernel package
//! (`.ci/fetch-kernel`), as tests/lava.rs. One job at a time: each boots a TCG guest.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use support::guest::QemuStandIn;
use support::lava;
use xrunrig::guest::crash::{QEMU_ABORT_SAMPLE, RCU_STALL_SAMPLE};
use xrunrig::testkit;

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What every test here needs; None (after a visible skip) when it is missing.
fn ready() -> Option<PathBuf> {
    if !testkit::root() {
        return None;
    }
    if !testkit::have(
        testkit::on_path("lava-run"),
        "lava-run (Debian package lava-dispatcher; .ci/setup installs it)",
    ) {
        return None;
    }
    let deb = lava::kernel_deb();
    if deb.is_none() {
        testkit::skip("the Debian 6.12 kernel package (.ci/fetch-kernel)");
    }
    deb
}

/// The job on a device whose QEMU is a stand-in with `steps`, under the retry rule
/// with its retries logged to `log` (the test's own: these faults are made on
/// purpose, not CI's to count). Returns the passed job, its retries, and the stand-in.
fn job_with(
    deb: &Path,
    d: &Path,
    steps: &[&str],
    budget: lava::Budget,
) -> (lava::Job, Vec<lava::Why>, QemuStandIn) {
    let k = lava::kernel(deb);
    let ramdisk = lava::ramdisk(&k, d);
    let job = lava::job(&k, &ramdisk, d);
    let qemu = QemuStandIn::new(&d.join("qemu"), steps);
    let device = lava::device(Some(&qemu.path), d);
    let (done, retries) = lava::run_retrying(budget, |n| lava::lava_run(&job, &device, &k, d, n));
    (done, retries, qemu)
}

/// The test's one fault, logged to its own `log`; the emulator may add one of its own
/// (the real QEMU that boots after the stand-in's fault: its guest's timers stopped so
/// in CI on 2026-12-02), which goes to CI's retries log like any guest test's.
fn one_made(log: &Path) -> lava::Budget {
    lava::Budget::made(1, log)
}

/// The job's results came whole: the run passed and the results are attached.
fn check_results(done: &lava::Job, d: &Path) {
    let cases = lava::lava_cases(&done.log);
    for step in ["install", "run", "results"] {
        assert!(
            cases.iter().any(|c| c.0 == step && c.1 == "pass"),
            "{step}: {cases:?}\nthe device's last lines:\n{}",
            done.console_tail(30)
        );
    }
    let res = lava::attached_results(&done.log, d);
    assert!(res.join("summary.json").is_file());
}

#[test]
fn qemu_aborting_while_the_device_boots_is_booted_once_more_by_lava() {
    let Some(deb) = ready() else { return };
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let d = testkit::private_dir("lava-abort");
    let log = d.join("retries.log");
    // 3 s in: the kernel is probing its devices, as when QEMU aborted in the issue.
    let (done, retries, qemu) = job_with(&deb, &d, &["abort-after 3", "real"], one_made(&log));
    // A start per retry after the first; a second retry is the real QEMU's own fault.
    assert_eq!(qemu.starts(), 1 + retries.len(), "{retries:?}");
    assert_eq!(retries[0].line, QEMU_ABORT_SAMPLE, "{retries:?}");
    assert!(retries[0].what.contains("QEMU aborted"), "{retries:?}");
    // One job: LAVA's failure_retry did it (the first job's log says so below).
    let first = std::fs::read_to_string(d.join("lava-run-0.log")).unwrap();
    assert!(
        first.contains("boot-image-retry failed: 1 of 2 attempts. 'Connection closed'"),
        "{}",
        done.tail(40)
    );
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains(QEMU_ABORT_SAMPLE) && said.contains("LAVA booted once more"),
        "{said}"
    );
    check_results(&done, &d);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_guest_stalled_in_the_test_action_times_out_within_its_bound_and_the_job_runs_again() {
    let Some(deb) = ready() else { return };
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let d = testkit::private_dir("lava-stall");
    let log = d.join("retries.log");
    // As lava-test-runner starts, as in the issue.
    let (done, retries, qemu) = job_with(
        &deb,
        &d,
        &["stall-on <LAVA_SIGNAL_STARTRUN", "real"],
        one_made(&log),
    );
    assert_eq!(qemu.starts(), 1 + retries.len(), "{retries:?}");
    let first_line = RCU_STALL_SAMPLE.lines().next().unwrap();
    assert!(first_line.ends_with(&retries[0].line), "{retries:?}");
    assert!(retries[0].what.contains("timers stopped"), "{retries:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.lines().count() == 1 && said.contains("the job is run a second time"),
        "{said}"
    );
    // The stalled job ended at its test action's timeout, which the run's own bound
    // sets (not LAVA's 20 minutes): said in its log.
    let first = std::fs::read_to_string(d.join("lava-run-0.log")).unwrap();
    let timed_out = first
        .lines()
        .filter_map(lava::line)
        .filter_map(|v| v["msg"].as_str().map(str::to_string))
        .find_map(|m| {
            let (_, rest) = m.split_once(" timed out after ")?;
            rest.strip_suffix(" seconds")?.parse::<u64>().ok()
        })
        .unwrap_or_else(|| panic!("no timeout in the stalled job's log"));
    let bound = lava::test_seconds();
    eprintln!("the stalled job timed out after {timed_out} s (test action bound {bound} s)");
    assert!(timed_out <= bound + 5, "{timed_out} s, bound {bound} s");
    assert!(bound < 5 * 60, "{bound}");
    check_results(&done, &d);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_second_fault_in_the_same_lava_test_fails_it() {
    let Some(deb) = ready() else { return };
    let _one = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let d = testkit::private_dir("lava-twice");
    let log = d.join("retries.log");
    // Both of the job's boots abort: LAVA's retry is the one allowed, the second fails.
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The two faults stand for the emulator's own: logged to the test's log.
        job_with(
            &deb,
            &d,
            &["abort-after 3", "abort-after 3"],
            lava::Budget::genuine_only(Some(log.clone())),
        )
    }));
    let msg = match failed {
        Ok((done, r, _)) => panic!("two faults passed: {r:?}\n{}", done.tail(40)),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "?".into()),
    };
    assert!(msg.contains("a second fault not the project's"), "{msg}");
    // Not run a second time.
    assert!(!d.join("lava-run-1.log").exists(), "{msg}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(said.lines().count(), 1, "{said}");
    let _ = std::fs::remove_dir_all(&d);
}
