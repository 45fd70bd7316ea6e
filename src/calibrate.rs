//! `xrunrig calibrate RIG [run options] [--pairs N]`: how much this rig's figures move
//! from run to run on this machine when nothing changes. It runs the rig 2 × N times
//! (each an ordinary `xrunrig run`, natively a run, with `--kernel` a boot of the guest
//! kernel), measures each metric's between-run variance from them
//! (`analysis::compare::calibration::measure`) and keeps it in the cache, where
//! `xrunrig compare` with one run a side finds it by the rig, profile, backend, kernel
//! and machine of its baseline.

use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_REFUSED};
use crate::options::RunOptions;
use analysis::compare::calibration;
use analysis::judge::answer::{fmt_change, log_threshold, quantile};
use std::path::PathBuf;

/// What `xrunrig calibrate` was asked for.
#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// The runs, as `xrunrig run` takes them; `out` is where they go.
    pub run: RunOptions,
    /// A/A pairs: 2 × pairs runs.
    pub pairs: u32,
    /// Replace a kept calibration of this rig on this machine instead of adding to it.
    pub fresh: bool,
}

pub fn main(o: &CalibrateOptions) -> i32 {
    let n = 2 * o.pairs as usize;
    let rig_name = o
        .run
        .rig
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "rig".into());
    let (_, stamp) = crate::sys::utc_now();
    let base =
        o.run.out.clone().unwrap_or_else(|| {
            PathBuf::from("results").join(format!("calibrate-{rig_name}-{stamp}"))
        });
    if base.exists() {
        eprintln!(
            "xrunrig calibrate: {} exists: give --out a new directory (the runs go there)",
            base.display()
        );
        return EXIT_REFUSED;
    }
    if let Err(e) = std::fs::create_dir_all(&base) {
        eprintln!("xrunrig calibrate: cannot create {}: {e}", base.display());
        return EXIT_REFUSED;
    }
    eprintln!(
        "calibrate: {n} runs of {} into {} (the machine as it is: keep what it normally runs \
         running, and nothing else changed between them)",
        o.run.rig.display(),
        base.display()
    );
    let mut dirs = Vec::new();
    for i in 0..n {
        let dir = base.join(format!("run-{:02}", i + 1));
        let mut r = o.run.clone();
        r.out = Some(dir.clone());
        eprintln!("calibrate: run {} of {n}", i + 1);
        let code = crate::run::main(&r);
        match code {
            0 => dirs.push(dir),
            EXIT_INTERRUPTED => {
                eprintln!(
                    "xrunrig calibrate: interrupted after {} runs; nothing was kept (the runs are \
                     in {})",
                    dirs.len(),
                    base.display()
                );
                return EXIT_INTERRUPTED;
            }
            c => {
                eprintln!(
                    "xrunrig calibrate: run {} exited {c}; a calibration needs runs that ran \
                     whole: nothing was kept (the runs are in {})",
                    i + 1,
                    base.display()
                );
                return if c == EXIT_REFUSED {
                    EXIT_REFUSED
                } else {
                    EXIT_FAILED
                };
            }
        }
    }
    let runs: Result<Vec<_>, String> = dirs.iter().map(|d| analysis::kind::load(d)).collect();
    let runs = match runs {
        Ok(r) => r,
        Err(e) => {
            eprintln!("xrunrig calibrate: {e}");
            return EXIT_FAILED;
        }
    };
    let command: Vec<String> = std::env::args().collect();
    let cal = match calibration::measure(&runs, &command, &crate::sys::utc_now().0) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xrunrig calibrate: {e}");
            return EXIT_FAILED;
        }
    };
    // A calibration kept of this rig on this machine: these runs are added to its own
    // (another day, another boot: what the machine does between sessions).
    let mut problems = Vec::new();
    let kept = if o.fresh {
        None
    } else {
        calibration::list(&mut problems)
            .into_iter()
            .find(|(c, _)| c.key == cal.key)
    };
    let cal = match kept {
        Some((old, p)) => {
            eprintln!(
                "calibrate: adding these {n} runs to the {} kept in {} (--fresh starts anew)",
                old.runs.len(),
                p.display()
            );
            calibration::merge(&old, cal)
        }
        None => cal,
    };
    let path = match calibration::save(&cal) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("xrunrig calibrate: {e}");
            return EXIT_FAILED;
        }
    };
    crate::output::console::report(&table(&cal));
    crate::output::console::report(&format!(
        "calibration kept in {}\nfor {}\n`xrunrig compare A B` with one run a side uses it for runs of this rig on \
         this machine.\n",
        path.display(),
        cal.key.describe()
    ));
    0
}

/// Each metric's spread and the smallest change one run a side can call with it.
fn table(c: &results::calibration::Calibration) -> String {
    let mut s = format!(
        "{:<44} {:>8} {:>8} {:>8} {:>14}\n",
        "metric (log scale)", "σ runs", "σ total", "σ within", "1 run a side"
    );
    let theta = log_threshold(10.0);
    for m in &c.metrics {
        // One run a side: the change's variance is twice a run's (between + within).
        let se = (2.0 * (m.between + m.within)).sqrt();
        let t = quantile(0.975, m.df.max(1) as f64);
        s += &format!(
            "{:<44} {:>8.3} {:>8.3} {:>8.3} {:>14}\n",
            format!("{} / {} {}", m.setting, m.variant, m.metric),
            m.between.sqrt(),
            m.total.sqrt(),
            m.within.sqrt(),
            format!("> {}", fmt_change(theta + t * se))
        );
    }
    s + &format!(
        "({} runs of {} trial(s); σ runs: between runs, by moments; \"1 run a side\": the \
         smallest worsening a one-run-a-side compare can call at the 10% threshold)\n",
        c.runs.len(),
        c.trials_per_run
    )
}
