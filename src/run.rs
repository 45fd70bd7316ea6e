//! `xrunrig run`: check everything before touching anything, then sweep the profile's
//! settings interleaved (A B A B) across trials, restore, and write the results.

use crate::engine::thread::{free_cpu, set_affinity};
use crate::engine::trial::{TrialStatus, run_trial_with};
use crate::engine::watchdog::{Watchdog, install_signal_flag};
use crate::instruments::Instruments;
use crate::knobs::knob::{Knob, RealIo};
use crate::knobs::profile::{Profile, Setting};
use crate::knobs::{self, InForce, KnobSession};
use crate::options::{AudioOptions, RunOptions};
use crate::output::provenance::{self, sha256_hex};
use crate::output::summary::{self, TrialRecord};
use crate::output::{self, table};
use crate::rig::{self, Kind, Rig};
use results::run::{
    DoctorSection, InstrumentsSection, ProfileInfo, RigInfo, RunDoc, SchedFeatures, SettingInfo,
    VariantInfo,
};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Exit codes: 0 done, 2 refused before starting (bad input, machine cannot run it),
/// 3 failed during the run, 130 interrupted.
pub const EXIT_REFUSED: i32 = 2;
pub const EXIT_FAILED: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;

/// Everything checked and decided before the first knob is touched.
pub struct Prepared {
    pub rig: Rig,
    pub profile: Profile,
    /// The settings to sweep, after --setting and --settings-as-is.
    pub settings: Vec<Setting>,
    /// Indices into rig.variants, after --variant.
    pub variants: Vec<usize>,
    pub trials: u32,
    pub dir: PathBuf,
    pub knobs: Vec<Knob>,
    /// Why settings were not applied, when they were not.
    pub settings_note: Option<String>,
    pub stop: Arc<AtomicBool>,
    /// The command line's audio overrides (audio rigs).
    pub audio: AudioOptions,
    /// The whole run's hard bound, when given.
    pub max_time_ns: Option<u64>,
}

/// What a sweep produced.
pub struct Swept {
    pub records: Vec<TrialRecord>,
    pub in_force: Vec<(String, InForce)>,
    pub restored: Vec<String>,
    pub interrupted: bool,
    pub fatal: Option<String>,
    pub started: String,
    pub ended: String,
    pub features_before: SchedFeatures,
    pub features_after: SchedFeatures,
}

pub fn main(args: &RunOptions) -> i32 {
    if let Some(g) = &args.guest {
        return crate::guest::run_main(args, g);
    }
    match prepare(args) {
        Err(e) => {
            eprintln!("xrunrig: {e}");
            EXIT_REFUSED
        }
        Ok(p) => match p.rig.kind {
            Kind::Livefx => crate::livefx::run_main(p),
            Kind::Trials => run_trials(p),
        },
    }
}

fn features_json() -> SchedFeatures {
    SchedFeatures::from_result(knobs::features_snapshot())
}

/// Loads and checks the rig and profile, restores a killed run's leftovers, and checks
/// the knobs can be written. Changes nothing except that restore.
pub fn prepare(args: &RunOptions) -> Result<Prepared, String> {
    let io = RealIo;
    let state = knobs::state_dir();
    // Tracing state a killed run left (its trace instance, a tracefs it mounted).
    for l in crate::instruments::recover()? {
        eprintln!("xrunrig: a previous run left tracing state behind; restored: {l}");
    }
    if let Some((j, lines)) = knobs::recover(&io, &state)? {
        eprintln!(
            "xrunrig: a previous run (pid {}, started {}) ended without restoring its settings; restored now:",
            j.pid, j.started
        );
        for l in lines {
            eprintln!("  {l}");
        }
    }
    // Checks [livefx] and [instruments] too: a bad rig is refused before anything runs.
    let rig = rig::load(&args.rig).map_err(|e| e.to_string())?;
    let profile = match &args.profile {
        Some(p) => knobs::profile::load(p)?,
        None => Profile::as_is(),
    };
    let mut settings = profile.settings.clone();
    if !args.settings.is_empty() {
        for s in &args.settings {
            if !settings.iter().any(|x| &x.name == s) {
                return Err(format!(
                    "no setting '{s}' in profile '{}'; it has: {}",
                    profile.name,
                    names(settings.iter().map(|x| &x.name))
                ));
            }
        }
        settings.retain(|x| args.settings.contains(&x.name));
    }
    let mut variants: Vec<usize> = (0..rig.variants.len()).collect();
    if !args.variants.is_empty() {
        for v in &args.variants {
            if !rig.variants.iter().any(|x| &x.name == v) {
                return Err(format!(
                    "no variant '{v}' in rig '{}'; it has: {}",
                    rig.name,
                    names(rig.variants.iter().map(|x| &x.name))
                ));
            }
        }
        variants.retain(|&i| args.variants.contains(&rig.variants[i].name));
    }
    rig.check_machine(&crate::sys::online_cpus())?;
    let trials = args.trials.unwrap_or(rig.trials);
    let changes = settings.iter().any(|s| !s.changes.is_empty());
    let (knobs, settings_note) = if !changes {
        (vec![], None)
    } else if args.settings_as_is {
        let note = format!(
            "--settings-as-is: profile '{}' was not applied; its settings {} were NOT in force, the machine's own were",
            profile.name,
            names(settings.iter().map(|x| &x.name))
        );
        settings = vec![Setting {
            name: "as-is".into(),
            description: note.clone(),
            changes: vec![],
            audio: None,
        }];
        (vec![], Some(note))
    } else {
        let p = Profile {
            settings: settings.clone(),
            ..profile.clone()
        };
        (knobs::preflight(&io, &p, crate::sys::is_root())?, None)
    };
    let dir = output::results_dir(&rig.name, args.out.as_deref());
    output::create_results_dir(&dir)?;
    Ok(Prepared {
        rig,
        profile,
        settings,
        variants,
        trials,
        dir,
        knobs,
        settings_note,
        stop: Arc::new(AtomicBool::new(false)),
        audio: args.audio.clone(),
        max_time_ns: args.max_time_ns,
    })
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    it.cloned().collect::<Vec<_>>().join(", ")
}

/// The sweep: for each trial round, each setting applied in turn (A B A B), each variant.
/// `one` runs one trial. Knobs are restored before this returns, whatever happened.
pub fn sweep(
    p: &Prepared,
    estimate_ns: u64,
    one: &mut dyn FnMut(&Setting, usize, u32, &AtomicBool) -> TrialRecord,
) -> Result<Swept, String> {
    if let Err(e) = crate::sys::mlockall() {
        eprintln!("xrunrig: warning: mlockall failed ({e}): page faults may add latency");
    }
    let mut used: Vec<usize> = p
        .variants
        .iter()
        .flat_map(|&v| p.rig.variants[v].plan.cpus_used())
        .collect();
    if let Some(c) = &p.rig.livefx {
        used.extend(c.cpus_used());
    }
    let control_cpu = free_cpu(&used);
    if let Some(c) = control_cpu {
        // Threads inherit this: they are born on a free CPU, then raise and pin themselves.
        let _ = set_affinity(0, &[c]);
    }
    install_signal_flag(&p.stop).map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let bound = p.max_time_ns.unwrap_or(estimate_ns * 2 + 60_000_000_000);
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
    let mut session = KnobSession::begin(&io, &knobs::state_dir(), &p.knobs)?;
    let mut samples = std::fs::File::create(p.dir.join("samples.jsonl"))
        .map_err(|e| format!("cannot create samples.jsonl: {e}"))?;
    let total = p.trials as usize * p.settings.len() * p.variants.len();
    let mut done = 0usize;
    let mut records = Vec::new();
    let mut in_force: Vec<(String, InForce)> = Vec::new();
    let mut fatal = None;
    'outer: for t in 0..p.trials {
        for s in &p.settings {
            if p.stop.load(Ordering::SeqCst) {
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
            for &v in &p.variants {
                if p.stop.load(Ordering::SeqCst) {
                    break 'outer;
                }
                let rec = one(s, v, t, &p.stop);
                done += 1;
                eprintln!(
                    "[{done:>4}/{total}] {}",
                    progress_line(&rec, p.trials, &p.rig.metrics)
                );
                let _ = writeln!(
                    samples,
                    "{}",
                    serde_json::to_string(&rec).unwrap_or_default()
                );
                let stuck = rec.status == "stuck";
                records.push(rec);
                if stuck {
                    fatal = Some(
                        "rig threads did not stop even after being demoted; ending the run".into(),
                    );
                    break 'outer;
                }
                let gap_end = crate::sys::now_ns() + p.rig.trial_gap_ns;
                while crate::sys::now_ns() < gap_end && !p.stop.load(Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
        }
    }
    let restored = session.restore()?;
    let features_after = features_json();
    let (ended, _) = crate::sys::utc_now();
    Ok(Swept {
        records,
        in_force,
        restored,
        interrupted: p.stop.load(Ordering::SeqCst) && fatal.is_none(),
        fatal,
        started,
        ended,
        features_before,
        features_after,
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
    if r.status != "ok" {
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
        command: std::env::args().collect(),
        started: Some(sw.started.clone()),
        ended: Some(sw.ended.clone()),
        host: Some(provenance::hostname()),
        kernel: Some(provenance::kernel()),
        cpus: Some(provenance::cpus()),
        rig: Some(RigInfo {
            name: Some(p.rig.name.clone()),
            path: Some(p.rig.path.display().to_string()),
            sha256: Some(sha256_hex(&p.rig.text)),
            description: Some(p.rig.description.clone()),
            text: Some(p.rig.text.clone()),
        }),
        profile: Some(ProfileInfo {
            name: Some(p.profile.name.clone()),
            path: p.profile.path.as_ref().map(|x| x.display().to_string()),
            sha256: p.profile.path.as_ref().map(|_| sha256_hex(&p.profile.text)),
        }),
        trials: Some(p.trials.into()),
        variants: p
            .variants
            .iter()
            .map(|&i| VariantInfo {
                name: p.rig.variants[i].name.clone(),
                description: p.rig.variants[i].description.clone(),
            })
            .collect(),
        settings_applied: Some(p.settings_note.is_none()),
        settings_note: p.settings_note.clone(),
        settings: p
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
        // The doctor writes its own JSON (also `xrunrig doctor --json`); run.json keeps
        // it as the results format's doctor section.
        doctor: serde_json::from_value::<Option<DoctorSection>>(crate::doctor::findings_for_run())
            .ok()
            .flatten(),
        instruments: extra.instruments,
        livefx: extra.livefx,
        guest: None,
        guest_command: None,
    }
}

fn run_trials(p: Prepared) -> i32 {
    let rig = &p.rig;
    let per_trial = rig.trial_timeout_ns + rig.trial_gap_ns;
    let estimate = per_trial * p.trials as u64 * p.settings.len() as u64 * p.variants.len() as u64;
    eprintln!(
        "xrunrig: {} — {} trial(s) × {} setting(s) × {} variant(s), results in {}",
        rig.name,
        p.trials,
        p.settings.len(),
        p.variants.len(),
        p.dir.display()
    );
    if let Some(n) = &p.settings_note {
        eprintln!("xrunrig: {n}");
    }
    let mut inst = Instruments::from_rig(rig, &p.dir);
    if let Err(e) = inst.before_run() {
        eprintln!("xrunrig: {e}");
        return EXIT_REFUSED;
    }
    let mut one = |s: &Setting, v: usize, t: u32, stop: &AtomicBool| {
        let var = &rig.variants[v];
        let r = run_trial_with(&var.plan, rig.trial_timeout_ns, stop, &mut |tids| {
            inst.start_trial(&s.name, &var.name, t, tids)
        });
        let found = inst.end_trial();
        let (status, detail) = record_status(&r.status);
        let mut metrics: std::collections::BTreeMap<String, Vec<f64>> = rig
            .metrics
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    summary::metric_values(m, &var.plan, &r.marks),
                )
            })
            .filter(|(_, v)| !v.is_empty())
            .collect();
        metrics.extend(found.metrics);
        let marks = var
            .plan
            .marks
            .iter()
            .zip(&r.marks)
            .map(|(s, t)| (format!("{}.{}", s.thread, s.mark), t.clone()))
            .collect();
        TrialRecord {
            setting: s.name.clone(),
            variant: var.name.clone(),
            trial: t,
            status,
            detail,
            duration_ms: r.duration_ns as f64 / 1e6,
            metrics,
            marks,
            evidence: {
                let mut ev = found.evidence;
                if let Some(l) = cycles_line(&r.cycles, r.duration_ns) {
                    ev.push(l);
                }
                ev
            },
        }
    };
    let sw = sweep(&p, estimate, &mut one);
    let inst_json = inst.after_run();
    let sw = match sw {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_FAILED;
        }
    };
    let mut metrics = rig.metrics.clone();
    metrics.extend(inst.metric_defs());
    finish_with(
        &p,
        &sw,
        RunExtra {
            instruments: inst_json,
            livefx: None,
        },
        &metrics,
    )
}

/// The engine's trial outcome as samples.jsonl records it: the status, and what the
/// engine knows about it as the detail.
fn record_status(s: &TrialStatus) -> (results::trials::TrialStatus, Option<String>) {
    use results::trials::TrialStatus as S;
    match s {
        TrialStatus::Ok => (S::Ok, None),
        TrialStatus::TimedOut(th) => (
            S::TimedOut,
            Some(format!(
                "unfinished at the trial timeout: {}",
                th.join(", ")
            )),
        ),
        TrialStatus::Aborted => (S::Aborted, None),
        TrialStatus::Failed(e) => (S::Failed, Some(e.clone())),
        TrialStatus::Stuck(th) => (S::Stuck, Some(th.join(", "))),
    }
}

/// "loop cycles: victim 2000 (1998.0/s), ...": what the threads' loops completed, so a
/// reader can set it against what the rig asked for (a slow or emulated machine runs
/// fewer cycles, and every count that follows from them is smaller).
fn cycles_line(cycles: &[(String, u64)], duration_ns: u64) -> Option<String> {
    if cycles.is_empty() || duration_ns == 0 {
        return None;
    }
    let secs = duration_ns as f64 / 1e9;
    let parts: Vec<String> = cycles
        .iter()
        .map(|(n, c)| format!("{n} {c} ({:.1}/s)", *c as f64 / secs))
        .collect();
    Some(format!("loop cycles in {secs:.1} s: {}", parts.join(", ")))
}

/// Writes summary.json and run.json, prints the table; the exit code says how it went.
pub fn finish(p: &Prepared, sw: &Swept, extra: RunExtra) -> i32 {
    finish_with(p, sw, extra, &p.rig.metrics)
}

/// As `finish`, with the metrics to summarise (the rig's and its instruments').
pub fn finish_with(p: &Prepared, sw: &Swept, extra: RunExtra, metrics: &[rig::Metric]) -> i32 {
    let rig = &p.rig;
    let settings: Vec<String> = p.settings.iter().map(|s| s.name.clone()).collect();
    let variants: Vec<String> = p
        .variants
        .iter()
        .map(|&i| rig.variants[i].name.clone())
        .collect();
    let rows = summary::rows(&sw.records, &settings, &variants, metrics);
    let sum = summary::Summary::new(&rig.name, rows);
    let mut code = 0;
    for r in [
        output::write_json(&p.dir.join(results::SUMMARY_JSON), &sum),
        output::write_json(&p.dir.join(results::RUN_JSON), &run_json(p, sw, extra)),
    ] {
        if let Err(e) = r {
            eprintln!("xrunrig: {e}");
            code = EXIT_FAILED;
        }
    }
    println!();
    print!("{}", table::render(&sum.rows));
    println!();
    for l in &sw.restored {
        eprintln!("xrunrig: restored {l}");
    }
    println!("results: {}", p.dir.display());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_line_gives_counts_and_rates() {
        assert_eq!(cycles_line(&[], 1_000_000_000), None);
        let l = cycles_line(
            &[("victim".into(), 3000), ("sleeper".into(), 10)],
            2_000_000_000,
        );
        assert_eq!(
            l.as_deref(),
            Some("loop cycles in 2.0 s: victim 3000 (1500.0/s), sleeper 10 (5.0/s)")
        );
    }
}
