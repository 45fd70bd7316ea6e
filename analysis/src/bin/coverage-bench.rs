//! Coverage of compare's interval for dropouts (counts tested as counts,
//! `analysis::judge::counts`), by simulation: how often the 95 % interval of the rate
//! ratio holds the true ratio, over synthetic runs drawn from a known model.
//!
//! The model drawn from: a run's rate is λ·ρ·e^b (ρ = 1 on side A), b ~ N(0, σ²_b)
//! drawn afresh for every run (a boot's or a process's own level); each trial of a run
//! counts Poisson(rate × trial length) events, each a cluster of dropouts (`--cluster`,
//! 1 + geometric; 1 by default: every event one dropout), λ the dropouts per hour. A side with one run is one block in
//! time: its b is its own. The rates go down to where most runs count none.
//!
//! Three ways of judging, as compare does them:
//! - 1 run a side, calibrated: the spread from a calibration of `--calibrate-runs`
//!   runs of the same model (`compare::calibration::spread`, as `xrunrig calibrate`
//!   measures it), each side a block;
//! - N runs a side, interleaved: the runs' own spread;
//! - N runs a side, interleaved, with the calibration pooled in.
//!
//! The interval checked is the unadjusted two-sided 95 % one (each end at 2.5 %): the
//! interval Holm widens for several metrics covers at least as often. A pair with no
//! dropouts on either side is not judged by compare (each side's rate is only bounded);
//! its share is printed apart and it counts neither way. Printed, not asserted:
//!
//!   cargo run --release -p analysis --bin coverage-bench [-- --reps 2000]

use analysis::compare::calibration;
use analysis::judge::{self, Across, MetricRuns, RunData, Scale};
use analysis::synth::Rng;
use clap::Parser;
use results::calibration::{CALIBRATION_VERSION, Calibration, CalibrationKey};

#[derive(Parser)]
#[command(name = "coverage-bench")]
struct Args {
    /// Simulated comparisons per case.
    #[arg(long, default_value_t = 2000)]
    reps: u32,
    /// Runs a side for the several-runs ways.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Trials per run, and each trial's seconds.
    #[arg(long, default_value_t = 3)]
    trials: usize,
    #[arg(long, default_value_t = 2.0)]
    trial_s: f64,
    /// Runs of the calibration (`xrunrig calibrate --pairs P` makes 2P).
    #[arg(long, default_value_t = 16)]
    calibrate_runs: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Each dropout event brings a cluster of this many on average (1: none; a stall
    /// that costs a miss and an xrun together is a cluster of 2): the trials'
    /// over-dispersion φ ≈ 2·cluster − 1.
    #[arg(long, default_value_t = 1.0)]
    cluster: f64,
}

/// Poisson(mean) by exponential gaps (means here stay below a few hundred).
fn poisson(rng: &mut Rng, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    let (mut t, mut k) = (rng.exp(1.0), 0);
    while t < mean {
        k += 1;
        t += rng.exp(1.0);
    }
    k
}

fn normal(rng: &mut Rng) -> f64 {
    let (u1, u2) = (rng.unit(), rng.unit());
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Dropouts of one event: 1 + Geometric, mean `cluster`.
fn cluster(rng: &mut Rng, mean: f64) -> u64 {
    let q = 1.0 - 1.0 / mean.max(1.0);
    let mut k = 1;
    while rng.unit() < q {
        k += 1;
    }
    k
}

/// One run's trials at `per_hour` × ρ × e^b (events per hour; each a cluster).
fn run(rng: &mut Rng, a: &Args, per_hour: f64, rho: f64, sigma: f64) -> RunData {
    let rate = per_hour / 3600.0 / a.cluster.max(1.0) * rho * (sigma * normal(rng)).exp();
    RunData::Events(
        (0..a.trials)
            .map(|_| {
                let events = poisson(rng, rate * a.trial_s);
                let k = (0..events).map(|_| cluster(rng, a.cluster)).sum();
                (k, a.trial_s)
            })
            .collect(),
    )
}

fn calibrate(rng: &mut Rng, a: &Args, per_hour: f64, sigma: f64) -> Option<Calibration> {
    let data: Vec<RunData> = (0..a.calibrate_runs)
        .map(|_| run(rng, a, per_hour, 1.0, sigma))
        .collect();
    let key = ("s".to_string(), "v".to_string(), "dropouts".to_string());
    let m = calibration::spread(key, Scale::LogRate, &data)?;
    Some(Calibration {
        format: CALIBRATION_VERSION,
        key: CalibrationKey::default(),
        created: String::new(),
        xrunrig_version: None,
        runs: vec![],
        trials_per_run: a.trials as u32,
        duration_ms_per_trial: None,
        command: vec![],
        metrics: vec![m],
        pairs: None,
    })
}

#[derive(Default, Clone, Copy)]
struct Tally {
    judged: u32,
    covered: u32,
    below: u32,
    above: u32,
    none: u32,
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    OneCalibrated,
    Runs,
    RunsCalibrated,
}

fn main() {
    let a = Args::parse();
    let mut rng = Rng::new(a.seed);
    println!(
        "coverage-bench: {} comparisons a case; runs of {} trial(s) of {} s; calibration of {} runs; \
         model: a run's rate λ·ρ·e^b, b ~ N(0, σ²) per run, Poisson events per trial, each a \
         cluster of {} dropouts on average",
        a.reps, a.trials, a.trial_s, a.calibrate_runs, a.cluster
    );
    println!(
        "{:<34} {:>7} {:>5} {:>4} {:>9} {:>8} {:>7} {:>7} {:>9}",
        "way", "λ/h", "σ_b", "ρ", "expected", "covered", "low", "high", "0 vs 0"
    );
    let (mut all, mut worst) = (Tally::default(), (f64::INFINITY, String::new()));
    let ways = [
        (Way::OneCalibrated, "1 run a side, calibrated".to_string()),
        (Way::Runs, format!("{} runs a side, interleaved", a.runs)),
        (
            Way::RunsCalibrated,
            format!("{} a side, interleaved, calibrated", a.runs),
        ),
    ];
    let hours = a.trials as f64 * a.trial_s / 3600.0;
    for (way, name) in &ways {
        for per_hour in [30.0, 300.0, 3_000.0, 30_000.0] {
            for sigma in [0.0, 0.5, 1.0] {
                for rho in [1.0, 4.0] {
                    let mut t = Tally::default();
                    for _ in 0..a.reps {
                        let cal = match way {
                            Way::Runs => None,
                            _ => calibrate(&mut rng, &a, per_hour, sigma),
                        };
                        let r = if *way == Way::OneCalibrated {
                            1
                        } else {
                            a.runs
                        };
                        let m = MetricRuns {
                            scale: Scale::LogRate,
                            a: (0..r)
                                .map(|_| run(&mut rng, &a, per_hour, 1.0, sigma))
                                .collect(),
                            b: (0..r)
                                .map(|_| run(&mut rng, &a, per_hour, rho, sigma))
                                .collect(),
                            log1p: false,
                            lower_is_worse: false,
                            hangs: false,
                        };
                        let across = Across::Runs {
                            calibration: cal.as_ref().map(|c| (c, "synthetic")),
                            interleaved: *way != Way::OneCalibrated,
                        };
                        match judge::test(&m, ("s", "v", "dropouts"), across, 10.0) {
                            Ok(tested) => {
                                let (lo, hi) = tested.judged.interval(0.025, 0.025);
                                let truth = f64::ln(rho);
                                t.judged += 1;
                                if truth < lo {
                                    t.below += 1;
                                } else if truth > hi {
                                    t.above += 1;
                                } else {
                                    t.covered += 1;
                                }
                            }
                            Err(_) => t.none += 1,
                        }
                    }
                    let cov = t.covered as f64 / t.judged.max(1) as f64;
                    let case = format!("{name}, λ {per_hour}/h, σ {sigma}, ρ {rho}");
                    if t.judged > 0 && cov < worst.0 {
                        worst = (cov, case);
                    }
                    all.judged += t.judged;
                    all.covered += t.covered;
                    all.below += t.below;
                    all.above += t.above;
                    all.none += t.none;
                    println!(
                        "{:<34} {:>7} {:>5} {:>4} {:>9.2} {:>7.1}% {:>6.1}% {:>6.1}% {:>8.1}%",
                        name,
                        per_hour,
                        sigma,
                        rho,
                        per_hour * hours,
                        100.0 * cov,
                        100.0 * t.below as f64 / t.judged.max(1) as f64,
                        100.0 * t.above as f64 / t.judged.max(1) as f64,
                        100.0 * t.none as f64 / a.reps as f64
                    );
                }
            }
        }
    }
    println!(
        "\nall cases: {:.1} % covered of {} judged (true ratio below the interval {:.1} %, above \
         {:.1} %); {} comparisons with no dropouts either side not judged",
        100.0 * all.covered as f64 / all.judged.max(1) as f64,
        all.judged,
        100.0 * all.below as f64 / all.judged.max(1) as f64,
        100.0 * all.above as f64 / all.judged.max(1) as f64,
        all.none
    );
    println!("lowest: {:.1} % ({})", 100.0 * worst.0, worst.1);
}
