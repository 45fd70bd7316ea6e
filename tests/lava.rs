//! lava/: the LAVA job template, the xrunrig test definition and the QEMU device, proven
//! with Debian's lava-dispatcher 2023.01 (`.ci/setup` installs it):
//! - `lava_run_boots_the_guest_kernel_and_reports_every_row`: `lava-run` boots the
//!   guest tests' Debian 6.12 kernel on the local QEMU device (lava/devices/), with the
//!   ramdisk lava/qemu-ramdisk.sh makes, runs lava/xrunrig-test.yaml (a short livefx
//!   run on the clock backend), and every test case LAVA recorded is compared with the
//!   summary.json of the results directory the job attached to its log;
//! - `job_test_definition_and_device_pass_lava_common`: the rendered job, the test
//!   definition and the device configuration pass lava-common's own schemas, and the
//!   job's timeouts fit the run (its own bound plus the reporting, not 20 minutes) and
//!   its boot has LAVA's failure_retry;
//! - `a_jobs_end_is_judged_…`: which ends of a job are retried (the emulator's fault,
//!   LAVA's infrastructure) and which never are (a kernel crash, a timeout).
//!
//! The job is run under tests/support/lava.rs `run_retrying`: one fault not the
//! project's is retried (LAVA's boot retry, or the job run a second time) and said;
//! a second fails the test. tests/lava_faults.rs injects those faults.
//!
//! What this machine needed (measured): LAVA builds the overlay disk it attaches to a
//! QEMU device with libguestfs, whose supermin looks for a kernel in /boot and finds
//! none here ("supermin: failed to find a suitable kernel (host_cpu=x86_64)": this VM's
//! kernel is not in its filesystem), so the test points SUPERMIN_KERNEL and
//! SUPERMIN_MODULES at the Debian package's kernel and its modules, decompressed (with
//! the package's subset of modules that xrunrig's kernel cache keeps, the appliance
//! waits for its root disk forever: no virtio_scsi); and Debian's busybox has no blkid,
//! so lava/qemu-ramdisk.sh's /init reads the overlay's UUID from its superblock.
//!
//! Missing LAVA packages fail these tests (as any missing prerequisite under
//! XRUNRIG_REQUIRE_ALL=1): they are Debian packages that `.ci/setup` installs.

mod support;

use std::process::Command;
use support::lava::{self, End, PY, Why};
use xrunrig::testkit;

#[test]
fn job_test_definition_and_device_pass_lava_common() {
    if !testkit::have(
        lava::have_lava_common(),
        "lava-common (Debian package; .ci/setup installs lava-dispatcher)",
    ) {
        return;
    }
    let d = testkit::private_dir("lava-schemas");
    let job = d.join("job.yaml");
    lava::render_job(
        &lava::job_values("/boot/vmlinuz", "/tmp/ramdisk.cpio.gz", "--backend clock"),
        &job,
    );
    const CHECK: &str = r#"
import sys, yaml
from lava_common.schemas import validate
from lava_common.schemas.test import testdef
from lava_common.schemas import device
job = yaml.safe_load(open(sys.argv[1]))
validate(job, strict=True, extra_context_variables=[])
testdef.validate(yaml.safe_load(open(sys.argv[2])))
device.validate(yaml.safe_load(open(sys.argv[3])))
print("job, test definition and device valid")
"#;
    let o = Command::new(PY)
        .args(["-c", CHECK])
        .arg(&job)
        .arg(lava::repo().join("lava/xrunrig-test.yaml"))
        .arg(lava::repo().join("lava/devices/qemu-xrunrig.yaml"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "lava-common refuses:\n{said}");
    // And refuses a job that is not one (the check is not a rubber stamp).
    let bad = d.join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&job)
            .unwrap()
            .replace("to: tmpfs", "to: nowhere"),
    )
    .unwrap();
    let o = Command::new(PY)
        .args(["-c", CHECK])
        .arg(&bad)
        .arg(lava::repo().join("lava/xrunrig-test.yaml"))
        .arg(lava::repo().join("lava/devices/qemu-xrunrig.yaml"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a job deploying to nowhere passed");
    // Timeouts that fit the run (its own bound, given to it as --max-time, plus the
    // reporting), and LAVA's retry of a failed boot.
    let j: serde_json::Value = serde_json::from_str(&lava::run(
        Command::new(PY)
            .args([
                "-c",
                "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            ])
            .arg(&job),
        "reading the rendered job",
    ))
    .unwrap();
    let (max, test) = (lava::max_time_seconds(), lava::test_seconds());
    // 1 s trial + 5 s stream + 0.3 s gap, × 2 + 60 s.
    assert_eq!(max, 73, "{j}");
    assert_eq!(j["actions"][2]["test"]["timeout"]["seconds"], test, "{j}");
    assert_eq!(j["actions"][1]["boot"]["failure_retry"], 2, "{j}");
    assert_eq!(j["actions"][1]["boot"]["timeout"]["minutes"], 3, "{j}");
    assert_eq!(
        j["timeouts"]["job"]["seconds"],
        5 * 60 + 2 * 3 * 60 + test + 2 * 60,
        "{j}"
    );
    let params = &j["actions"][2]["test"]["definitions"][0]["parameters"];
    assert_eq!(
        params["RUN_ARGS"],
        format!("--backend clock --max-time {max}"),
        "{j}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// The judging of a job's end, on logs as lava-run writes them (lines from this
/// machine's runs, shortened): which failures are retried, which never are.
#[test]
fn a_jobs_end_is_judged_retryable_only_for_the_emulator_or_lavas_infrastructure() {
    let target = |m: &str| {
        format!(
            "{{\"dt\": \"t\", \"lvl\": \"target\", \"msg\": {}}}\n",
            serde_json::to_string(m).unwrap()
        )
    };
    let job = |result: &str, kind: &str, msg: &str| {
        format!(
            "{{\"dt\": \"t\", \"lvl\": \"results\", \"msg\": {{\"case\": \"job\", \"definition\": \"lava\", \"error_msg\": \"{msg}\", \"error_type\": \"{kind}\", \"result\": \"{result}\"}}}}\n"
        )
    };
    let info = |m: &str| format!("{{\"dt\": \"t\", \"lvl\": \"info\", \"msg\": \"{m}\"}}\n");
    let error = |m: &str| format!("{{\"dt\": \"t\", \"lvl\": \"error\", \"msg\": \"{m}\"}}\n");
    // As this machine's lava-run logged QEMU's abort while booting: the boot action's
    // sub-action retried first (the same failure), then the boot action itself.
    let retry = [
        info("start: 2 boot-image-retry (timeout 00:03:00) [common]"),
        error("auto-login-action failed: 1 of 2 attempts. 'Connection closed'"),
        error("auto-login-action failed: 2 of 2 attempts. 'Connection closed'"),
        error("boot-image-retry failed: 1 of 2 attempts. 'Connection closed'"),
    ]
    .concat();
    let boot = target("[    0.000000] Linux version 6.12.117+deb12-amd64");
    let abort = target(xrunrig::guest::crash::QEMU_ABORT_SAMPLE);
    let stall: String = xrunrig::guest::crash::RCU_STALL_SAMPLE
        .lines()
        .map(target)
        .collect();
    let pass = job("pass", "", "");
    // QEMU aborted while booting, LAVA booted once more, the job passed.
    let j = lava::judge(&format!("{boot}{abort}{retry}{boot}{pass}"));
    assert_eq!(j.end, End::Passed);
    assert_eq!(
        j.boot_retries
            .iter()
            .map(|w| w.line.as_str())
            .collect::<Vec<_>>(),
        [xrunrig::guest::crash::QEMU_ABORT_SAMPLE]
    );
    // The guest's timers stopped in the test action: its timeout, the stall on the
    // console: the emulator's.
    let timeout = job("fail", "Job", "lava-test-shell timed out after 133 seconds");
    let j = lava::judge(&format!("{boot}{stall}{timeout}"));
    assert!(
        matches!(&j.end, End::Retryable(Why { line, .. }) if line.starts_with("rcu: INFO: rcu_preempt detected stalls")),
        "{j:?}"
    );
    // The same timeout with nothing of the emulator's: never retried.
    let j = lava::judge(&format!("{boot}{timeout}"));
    assert!(
        matches!(&j.end, End::Failed(e) if e.contains("timed out")),
        "{j:?}"
    );
    // LAVA's infrastructure (the connection closed) with a quiet console: retried.
    let closed = job("fail", "Infrastructure", "Connection closed");
    let j = lava::judge(&format!("{boot}{closed}"));
    assert!(matches!(&j.end, End::Retryable(_)), "{j:?}");
    // The kernel's panic closes the connection too (panic=-1, -no-reboot): never retried.
    let panic = target("[   12.000000] Kernel panic - not syncing: sysrq triggered crash");
    let j = lava::judge(&format!("{boot}{panic}{closed}"));
    assert!(
        matches!(&j.end, End::Failed(e) if e.contains("never retried")),
        "{j:?}"
    );
    // Nor a boot LAVA retried after a kernel crash.
    let j = lava::judge(&format!("{boot}{panic}{retry}{boot}{pass}"));
    assert!(
        matches!(&j.end, End::Failed(e) if e.contains("kernel crash")),
        "{j:?}"
    );
    // A wrong number is a failed test case, and the job still passes: the test's own
    // assertions judge it. A job without a result is a failure.
    let case = |name: &str, result: &str| {
        format!(
            "{{\"dt\": \"t\", \"lvl\": \"results\", \"msg\": {{\"case\": \"{name}\", \"definition\": \"0_xrunrig\", \"result\": \"{result}\"}}}}\n"
        )
    };
    let run_failed = case("run", "fail");
    let j = lava::judge(&format!("{boot}{run_failed}{pass}"));
    assert_eq!(j.end, End::Passed);
    assert!(matches!(lava::judge(&boot).end, End::Failed(_)));
    // The run's case failed while the guest's timers stopped (CI, 2026-12-02: the job
    // passed, the run's 1 s trial outlived its 73 s bound): the emulator's, retried.
    let j = lava::judge(&format!("{boot}{stall}{run_failed}{pass}"));
    assert!(
        matches!(&j.end, End::Retryable(Why { what, .. }) if what.contains("'run' failed")),
        "{j:?}"
    );
    // Passed cases beside the stall: the job passed.
    let j = lava::judge(&format!("{boot}{stall}{}{pass}", case("run", "pass")));
    assert_eq!(j.end, End::Passed);
    // A failed case beside a kernel crash: never retried.
    let j = lava::judge(&format!("{boot}{panic}{run_failed}{pass}"));
    assert!(
        matches!(&j.end, End::Failed(e) if e.contains("kernel crashed")),
        "{j:?}"
    );
    // lava-run's YAML escapes and tags read.
    let v =
        lava::line(r#"{"dt": "t", "lvl": "target", "msg": "1 \xD7 1 \e[0m", "endtc": ! "637"}"#)
            .unwrap();
    assert_eq!(v["msg"], "1 \u{d7} 1 \u{1b}[0m");
    assert_eq!(v["endtc"], "637");
}

#[test]
fn lava_run_boots_the_guest_kernel_and_reports_every_row() {
    if !testkit::root() {
        return;
    }
    if !testkit::have(
        testkit::on_path("lava-run"),
        "lava-run (Debian package lava-dispatcher; .ci/setup installs it)",
    ) {
        return;
    }
    let Some(deb) = lava::kernel_deb() else {
        testkit::skip("the Debian 6.12 kernel package (.ci/fetch-kernel)");
        return;
    };
    let d = testkit::private_dir("lava-run");
    let k = lava::kernel(&deb);
    let ramdisk = lava::ramdisk(&k, &d);
    let job = lava::job(&k, &ramdisk, &d);
    let device = lava::device(None, &d);
    // A fault of the emulator (or of LAVA's infrastructure) is retried once; a
    // second, a kernel crash, a timeout or a failed case fails the test.
    let (done, retries) =
        lava::run_retrying(lava::Budget::genuine_only(testkit::retry_log()), |n| {
            lava::lava_run(&job, &device, &k, &d, n)
        });
    eprintln!("retries: {retries:?}");
    let log = done.log;
    let cases = lava::lava_cases(&log);
    let res = lava::attached_results(&log, &d);
    // What the rows say, through xrunrig's own mapping of the attached directory, and
    // the summary's row count, read through the results types.
    let want = lava::run(
        Command::new(env!("CARGO_BIN_EXE_xrunrig"))
            .args(["export", "lava"])
            .arg(&res),
        "xrunrig export lava",
    );
    let summary: results::livefx::Summary =
        serde_json::from_str(&std::fs::read_to_string(res.join("summary.json")).unwrap()).unwrap();
    assert!(!summary.rows.is_empty());
    let figures: usize = summary
        .rows
        .iter()
        .map(|r| analysis::export::kcidb::livefx_figures(r).len())
        .sum();
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(want.len(), figures);
    for step in ["install", "run", "results"] {
        assert!(
            cases.iter().any(|c| c.0 == step && c.1 == "pass"),
            "{step}: {cases:?}"
        );
    }
    let rows: Vec<_> = cases
        .iter()
        .filter(|c| !["install", "run", "results"].contains(&c.0.as_str()))
        .collect();
    assert_eq!(rows.len(), want.len(), "{cases:?}\n{want:?}");
    for (c, w) in rows.iter().zip(&want) {
        let f: Vec<&str> = w.split(' ').collect();
        assert_eq!(
            (c.0.as_str(), c.1.as_str()),
            (f[0], f[1]),
            "{c:?} against {w}"
        );
        let m: f64 = f[2].parse().unwrap();
        assert!(
            c.2.is_some_and(|x| (x - m).abs() <= 1e-9 * m.abs().max(1.0)),
            "{c:?} against {w}"
        );
        assert_eq!(c.3.as_deref(), Some(f[3]), "{c:?} against {w}");
    }
    // xruns per row, straight from summary.json.
    for r in &summary.rows {
        let name = format!("livefx.{}.{}.xruns", r.setting, r.variant);
        let c = rows.iter().find(|c| c.0 == name).expect(&name);
        assert_eq!(c.2, Some(r.counts.xruns as f64), "{name}");
        assert_eq!(c.1, if r.counts.xruns == 0 { "pass" } else { "fail" });
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A kernel message the console put into the middle of the results' base64 (measured:
/// "SEJUvyc3vH[   12.360435] clocksource: timekeeping watchdog on CPU2: …", the line's
/// rest on the next line) is left out, so the tarball still decodes.
#[test]
fn a_kernel_message_inside_the_attached_results_is_left_out() {
    assert_eq!(
        lava::base64_part("SEJUvyc3vH[   12.360435] clocksource: timekeeping watchdog"),
        "SEJUvyc3vH"
    );
    assert_eq!(lava::base64_part("[   12.36] rcu: INFO: stall"), "");
    assert_eq!(
        lava::base64_part("iP5Y6+T9o+ZfCOpw0lB1Mj551/vb00of=="),
        "iP5Y6+T9o+ZfCOpw0lB1Mj551/vb00of=="
    );
}
