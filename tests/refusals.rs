//! Refusals leave nothing behind (issue 23): each refusal `run` can make before it
//! measures comes before its results directory exists, so a refused run leaves no
//! directory (it used to leave one marked INCOMPLETE under a message that said "Nothing
//! was changed"); and `check` refuses what `run` refuses. Runs go through the binary,
//! with `--out` and without (the default `results/<rig>-<time>` in the working
//! directory).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use xrunrig::testkit;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn xrunrig(state: &Path, args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .current_dir(state)
        .env("XRUNRIG_STATE_DIR", state.join("state"))
        .env("XRUNRIG_NO_PROGRESS", "1")
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "--- xrunrig {args:?}: {}\n[stdout]\n{}\n[stderr]\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn rig(name: &str) -> String {
    format!("{ROOT}/rigs/{name}")
}

/// `run RIG ARGS` is refused (exit 2) with `want` in its message, and leaves no
/// results directory, with --out and without.
fn refused_leaving_nothing(tag: &str, rig: &str, args: &[&str], want: &str) {
    let state = testkit::private_dir(&format!("refusal-{tag}"));
    let out = state.join("out");
    let mut with_out = vec!["run", rig, "--out", out.to_str().unwrap()];
    with_out.extend(args);
    let o = xrunrig(&state, &with_out);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{tag}: {err}");
    assert!(err.contains(want), "{tag}: {want:?} not in: {err}");
    assert!(!out.exists(), "{tag}: {} left behind", out.display());
    let mut default = vec!["run", rig];
    default.extend(args);
    let o = xrunrig(&state, &default);
    assert_eq!(o.status.code(), Some(2), "{tag}");
    let results = state.join("results");
    let left: Vec<PathBuf> = std::fs::read_dir(&results)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{tag}: left behind {left:?}");
    std::fs::remove_dir_all(&state).unwrap();
}

/// A `[livefx]` worker pinned to a CPU this machine does not have online.
#[test]
fn a_livefx_cpu_the_machine_lacks_leaves_nothing_and_check_refuses_it() {
    if !testkit::root() {
        return;
    }
    let online = xrunrig::sys::online_cpus();
    let missing = (0..64).find(|c| !online.contains(c)).unwrap();
    let state = testkit::private_dir("refusal-cpu-rig");
    let text = std::fs::read_to_string(rig("livefx.toml")).unwrap();
    assert!(text.contains("cpus = [0, 1]"));
    let bad = state.join("far-cpu.toml");
    std::fs::write(
        &bad,
        text.replace("cpus = [0, 1]", &format!("cpus = [0, {missing}]")),
    )
    .unwrap();
    let bad = bad.to_str().unwrap().to_string();
    refused_leaving_nothing(
        "livefx-cpu",
        &bad,
        &["--backend", "clock", "--duration", "1"],
        "pins livefx threads to CPUs",
    );
    // check refuses it too (it used to pass it with a note, exit 0).
    let o = xrunrig(&state, &["check", &bad]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`xrunrig run` would refuse this"));
    std::fs::remove_dir_all(&state).unwrap();
}

/// A period past the cap: refused by the command line, as the caps are (it was checked
/// only after the lock and the directory).
#[test]
fn a_period_past_the_cap_leaves_nothing() {
    refused_leaving_nothing(
        "period",
        &rig("livefx.toml"),
        &["--backend", "clock", "--period", "100000"],
        "1..=16384",
    );
}

/// `--backend jack` with no server of that name.
#[test]
fn jack_with_no_server_leaves_nothing() {
    if !testkit::root() {
        return;
    }
    refused_leaving_nothing(
        "jack",
        &rig("livefx.toml"),
        &[
            "--backend",
            "jack",
            "--device",
            "xrunrig-no-such-server",
            "--duration",
            "1",
        ],
        "backend jack",
    );
}

/// `--backend alsa --device hw:9`: no such card.
#[test]
fn alsa_with_no_such_card_leaves_nothing() {
    if !testkit::root() {
        return;
    }
    refused_leaving_nothing(
        "alsa",
        &rig("livefx.toml"),
        &["--backend", "alsa", "--device", "hw:9", "--duration", "1"],
        "backend alsa",
    );
}

/// A thread rig whose CPUs the machine lacks (prepare's own check) and an unknown
/// setting: refused before a directory, as before.
#[test]
fn thread_rig_refusals_leave_nothing() {
    if !testkit::root() {
        return;
    }
    refused_leaving_nothing(
        "setting",
        &rig("pi-inversion.toml"),
        &["--setting", "no-such-setting"],
        "no setting 'no-such-setting'",
    );
}

/// `--patch` binds to the `--kernel` before it; one after a packaged kernel, or before
/// any kernel, is refused with the rule named, before anything is fetched, built or
/// created. (Which kernel got which patch when both are built from source: on the
/// parsed options in `guest::tests`, and from each run's run.json in tests/guest_build.rs.)
#[test]
fn a_patch_that_binds_to_no_source_kernel_is_refused_naming_the_rule() {
    let patch = format!("{ROOT}/patches/6.12/0001-sched-rt-push-boosted-task.patch");
    refused_leaving_nothing(
        "patch-packaged",
        &rig("pi-boost-affinity.toml"),
        &[
            "--kernel",
            "debian:6.12",
            "--patch",
            &patch,
            "--kernel",
            "debian:6.1",
            "--patch",
            &patch,
        ],
        "follows --kernel debian:6.12, which is not built from source: each --patch applies to the --kernel written just before it",
    );
    refused_leaving_nothing(
        "patch-first",
        &rig("pi-boost-affinity.toml"),
        &["--patch", &patch, "--kernel", "debian-src:6.12"],
        "comes before any --kernel",
    );
}
