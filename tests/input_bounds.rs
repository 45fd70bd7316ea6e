//! Bounded input, end to end: what a user can write in a rig, a profile or on the
//! command line is refused with a clear, positioned error (exit 2) before anything is
//! touched, never an abort, an out-of-memory crash or a run with a wrapped-around bound.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_xrunrig");

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrunrig-bounds-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `xrunrig ARGS` with the address space capped at 4 GiB, so a build that still tries
/// to allocate without bound fails fast here instead of eating the shared machine.
fn xrunrig(args: &[&str]) -> Output {
    let mut script = String::from("ulimit -v 4000000; exec \"$0\"");
    for i in 0..args.len() {
        script.push_str(&format!(" \"${}\"", i + 1));
    }
    Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(BIN)
        .args(args)
        .output()
        .unwrap()
}

fn check(rig: &Path) -> (i32, String) {
    let o = xrunrig(&["check", rig.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o.status.code().unwrap_or(-1), err)
}

/// A valid trials rig with `extra` inserted into its thread's table.
fn rig_text(top: &str, thread_extra: &str) -> String {
    format!(
        "{top}\n[[threads]]\nname = \"a\"\npolicy = \"other\"\n{thread_extra}\nsteps = [ {{ mark = \"x\" }}, {{ sleep = \"1 ms\" }}, {{ mark = \"y\" }} ]\n\
         [metrics.m]\nfrom = \"a.x\"\nto = \"a.y\"\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn the_base_rig_is_accepted() {
    // The rigs below differ from this one only in the line under test.
    let d = scratch("base");
    let p = write(&d, "ok.toml", &rig_text("trials = 1", "cpus = \"0\""));
    let (rc, err) = check(&p);
    assert_eq!(rc, 0, "{err}");
}

#[test]
fn a_cpu_range_beyond_the_machine_is_a_positioned_error_not_an_abort() {
    let d = scratch("cpus");
    let p = write(&d, "big.toml", &rig_text("", "cpus = \"0-4000000000\""));
    let (rc, err) = check(&p);
    assert_eq!(rc, 2, "exit {rc}: {err}");
    // Line 5 (after the empty top line), column 8: the value.
    assert!(
        err.contains(&format!("{}:5:8: cpus:", p.display())) && err.contains("possible"),
        "{err}"
    );
    let p = write(&d, "list.toml", &rig_text("", "cpus = [0, 70000]"));
    let (rc, err) = check(&p);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("{}:5:8: CPU 70000", p.display())),
        "{err}"
    );
}

#[test]
fn instances_steps_variants_and_repeats_are_capped() {
    let d = scratch("counts");
    for (name, top, extra, want) in [
        (
            "inst.toml",
            "",
            "instances = 100000",
            ":5:13: instances must be 1..=256",
        ),
        (
            "trials.toml",
            "trials = 4000000000",
            "",
            ":1:10: trials must be 1..=10000",
        ),
    ] {
        let p = write(&d, name, &rig_text(top, extra));
        let (rc, err) = check(&p);
        assert_eq!(rc, 2, "{name}: exit {rc}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(err.contains(&p.display().to_string()), "{name}: {err}");
    }
    // Nested repeats multiply: 100000 × 100000 iterations of one step.
    let text = rig_text("", "").replace(
        "{ sleep = \"1 ms\" }",
        "{ repeat = 100000, steps = [ { repeat = 100000, steps = [ { sleep = \"0 s\" } ] } ] }",
    );
    let p = write(&d, "rep.toml", &text);
    let (rc, err) = check(&p);
    assert_eq!(rc, 2, "exit {rc}: {err}");
    assert!(
        err.contains(&format!("{}:6:", p.display()))
            && err.contains("repeat = 100000 inside repeats of 100000"),
        "{err}"
    );
}

#[test]
fn a_rig_whose_bound_overflows_is_refused() {
    let d = scratch("timeout");
    let p = write(
        &d,
        "t.toml",
        &rig_text("trials = 10000\ntrial_timeout = \"264 h\"", ""),
    );
    let (rc, err) = check(&p);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains(":2:17: trial_timeout"), "{err}");
}

#[test]
fn a_rig_name_that_would_leave_results_is_refused() {
    let d = scratch("name");
    for bad in ["../../etc/x", "a/b", "tab\\there", &"n".repeat(200)] {
        let p = write(&d, "n.toml", &rig_text(&format!("name = \"{bad}\""), ""));
        let (rc, err) = check(&p);
        assert_eq!(rc, 2, "{bad}: {err}");
        assert!(
            err.contains(&format!("{}:1:8: name", p.display())),
            "{bad}: {err}"
        );
    }
}

#[test]
fn oversized_rig_and_profile_files_are_refused() {
    let d = scratch("size");
    let pad = format!("# {}\n", "x".repeat(100)).repeat(12_000); // 1.2 MB of comments
    let p = write(&d, "huge.toml", &(rig_text("", "") + &pad));
    let (rc, err) = check(&p);
    assert_eq!(rc, 2, "{err}");
    assert!(
        err.contains(&format!("{}:1:1:", p.display())) && err.contains("1 MiB"),
        "{err}"
    );
    let rig = write(&d, "ok.toml", &rig_text("", ""));
    let prof = write(
        &d,
        "huge-profile.toml",
        &(format!("[[settings]]\nname = \"a\"\n{pad}")),
    );
    let o = xrunrig(&[
        "check",
        rig.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:1:1:", prof.display())) && err.contains("1 MiB"),
        "{err}"
    );
}

#[test]
fn a_profile_audio_period_past_the_cap_is_refused() {
    let d = scratch("period");
    let rig = write(&d, "ok.toml", &rig_text("", ""));
    let prof = write(
        &d,
        "p.toml",
        "[[settings]]\nname = \"a\"\naudio = { period = 1000000 }\n",
    );
    let o = xrunrig(&[
        "check",
        rig.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("{}:3:9: audio.period", prof.display())),
        "{err}"
    );
}

/// `--trials` times a long trial bound overflowed the run's estimate: the watchdog got a
/// wrapped-around bound and the run started. It must be refused before it starts (and
/// before its results directory exists). `--trials` itself is capped at 10000 now; at
/// the cap, with a day's trial bound, the estimate is still far past 90 days.
#[test]
fn a_run_whose_estimate_overflows_is_refused_before_it_starts() {
    let d = scratch("estimate");
    let rig = write(
        &d,
        "r.toml",
        &rig_text("trial_timeout = \"24 h\"\ntrial_gap = \"0 s\"", ""),
    );
    let out = d.join("out");
    let mut child = Command::new(BIN)
        .args(["run", rig.to_str().unwrap(), "--trials", "10000", "--out"])
        .arg(&out)
        .env("XRUNRIG_STATE_DIR", d.join("state"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    use std::io::Read;
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    let status = status.unwrap_or_else(|| panic!("the run started instead of refusing:\n{err}"));
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("too long"), "{err}");
    assert!(!out.exists(), "a refused run left {}", out.display());
}
