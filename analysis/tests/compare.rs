//! End-to-end: compare flags a clear regression with a non-zero exit and stays quiet for
//! two samples from one distribution.

use analysis::compare_main;
use analysis::synth::{self, Rng};
use std::path::{Path, PathBuf};

/// The text with line breaks and indentation folded, as a reader sees it.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn tmp(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("analysis-cmp-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A trials directory whose one row holds `vals` (ms).
fn trials_dir(dir: &Path, vals: &[f64]) {
    synth::trials::generate(dir).unwrap();
    let mut sorted = vals.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let summary = serde_json::json!({"rig": "pi-boost-synthetic", "kind": "trials", "rows": [{
        "setting": "RT_PUSH_IPI", "variant": "pi", "metric": "wait", "unit": "ms", "bound": "< 100 ms",
        "n": vals.len(), "within_bound": vals.iter().filter(|v| **v < 100.0).count(), "missing": 0,
        "median": sorted[sorted.len() / 2], "min": sorted[0], "max": sorted[sorted.len() - 1], "values": vals
    }]});
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
}

/// As `trials_dir`, with `censored` more trials that ended early at the 100 ms bound.
fn censored_dir(dir: &Path, vals: &[f64], censored: usize) {
    trials_dir(dir, vals);
    let p = dir.join("summary.json");
    let mut s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let row = &mut s["rows"][0];
    row["n"] = (vals.len() + censored).into();
    row["censored"] = vec![100.0; censored].into();
    row["median_at_least"] = (censored > vals.len()).into();
    std::fs::write(&p, s.to_string()).unwrap();
}

/// Trials that ended early at the bound are failures, never values: a candidate whose
/// median trial was cut at 100 ms is at least 100 ms, a regression, and the text says
/// how many were censored and how they were ranked.
#[test]
fn censored_trials_compare_as_at_least_their_bound() {
    let mut rng = Rng::new(11);
    let (a, c) = (tmp("cens-a"), tmp("cens-c"));
    trials_dir(&a, &draw(&mut rng, 8, 1.0));
    censored_dir(&c, &draw(&mut rng, 2, 1.0), 6);
    let out = tmp("cens-out");
    let code = compare_main(&[a.clone(), c.clone()], 10.0, Some(&out), false).unwrap();
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert_eq!(code, 1, "{txt}");
    assert!(
        txt.contains("wait median trial ≥ 100.0 ms against"),
        "{txt}"
    );
    assert!(txt.contains("(6 censored)"), "{txt}");
    assert!(
        txt.contains("6 censored: from 100.0 ms up one tie"),
        "{txt}"
    );
    assert!(txt.contains("REGRESSION beyond the 10% threshold"), "{txt}");
    // Reversed: the baseline's median is the lower bound, the change at most this.
    let code = compare_main(&[c.clone(), a.clone()], 10.0, Some(&out), false).unwrap();
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert_eq!(code, 0, "{txt}");
    assert!(txt.contains("(≤ -"), "{txt}");
    assert!(txt.contains("improvement"), "{txt}");
    for x in [a, c, out] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

/// Log-normal waits around `median` ms: skewed, as latencies are.
fn draw(rng: &mut Rng, n: usize, median: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let (u1, u2) = (rng.unit(), rng.unit());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            median * (0.5 * z).exp()
        })
        .collect()
}

#[test]
fn regression_fails_and_same_distribution_passes() {
    let mut rng = Rng::new(7);
    let (a, b, c) = (tmp("a"), tmp("b"), tmp("c"));
    trials_dir(&a, &draw(&mut rng, 8, 1.0));
    trials_dir(&b, &draw(&mut rng, 8, 1.0));
    trials_dir(&c, &draw(&mut rng, 8, 1500.0));
    let out = tmp("out");
    // Clearly slower: exit 1.
    let code = compare_main(&[a.clone(), c.clone()], 10.0, Some(&out), false).unwrap();
    assert_eq!(code, 1);
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert!(
        txt.contains("REGRESSION beyond the 10% threshold") && txt.contains("p < 0.001"),
        "{txt}"
    );
    assert!(out.join("plots/compare_wait.png").is_file());
    // The same direction judged the other way round is an improvement, exit 0.
    assert_eq!(
        compare_main(&[c.clone(), a.clone()], 10.0, Some(&out), false).unwrap(),
        0
    );
    // Two samples of one distribution: exit 0, "no significant change".
    let code = compare_main(&[a.clone(), b.clone()], 10.0, Some(&out), false).unwrap();
    let txt = std::fs::read_to_string(out.join("compare.txt")).unwrap();
    assert_eq!(code, 0, "{txt}");
    assert!(
        flat(&txt).contains("Verdict: no significant change"),
        "{txt}"
    );
    for l in txt.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    // A threshold above the change: a real but small slowdown does not fail.
    let d = tmp("d");
    let slower: Vec<f64> = draw(&mut Rng::new(7), 8, 1.0)
        .iter()
        .map(|v| v * 1.05 + 0.001)
        .collect();
    trials_dir(&d, &slower);
    assert_eq!(
        compare_main(&[a.clone(), d.clone()], 50.0, Some(&out), false).unwrap(),
        0
    );
    for x in [a, b, c, d, out] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

#[test]
fn livefx_more_dropouts_is_a_regression_trial_against_trial() {
    let (a, b, c) = (tmp("lfa"), tmp("lfb"), tmp("lfc"));
    let mut spec = synth::livefx::Spec::ab(40_000, 4);
    spec.settings[1].stall_every = 0; // both clean
    synth::livefx::generate(&a, &spec).unwrap();
    spec.seed = 2;
    synth::livefx::generate(&b, &spec).unwrap();
    spec.settings[1].stall_every = 200; // NO_RT_PUSH_IPI stalls
    spec.seed = 3;
    synth::livefx::generate(&c, &spec).unwrap();
    let out = tmp("lfout");
    assert_eq!(
        compare_main(&[a.clone(), b.clone()], 10.0, Some(&out), false).unwrap(),
        0
    );
    assert_eq!(
        compare_main(&[a.clone(), c.clone()], 10.0, Some(&out), false).unwrap(),
        1
    );
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert!(
        txt.contains("NO_RT_PUSH_IPI / default: B: dropouts per hour"),
        "{txt}"
    );
    // The method is stated, with the correction by name.
    assert!(
        txt.contains("Method: each trial is one observation"),
        "{txt}"
    );
    assert!(txt.contains("Holm"), "{txt}");
    assert!(compare_main(std::slice::from_ref(&a), 10.0, Some(&out), false).is_err());
    for x in [a, b, c, out] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

/// One trial a side: however different, no verdict (and exit 0), said with what to do.
/// Before the per-trial rule this was "1 metric(s) regressed": every cycle counted as
/// a sample.
#[test]
fn one_trial_a_side_gives_no_verdict() {
    let (a, c) = (tmp("one-a"), tmp("one-c"));
    let mut spec = synth::livefx::Spec::ab(40_000, 1);
    spec.settings[1].stall_every = 0;
    synth::livefx::generate(&a, &spec).unwrap();
    spec.settings[1].stall_every = 200;
    spec.seed = 3;
    synth::livefx::generate(&c, &spec).unwrap();
    let out = tmp("one-out");
    let code = compare_main(&[a.clone(), c.clone()], 10.0, Some(&out), false).unwrap();
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert_eq!(code, 0, "{txt}");
    assert!(
        txt.contains("Verdict: no verdict: one trial(s) per side") && txt.contains("--trials 5"),
        "{txt}"
    );
    for x in [a, c, out] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

/// Runs that are not of one experiment, and a run against itself, are refused before
/// anything is written; without --out the files go into a new directory, never into A.
#[test]
fn unrelated_and_identical_directories_are_refused() {
    let (lf, lf2, tr) = (tmp("rf-lf"), tmp("rf-lf2"), tmp("rf-tr"));
    let spec = synth::livefx::Spec::ab(4_000, 3);
    synth::livefx::generate(&lf, &spec).unwrap();
    synth::trials::generate(&tr).unwrap();
    let out = tmp("rf-out");
    let refused = |dirs: &[PathBuf], want: &str| {
        let e = match compare_main(dirs, 10.0, Some(&out), false) {
            Err(e) => e,
            Ok(c) => panic!("not refused (exit {c}): {dirs:?}"),
        };
        assert!(e.contains(want), "{want:?} not in: {e}");
        assert!(!out.exists(), "a refusal wrote {}", out.display());
    };
    refused(
        &[lf.clone(), tr.clone()],
        "A is a livefx run, B a trials run",
    );
    refused(&[lf.clone(), lf.clone()], "are the same directory");
    // The same directory by another path.
    let other = lf.join("..").join(lf.file_name().unwrap());
    refused(&[lf.clone(), other], "are the same directory");
    // A copy of the run.
    std::fs::create_dir_all(lf2.join(results::CYCLES_DIR)).unwrap();
    for e in walk(&lf) {
        let rel = e.strip_prefix(&lf).unwrap();
        std::fs::copy(&e, lf2.join(rel)).unwrap();
    }
    refused(&[lf.clone(), lf2.clone()], "hold the same run");
    // Other settings: a run of one setting against a run of two.
    let mut one = spec.clone();
    one.settings.truncate(1);
    one.seed = 9;
    std::fs::remove_dir_all(&lf2).unwrap();
    synth::livefx::generate(&lf2, &one).unwrap();
    refused(
        &[lf.clone(), lf2.clone()],
        "A has settings RT_PUSH_IPI, NO_RT_PUSH_IPI, B has RT_PUSH_IPI",
    );
    // Another period.
    let mut p = spec.clone();
    p.period = 256;
    p.seed = 9;
    std::fs::remove_dir_all(&lf2).unwrap();
    synth::livefx::generate(&lf2, &p).unwrap();
    refused(&[lf.clone(), lf2.clone()], "period 128, 48000 Hz in A and");
    // --out into A is refused; without --out a new directory beside A.
    let mut q = spec.clone();
    q.seed = 11;
    std::fs::remove_dir_all(&lf2).unwrap();
    synth::livefx::generate(&lf2, &q).unwrap();
    let e = compare_main(&[lf.clone(), lf2.clone()], 10.0, Some(&lf), false).unwrap_err();
    assert!(e.contains("is one of the compared directories"), "{e}");
    let before: Vec<PathBuf> = walk(&lf);
    let o = analysis::compare_outcome(&[lf.clone(), lf2.clone()], 10.0, None, false).unwrap();
    assert_eq!(walk(&lf), before, "compare wrote into A");
    let made = lf.parent().unwrap().canonicalize().unwrap().join(format!(
        "compare-{}-vs-{}",
        lf.file_name().unwrap().to_string_lossy(),
        lf2.file_name().unwrap().to_string_lossy()
    ));
    assert!(made.join("compare.txt").is_file(), "{}", made.display());
    assert!(
        o.text.contains(&format!("comparison: {}", made.display())),
        "{}",
        o.text
    );
    for x in [lf, lf2, tr, made] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

fn recorded(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/compare-recorded")
        .join(name)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Two recorded runs with nothing changed between them: no regression, exit 0, and no
/// metric called changed at all. The compare before issue 23 called two metrics of
/// this very pair "improved" (every cycle a sample, 16 tests at 0.05 each).
#[test]
fn recorded_aa_pair_gives_no_verdict_of_change_and_exit_0() {
    let out = tmp("rec-aa");
    let code = compare_main(
        &[recorded("aa-a"), recorded("aa-b")],
        10.0,
        Some(&out),
        false,
    )
    .unwrap();
    let j = json(&out.join("compare.json"));
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["regressions"], 0, "{j}");
    assert_eq!(j["improvements"], 0, "{j}");
    assert_eq!(j["tests"], 8, "{j}");
    assert_eq!(j["correction"], "holm");
    std::fs::remove_dir_all(out).unwrap();
}

/// The recorded A/B (B beside a FIFO 80 hog on one of the rig's CPUs): its dropouts
/// are a regression, exit 1; the other way round an improvement, exit 0.
#[test]
fn recorded_ab_pair_is_a_regression_with_exit_1() {
    let out = tmp("rec-ab");
    let code = compare_main(
        &[recorded("ab-a"), recorded("ab-b")],
        10.0,
        Some(&out),
        false,
    )
    .unwrap();
    let txt = flat(&std::fs::read_to_string(out.join("compare.txt")).unwrap());
    assert_eq!(code, 1, "{txt}");
    assert!(
        txt.contains("B: dropouts per hour") && txt.contains("REGRESSION beyond the 10% threshold"),
        "{txt}"
    );
    let code = compare_main(
        &[recorded("ab-b"), recorded("ab-a")],
        10.0,
        Some(&out),
        false,
    )
    .unwrap();
    let j = json(&out.join("compare.json"));
    assert_eq!(code, 0, "{j}");
    assert!(j["improvements"].as_u64().unwrap() >= 1, "{j}");
    std::fs::remove_dir_all(out).unwrap();
}

/// The seed's own A/B, recorded in a 6.12 guest: NO_RT_PUSH_IPI / pi unpatched (29
/// misses in 3 trials of 10 s) against the seed's fix (none): the fix is an improvement,
/// exit 0; the other way round the unpatched kernel is a regression, exit 1.
#[test]
fn recorded_seed_unpatched_patched_pair_is_an_improvement_and_reversed_a_regression() {
    let out = tmp("rec-seed");
    let code = compare_main(
        &[recorded("seed-unpatched"), recorded("seed-patched")],
        10.0,
        Some(&out),
        false,
    )
    .unwrap();
    let j = json(&out.join("compare.json"));
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["regressions"], 0, "{j}");
    let dropouts = &j["table"][0];
    assert_eq!(dropouts[0], "NO_RT_PUSH_IPI/pi dropouts /h", "{j}");
    assert_eq!(dropouts[5], "better", "{j}");
    let code = compare_main(
        &[recorded("seed-patched"), recorded("seed-unpatched")],
        10.0,
        Some(&out),
        false,
    )
    .unwrap();
    let j = json(&out.join("compare.json"));
    assert_eq!(code, 1, "{j}");
    assert!(j["regressions"].as_u64().unwrap() >= 1, "{j}");
    assert_eq!(j["table"][0][5], "WORSE", "{j}");
    std::fs::remove_dir_all(out).unwrap();
}

/// Every file under `d`, sorted.
fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}
