//! The livefx rig: a DAW-like audio process (REAPER's "livefx" workers in the seed
//! report). A process callback on an audio backend feeds pinned FIFO workers whose
//! plugins share PI locks; every cycle's lateness, duration, deadline and worker wake-up
//! is measured, with xruns and (optionally) a loopback check, across a profile's settings.
//!
//! `config` is the `[livefx]` table (parsed with the rig), `rt` is the callback and workers, `writer` drains their
//! records, `trial` runs one audio trial, `xrun` ties JACK's notifications to cycles,
//! `loopback` is the signal check, `report` the rows, histograms and table.

pub mod bursts;
pub mod config;
pub mod loopback;
pub mod report;
pub mod rt;
pub mod trial;
pub mod why;
pub mod writer;
pub mod xrun;

use crate::audio::{BackendChoice, LoopbackSpec, StreamSpec, select};
use crate::exit::{EXIT_FAILED, EXIT_REFUSED};
use crate::knobs::profile::AudioSetting;
use crate::options::AudioOptions;
use crate::output::summary::TrialRecord;
use crate::sweep::Prepared;
use config::Config;
use report::Group;
use results::livefx::events::{self, Event as LivefxEvent};
use results::livefx::rows::{self, Summary, TrialRow};
use results::livefx::{
    BackendNote, BackendUsed, CallbackInfo, Counters, LivefxSection, PluginInfo, WorkerInfo,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use trial::Params;

/// Resolves one setting's audio parameters: command line over the setting's `audio`
/// over the rig. `cache` keeps auto's probe per (backend, device), so it runs once.
pub fn resolve(
    cfg: &Config,
    a: &AudioOptions,
    audio: Option<&AudioSetting>,
    cache: &mut Vec<((BackendChoice, Option<String>), select::Selected)>,
) -> Result<Params, String> {
    let def = AudioSetting::default();
    let au = audio.unwrap_or(&def);
    let choice = match a.backend {
        Some(c) => c,
        None => BackendChoice::parse(au.backend.as_deref().unwrap_or(&cfg.backend))?,
    };
    let device = a
        .device
        .clone()
        .or_else(|| au.device.clone())
        .or_else(|| cfg.device.clone());
    let period_explicit = a.period.is_some() || au.period.is_some();
    let period = a.period.or(au.period).unwrap_or(cfg.period);
    let rate = a.rate.or(au.rate).unwrap_or(cfg.rate);
    let nperiods = au.nperiods.unwrap_or(cfg.nperiods);
    if period == 0 || rate == 0 || nperiods == 0 {
        return Err("period, rate and nperiods must be at least 1".into());
    }
    let key = (choice, device.clone());
    let sel = match cache.iter().find(|(k, _)| *k == key) {
        Some((_, s)) => s.clone(),
        None => {
            let s = select::select(choice, &device);
            cache.push((key, s.clone()));
            s
        }
    };
    let loopback = a.loopback || cfg.loopback.enabled;
    let inject_factor = a.inject_factor.unwrap_or(cfg.inject_factor);
    Ok(Params {
        kind: sel.kind,
        why: sel.why,
        spec: StreamSpec {
            period,
            rate,
            nperiods,
            device,
            priority: cfg.callback_priority,
            cpus: cfg.callback_cpus.clone(),
            period_explicit,
            loopback: loopback.then(|| LoopbackSpec {
                playback: cfg.loopback.playback.clone(),
                capture: cfg.loopback.capture.clone(),
                clock_latency: cfg.loopback.clock_latency.unwrap_or(nperiods * period),
            }),
        },
        duration_ns: cfg.duration_ns,
        inject_every: a.inject_every.unwrap_or(cfg.inject_every),
        inject_factor,
        loopback,
        // Not in a guest: its serial console is a terminal, but the host reads it by lines.
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr())
            && std::env::var_os("XRUNRIG_NO_PROGRESS").is_none(),
    })
}

/// Setting and variant names in file names: the one rule the report reads them by.
use analysis::report::safe as file_part;

pub fn run_main(p: Prepared) -> i32 {
    // A clone: the CLI's overrides (--duration) change it for this run only.
    let Some(mut cfg) = p.rig.livefx.clone() else {
        eprintln!("xrunrig: rig '{}' has no [livefx] table", p.rig.name);
        return EXIT_REFUSED;
    };
    let online = crate::sys::online_cpus();
    let missing: Vec<usize> = cfg
        .cpus_used()
        .into_iter()
        .filter(|c| !online.contains(c))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "xrunrig: rig '{}' pins livefx threads to CPUs {} but this machine has only {} online. \
             Nothing was changed. Edit the rig's cpus, or run it in a guest kernel with enough CPUs (--kernel ... --cpus N).",
            p.rig.name,
            crate::sys::format_cpu_set(&missing),
            crate::sys::format_cpu_set(&online)
        );
        return EXIT_REFUSED;
    }
    if let Some(ns) = p.audio.duration_ns {
        cfg.duration_ns = ns;
    }
    let mut cache = Vec::new();
    let mut params = Vec::new();
    for s in &p.settings {
        match resolve(&cfg, &p.audio, s.audio.as_ref(), &mut cache) {
            Ok(x) => params.push(x),
            Err(e) => {
                eprintln!("xrunrig: setting '{}': {e}", s.name);
                return EXIT_REFUSED;
            }
        }
    }
    // A backend asked for by name must answer before anything is changed.
    for (s, x) in p.settings.iter().zip(&params) {
        let probe = x
            .kind
            .backend()
            .probe(&crate::audio::ProbeSpec::device(&x.spec.device));
        if let Err(e) = probe {
            let hint = match x.kind {
                crate::audio::BackendKind::Jack => {
                    "start a JACK server or name it with --device NAME"
                }
                _ => "name a card with --device (e.g. hw:1; see `aplay -l`)",
            };
            eprintln!(
                "xrunrig: setting '{}': backend {}: {e}. Nothing was changed. Either {hint}, \
                 or use --backend clock or auto.",
                s.name,
                x.kind.name()
            );
            return EXIT_REFUSED;
        }
    }
    let mut inst = crate::instruments::Instruments::from_rig(&p.rig, &p.dir);
    if let Err(e) = inst.before_run() {
        eprintln!("xrunrig: {e}");
        return EXIT_REFUSED;
    }
    let cycles_dir = p.dir.join("cycles");
    if let Err(e) = std::fs::create_dir_all(&cycles_dir) {
        eprintln!("xrunrig: cannot create {}: {e}", cycles_dir.display());
        return EXIT_REFUSED;
    }
    let mut events = match std::fs::File::create(p.dir.join("events.jsonl")) {
        Ok(f) => std::io::BufWriter::new(f),
        Err(e) => {
            eprintln!("xrunrig: cannot create events.jsonl: {e}");
            return EXIT_REFUSED;
        }
    };
    let n_runs = p.trials as u64 * p.settings.len() as u64 * p.variants.len() as u64;
    let estimate = n_runs * (cfg.duration_ns + 5_000_000_000 + p.rig.trial_gap_ns);
    eprintln!(
        "xrunrig: {} — {} trial(s) × {} setting(s) × {} variant(s) of {:.0} s, results in {}",
        p.rig.name,
        p.trials,
        p.settings.len(),
        p.variants.len(),
        cfg.duration_ns as f64 / 1e9,
        p.dir.display()
    );
    for (s, x) in p.settings.iter().zip(&params) {
        eprintln!(
            "xrunrig: setting '{}': backend {} ({}), period {}, {} Hz{}{}",
            s.name,
            x.kind.name(),
            x.why,
            x.spec.period,
            x.spec.rate,
            if x.inject_every > 0 {
                format!(
                    ", injected overrun of {}× the period every {} cycles",
                    x.inject_factor, x.inject_every
                )
            } else {
                String::new()
            },
            if x.loopback {
                ", loopback check on"
            } else {
                ""
            }
        );
    }
    if let Some(n) = &p.settings_note {
        eprintln!("xrunrig: {n}");
    }
    let mut groups: Vec<Group> = p
        .settings
        .iter()
        .flat_map(|s| {
            p.variants
                .iter()
                .map(|&v| Group::new(&s.name, &p.rig.variants[v].name))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut trial_rows = Vec::new();
    // Wall-clock time of each event, for users who line xruns up with their own logs.
    let wall_off = crate::sys::mono_to_unix_ns();
    let mut server_gone = false;
    let mut any_failed: Option<String> = None;
    let mut io_error = None;
    let sw = {
        let mut one = |s: &crate::knobs::profile::Setting, v: usize, t: u32, stop: &AtomicBool| {
            let var = &p.rig.variants[v];
            let si = p
                .settings
                .iter()
                .position(|x| x.name == s.name)
                .unwrap_or(0);
            let pr = &params[si];
            let mut rec = TrialRecord {
                setting: s.name.clone(),
                variant: var.name.clone(),
                trial: t,
                status: "failed".into(),
                detail: None,
                duration_ms: 0.0,
                metrics: BTreeMap::new(),
                marks: BTreeMap::new(),
                evidence: vec![],
            };
            if server_gone {
                rec.detail = Some("skipped: the JACK server went away earlier in this run".into());
                return rec;
            }
            let file = format!(
                "{}__{}__{}.bin",
                file_part(&s.name),
                file_part(&var.name),
                t
            );
            let label = format!("{} / {} trial {}/{}", s.name, var.name, t + 1, p.trials);
            let (sn, vn) = (s.name.clone(), var.name.clone());
            let mut o = trial::run(
                &cfg,
                &var.plan,
                pr,
                trial::Out {
                    cycles: &cycles_dir.join(&file),
                    label: &label,
                    marker: inst.marker(),
                },
                stop,
                &mut |tids| inst.start_trial(&sn, &vn, t, tids),
            );
            let mut found = inst.end_trial();
            let period_ns = o.info.as_ref().map_or(
                pr.spec.period as u64 * 1_000_000_000 / pr.spec.rate.max(1) as u64,
                |i| i.period as u64 * 1_000_000_000 / i.rate.max(1) as u64,
            );
            let told = tell(&cfg, var, &mut o, found.records.take(), period_ns);
            found.evidence.extend(told.evidence.iter().cloned());
            server_gone |= o.server_gone;
            if o.status == "failed" && any_failed.is_none() {
                any_failed = Some(o.detail.clone().unwrap_or_default());
            }
            let st = &o.stats;
            let mut misses = told.misses.iter();
            let stamp = |mono: u64| {
                let wall = (mono as i64 + wall_off).max(0) as u64;
                (Some(mono as f64 / 1e9), Some(crate::sys::utc_at_ns(wall)))
            };
            let line = |kind: &str, mono: u64| {
                let (mono_s, wall) = stamp(mono);
                LivefxEvent {
                    setting: s.name.clone(),
                    variant: var.name.clone(),
                    trial: Some(t),
                    kind: kind.into(),
                    mono_s,
                    wall,
                    ..Default::default()
                }
            };
            for e in &st.events {
                let mut ev = LivefxEvent {
                    cycle: Some(e.cycle),
                    t_s: Some(e.t_s),
                    usecs: e.usecs,
                    ..line(e.kind, e.mono_ns)
                };
                if e.kind == events::DEADLINE_MISS
                    && let Some((y, b)) = misses.next()
                {
                    ev.worker = y.worker.clone();
                    ev.lock = y.lock.clone();
                    ev.holder = y.holder.clone();
                    ev.wait_us = y.wait_ns.map(|w| w as f64 / 1e3);
                    ev.why = Some(y.why.clone());
                    ev.stuck_ms = y.stuck_ns.map(|w| w as f64 / 1e6);
                    ev.burst = b.map(|b| b as u64);
                }
                if let Err(e) = write_event(&mut events, &ev) {
                    io_error.get_or_insert(e);
                }
            }
            for (i, b) in told.bursts.iter().enumerate() {
                let ev = LivefxEvent {
                    cycle: None,
                    t_s: Some(b.start_ns.saturating_sub(o.t0_ns) as f64 / 1e9),
                    usecs: Some((b.end_ns - b.start_ns) as f64 / 1e3),
                    index: Some(i as u64),
                    caught: b
                        .caught
                        .and_then(|(w, _)| cfg.workers.get(w).map(|x| x.name.clone())),
                    lock: b
                        .caught
                        .and_then(|(_, l)| var.plan.locks.get(l).map(|x| x.name.clone())),
                    misses: Some(b.misses),
                    ..line(events::BURST, b.start_ns)
                };
                if let Err(e) = write_event(&mut events, &ev) {
                    io_error.get_or_insert(e);
                }
            }
            // The trial's counts, with the xruns its outcome tells (RT path and JACK's).
            let counts = Counters {
                xruns: o.xruns,
                ..st.counts
            };
            let burst_counts = bursts::count(&told.bursts);
            if let Some(g) = groups
                .iter_mut()
                .find(|g| g.setting == s.name && g.variant == var.name)
            {
                if let Some(i) = &o.info {
                    g.backend = i.backend.to_string();
                    g.backend_note = format!("{}; {}", pr.why, i.note);
                    g.rate = i.rate;
                    g.period = i.period;
                } else if g.backend.is_empty() {
                    g.backend = pr.kind.name().to_string();
                    g.backend_note = pr.why.clone();
                }
                g.trials += 1;
                g.duration_s += o.duration_ns as f64 / 1e9;
                g.counts.merge(&counts);
                g.dropped += o.dropped;
                if let Some(d) = o.discontinuities {
                    *g.discontinuities.get_or_insert(0) += d;
                }
                if let Some(u) = o.unexplained {
                    *g.unexplained.get_or_insert(0) += u;
                }
                if g.roundtrip.is_none() {
                    g.roundtrip = o.roundtrip;
                }
                let _ = g.callback.add(&st.callback);
                let _ = g.lateness.add(&st.lateness);
                let _ = g.wake.add(&st.wake);
                if cfg.bursts.is_some() {
                    g.bursts
                        .get_or_insert_with(Default::default)
                        .merge(&burst_counts);
                }
                for (y, _) in &told.misses {
                    g.why
                        .entry(y.why.clone())
                        .or_default()
                        .add(y.stuck_ns, y.wait_ns);
                }
            }
            let mut row = TrialRow {
                setting: s.name.clone(),
                variant: var.name.clone(),
                trial: t,
                cycles_file: Some(format!("cycles/{file}")),
                status: Some(o.status.into()),
                detail: o.detail.clone(),
                instruments: (!found.metrics.is_empty()).then(|| found.metrics.clone()),
                ..Default::default()
            };
            row.counts.set(&counts);
            row.counts.discontinuities = o.discontinuities;
            row.counts.discontinuities_unexplained = o.unexplained;
            row.counts.roundtrip_frames = o.roundtrip;
            if cfg.bursts.is_some() {
                row.set_bursts(&burst_counts);
            }
            trial_rows.push(row);
            rec.status = o.status.into();
            rec.detail = o.detail.clone();
            rec.duration_ms = o.duration_ns as f64 / 1e6;
            for (k, v) in [
                ("cycles", counts.cycles),
                ("xruns", counts.xruns),
                ("deadline_misses", counts.deadline_misses),
                ("injected", counts.injected),
                ("misses_not_injected", counts.misses_not_injected),
            ] {
                rec.metrics.insert(k.into(), vec![v as f64]);
            }
            if let Some(d) = o.discontinuities {
                rec.metrics.insert("discontinuities".into(), vec![d as f64]);
            }
            if cfg.bursts.is_some() {
                for (k, v) in [
                    ("bursts", burst_counts.bursts),
                    ("bursts_caught", burst_counts.caught),
                    ("bursts_caught_missed", burst_counts.caught_missed),
                ] {
                    rec.metrics.insert(k.into(), vec![v as f64]);
                }
            }
            rec.metrics.extend(found.metrics);
            rec.evidence = found.evidence;
            rec
        };
        crate::sweep::sweep(&p, estimate, &mut one)
    };
    let inst_json = inst.after_run();
    if let Err(e) = events.flush() {
        io_error.get_or_insert(format!("cannot write events.jsonl: {e}"));
    }
    let sw = match sw {
        Ok(s) => s,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_FAILED;
        }
    };
    // Settings and variants never reached (interrupted, ended early) have no row.
    groups.retain(|g| g.trials > 0);
    let summary = Summary {
        format: Some(results::FORMAT_VERSION),
        rig: p.rig.name.clone(),
        kind: rows::KIND.into(),
        rows: groups.iter().map(report::row).collect(),
        trials: trial_rows,
    };
    let hists: Vec<_> = groups.iter().flat_map(report::hists).collect();
    let lock_name = |l: usize| p.rig.variants.first().map(|v| v.plan.locks[l].name.clone());
    let section = LivefxSection {
        duration_s: Some(cfg.duration_ns as f64 / 1e9),
        backends: p
            .settings
            .iter()
            .zip(&params)
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
    };
    let extra = crate::sweep::RunExtra {
        instruments: inst_json,
        livefx: Some(section),
    };
    let mut code = 0;
    for r in [
        crate::output::write_json(&p.dir.join("summary.json"), &summary),
        crate::output::write_json(&p.dir.join("histograms.json"), &hists),
        crate::output::write_json(
            &p.dir.join("run.json"),
            &crate::sweep::run_json(&p, &sw, extra),
        ),
    ] {
        if let Err(e) = r {
            eprintln!("xrunrig: {e}");
            code = EXIT_FAILED;
        }
    }
    if let Some(e) = io_error {
        eprintln!("xrunrig: {e}");
        code = EXIT_FAILED;
    }
    println!();
    print!("{}", report::render(&groups));
    print!("{}", report::render_why(&groups));
    println!();
    for l in &sw.restored {
        eprintln!("xrunrig: restored {l}");
    }
    println!("results: {}", p.dir.display());
    if server_gone {
        eprintln!(
            "xrunrig: the JACK server went away during the run; the results above cover what was recorded before"
        );
        return EXIT_FAILED;
    }
    if let Some(c) = crate::sweep::sweep_exit(&sw) {
        return c;
    }
    if let Some(d) = any_failed {
        eprintln!("xrunrig: some trials failed (the first: {d}); see samples.jsonl");
        return EXIT_FAILED;
    }
    code
}

/// One line of events.jsonl.
fn write_event(w: &mut impl Write, e: &LivefxEvent) -> Result<(), String> {
    serde_json::to_writer(&mut *w, e)
        .map_err(std::io::Error::from)
        .and_then(|_| w.write_all(b"\n"))
        .map_err(|e| format!("cannot write events.jsonl: {e}"))
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
        .filter(|e| e.kind == events::DEADLINE_MISS)
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
        .filter(|e| e.kind == events::INJECTED)
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
