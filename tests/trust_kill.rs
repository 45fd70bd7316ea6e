//! Issue 13, item 5: the kill -9 matrix. A run with a profile that changes two sysctls
//! is SIGKILLed at 20 random points spread over its phases (mid-apply, mid-trial,
//! mid-restore, while writing results), then the next start (`xrunrig restore`, or the
//! next `xrunrig run`) must leave 0 knobs changed, and every results directory must be
//! complete (summary.json and run.json parse) or marked INCOMPLETE, with no half-written
//! file. The points are random from a printed seed (XRUNRIG_KILL_SEED to replay);
//! XRUNRIG_TEST_STALL_MS widens the microsecond windows (the run says
//! `xrunrig: test-stall POINT` and sleeps there) so a kill lands inside them.
//! Then the JACK period: a private dummy jackd, `--backend jack --period N`, SIGKILL,
//! and the next start puts the server's period back (or says the server is gone).
//! Needs root.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use support::run::{BIN, assert_root, serial, text, xrunrig, xrunrig_in};
use support::sysctl::{self, Saved};

/// Safe to change on this machine (MEASURED.md; tests/engine.rs already does).
const KNOBS: [&str; 2] = [
    "/proc/sys/kernel/sched_rr_timeslice_ms",
    "/proc/sys/kernel/timer_migration",
];
const STALL_MS: u64 = 150;

const ROOT: &str = "the kill matrix writes sysctls";

fn tmp(tag: &str) -> PathBuf {
    // The same fresh 0700 directory every test gets (a state directory root accepts).
    xrunrig::testkit::private_dir(&format!("kill-{tag}"))
}

fn knobs() -> Vec<String> {
    KNOBS.iter().map(|p| sysctl::read(p)).collect()
}

/// splitmix64: small, seeded, the same sequence everywhere.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const RIG: &str = r#"
name = "kill-matrix"
trials = 2
trial_timeout = "5 s"
trial_gap = "50 ms"
[[threads]]
name = "w"
policy = "other"
steps = [ { mark = "a" }, { sleep = "200 ms" }, { mark = "b" } ]
[metrics.slept]
from = "w.a"
to = "w.b"
"#;

/// Two settings, each changing both sysctls away from the machine's values.
fn profile(orig: &[String]) -> String {
    let rr = |v: &str| if orig[0] == v { "43" } else { v }.to_string();
    let tm_other = if orig[1] == "1" { "0" } else { "1" };
    format!(
        "name = \"kill-matrix\"\n\
         [[settings]]\nname = \"a\"\nsysctl = {{ \"kernel.sched_rr_timeslice_ms\" = {}, \"kernel.timer_migration\" = {tm_other} }}\n\
         [[settings]]\nname = \"b\"\nsysctl = {{ \"kernel.sched_rr_timeslice_ms\" = {}, \"kernel.timer_migration\" = {tm_other} }}\n",
        rr("37"),
        rr("53"),
    )
}

/// stderr, line by line as it comes, on a channel.
fn lines(child: &mut Child) -> Receiver<String> {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for l in BufReader::new(err).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for a line containing `needle`; the lines seen so far are kept for messages.
fn wait_for(rx: &Receiver<String>, needle: &str, seen: &mut Vec<String>) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => {
                let hit = l.contains(needle);
                seen.push(l);
                if hit {
                    return true;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => return false,
        }
    }
    false
}

/// A results directory is complete (both files parse, no mark) or marked INCOMPLETE;
/// any summary.json or run.json in it parses whole either way (they are renamed into
/// place, never written in place).
fn check_results(dir: &Path, what: &str) -> &'static str {
    if !dir.exists() {
        return "none";
    }
    let parses = |f: &str| -> Option<bool> {
        std::fs::read_to_string(dir.join(f))
            .ok()
            .map(|t| serde_json::from_str::<serde_json::Value>(&t).is_ok())
    };
    for f in ["summary.json", "run.json"] {
        assert_ne!(
            parses(f),
            Some(false),
            "{what}: {} is half-written",
            dir.join(f).display()
        );
    }
    if dir.join("INCOMPLETE").exists() {
        return "incomplete";
    }
    assert_eq!(
        (parses("summary.json"), parses("run.json")),
        (Some(true), Some(true)),
        "{what}: {} is neither complete nor marked INCOMPLETE: {:?}",
        dir.display(),
        std::fs::read_dir(dir)
            .map(|r| r.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
            .unwrap_or_default()
    );
    "complete"
}

#[test]
fn kill_9_at_twenty_random_points_leaves_nothing_changed() {
    assert_root(ROOT);
    let _g = serial();
    let _back = Saved::now(&KNOBS);
    let before = _back.values();
    let seed = support::run::kill_seed();
    let mut rng = Rng(seed);
    let d = tmp("matrix");
    std::fs::write(d.join("rig.toml"), RIG).unwrap();
    std::fs::write(d.join("profile.toml"), profile(&before)).unwrap();
    std::fs::write(d.join("quick.toml"), RIG.replace("200 ms", "1 ms")).unwrap();
    // (phase, the stderr line that opens its window, which occurrences of it may be
    // taken, the delay after it before the window opens, the window's length in ms).
    // The first setting writes both knobs (two apply stalls), the second one (a third);
    // the third apply stall is followed, STALL_MS later, by a 200 ms trial. Restore
    // stalls after each of the two knobs; results between summary.json and run.json,
    // and again before INCOMPLETE goes.
    let phases: [(&str, &str, u64, u64, u64); 4] = [
        ("apply", "test-stall apply", 3, 0, STALL_MS),
        ("trial", "test-stall apply", 1, STALL_MS + 20, 160),
        ("restore", "test-stall restore", 2, 0, STALL_MS),
        ("results", "test-stall results", 1, 0, STALL_MS),
    ];
    let mut tally = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..20 {
        let (phase, needle, choices, base, window) = phases[i % phases.len()];
        let out = d.join(format!("res-{i:02}"));
        let mut child = Command::new(BIN)
            .args([
                "run",
                "rig.toml",
                "--profile",
                "profile.toml",
                "--trials",
                "2",
            ])
            .arg("--out")
            .arg(&out)
            .current_dir(&d)
            .env("XRUNRIG_STATE_DIR", &d)
            .env("XRUNRIG_TEST_STALL_MS", STALL_MS.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let rx = lines(&mut child);
        // Skip to a random one of the window's occurrences, then kill at a random
        // point inside it. "trial" is after the third apply stall; "results" is between
        // summary.json and run.json, or (half the time) just before INCOMPLETE goes.
        let skip = if phase == "trial" {
            2
        } else {
            rng.below(choices)
        };
        let (phase, needle) = if phase == "results" && rng.below(2) == 1 {
            ("complete", "test-stall complete")
        } else {
            (phase, needle)
        };
        let mut seen = vec![];
        let mut found = true;
        for _ in 0..=skip {
            found = wait_for(&rx, needle, &mut seen);
            if !found {
                break;
            }
        }
        assert!(
            found,
            "kill {i} ({phase}): never saw {needle:?} {} times; the run said:\n{}",
            skip + 1,
            seen.join("\n")
        );
        let delay = base + rng.below(window);
        std::thread::sleep(Duration::from_millis(delay));
        assert!(
            child.try_wait().unwrap().is_none(),
            "kill {i} ({phase} +{delay} ms): the run had already ended"
        );
        // SAFETY: SIGKILL to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        // The next start: `xrunrig restore`, or the next run (which recovers first),
        // alternating so each phase is recovered both ways.
        let by_run = (i / 4 + i) % 2 == 1;
        let next = if !by_run {
            xrunrig_in(&["restore"], &d, &d)
        } else {
            let out = d.join(format!("next-{i:02}"));
            let out = out.to_str().unwrap();
            xrunrig_in(
                &["run", "quick.toml", "--trials", "1", "--out", out],
                &d,
                &d,
            )
        };
        assert!(
            next.status.success(),
            "kill {i} ({phase} +{delay} ms): the next start failed\n{}",
            text(&next)
        );
        assert_eq!(
            knobs(),
            before,
            "kill {i} ({phase} +{delay} ms, seed {seed}): knobs left changed\nrun said:\n{}\nnext start:\n{}",
            seen.join("\n"),
            text(&next)
        );
        assert!(
            !d.join("journal.json").exists(),
            "kill {i}: journal left behind"
        );
        let state = check_results(&out, &format!("kill {i} ({phase} +{delay} ms)"));
        if by_run {
            assert_eq!(
                check_results(&d.join(format!("next-{i:02}")), "next run"),
                "complete"
            );
        }
        eprintln!(
            "kill {i:2}: {phase:<8} +{delay:3} ms -> results {state}, recovered by {}",
            if by_run {
                "the next run"
            } else {
                "xrunrig restore"
            }
        );
        *tally.entry(format!("{phase}/{state}")).or_default() += 1;
    }
    eprintln!("kill matrix (seed {seed}): {tally:?}");
    // A kill before results are written leaves the directory marked, never complete.
    for p in ["apply", "trial", "restore", "results", "complete"] {
        assert!(
            !tally.contains_key(&format!("{p}/complete")),
            "a run killed during {p} left a complete-looking directory: {tally:?}"
        );
    }
}

fn server_period(name: &str) -> u32 {
    xrunrig::audio::jack::period::server_period(name)
        .unwrap_or_else(|e| panic!("cannot read the period of '{name}': {e}"))
}

/// rigs/livefx.toml's pi variant on JACK server `server` at period 128 (the server runs
/// at 256) into `d/out`, with `d` as the state directory.
fn jack_run(d: &Path, server: &str, duration: &str, out: &str) -> Command {
    let mut c = support::run::command(d);
    c.args([
        "run",
        "rigs/livefx.toml",
        "--variant",
        "pi",
        "--backend",
        "jack",
    ])
    .args([
        "--device",
        server,
        "--period",
        "128",
        "--duration",
        duration,
    ])
    .arg("--out")
    .arg(d.join(out));
    c
}

/// `--backend jack --period N` changes the user's server; SIGKILL gives no chance to put
/// it back, so the next start does, as a client; with the server gone it says so.
#[test]
fn kill_9_during_a_jack_run_and_the_next_start_restores_the_period() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("jack");
    let Some(mut j) = support::jackd::PrivateJackd::start("kill", 256) else {
        return;
    };
    let start = |out: &str| {
        let mut c = jack_run(&d, &j.name, "20 s", out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while server_period(&j.name) != 128 {
            assert!(
                c.try_wait().unwrap().is_none(),
                "the run ended before changing the period"
            );
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the period never changed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let journal = std::fs::read_to_string(d.join("journal.json"))
            .expect("the period is journaled before it is changed");
        assert!(journal.contains("\"jack-period\"") && journal.contains(&j.name));
        // SAFETY: SIGKILL to our own child.
        unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
        c.wait().unwrap();
    };
    // A run that ends normally puts the period back and leaves no journal.
    let o = jack_run(&d, &j.name, "1 s", "r0").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server_period(&j.name), 256, "{}", text(&o));
    assert!(!d.join("journal.json").exists(), "{}", text(&o));

    start("r1");
    assert_eq!(
        server_period(&j.name),
        128,
        "SIGKILL gives no chance to restore"
    );
    let o = xrunrig(&["restore"], &d);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(server_period(&j.name), 256, "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&j.name) && out.contains("256"),
        "says so: {out}"
    );
    assert!(!d.join("journal.json").exists());

    // Killed again, and the server is gone before the next start: the user is told.
    start("r2");
    j.stop();
    let o = xrunrig(&["restore"], &d);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("is not running") && out.contains("256"),
        "{out}"
    );
    assert!(!d.join("journal.json").exists());
}
