//! `--until-decided` in a Debian 6.12 guest (the guest's own xrunrig decides): the
//! PI-boost A/B with its no-PI control across RT_PUSH_IPI. The PI pair is decided
//! (NO_RT_PUSH_IPI worse) before the maximum of 8 trials; the control, stuck under
//! both settings, can never be decided and stops once no outcome could change that.
//! And a run whose guest faults (the emulator's int3, made on purpose) resumes only the
//! undecided variant in a fresh boot, and the merge replays the rule to the same
//! decisions.
//!
//! Needs root, qemu-system-x86_64 and a Debian 6.12 kernel package in
//! /var/cache/xrunrig/kernels (`.ci/fetch-kernel`); a missing one FAILS the test.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;
use support::run::{json, text as show};

static ONE_GUEST_AT_A_TIME: Mutex<()> = Mutex::new(());

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "xrunrig-test-decided-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(out: &Path, inject: Option<&str>) -> (Output, String) {
    let state = xrunrig::testkit::private_dir(&format!(
        "guest-decided-state-{}",
        out.file_name().unwrap().to_string_lossy()
    ));
    let mut c = support::run::command(&state);
    if let Some(i) = inject {
        c.env("XRUNRIG_GUEST_TEST_INJECT", i);
    }
    let o = c
        .args([
            "run",
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian:6.12",
            "--cpus",
            "4",
            "--variant",
            "pi",
            "--variant",
            "no-pi",
            "--trials",
            "8",
            "--until-decided",
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap();
    let t = show(&o);
    eprintln!("{t}");
    (o, t)
}

fn pair(sum: &Value, v: &str) -> Value {
    sum["until_decided"]["pairs"]
        .as_array()
        .unwrap_or_else(|| panic!("no until_decided in {sum}"))
        .iter()
        .find(|p| p["variant"] == v)
        .unwrap_or_else(|| panic!("no pair {v} in {sum}"))
        .clone()
}

/// The shape both tests want: the PI pair decided against NO_RT_PUSH_IPI before the
/// maximum, the control not decided.
fn check_decisions(sum: &Value, t: &str) -> (u64, u64) {
    let d = &sum["until_decided"];
    assert_eq!(d["test"], "fisher_exact_two_sided", "{sum}");
    assert_eq!(
        (d["alpha"].as_f64(), d["max_trials"].as_u64()),
        (Some(0.01), Some(8))
    );
    let pi = pair(sum, "pi");
    assert_eq!(pi["decision"], "decided", "{pi}\n{t}");
    assert_eq!(pi["worse"], "NO_RT_PUSH_IPI", "{pi}");
    let n_pi = pi["trials"].as_u64().unwrap();
    assert!(n_pi < 8, "the PI pair took the maximum: {pi}");
    assert!(
        pi["p"].as_f64().unwrap() <= d["per_look"].as_f64().unwrap(),
        "{pi}"
    );
    let c = pair(sum, "no-pi");
    assert_ne!(c["decision"], "decided", "{c}\n{t}");
    assert!(
        c["decision"] == "undecidable" || c["decision"] == "undecided_at_maximum",
        "{c}"
    );
    (n_pi, c["trials"].as_u64().unwrap())
}

#[test]
fn pi_boost_ab_until_decided_on_6_12_stops_the_decided_pair_early() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("plain");
    let (o, t) = run(&out, None);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let sum = json(&out.join("summary.json"));
    let (n_pi, n_c) = check_decisions(&sum, &t);
    // The rows hold the trials run: no trial after a pair stopped.
    for r in sum["rows"].as_array().unwrap() {
        let want = if r["variant"] == "pi" { n_pi } else { n_c };
        assert_eq!(r["n"].as_u64(), Some(want), "{r}");
    }
    assert!(n_pi + n_c < 16, "{sum}");
    // The guest's printed table came home with the rule under it.
    assert!(t.contains("until decided: after each round"), "{t}");
    assert!(t.contains("decided: NO_RT_PUSH_IPI worse"), "{t}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_until_decided_guest_run_resumed_after_a_fault_keeps_its_decisions() {
    support::guest::prerequisites();
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let out = tmp("int3");
    // After 10 trials: rounds 1 and 2 of both variants (the control then stopped),
    // round 3's PI pair. The fresh boot runs the PI variant's remaining rounds.
    let (o, t) = run(&out, Some("int3:10"));
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("resuming the remaining trials in a fresh boot"),
        "{t}"
    );
    let run = json(&out.join("run.json"));
    assert_eq!(
        run["guest"]["resumed"].as_array().map(|a| a.len()),
        Some(1),
        "{run}"
    );
    let sum = json(&out.join("summary.json"));
    let (n_pi, n_c) = check_decisions(&sum, &t);
    // The merge replayed the rule over both boots' trials. The fresh boot ran the
    // variants still open after the first in full (the guest decides only from a whole
    // run's trials): the PI pair all 8 rounds, decided inside them; the control, stopped
    // in the first boot (0/2 against 0/2), none (a rescued trial keeps it open: all 8).
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let count = |v: &str| {
        samples
            .lines()
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["variant"] == v)
            .count() as u64
    };
    assert_eq!(count("pi"), 16, "{samples}");
    assert!(n_pi < 8, "{sum}");
    let control = count("no-pi");
    assert!(control == 2 * n_c || control == 16, "{control}: {sum}");
    let _ = std::fs::remove_dir_all(&out);
}
