//! The machine around a run as evidence (issue 37): run.json records the hypervisor and
//! the other processes' CPU share, and the report's verdict says so when it could
//! explain the result. A run beside a CPU hog of this test's own (two normal-priority
//! spinners that end themselves) is called loaded; a virtual machine (the CPU's
//! `hypervisor` flag, read here independently) is called virtualised.

mod support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use xrunrig::testkit;

fn xrunrig(state: &Path) -> Command {
    let mut c = support::run::command(state);
    c.env("XRUNRIG_NO_PROGRESS", "1");
    c
}

#[test]
fn a_run_beside_a_hog_is_reported_loaded_and_a_vm_virtualised() {
    if !testkit::root() {
        return;
    }
    let state = testkit::private_dir("environment");
    let stop = Arc::new(AtomicBool::new(false));
    // Each spinner ends itself within 60 s whatever happens to the test.
    let hogs: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(60);
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    let out = state.join("res");
    let o = xrunrig(&state)
        .args([
            "run",
            "rigs/livefx.toml",
            "--variant",
            "pi",
            "--backend",
            "clock",
            "--duration",
            "3",
            "--trials",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let run = support::run::json(&out.join("run.json"));
    let others = run["environment"]["others_cpu_percent"]
        .as_f64()
        .unwrap_or_else(|| panic!("no others_cpu_percent in {}", run["environment"]));
    assert!(others >= 30.0, "two spinners beside it, others {others} %");
    let r = xrunrig(&state).arg("report").arg(&out).output().unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    let verdict = report
        .split("Verdict")
        .nth(1)
        .and_then(|v| v.split("What ran").next())
        .unwrap_or_else(|| panic!("no Verdict section in\n{report}"));
    assert!(
        verdict.contains("Under load: other processes used"),
        "{verdict}"
    );
    let flag = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    assert_eq!(verdict.contains("Virtualised: "), flag, "{verdict}");
    assert_eq!(run["environment"]["virtualised"].is_string(), flag);
    std::fs::remove_dir_all(&state).unwrap();
}
