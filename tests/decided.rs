//! `xrunrig run --until-decided` on this machine: real SCHED_RR threads under the
//! profile's two RR timeslices (a sysctl, writable here unlike sched features). When
//! both threads share a CPU, the second waits for the first's timeslice (37 ms) or for
//! its whole 80 ms spin (100 ms timeslice): the comparison is decided before the
//! maximum and the variant stops getting trials. On two CPUs nothing waits: that
//! variant can never be decided and stops as soon as no outcome could change that.
//! A livefx rig on the clock backend under two audio periods, one its work cannot fit:
//! its pass (`[livefx] pass`) decides the pair the same way. Needs root (CI runs as
//! root).

mod support;

use support::run::{json, serial, text, xrunrig};
use xrunrig::testkit;

const RIG: &str = r#"
name = "rr-slice"
description = "a SCHED_RR thread waits for another's timeslice on a shared CPU"
trials = 8
trial_timeout = "2 s"
trial_gap = "20 ms"

[[threads]]
name = "a"
policy = "rr"
priority = 10
cpus = [1]
steps = [ { mark = "go" }, { signal = "a_on" }, { spin = "80 ms" } ]

[[threads]]
name = "b"
policy = "rr"
priority = 10
cpus = [1]
steps = [ { wait = "a_on" }, { mark = "got" } ]

[metrics.latency]
description = "from a's start to b running"
from = "a.go"
to = "b.got"
bound = "< 60 ms"
unit = "ms"

[[variants]]
name = "shared"
description = "both on CPU 1"

[[variants]]
name = "apart"
description = "b on CPU 0: nothing to wait for"
threads.b.cpus = [0]
"#;

#[test]
fn until_decided_stops_a_decided_pair_and_an_undecidable_one_early() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = testkit::private_dir("until-decided");
    let rig = d.join("rr-slice.toml");
    std::fs::write(&rig, RIG).unwrap();
    let out = d.join("res");
    let o = xrunrig(
        &[
            "run",
            rig.to_str().unwrap(),
            "--profile",
            "profiles/rr-timeslice.toml",
            "--until-decided",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let sum = json(&out.join("summary.json"));
    let dec = &sum["until_decided"];
    assert_eq!(dec["test"], "fisher_exact_two_sided", "{sum}");
    assert_eq!(dec["alpha"], 0.01);
    // The first look at 5 trials per setting (5/5 against 0/5 only), then every round.
    assert_eq!(dec["looks"], serde_json::json!([5, 6, 7, 8]));
    let levels = dec["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 4, "{dec}");
    let rate = dec["error_rate"].as_f64().unwrap();
    assert!(rate > 0.0 && rate <= 0.01, "{dec}");
    assert_eq!(dec["max_trials"], 8);
    let pair = |v: &str| {
        dec["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["variant"] == v)
            .unwrap_or_else(|| panic!("no pair {v} in {sum}"))
            .clone()
    };
    let shared = pair("shared");
    assert_eq!(shared["decision"], "decided", "{shared}\n{t}");
    assert_eq!(shared["worse"], "rr-100ms", "{shared}");
    let n = shared["trials"].as_u64().unwrap();
    assert!(n < 8, "decided only at the maximum: {shared}");
    // Decided at a look, at that look's level.
    let look = dec["looks"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l.as_u64() == Some(n))
        .unwrap_or_else(|| panic!("decided at {n}, not a look: {dec}"));
    assert!(shared["p"].as_f64().unwrap() <= levels[look].as_f64().unwrap());
    let apart = pair("apart");
    assert_eq!(apart["decision"], "undecidable", "{apart}\n{t}");
    assert!(apart["trials"].as_u64().unwrap() < 8, "{apart}");
    // The trials actually run stop where the decision was made: the rows and
    // samples.jsonl have no trial after it.
    for (v, p) in [("shared", &shared), ("apart", &apart)] {
        let want = p["trials"].as_u64().unwrap();
        for r in sum["rows"].as_array().unwrap() {
            if r["variant"] == v {
                assert_eq!(r["n"].as_u64().unwrap(), want, "{r}");
            }
        }
    }
    let lines = std::fs::read_to_string(out.join("samples.jsonl"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(
        lines,
        2 * (n + apart["trials"].as_u64().unwrap()),
        "samples.jsonl"
    );
    // The trial count shown starts at the maximum (2 settings × 2 variants × 8) and
    // shrinks as pairs stop: on the last line (the round that decided the shared pair)
    // the total is what ran plus that pair's rounds left then.
    let counts: Vec<(u64, u64)> = t
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('['))
        .filter_map(|l| l.split_once(']'))
        .filter_map(|(c, _)| c.trim().split_once('/'))
        .filter_map(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .collect();
    assert_eq!(counts.first().map(|c| c.1), Some(32), "{t}");
    assert!(counts.windows(2).all(|w| w[1].1 <= w[0].1), "{counts:?}");
    assert_eq!(
        counts.last(),
        Some(&(lines, lines + 2 * (8 - n))),
        "trial lines' [done/total]: {counts:?}"
    );
    // The printed table states the rule and each pair's verdict.
    assert!(
        t.contains("until decided: after each round, Fisher's exact test"),
        "{t}"
    );
    assert!(t.contains("decided: rr-100ms worse"), "{t}");
    // Both always within the bound: 3/3 against 3/3 leaves at best 3/8 against 8/8
    // (p = 0.026 > 0.01): undecidable after 3.
    assert!(t.contains("apart: rr-37ms 3/3 vs rr-100ms 3/3"), "{t}");
    // And so does the report.
    let o = xrunrig(&["report", out.to_str().unwrap()], &d);
    assert!(o.status.success(), "{}", text(&o));
    let rep = std::fs::read_to_string(out.join("report.txt")).unwrap();
    // The report wraps its paragraphs: its words, one space apart.
    let words = rep.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        rep.contains("Until decided")
            && words.contains("computed exactly over all outcomes, the overall error rate is"),
        "{rep}"
    );
    assert!(rep.contains("decided: rr-100ms worse"), "{rep}");
    assert!(rep.contains("undecidable: stopped early"), "{rep}");
    assert!(
        rep.contains("at most 8 per setting and variant (--until-decided)"),
        "{rep}"
    );
}

#[test]
fn until_decided_refuses_a_run_it_cannot_decide() {
    let d = testkit::private_dir("until-refused");
    let out = d.join("res");
    // One setting: nothing to compare. Nothing is created.
    let o = xrunrig(
        &[
            "run",
            "rigs/pi-inversion.toml",
            "--until-decided",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--until-decided compares two settings"), "{t}");
    assert!(!out.exists());
    // An audio rig that states no pass has no per-trial pass or fail.
    let o = xrunrig(
        &[
            "run",
            "rigs/livefx.toml",
            "--profile",
            "profiles/rr-timeslice.toml",
            "--until-decided",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("rigs/pi-boost-affinity.toml"), "{t}");
    assert!(t.contains("add pass = { misses = 0 }"), "{t}");
    assert!(!out.exists());
}

/// A livefx rig whose plugin does 1 ms of work a cycle: at 32 frames (0.67 ms) every
/// cycle misses, at 1024 (21 ms) the work fits. Its pass is a rate with room for the
/// stalls this VM has at 1024 (up to 20 misses in 10 s, tests/livefx.rs) yet below the
/// rate of the overruns injected on the command line, which are not counted.
const LIVEFX_RIG: &str = r#"
name = "lfx-periods"
description = "1 ms of plugin work per cycle at two audio periods"
kind = "livefx"
trials = 8
trial_gap = "20 ms"

[livefx]
duration = "2 s"
backend = "clock"
rate = 48000
callback = { priority = 70 }
pass = { misses_per_minute = 300 }

[[livefx.workers]]
name = "fx"
priority = 60
cpus = [1]
plugins = [ { run = "1 ms" } ]
"#;

const LIVEFX_PROFILE: &str = r#"
name = "two-periods"
description = "32 frames against 1024"

[[settings]]
name = "p32"
audio = { period = 32 }

[[settings]]
name = "p1024"
audio = { period = 1024 }
"#;

#[test]
fn until_decided_decides_a_livefx_rig_by_its_pass() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = testkit::private_dir("until-decided-livefx");
    let rig = d.join("lfx-periods.toml");
    std::fs::write(&rig, LIVEFX_RIG).unwrap();
    let profile = d.join("two-periods.toml");
    std::fs::write(&profile, LIVEFX_PROFILE).unwrap();
    let out = d.join("res");
    // An injected overrun every 5 cycles: at 1024 frames about 560 a minute, all of
    // them misses, none counted against the pass of 300 a minute.
    let o = xrunrig(
        &[
            "run",
            rig.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "--backend",
            "clock",
            "--inject-every",
            "5",
            "--inject-factor",
            "1.5",
            "--until-decided",
            "--out",
            out.to_str().unwrap(),
        ],
        &d,
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let sum = json(&out.join("summary.json"));
    assert_eq!(sum["kind"], "livefx");
    let dec = &sum["until_decided"];
    assert_eq!(dec["test"], "fisher_exact_two_sided", "{sum}");
    assert_eq!(dec["metric"], "misses_per_minute");
    assert_eq!(dec["bound"], "≤ 300");
    // The rule's own looks and levels (analysis::sequential, its first look at 5).
    let plan = analysis::sequential::plan(0.01, 8);
    assert_eq!(dec["looks"], serde_json::json!(plan.looks));
    let pair = &dec["pairs"][0];
    assert_eq!(pair["variant"], "default", "{dec}");
    assert_eq!(pair["decision"], "decided", "{pair}\n{t}");
    assert_eq!(pair["worse"], "p32", "{pair}");
    assert_eq!(pair["first_within"], 0, "{pair}");
    let n = pair["trials"].as_u64().unwrap();
    assert!((5..=8).contains(&n), "{pair}");
    assert!(
        pair["p"].as_f64().unwrap() <= plan.level(n as u32).unwrap(),
        "{pair}"
    );
    // The run stopped at that look: n trials per setting, no more.
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(out.join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len() as u64, 2 * n, "samples.jsonl");
    assert_eq!(sum["trials"].as_array().unwrap().len() as u64, 2 * n);
    for r in sum["rows"].as_array().unwrap() {
        assert_eq!(r["trials"].as_u64(), Some(n), "{r}");
    }
    // The injected misses alone are over the pass's rate in every 1024 trial; the
    // trials within it passed all the same.
    let m = |r: &serde_json::Value, k: &str| r["metrics"][k][0].as_f64().unwrap();
    for r in recs.iter().filter(|r| r["setting"] == "p1024") {
        let minutes = r["duration_ms"].as_f64().unwrap() / 60_000.0;
        assert!(m(r, "injected") / minutes > 300.0, "{r}");
    }
    let within = pair["second_within"].as_u64().unwrap();
    assert!(within >= n - 1, "{pair}");
    // The table states the rule and the verdict; the report has its section.
    assert!(
        t.contains("until decided: after each round, Fisher's exact test (two-sided) on trials with at most 300 deadline misses (not injected) per minute"),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "default: p32 0/{n} vs p1024 {within}/{n} within bound"
        )),
        "{t}"
    );
    assert!(t.contains("decided: p32 worse"), "{t}");
    let o = xrunrig(&["report", out.to_str().unwrap()], &d);
    assert!(o.status.success(), "{}", text(&o));
    let rep = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        rep.contains("Until decided") && rep.contains("computed exactly over all outcomes"),
        "{rep}"
    );
    assert!(rep.contains("decided: p32 worse"), "{rep}");
    // "What ran" (wrapped before its "(--until-decided)").
    assert!(rep.contains("at most 8 per setting and variant"), "{rep}");
}
