//! What a comparison with one run a side assumes when no calibration of the rig on this
//! machine exists: the largest run-to-run (and trial-to-trial) spread this project has
//! measured for such a metric, taken as known. Only a change beyond any spread seen
//! is then called; anything less is inconclusive, and the answer says to calibrate
//! (`xrunrig calibrate`) or to run each side more than once.
//!
//! Each figure is the largest of the calibrations listed beside it (σ on the metric's
//! log scale; `xrunrig calibrate` prints them), rounded up.

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
        Scale::LogRate => (WITHIN_DISPERSION, SOURCE_LOG_RATE),
        Scale::LogP99 => (WITHIN_LOG_P99 * WITHIN_LOG_P99, SOURCE_LOG_P99),
        Scale::LogValue => (WITHIN_LOG_VALUE * WITHIN_LOG_VALUE, SOURCE_LOG_VALUE),
        Scale::LogOdds => (0.0, SOURCE_LOG_ODDS),
    }
}

// Dropouts per hour between runs: σ of ln(rate).
const BETWEEN_LOG_RATE: f64 = 1.5;
// Over-dispersion of a run's trials about its rate.
const WITHIN_DISPERSION: f64 = 10.0;
const SOURCE_LOG_RATE: &str = "rigs/livefx.toml on the clock backend, 2-vCPU VM";
// Latency p99 between runs: σ of ln(p99).
const BETWEEN_LOG_P99: f64 = 0.5;
const WITHIN_LOG_P99: f64 = 0.5;
const SOURCE_LOG_P99: &str = "rigs/livefx.toml on the clock backend, 2-vCPU VM";
// A criterion's log-odds of failing between runs.
const BETWEEN_LOG_ODDS: f64 = 1.0;
const SOURCE_LOG_ODDS: &str = "rigs/pi-boost-affinity.toml in 6.12 guests under TCG";
// A trial value between runs.
const BETWEEN_LOG_VALUE: f64 = 0.5;
const WITHIN_LOG_VALUE: f64 = 0.5;
const SOURCE_LOG_VALUE: &str = "rigs/pi-boost-affinity.toml in 6.12 guests under TCG";
