//! Running the xrunrig binary from a test: the command with the test's own state
//! directory, its output as one text for assertion messages, the root check of the
//! tests that cannot skip, one-at-a-time, and the small rigs several tests run.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

pub const BIN: &str = env!("CARGO_BIN_EXE_xrunrig");

/// The repository: rigs/ and profiles/ are named relative to it.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `xrunrig` run from the repository with `state` as its XRUNRIG_STATE_DIR (the test's
/// own, so a test never reads or restores the machine's real journal).
pub fn command(state: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.current_dir(repo()).env("XRUNRIG_STATE_DIR", state);
    c
}

/// `xrunrig ARGS` from the repository, to the end.
pub fn xrunrig(args: &[&str], state: &Path) -> Output {
    xrunrig_in(args, state, repo())
}

/// `xrunrig ARGS` from `cwd`, to the end.
pub fn xrunrig_in(args: &[&str], state: &Path, cwd: &Path) -> Output {
    command(state)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run xrunrig")
}

/// A run's exit status and output, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn json(p: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// For tests whose whole point needs root (sysctls, root's refusals): a failure, not a
/// skip, when not root.
#[track_caller]
pub fn assert_root(why: &str) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "{why}: run as root");
}

/// The tests of one file that share a CPU or a knob, one at a time (a failed test's
/// poisoned lock does not stop the others).
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A kill matrix's seed: XRUNRIG_KILL_SEED to replay one, else the clock; printed.
pub fn kill_seed() -> u64 {
    let seed = std::env::var("XRUNRIG_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("kill matrix seed {seed} (replay: XRUNRIG_KILL_SEED={seed})");
    seed
}

/// A rig that holds the run open (a sleeping SCHED_OTHER thread) long enough to kill it.
pub const SLEEPER: &str = r#"
name = "sleeper"
trials = 1
trial_timeout = "60 s"
[[threads]]
name = "s"
policy = "other"
steps = [ { mark = "a" }, { sleep = "30 s" }, { mark = "b" } ]
[metrics.slept]
from = "s.a"
to = "s.b"
"#;

/// A rig that ends at once (a 1 ms SCHED_OTHER thread).
pub const QUICK: &str = r#"
name = "quick"
trials = 1
[[threads]]
name = "q"
policy = "other"
steps = [ { mark = "a" }, { run = "1 ms" }, { mark = "b" } ]
[metrics.ran]
from = "q.a"
to = "q.b"
"#;

/// The one exit code `xrunrig compare` owes the answer its compare.json gives: a test
/// of real runs, whose answer is a statistical outcome, still asserts one code.
pub fn compare_exit(doc: &serde_json::Value) -> Option<i32> {
    match doc["answer"].as_str() {
        Some("same" | "better") => Some(0),
        Some("worse") => Some(1),
        Some("inconclusive") => Some(4),
        other => panic!("compare.json's answer is {other:?}: {doc}"),
    }
}
