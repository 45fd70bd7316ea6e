//! The rounds: each trial round applies each setting in turn (A B A B), runs each
//! variant, and restores the knobs whatever happened.

use super::{Prepared, Swept};
use crate::engine::thread::{free_cpu, set_affinity};
use crate::engine::watchdog::{Watchdog, install_signal_flag};
use crate::knobs::knob::RealIo;
use crate::knobs::profile::Setting;
use crate::knobs::{self, InForce, KnobSession};
use crate::output::progress::Progress;
use crate::output::summary::TrialRecord;
use crate::output::table;
use crate::rig::{self};
use results::run::SchedFeatures;
use results::trials::TrialStatus;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

fn features_json() -> SchedFeatures {
    SchedFeatures::from_result(knobs::features_snapshot())
}

/// The sweep: for each trial round, each setting applied in turn (A B A B), each variant.
/// `one` runs one trial. Knobs are restored before this returns, whatever happened.
pub fn sweep(
    p: &Prepared,
    estimate_ns: u64,
    one: &mut dyn FnMut(&Setting, usize, u32, &AtomicBool) -> TrialRecord,
) -> Result<Swept, String> {
    if !p.dir_created() {
        // A rig kind must create the directory after its checks (`create_dir`).
        return Err(
            "internal error: the results directory was not created before the sweep".into(),
        );
    }
    let mlockall = crate::sys::mlockall();
    // Read twice, at the start and the end, by this normal-priority thread only.
    let cpu_at_start = crate::output::provenance::CpuTimes::now();
    if let Err(e) = &mlockall {
        eprintln!(
            "xrunrig: warning: mlockall failed ({e}): page faults may add latency (recorded in run.json)"
        );
    }
    let mut used: Vec<usize> = p
        .plan
        .variants
        .iter()
        .flat_map(|&v| p.plan.rig.variants[v].plan.cpus_used())
        .collect();
    if let Some(c) = &p.plan.rig.livefx {
        used.extend(c.cpus_used());
    }
    let control_cpu = free_cpu(&used);
    if let Some(c) = control_cpu {
        // Threads inherit this: they are born on a free CPU, then raise and pin themselves.
        let _ = set_affinity(0, &[c]);
    }
    install_signal_flag(&p.stop).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let bound = crate::rig::limits::watchdog_bound_ns(p.plan.choices.max_time_ns, estimate_ns)?;
    let _wd = Watchdog::start(
        bound,
        p.stop.clone(),
        control_cpu,
        Box::new(|| {
            knobs::emergency_restore();
            crate::instruments::emergency_restore();
        }),
    );
    let io = RealIo;
    let (started, _) = crate::sys::utc_now();
    let features_before = features_json();
    let mut session = KnobSession::begin(&io, &knobs::state()?, &p.knobs)?;
    let mut samples = std::fs::File::create(p.dir.join(results::SAMPLES_JSONL))
        .map_err(|e| format!("cannot create {}: {e}", results::SAMPLES_JSONL))?;
    let mut total = p.plan.trials as usize * p.plan.settings.len() * p.plan.variants.len();
    // After set_affinity: the bar's ticker thread is born on the control CPU too.
    // No prefix: the rig's name is on the line above; the run's estimate gives the ETA
    // until the first trial's pace does.
    let per_trial = std::time::Duration::from_nanos(estimate_ns / (total.max(1) as u64));
    let bar = Progress::new(total as u64, "", Some(per_trial));
    let mut done = 0usize;
    let mut records = Vec::new();
    let mut in_force: Vec<(String, InForce)> = Vec::new();
    let mut fatal = None;
    // --until-decided: the variants whose comparison goes on; all of them without it.
    let mut open: Vec<usize> = p.plan.variants.clone();
    'outer: for t in 0..p.plan.trials {
        for s in &p.plan.settings {
            if p.stop.load(Ordering::SeqCst) {
                break 'outer;
            }
            if open.is_empty() {
                break 'outer;
            }
            if !s.changes.is_empty() {
                match session.apply(&s.changes) {
                    Ok(f) => {
                        if !in_force.iter().any(|(n, _)| n == &s.name) {
                            in_force.push((s.name.clone(), f));
                        }
                    }
                    Err(e) => {
                        fatal = Some(format!("setting '{}': {e}", s.name));
                        break 'outer;
                    }
                }
            }
            for &v in &open {
                if p.stop.load(Ordering::SeqCst) {
                    break 'outer;
                }
                bar.set_message(&format!(
                    "{} / {} trial {}/{}",
                    s.name,
                    p.plan.rig.variants[v].name,
                    t + 1,
                    p.plan.trials
                ));
                let rec = one(s, v, t, &p.stop);
                done += 1;
                bar.step(&format!(
                    "[{done:>4}/{total}] {}",
                    progress_line(&rec, p.plan.trials, &p.plan.rig.metrics)
                ));
                let _ = writeln!(
                    samples,
                    "{}",
                    serde_json::to_string(&rec).unwrap_or_default()
                );
                let stuck = rec.status == TrialStatus::Stuck;
                records.push(rec);
                if stuck {
                    fatal = Some(
                        "rig threads did not stop even after being demoted; ending the run".into(),
                    );
                    break 'outer;
                }
                let gap_end = crate::sys::now_ns() + p.plan.rig.trial_gap_ns;
                while crate::sys::now_ns() < gap_end && !p.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
        // A round is complete: each variant's comparison looks at it.
        if let Some(rule) = &p.plan.until {
            let st = super::decide::evaluate(rule, &records);
            for d in st
                .decided
                .pairs
                .iter()
                .filter(|d| !st.open.contains(&d.variant))
            {
                if open
                    .iter()
                    .any(|&v| p.plan.rig.variants[v].name == d.variant)
                {
                    crate::output::console::println(&format!(
                        "xrunrig: {} stops after {} trials per setting: {}",
                        d.variant,
                        d.trials,
                        super::decide::render_pair(d).trim_end()
                    ));
                }
            }
            open.retain(|&v| st.open.contains(&p.plan.rig.variants[v].name));
            // The count shows what will run: the trials done and the open variants'
            // remaining rounds, not the maximum.
            total = done + (p.plan.trials - t - 1) as usize * p.plan.settings.len() * open.len();
            bar.set_length(total as u64);
        }
    }
    drop(bar);
    let mut restored = session.restore()?;
    restored.extend(knobs::restore_leftovers()?);
    let features_after = features_json();
    let (ended, _) = crate::sys::utc_now();
    let others_cpu_percent = cpu_at_start
        .zip(crate::output::provenance::CpuTimes::now())
        .and_then(|(a, b)| a.others_percent(&b));
    // The bound, not Ctrl-C: the run failed to finish in its time, said as such (exit 3).
    let fatal = match fatal {
        None if _wd.bound_reached() => Some(format!(
            "the run's time bound ({}) was reached before every trial ran; the results \
             cover the trials that finished",
            crate::engine::watchdog::seconds(bound)
        )),
        f => f,
    };
    Ok(Swept {
        others_cpu_percent,
        records,
        in_force,
        restored,
        interrupted: p.stop.load(Ordering::SeqCst) && fatal.is_none(),
        fatal,
        started,
        ended,
        features_before,
        features_after,
        mlockall,
    })
}

fn progress_line(r: &TrialRecord, trials: u32, metrics: &[rig::Metric]) -> String {
    let vals: Vec<String> = r
        .metrics
        .iter()
        .filter_map(|(k, v)| {
            let unit = metrics
                .iter()
                .find(|m| &m.name == k)
                .map_or("", |m| m.unit.as_str());
            // Counts (cycles, xruns) print as integers, measurements with their precision.
            v.first().map(|x| {
                let val = if x.fract() == 0.0 && unit.is_empty() {
                    format!("{}", *x as i64)
                } else {
                    table::fmt_val(*x)
                };
                format!("{k} {val} {unit}").trim_end().to_string()
            })
        })
        .chain(r.censored.iter().map(|(k, c)| {
            let unit = metrics
                .iter()
                .find(|m| &m.name == k)
                .map_or("", |m| m.unit.as_str());
            let v = format!("{k} ≥ {} {unit}", table::fmt_val(*c));
            format!("{} (ended early)", v.trim_end())
        }))
        .collect();
    let mut s = format!(
        "{} / {} trial {}/{}: {}",
        r.setting,
        r.variant,
        r.trial + 1,
        trials,
        if vals.is_empty() {
            "-".into()
        } else {
            vals.join(", ")
        }
    );
    if r.status != TrialStatus::Ok {
        s.push_str(&format!(
            " [{}{}]",
            r.status,
            r.detail
                .as_ref()
                .map_or(String::new(), |d| format!(": {d}"))
        ));
    }
    s
}
