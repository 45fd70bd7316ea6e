//! What a comparison with one run a side assumes when no calibration of the rig on this
//! machine exists: the largest run-to-run (and trial-to-trial) spread this project has
//! measured for such a metric, taken as known. Only a change beyond any spread seen
//! is then called; anything less is inconclusive, and the answer says to calibrate
//! (`xrunrig calibrate`) or to run each side more than once.
//!
//! Each figure is the largest difference between two identical runs measured here (the
//! first runs of `livefx-bench calibrate`'s A/A pairs, `livefx-bench spread` prints
//! them), as the σ that puts it at a 95 % interval's edge: |Δ| / (1.96 √2), on the
//! metric's log scale, rounded up.

use super::scale::Scale;

/// (σ²_b, where it was measured) for a scale.
pub fn between(scale: Scale) -> (f64, &'static str) {
    let (sigma, source) = match scale {
        Scale::LogRate => (BETWEEN_LOG_RATE, SOURCE_LOG_RATE),
        Scale::LogP99 => (BETWEEN_LOG_P99, SOURCE_LOG_P99),
        Scale::LogOdds => (BETWEEN_LOG_ODDS, SOURCE_LOG_ODDS),
        Scale::LogValue => (BETWEEN_LOG_VALUE, SOURCE_LOG_VALUE),
    };
    (sigma * sigma, source)
}

/// (s²_w or φ, where it was measured) for a side whose runs have one trial each.
pub fn within(scale: Scale) -> (f64, &'static str) {
    match scale {
        Scale::LogRate => (WITHIN_DISPERSION, WITHIN_SOURCE_RATE),
        Scale::LogP99 => (WITHIN_LOG_P99 * WITHIN_LOG_P99, WITHIN_SOURCE_P99),
        Scale::LogValue => (WITHIN_LOG_VALUE * WITHIN_LOG_VALUE, SOURCE_LOG_VALUE),
        Scale::LogOdds => (0.0, SOURCE_LOG_ODDS),
    }
}

// Measured 2026-12-04 with `livefx-bench calibrate --pairs 60 --ab-pairs 20
// --runs-a-side 3 --trials 3 --duration 3 --order blocked` (rigs/livefx.toml, clock
// backend, this project's 2-vCPU VM shared with other builds, load average 4 to 7) and
// `livefx-bench spread` over its A/A runs: the largest difference between an A/A pair's
// first runs, |Δ| / (1.96 √2) (so that it sits at a 95 % interval's edge): dropouts
// ln 60.2 over 60 pairs (σ 1.48), latency p99s ln 15.5 (σ 0.99: the wake-up p99 of no-pi).
// A run's trial-to-trial spread there: φ 2.4 for dropouts, s²_w 0.49 for latencies (the
// largest of the metrics, over 356 runs).
// Episodes (dropouts less than 50 ms apart counted once) take the dropouts' figures: a
// run's episodes are never more than its dropouts, and a VM stall that made ×60 in
// dropouts is one episode: taken as no wider (not yet measured on their own).
const BETWEEN_LOG_RATE: f64 = 1.5;
const WITHIN_DISPERSION: f64 = 2.5;
const WITHIN_SOURCE_RATE: &str = "an over-dispersion of 2.5, the largest of rigs/livefx.toml's trials on the clock backend, a shared 2-vCPU VM";
const WITHIN_SOURCE_P99: &str = "σ 0.7 on the log scale, the largest of rigs/livefx.toml's trials on the clock backend, a shared 2-vCPU VM";
const SOURCE_LOG_RATE: &str =
    "×60 between two identical runs of rigs/livefx.toml, clock backend, a shared 2-vCPU VM";
const BETWEEN_LOG_P99: f64 = 1.0;
const WITHIN_LOG_P99: f64 = 0.7;
const SOURCE_LOG_P99: &str =
    "×15 between two identical runs of rigs/livefx.toml, clock backend, a shared 2-vCPU VM";
// A criterion's log-odds of failing between runs, and a trial rig's value: not yet
// measured across runs (no A/A pairs of a trial rig were run), so provisional figures,
// and the answer says so; a calibration of the rig replaces them.
const BETWEEN_LOG_ODDS: f64 = 1.0;
const SOURCE_LOG_ODDS: &str = "a provisional σ 1.0 on the log-odds scale, not measured: calibrate the rig (`xrunrig calibrate`)";
const BETWEEN_LOG_VALUE: f64 = 0.5;
const WITHIN_LOG_VALUE: f64 = 0.5;
const SOURCE_LOG_VALUE: &str =
    "a provisional σ 0.5 on the log scale, not measured: calibrate the rig (`xrunrig calibrate`)";
