//! The end of a livefx run: summary.json, histograms.json and run.json's livefx part,
//! then the table, the causes of misses and the exit code.

use super::config::Config;
use super::report::{self, Group};
use super::trial::Params;
use crate::exit::EXIT_FAILED;
use crate::sweep::{Prepared, RunExtra, Swept};
use results::livefx::rows::{self, Summary, TrialRow};
use results::livefx::{
    BackendNote, BackendUsed, CallbackInfo, HistEntry, LivefxSection, PluginInfo, WorkerInfo,
};
use results::run::InstrumentsSection;
use results::trials::Decided;
use results::{HISTOGRAMS_JSON, RUN_JSON, SUMMARY_JSON};

/// Writes summary.json (with `decided`: `--until-decided`'s comparisons), histograms.json
/// and run.json: 0, or EXIT_FAILED when one could not be written (each is still tried).
#[allow(clippy::too_many_arguments)]
pub fn write(
    p: &Prepared,
    cfg: &Config,
    params: &[Params],
    groups: &[Group],
    trial_rows: Vec<TrialRow>,
    decided: Option<Decided>,
    sw: &Swept,
    instruments: Option<InstrumentsSection>,
) -> i32 {
    let (summary, hists) = tables(&p.plan.rig.name, groups, trial_rows, decided);
    let extra = RunExtra {
        instruments,
        livefx: Some(section(p, cfg, params, groups)),
    };
    let mut code = 0;
    // Each file whole or not at all (atomic); INCOMPLETE goes last, once all are there.
    let mut written = vec![crate::output::write_json(
        &p.dir.join(SUMMARY_JSON),
        &summary,
    )];
    crate::sys::test_stall("results");
    written.push(crate::output::write_json(
        &p.dir.join(HISTOGRAMS_JSON),
        &hists,
    ));
    written.push(crate::output::write_json(
        &p.dir.join(RUN_JSON),
        &crate::sweep::run_json(p, sw, extra),
    ));
    if written.iter().all(Result::is_ok) {
        written.push(crate::output::mark_complete(&p.dir));
    }
    for r in written {
        if let Err(e) = r {
            eprintln!("xrunrig: {e}");
            code = EXIT_FAILED;
        }
    }
    // --json: the document summary.json holds, from the same value.
    crate::output::console::document(&summary);
    code
}

/// summary.json and histograms.json of a run's groups and trials: a run's own end, and
/// the guest's merge of boots (`stored::rebuild`) go through this one function.
pub(super) fn tables(
    rig: &str,
    groups: &[Group],
    trial_rows: Vec<TrialRow>,
    decided: Option<Decided>,
) -> (Summary, Vec<HistEntry>) {
    let summary = Summary {
        format: Some(results::FORMAT_VERSION),
        rig: rig.to_string(),
        kind: rows::KIND.into(),
        rows: groups.iter().map(report::row).collect(),
        trials: trial_rows,
        until_decided: decided,
    };
    (summary, groups.iter().flat_map(report::hists).collect())
}

/// run.json's livefx part: the backend of each setting, the note of each group, and the
/// callback and workers as configured.
fn section(p: &Prepared, cfg: &Config, params: &[Params], groups: &[Group]) -> LivefxSection {
    let lock_name = |l: usize| {
        p.plan
            .rig
            .variants
            .first()
            .map(|v| v.plan.locks[l].name.clone())
    };
    LivefxSection {
        duration_s: Some(cfg.duration_ns as f64 / 1e9),
        backends: p
            .plan
            .settings
            .iter()
            .zip(params)
            .map(|(s, x)| BackendUsed {
                setting: s.name.clone(),
                backend: x.kind.name().into(),
                why: x.why.clone(),
                period: Some(x.spec.period),
                rate: Some(x.spec.rate),
                nperiods: Some(x.spec.nperiods),
                device: x.spec.device.clone(),
                inject_every: Some(x.inject_every),
                inject_factor: Some(x.inject_factor),
                loopback: x.loopback,
            })
            .collect(),
        notes: groups
            .iter()
            .map(|g| BackendNote {
                setting: g.setting.clone(),
                variant: g.variant.clone(),
                backend_note: g.backend_note.clone(),
                server: g.server.clone(),
            })
            .collect(),
        callback: CallbackInfo {
            priority: Some(cfg.callback_priority.into()),
            cpus: cfg.callback_cpus.iter().map(|&c| c as u64).collect(),
        },
        workers: cfg
            .workers
            .iter()
            .map(|w| WorkerInfo {
                name: Some(w.name.clone()),
                priority: Some(w.priority.into()),
                cpus: w.cpus.iter().map(|&c| c as u64).collect(),
                waited: w.waited,
                plugins: w
                    .plugins
                    .iter()
                    .map(|pl| PluginInfo {
                        run_us: Some(pl.work_ns as f64 / 1e3),
                        jitter_us: Some(pl.jitter_ns as f64 / 1e3),
                        lock: pl.lock.and_then(lock_name),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Prints the table, `--until-decided`'s comparisons, the causes of misses, the knobs
/// restored and where the results are; an exit code when the run failed (the JACK
/// server went away, the sweep ended badly, a trial failed).
pub fn report(
    p: &Prepared,
    groups: &[Group],
    decided: Option<&Decided>,
    sw: &Swept,
    server_gone: bool,
    any_failed: Option<String>,
) -> Option<i32> {
    crate::output::console::report(&format!(
        "\n{}{}{}{}",
        report::render(groups),
        decided.map_or(String::new(), crate::sweep::decide::render),
        report::render_why(groups),
        crate::output::answer(&p.dir)
    ));
    for l in &sw.restored {
        crate::note!("xrunrig: restored {l}");
    }
    if server_gone {
        eprintln!(
            "xrunrig: the JACK server went away during the run; the results above cover what was recorded before"
        );
        return Some(EXIT_FAILED);
    }
    if let Some(c) = crate::sweep::sweep_exit(sw) {
        return Some(c);
    }
    if let Some(d) = any_failed {
        eprintln!("xrunrig: some trials failed (the first: {d}); see samples.jsonl");
        return Some(EXIT_FAILED);
    }
    None
}
