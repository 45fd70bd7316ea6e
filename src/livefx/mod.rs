//! The livefx rig: a DAW-like audio process (REAPER's "livefx" workers in the seed
//! report). A process callback on an audio backend feeds pinned FIFO workers whose
//! plugins share PI locks; every cycle's lateness, duration, deadline and worker wake-up
//! is measured, with xruns and (optionally) a loopback check, across a profile's settings.
//!
//! `config` is the `[livefx]` table (parsed with the rig), `rt` is the callback and workers, `writer` drains their
//! records, `trial` runs one audio trial, `xrun` ties JACK's notifications to cycles,
//! `loopback` is the signal check, `report` the rows, histograms and table.
//!
//! A run (`run_main`) goes: `params` (CPUs online, each setting's audio parameters, named
//! backends probed, the plan told), then the sweep calls `per_trial` for each trial
//! (which writes `events` and counts the trial with `tally`), then `finish` writes the
//! results and prints the table.

pub mod bursts;
pub mod config;
mod events;
mod finish;
mod kind;
pub mod loopback;
mod params;
mod per_trial;
pub mod report;
pub mod rt;
pub mod stored;
mod tally;
pub mod trial;
pub mod why;
pub mod writer;
pub mod xrun;

pub use kind::Livefx;
pub use params::{missing_cpus, probe_backends, resolve};

use crate::exit::{EXIT_FAILED, EXIT_REFUSED};
use crate::sweep::Prepared;
use config::Config;
use per_trial::{Tally, Trials};
use results::livefx::events::{DEADLINE_MISS, INJECTED};

pub fn run_main(mut p: Prepared) -> i32 {
    run(&mut p).unwrap_or_else(|code| code)
}

/// The steps of a livefx run. `Err` is the exit code of a run refused, or failed before
/// it wrote its results. Every check that can refuse comes before the results
/// directory is created, so a refusal leaves nothing behind.
fn run(p: &mut Prepared) -> Result<i32, i32> {
    // A clone: the CLI's overrides (--duration) change it for this run only.
    let Some(mut cfg) = p.plan.rig.livefx.clone() else {
        eprintln!("xrunrig: rig '{}' has no [livefx] table", p.plan.rig.name);
        return Err(EXIT_REFUSED);
    };
    params::check_cpus(p, &cfg)?;
    if let Some(ns) = p.plan.choices.audio.duration_ns {
        cfg.duration_ns = ns;
    }
    let params = params::resolve_settings(p, &cfg)?;
    params::probe_named(p, &params)?;
    let estimate = p.estimate_ns;
    let mut inst = crate::instruments::Instruments::from_rig(&p.plan.rig, &p.dir);
    inst.before_run()
        .map_err(|e| crate::trials::refuse_run(p, &e))?;
    p.create_dir()
        .map_err(|e| crate::trials::refuse_run(p, &e))?;
    inst.set_dir(&p.dir);
    let p: &Prepared = p;
    let refuse = |e: String| {
        eprintln!("xrunrig: {e}");
        p.discard_dir();
        EXIT_REFUSED
    };
    let cycles_dir = p.dir.join(results::CYCLES_DIR);
    std::fs::create_dir_all(&cycles_dir)
        .map_err(|e| refuse(format!("cannot create {}: {e}", cycles_dir.display())))?;
    let mut event_log = events::Log::create(&p.dir).map_err(refuse)?;
    params::announce(p, &cfg, &params);

    let mut trials = Trials {
        p,
        cfg: &cfg,
        params: &params,
        cycles_dir: &cycles_dir,
        inst: &mut inst,
        events: &mut event_log,
        tally: Tally {
            groups: Trials::groups(p),
            rows: Vec::new(),
            server_gone: false,
            any_failed: None,
        },
    };
    let sw = crate::sweep::sweep(p, estimate, &mut |s, v, t, stop| trials.one(s, v, t, stop));
    let Tally {
        mut groups,
        rows,
        server_gone,
        any_failed,
    } = trials.tally;
    let inst_json = inst.after_run();
    let io_error = event_log.finish();
    let sw = sw.map_err(|e| {
        eprintln!("xrunrig: {e}");
        EXIT_FAILED
    })?;

    // Settings and variants never reached (interrupted, ended early) have no row.
    groups.retain(|g| g.trials > 0);
    // --until-decided: the comparisons the rounds stopped on, replayed from the same
    // records, as a thread rig's finish does.
    let decided = crate::sweep::decide::decided(p.plan.until.as_ref(), &sw.records);
    let mut code = finish::write(
        p,
        &cfg,
        &params,
        &groups,
        rows,
        decided.clone(),
        &sw,
        inst_json,
    );
    if let Some(e) = io_error {
        eprintln!("xrunrig: {e}");
        code = EXIT_FAILED;
    }
    Ok(finish::report(p, &groups, decided.as_ref(), &sw, server_gone, any_failed).unwrap_or(code))
}

/// What one trial's misses and bursts were, told from the RT side's records and the
/// sched trace: per miss (in event order) its explanation and burst, and the bursts.
struct Told {
    misses: Vec<(why::Why, Option<usize>)>,
    bursts: Vec<bursts::Burst>,
    evidence: Vec<String>,
}

fn tell(
    cfg: &Config,
    var: &crate::rig::Variant,
    o: &mut trial::Outcome,
    records: Option<Vec<crate::instruments::parse::Record>>,
    period_ns: u64,
) -> Told {
    let workers: Vec<String> = cfg.workers.iter().map(|w| w.name.clone()).collect();
    let locks: Vec<String> = var.plan.locks.iter().map(|l| l.name.clone()).collect();
    let tids: Vec<(i32, String)> = o
        .worker_tids
        .iter()
        .copied()
        .zip(workers.iter().cloned())
        .collect();
    let names = why::Names {
        workers: &workers,
        locks: &locks,
        tids: &tids,
    };
    let trace = records.as_deref().map(why::Trace::new);
    let mut holds = std::mem::take(&mut o.stats.holds);
    let st = &o.stats;
    let miss_events: Vec<_> = st
        .events
        .iter()
        .filter(|e| e.kind == DEADLINE_MISS)
        .collect();
    let deadlines: Vec<u64> = miss_events.iter().map(|e| e.mono_ns).collect();
    let (bursts, of) = match &cfg.bursts {
        Some(b) => {
            let cpus = var
                .plan
                .threads
                .iter()
                .find(|t| t.base == b.thread)
                .map(|t| t.cpus.clone())
                .unwrap_or_default();
            bursts::classify(&o.bursts, &mut holds, &cpus, &deadlines, 2 * period_ns)
        }
        None => (vec![], vec![None; deadlines.len()]),
    };
    // Injected overruns are flagged on the cycle: the injected event precedes its miss.
    let injected: std::collections::BTreeSet<u64> = st
        .events
        .iter()
        .filter(|e| e.kind == INJECTED)
        .map(|e| e.cycle)
        .collect();
    let misses: Vec<(why::Why, Option<usize>)> = miss_events
        .iter()
        .zip(of)
        .map(|(e, b)| {
            let y = why::explain(
                e.cause.as_ref(),
                injected.contains(&e.cycle),
                e.mono_ns,
                &names,
                trace.as_ref(),
            );
            (y, b)
        })
        .collect();
    let mut evidence = Vec::new();
    if cfg.bursts.is_some() {
        let c = bursts::count(&bursts);
        let outside = misses.iter().filter(|(_, b)| b.is_none()).count();
        evidence.push(format!(
            "bursts: {} in all; {} caught the lock holder on the hog's CPU, {} of those cost cycles; \
             {} misses inside bursts, {outside} outside{}",
            c.bursts,
            c.caught,
            c.caught_missed,
            c.misses_in_bursts,
            if st.holds_dropped > 0 {
                format!(" ({} lock holds past the cap not classified)", st.holds_dropped)
            } else {
                String::new()
            }
        ));
    }
    let mut by: std::collections::BTreeMap<&str, u64> = Default::default();
    for (y, _) in &misses {
        *by.entry(y.why.as_str()).or_default() += 1;
    }
    let mut by: Vec<_> = by.into_iter().collect();
    by.sort_by_key(|x| std::cmp::Reverse(x.1));
    for (w, n) in by.iter().take(3) {
        evidence.push(format!("{n} of {} misses: {w}", misses.len()));
    }
    Told {
        misses,
        bursts,
        evidence,
    }
}
