//! After the rounds: run.json (provenance, the settings in force), summary.json, the
//! printed table, and the exit code.

use super::{Prepared, Swept};
use crate::exit::*;
use crate::output::provenance::{self, sha256_hex};
use crate::output::summary::{self};
use crate::output::{self, console, table};
use crate::rig::{self};
use results::run::{InstrumentsSection, ProfileInfo, RigInfo, RunDoc, SettingInfo, VariantInfo};

/// What a rig kind adds to run.json beside what every run has.
#[derive(Default)]
pub struct RunExtra {
    pub instruments: Option<InstrumentsSection>,
    pub livefx: Option<results::livefx::LivefxSection>,
}

/// run.json: provenance and the settings actually in force.
pub fn run_json(p: &Prepared, sw: &Swept, extra: RunExtra) -> RunDoc {
    RunDoc {
        format: results::FORMAT_VERSION,
        xrunrig_version: Some(env!("CARGO_PKG_VERSION").into()),
        git: Some(provenance::git()),
        command: std::env::args().collect(),
        started: Some(sw.started.clone()),
        ended: Some(sw.ended.clone()),
        host: Some(provenance::hostname()),
        kernel: Some(provenance::kernel()),
        cpus: Some(provenance::cpus()),
        rig: Some(RigInfo {
            name: Some(p.plan.rig.name.clone()),
            path: Some(p.plan.rig.path.display().to_string()),
            sha256: Some(sha256_hex(&p.plan.rig.text)),
            description: Some(p.plan.rig.description.clone()),
            text: Some(p.plan.rig.text.clone()),
        }),
        profile: Some(ProfileInfo {
            name: Some(p.plan.profile.name.clone()),
            path: p
                .plan
                .profile
                .path
                .as_ref()
                .map(|x| x.display().to_string()),
            sha256: p
                .plan
                .profile
                .path
                .as_ref()
                .map(|_| sha256_hex(&p.plan.profile.text)),
            text: p
                .plan
                .profile
                .path
                .as_ref()
                .map(|_| p.plan.profile.text.clone()),
        }),
        rerun_of: p.plan.choices.rerun_of.clone(),
        environment: Some(results::run::Environment {
            virtualised: provenance::virtualisation(),
            others_cpu_percent: sw.others_cpu_percent,
        }),
        trials: Some(p.plan.trials.into()),
        variants: p
            .plan
            .variants
            .iter()
            .map(|&i| VariantInfo {
                name: p.plan.rig.variants[i].name.clone(),
                description: p.plan.rig.variants[i].description.clone(),
            })
            .collect(),
        settings_applied: Some(p.plan.settings_note.is_none()),
        settings_note: p.plan.settings_note.clone(),
        settings: p
            .plan
            .settings
            .iter()
            .map(|s| SettingInfo {
                name: Some(s.name.clone()),
                description: Some(s.description.clone()),
                requested: Some(s.changes.iter().map(|c| c.describe()).collect()),
                in_force: sw
                    .in_force
                    .iter()
                    .find(|(n, _)| n == &s.name)
                    .map(|(_, f)| f.iter().cloned().collect()),
            })
            .collect(),
        knobs_original: sw.restored.clone(),
        sched_features_before: Some(sw.features_before.clone()),
        sched_features_after: Some(sw.features_after.clone()),
        sched_rt_runtime_us: crate::sys::read_trim(std::path::Path::new(
            "/proc/sys/kernel/sched_rt_runtime_us",
        ))
        .ok(),
        interrupted: sw.interrupted,
        error: sw.fatal.clone(),
        mlockall: Some(results::run::Mlockall::from_result(sw.mlockall.clone())),
        // The doctor builds the results format's doctor section itself.
        doctor: Some(crate::doctor::findings_for_run()),
        instruments: extra.instruments,
        livefx: extra.livefx,
        guest: None,
        guest_command: None,
        watch: None,
    }
}

/// Writes summary.json and run.json, prints the table; the exit code says how it went.
pub fn finish(p: &Prepared, sw: &Swept, extra: RunExtra) -> i32 {
    finish_with(p, sw, extra, &p.plan.rig.metrics)
}

/// As `finish`, with the metrics to summarise (the rig's and its instruments').
pub fn finish_with(p: &Prepared, sw: &Swept, extra: RunExtra, metrics: &[rig::Metric]) -> i32 {
    let rig = &p.plan.rig;
    let settings: Vec<String> = p.plan.settings.iter().map(|s| s.name.clone()).collect();
    let variants: Vec<String> = p
        .plan
        .variants
        .iter()
        .map(|&i| rig.variants[i].name.clone())
        .collect();
    let rows = summary::rows(&sw.records, &settings, &variants, metrics);
    let mut sum = summary::Summary::new(&rig.name, rows);
    sum.until_decided = super::decide::decided(p.plan.until.as_ref(), &sw.records);
    let mut code = 0;
    // Each file whole or not at all; INCOMPLETE goes last, once both are there.
    let mut written = vec![output::write_json(&p.dir.join(results::SUMMARY_JSON), &sum)];
    crate::sys::test_stall("results");
    written.push(output::write_json(
        &p.dir.join(results::RUN_JSON),
        &run_json(p, sw, extra),
    ));
    if written.iter().all(Result::is_ok) {
        written.push(output::mark_complete(&p.dir));
    }
    for r in written {
        if let Err(e) = r {
            eprintln!("xrunrig: {e}");
            code = EXIT_FAILED;
        }
    }
    console::report(&format!(
        "\n{}{}{}",
        table::render(&sum.rows),
        sum.until_decided
            .as_ref()
            .map_or(String::new(), super::decide::render),
        output::answer(&p.dir)
    ));
    for l in &sw.restored {
        crate::note!("xrunrig: restored {l}");
    }
    // --json: the document summary.json holds, from the same value.
    console::document(&sum);
    sweep_exit(sw).unwrap_or(code)
}

/// How the sweep itself ended, said to the user: the exit code when it ended early
/// (an error, Ctrl-C, the hard bound), None when every planned trial ran.
pub fn sweep_exit(sw: &Swept) -> Option<i32> {
    if let Some(f) = &sw.fatal {
        eprintln!("xrunrig: the run ended early: {f}");
        return Some(EXIT_FAILED);
    }
    if sw.interrupted {
        eprintln!("xrunrig: interrupted; the results above cover the trials that finished");
        return Some(EXIT_INTERRUPTED);
    }
    None
}
