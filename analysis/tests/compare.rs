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
fn livefx_more_dropouts_is_a_regression() {
    let (a, b, c) = (tmp("lfa"), tmp("lfb"), tmp("lfc"));
    let mut spec = synth::livefx::Spec::ab(20_000, 1);
    spec.settings[1].stall_every = 0; // both clean
    synth::livefx::generate(&a, &spec).unwrap();
    spec.seed = 2;
    synth::livefx::generate(&b, &spec).unwrap();
    spec.settings[1].stall_every = 200; // NO_RT_PUSH_IPI stalls
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
        txt.contains("NO_RT_PUSH_IPI / default: B: dropouts"),
        "{txt}"
    );
    assert!(compare_main(std::slice::from_ref(&a), 10.0, Some(&out), false).is_err());
    for x in [a, b, c, out] {
        std::fs::remove_dir_all(x).unwrap();
    }
}
