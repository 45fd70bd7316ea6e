//! End to end: `xrunrig run rigs/livefx.toml` on the clock backend and on a private dummy
//! jackd. Exactness as the issue asks: every injected overrun is detected and tied to its
//! own cycle (in the cycles file); misses on cycles without injection are counted apart
//! and printed (this VM stalls now and then, other builds run beside us); the control
//! without injection runs at period 1024 (21 ms), where no stall seen here makes a miss,
//! and must show 0 misses. Needs root (SCHED_FIFO); the JACK tests need jackd2, which CI
//! installs. Tests here run one at a time: they time things.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use xrunrig::testkit;

static SERIAL: Mutex<()> = Mutex::new(());

/// livefx needs SCHED_FIFO: root, or a visible skip (see `xrunrig::testkit`).
fn root() -> bool {
    testkit::root()
}

/// The test's own directory (0700): the run's XRUNRIG_STATE_DIR, so no test reads or
/// restores the machine's real journal; results go to `res` inside it.
fn own_dir(tag: &str) -> PathBuf {
    testkit::private_dir(&format!("livefx-{tag}"))
}

/// The results directory of run `tag` (not created: xrunrig creates it).
fn out_dir(tag: &str) -> PathBuf {
    own_dir(tag).join("res")
}

/// `xrunrig` with the state directory of the test's own (the parent of `out`).
fn xrunrig(out: &Path) -> Command {
    support::run::command(out.parent().expect("out has a parent"))
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    dir: PathBuf,
}

fn run(tag: &str, args: &[&str], envs: &[(&str, &str)]) -> Run {
    run_rig(tag, "rigs/livefx.toml", args, envs)
}

fn run_rig(tag: &str, rig: &str, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let dir = out_dir(tag);
    let mut c = xrunrig(&dir);
    c.args(["run", rig, "--variant", "pi", "--out"])
        .arg(&dir)
        .args(args);
    for (k, v) in envs {
        c.env(k, v);
    }
    let o = c.output().expect("running xrunrig");
    let r = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        dir,
    };
    eprintln!("--- {tag}: exit {}\n{}\n{}", r.code, r.stdout, r.stderr);
    r
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"))
        .expect("summary.json parses")
}

/// (flags, start ns) of every cycle in a trial's cycles file.
fn cycles(dir: &Path, s: &Value) -> Vec<(u32, u64)> {
    let f = s["trials"][0]["cycles_file"].as_str().expect("cycles_file");
    let b = std::fs::read(dir.join(f)).expect("cycles file");
    assert_eq!(b.len() % 24, 0, "24-byte records");
    b.chunks_exact(24)
        .map(|c| {
            (
                u32::from_le_bytes(c[16..20].try_into().unwrap()),
                u64::from_le_bytes(c[0..8].try_into().unwrap()),
            )
        })
        .collect()
}

/// An injected run, run once more (said as a RETRY line, counted by `.ci/test`) when the
/// host disturbed it: more than one cycle in ten missed without an injection. Quiet, this
/// VM misses ~0 such cycles; CI once saw 902 of 1829 (workers not woken for the cycle:
/// the host stalled the VM), and 6 injected overruns went unnoticed in that stretch.
fn run_injected(tag: &str, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let r = run(tag, args, envs);
    let Ok(t) = std::fs::read_to_string(r.dir.join("summary.json")) else {
        return r;
    };
    let s: Value = serde_json::from_str(&t).expect("summary.json parses");
    let row = &s["rows"][0];
    let (other, cycles) = (
        row["misses_not_injected"].as_u64().unwrap_or(0),
        row["cycles"].as_u64().unwrap_or(0),
    );
    if other * 10 <= cycles {
        return r;
    }
    testkit::host_retry(&format!(
        "{other} of {cycles} cycles missed without an injection"
    ));
    run(&format!("{tag}-again"), args, envs)
}

/// The injected run's checks: returns (injected, misses on other cycles).
fn check_injected(r: &Run, every: u64) -> (u64, u64) {
    assert_eq!(r.code, 0, "the run succeeds");
    let s = summary(&r.dir);
    let row = &s["rows"][0];
    let cyc = cycles(&r.dir, &s);
    assert_eq!(row["cycles"].as_u64().unwrap(), cyc.len() as u64);
    assert!(
        cyc.len() > 1000,
        "10 s at 256 frames is ~1875 cycles: {}",
        cyc.len()
    );
    // Injected exactly on every Nth cycle, and each one detected as a miss on its cycle.
    let mut injected = 0;
    let mut other_misses = 0;
    for (i, (f, _)) in cyc.iter().enumerate() {
        let inj = f & 4 != 0;
        assert_eq!(
            inj,
            (i as u64 + 1).is_multiple_of(every),
            "injection on cycle {i}"
        );
        if inj {
            injected += 1;
            assert!(
                f & 1 != 0,
                "injected overrun on cycle {i} not detected as a miss"
            );
        } else if f & 1 != 0 {
            other_misses += 1;
        }
    }
    assert_eq!(row["injected"].as_u64().unwrap(), injected);
    assert_eq!(injected, cyc.len() as u64 / every);
    assert_eq!(row["injected_undetected"].as_u64().unwrap(), 0);
    assert_eq!(
        row["deadline_misses"].as_u64().unwrap(),
        injected + other_misses,
        "misses = injected + the ones counted apart"
    );
    assert_eq!(row["misses_not_injected"].as_u64().unwrap(), other_misses);
    assert!(
        row["xruns"].as_u64().unwrap() > 0,
        "an overrun of 1.5 periods is an xrun"
    );
    eprintln!(
        "injected {injected}, all detected; misses on other cycles (VM stalls): {other_misses}"
    );
    // The event log has one injected and one deadline_miss per injected cycle.
    let ev = std::fs::read_to_string(r.dir.join("events.jsonl")).unwrap();
    let count = |k: &str| {
        ev.lines()
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["kind"] == k)
            .count() as u64
    };
    assert_eq!(count("injected"), injected);
    assert_eq!(count("deadline_miss"), injected + other_misses);
    assert!(count("xrun") > 0);
    (injected, other_misses)
}

fn check_control(r: &Run) {
    assert_eq!(r.code, 0, "the run succeeds");
    let s = summary(&r.dir);
    let row = &s["rows"][0];
    assert_eq!(row["period"], 1024);
    assert!(
        row["cycles"].as_u64().unwrap() > 400,
        "10 s at 1024 frames is ~469 cycles"
    );
    assert_eq!(row["injected"], 0);
    // On a kernel without preemption (the doctor's kernel.preemption FAIL: 'none') a
    // woken worker waits for whatever system call holds its CPU: on this 2-vCPU VM 5 and
    // 20 misses in 469 cycles in 2 of 11 runs, each "fx.0 had not woken up" or preempted
    // mid-work, late by 20-46 ms. There the control bounds them (a rig whose work did not
    // fit would miss every cycle); on a preemptible kernel it requires none.
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("run.json")).unwrap()).unwrap();
    let no_preemption = run["doctor"]["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["id"] == "kernel.preemption" && c["status"] == "fail");
    let misses = row["deadline_misses"].as_u64().unwrap();
    let n = row["cycles"].as_u64().unwrap();
    if no_preemption {
        eprintln!("control on a kernel without preemption: {misses} misses in {n} cycles");
        assert!(
            misses * 10 <= n,
            "no injection at period 1024: at most 10 % misses without preemption, {misses} of {n}"
        );
    } else {
        assert_eq!(misses, 0, "no injection at period 1024: no misses");
        assert!(cycles(&r.dir, &s).iter().all(|(f, _)| f & 5 == 0));
    }
    assert!(
        cycles(&r.dir, &s).iter().all(|(f, _)| f & 4 == 0),
        "none injected"
    );
}

#[test]
fn clock_injected_overruns_are_all_detected() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let r = run_injected(
        "clock-inj",
        &[
            "--backend",
            "clock",
            "--duration",
            "10 s",
            "--inject-every",
            "50",
            "--inject-factor",
            "1.5",
        ],
        &[],
    );
    check_injected(&r, 50);
    // The clock's xruns are the periods skipped after each overrun: one per injection
    // at 1.5 periods, plus any stall's.
    let s = summary(&r.dir);
    assert!(s["rows"][0]["xruns"].as_u64().unwrap() >= s["rows"][0]["injected"].as_u64().unwrap());
    assert!(r.stdout.contains("clock"), "the table names the backend");
}

#[test]
fn clock_control_at_period_1024_has_no_misses() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let r = run(
        "clock-ctl",
        &[
            "--backend",
            "clock",
            "--duration",
            "10 s",
            "--period",
            "1024",
        ],
        &[],
    );
    check_control(&r);
    assert_eq!(summary(&r.dir)["rows"][0]["xruns"], 0);
}

#[test]
fn jack_injected_overruns_are_all_detected_and_xruns_reported() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let Some(j) = support::jackd::PrivateJackd::start("inj", 256) else {
        return;
    };
    let r = run_injected(
        "jack-inj",
        &[
            "--backend",
            "jack",
            "--duration",
            "10 s",
            "--inject-every",
            "50",
        ],
        &[("JACK_DEFAULT_SERVER", &j.name)],
    );
    drop(j);
    check_injected(&r, 50);
    let s = summary(&r.dir);
    assert_eq!(s["rows"][0]["backend"], "jack");
    // JACK's xrun notifications are tied to cycles: the xrun bit is set on cycles.
    assert!(cycles(&r.dir, &s).iter().any(|(f, _)| f & 2 != 0));
}

#[test]
fn jack_control_at_period_1024_has_no_misses() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let Some(j) = support::jackd::PrivateJackd::start("ctl", 1024) else {
        return;
    };
    let r = run(
        "jack-ctl",
        &["--backend", "jack", "--duration", "10 s"],
        &[("JACK_DEFAULT_SERVER", &j.name)],
    );
    drop(j);
    check_control(&r);
}

#[test]
fn jack_server_death_ends_the_run_with_what_was_recorded() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let Some(mut j) = support::jackd::PrivateJackd::start("die", 256) else {
        return;
    };
    let name = j.name.clone();
    let pid = j.pid();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(3));
        // SAFETY: signalling the test's own jackd child.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let t0 = std::time::Instant::now();
    let r = run(
        "jack-die",
        &["--backend", "jack", "--duration", "30 s"],
        &[("JACK_DEFAULT_SERVER", &name)],
    );
    killer.join().unwrap();
    j.stop();
    assert!(
        t0.elapsed().as_secs() < 25,
        "the run ended when the server died"
    );
    assert_eq!(r.code, 3, "a failed run");
    assert!(r.stderr.contains("JACK server went away"), "it says so");
    let s = summary(&r.dir);
    let n = s["rows"][0]["cycles"].as_u64().unwrap();
    assert!(n > 100, "the cycles before the death are kept: {n}");
    let ev = std::fs::read_to_string(r.dir.join("events.jsonl")).unwrap();
    assert!(ev.contains("\"server_gone\""));
    assert!(r.dir.join("run.json").exists() && r.dir.join("histograms.json").exists());
}

#[test]
fn clock_loopback_finds_clicks_only_with_overruns() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let r = run(
        "loop-inj",
        &[
            "--backend",
            "clock",
            "--duration",
            "3 s",
            "--inject-every",
            "50",
            "--loopback",
        ],
        &[],
    );
    assert_eq!(r.code, 0);
    let row = &summary(&r.dir)["rows"][0];
    // The delay line is nperiods × period = 512 frames.
    assert_eq!(row["roundtrip_frames"], 512);
    assert!(row["discontinuities"].as_u64().unwrap() > 0);
    // On the clock every dropout follows the overrun that caused it.
    assert_eq!(row["discontinuities_unexplained"], 0);
    let r = run(
        "loop-ctl",
        &[
            "--backend",
            "clock",
            "--duration",
            "3 s",
            "--period",
            "1024",
            "--loopback",
        ],
        &[],
    );
    assert_eq!(r.code, 0);
    let row = &summary(&r.dir)["rows"][0];
    assert_eq!(row["roundtrip_frames"], 2048);
    assert_eq!(row["discontinuities"], 0);
}

#[test]
fn auto_without_a_server_or_card_picks_the_clock_and_says_why() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    // No server: a name none runs under. No card: alsa-lib configured with a default
    // device on a card no machine has (tests/fixtures/alsa/no-card.conf), so a
    // workstation with a sound card runs this too.
    let no_card = support::run::repo().join("tests/fixtures/alsa/no-card.conf");
    let r = run(
        "auto",
        &["--duration", "1 s"],
        &[
            ("JACK_DEFAULT_SERVER", "xrr-no-such-server"),
            ("ALSA_CONFIG_PATH", no_card.to_str().unwrap()),
        ],
    );
    assert_eq!(r.code, 0);
    let s = summary(&r.dir);
    let row = &s["rows"][0];
    assert_eq!(row["backend"], "clock");
    let note = row["backend_note"].as_str().unwrap();
    assert!(
        note.contains("no JACK server") && note.contains("ALSA"),
        "{note}"
    );
    assert!(r.stdout.contains("cycles"), "the table is printed");
    let h: Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir.join("histograms.json")).unwrap())
            .unwrap();
    assert_eq!(h.as_array().unwrap().len(), 3);
}

#[test]
fn bad_livefx_tables_are_refused_with_a_position() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = own_dir("bad");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx.toml"))
            .unwrap()
            .replace("lock = \"bus\"", "lock = \"mixer\"");
    let rig = dir.join("bad.toml");
    std::fs::write(&rig, text).unwrap();
    let o = xrunrig(&dir.join("out"))
        .args(["run"])
        .arg(&rig)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.toml:") && err.contains("lock 'mixer' is not defined"),
        "{err}"
    );
}

/// The dummy driver loops no audio, but JACK can wire the client's output straight to its
/// own input: the loopback check then measures JACK's one-period feedback delay, and with
/// nothing overrunning finds no discontinuity.
#[test]
fn jack_loopback_through_its_own_ports() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let dir = own_dir("selfloop-rig");
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx.toml"))
        .unwrap()
        .replace(
            "loopback = { enabled = false, playback = \"system:playback_1\", capture = \"system:capture_1\" }",
            "loopback = { enabled = true, playback = \"xrunrig-livefx:in\" }",
        );
    assert!(
        text.contains("xrunrig-livefx:in"),
        "the rig's loopback line changed: update this test"
    );
    let rig = dir.join("selfloop.toml");
    std::fs::write(&rig, text).unwrap();
    let Some(j) = support::jackd::PrivateJackd::start("loop", 1024) else {
        return;
    };
    let r = run_rig(
        "jack-loop",
        rig.to_str().unwrap(),
        &["--backend", "jack", "--duration", "5 s"],
        &[("JACK_DEFAULT_SERVER", &j.name)],
    );
    drop(j);
    assert_eq!(r.code, 0);
    let row = &summary(&r.dir)["rows"][0];
    assert_eq!(row["roundtrip_frames"], 1024);
    assert_eq!(row["discontinuities"], 0);
}

/// A profile's audio settings: one row per setting, each at its own period.
#[test]
fn profile_audio_settings_sweep_periods() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let r = run(
        "periods",
        &[
            "--backend",
            "clock",
            "--duration",
            "1 s",
            "--profile",
            "profiles/audio-periods.toml",
        ],
        &[],
    );
    assert_eq!(r.code, 0);
    let s = summary(&r.dir);
    let periods: Vec<u64> = s["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["period"].as_u64().unwrap())
        .collect();
    assert_eq!(periods, vec![128, 256, 1024]);
    assert_eq!(s["trials"].as_array().unwrap().len(), 3);
}

#[test]
fn jack_without_a_server_is_refused_before_anything_changes() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let r = run(
        "nojack",
        &["--backend", "jack", "--duration", "1 s"],
        &[("JACK_DEFAULT_SERVER", "xrr-no-such-server")],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("no JACK server 'xrr-no-such-server' answered"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Nothing was changed"));
    assert!(!r.dir.join("summary.json").exists());
}

/// The inversion rig: live workers need a bus lock that a low-priority worker holds
/// while a FIFO 40 hog preempts it. With a PI bus the holder is boosted and the cycles
/// stay on time; without PI they miss, and the tool blames the bus and its holder.
///
/// Three trials, compared by their medians: the host of a VM stalls the guest's vCPUs
/// now and then, and a stall lands in whichever variant is running. Measured on this
/// 2-CPU VM (6 runs of `--trials 3 --duration 5s`): PI 0-9 misses per trial with one
/// trial of 189 during a stall (no-PI's trial beside it: 224); no-PI 103-168 otherwise.
/// A single trial compared once failed CI (a stall in the PI trial); a median of three
/// needs two such trials.
#[test]
fn pi_locks_keep_the_inversion_rig_on_time() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let dir = out_dir("inversion");
    let o = xrunrig(&dir)
        .args([
            "run",
            "rigs/livefx-inversion.toml",
            "--backend",
            "clock",
            "--duration",
            "5 s",
            "--trials",
            "3",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    eprintln!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0));
    let s = summary(&dir);
    let median = |v: &str| {
        let mut m: Vec<u64> = s["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["variant"] == v)
            .map(|t| t["deadline_misses"].as_u64().unwrap())
            .collect();
        assert_eq!(m.len(), 3, "three trials of {v}");
        m.sort_unstable();
        m[1]
    };
    let (pi, no_pi) = (median("pi"), median("no-pi"));
    assert!(
        no_pi >= 20,
        "without PI the inversion makes cycles miss: median {no_pi}"
    );
    assert!(
        no_pi > 3 * pi,
        "PI keeps them on time: median pi {pi}, no-pi {no_pi}"
    );
    // The tool says why: most of no-PI's misses are a live worker waiting on the bus
    // that 'ahead' held (measured: 339-399 of 345-500 per run).
    let ev = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let (mut misses, mut on_bus) = (0, 0);
    for l in ev.lines() {
        let e: Value = serde_json::from_str(l).unwrap();
        if e["variant"] == "no-pi" && e["kind"] == "deadline_miss" {
            misses += 1;
            if e["lock"] == "bus" && e["holder"] == "ahead" {
                on_bus += 1;
            }
        }
    }
    assert!(
        on_bus * 2 > misses,
        "{on_bus} of {misses} no-PI misses blamed on the bus holder"
    );
}

/// A livefx rig's `[instruments]` run around each audio trial: IPI counters per trial.
#[test]
fn instruments_run_around_livefx_trials() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let dir = own_dir("inst-rig");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx.toml"))
            .unwrap()
            + "\n[instruments]\nipi = { interval = \"1 s\" }\n";
    let rig = dir.join("inst.toml");
    std::fs::write(&rig, text).unwrap();
    let r = run_rig(
        "inst",
        rig.to_str().unwrap(),
        &["--backend", "clock", "--duration", "2 s"],
        &[],
    );
    assert_eq!(r.code, 0);
    let s = summary(&r.dir);
    let inst = &s["trials"][0]["instruments"];
    assert!(inst["ipi_RES_cpu0"][0].as_f64().is_some(), "{inst}");
    let sample: Value = serde_json::from_str(
        std::fs::read_to_string(r.dir.join("samples.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(
        sample["evidence"][0]
            .as_str()
            .unwrap()
            .contains("IPIs per 1 s interval")
    );
}
