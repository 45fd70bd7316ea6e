//! A synthetic livefx results directory, exactly per the results contract (summary rows
//! and trials, histograms.json, events.jsonl, cycles/*.bin), streamed to disk so 10^8
//! cycles need no more memory than 10^3. SYNTHETIC, not a measurement.

use super::{LABEL, Rng, run_json, write};
use crate::dist::Dist;
use results::livefx::cycles::{F_INJECTED, F_MISS, F_XRUN, Record};
use results::livefx::events::{DEADLINE_MISS, INJECTED, XRUN};
use results::livefx::hist::{CALLBACK_DURATION, LATENESS, UNIT_US, WAKE_LATENCY};
use results::livefx::{Event, HistEntry, Pcts, Row, RowCounts, Summary, TrialRow};
use std::io::Write;
use std::path::Path;

#[derive(Debug, Clone)]
pub struct SettingSpec {
    pub name: String,
    /// Mean cycles between scheduling stalls that make a cycle late (0 = never).
    pub stall_every: u64,
    /// Share of missed cycles that JACK also reports as an xrun.
    pub xrun_share: f64,
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub settings: Vec<SettingSpec>,
    pub variant: String,
    pub trials: u32,
    pub cycles_per_trial: u64,
    pub period: u32,
    pub rate: u32,
    /// Inject an overrun every Nth cycle (0 = never).
    pub inject_every: u64,
    pub seed: u64,
}

impl Spec {
    /// The seed's A/B: RT_PUSH_IPI clean, NO_RT_PUSH_IPI with stalls.
    pub fn ab(total_cycles: u64, trials: u32) -> Spec {
        let per = (total_cycles / (2 * trials.max(1) as u64)).max(1);
        Spec {
            settings: vec![
                SettingSpec {
                    name: "RT_PUSH_IPI".into(),
                    stall_every: 0,
                    xrun_share: 0.0,
                },
                SettingSpec {
                    name: "NO_RT_PUSH_IPI".into(),
                    stall_every: 40_000,
                    xrun_share: 0.5,
                },
            ],
            variant: "default".into(),
            trials,
            cycles_per_trial: per,
            period: 128,
            rate: 48_000,
            inject_every: 0,
            seed: 1,
        }
    }
}

struct Acc {
    cycles: u64,
    xruns: u64,
    misses: u64,
    injected: u64,
    cb: Dist,
    late: Dist,
    wake: Dist,
}

fn pcts(h: &Dist) -> Pcts {
    let us = |q: f64| h.quantile(q).map(|v| v as f64 / 1e3);
    Pcts {
        p50: us(0.5),
        p99: us(0.99),
        p999: us(0.999),
        max: us(1.0),
    }
}

fn buckets(h: &Dist) -> Vec<(f64, u64)> {
    h.buckets().map(|(_, hi, c)| (hi as f64 / 1e3, c)).collect()
}

/// `x` as written with `decimals` places: the events carry that precision.
fn fixed(x: f64, decimals: usize) -> f64 {
    format!("{x:.decimals$}").parse().unwrap_or(x)
}

/// Writes the directory; returns the total number of cycles written.
pub fn generate(dir: &Path, spec: &Spec) -> Result<u64, String> {
    std::fs::create_dir_all(dir.join(results::CYCLES_DIR))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let period_ns = spec.period as f64 * 1e9 / spec.rate as f64;
    let mut rng = Rng::new(spec.seed);
    let ev_path = dir.join(results::EVENTS_JSONL);
    let mut events = std::io::BufWriter::new(
        std::fs::File::create(&ev_path)
            .map_err(|e| format!("cannot write {}: {e}", ev_path.display()))?,
    );
    let mut rows = Vec::new();
    let mut trials = Vec::new();
    let mut hists = Vec::new();
    let mut total = 0u64;
    let io = |e: std::io::Error| format!("write failed: {e}");
    for s in &spec.settings {
        let mut acc = Acc {
            cycles: 0,
            xruns: 0,
            misses: 0,
            injected: 0,
            cb: Dist::new(),
            late: Dist::new(),
            wake: Dist::new(),
        };
        for t in 0..spec.trials {
            let name = results::cycles_path(&s.name, &spec.variant, t);
            let p = dir.join(&name);
            let mut w = std::io::BufWriter::with_capacity(
                1 << 20,
                std::fs::File::create(&p)
                    .map_err(|e| format!("cannot write {}: {e}", p.display()))?,
            );
            let (mut tx, mut tm, mut ti) = (0u64, 0u64, 0u64);
            for i in 0..spec.cycles_per_trial {
                let mut late = rng.exp(12_000.0) + 2_000.0;
                let mut dur = period_ns * 0.35 * (0.9 + 0.2 * rng.unit()) + rng.exp(4_000.0);
                let wake = rng.exp(6_000.0) + 1_500.0;
                let mut flags = ((rng.next_u64() % 4) as u32) << 8;
                if s.stall_every > 0 && rng.next_u64().is_multiple_of(s.stall_every) {
                    late += period_ns * (0.8 + 2.0 * rng.unit());
                }
                let injected =
                    spec.inject_every > 0 && i % spec.inject_every == spec.inject_every - 1;
                if injected {
                    dur += 1.5 * period_ns;
                    flags |= F_INJECTED;
                }
                let t_s = i as f64 * period_ns / 1e9;
                // An older writer's lines: no mono_s, wall or causes.
                let ev = |kind: &str, usecs: f64, w: &mut dyn Write| -> Result<(), String> {
                    let e = Event {
                        setting: s.name.clone(),
                        variant: spec.variant.clone(),
                        trial: Some(t),
                        kind: kind.into(),
                        cycle: Some(i),
                        t_s: Some(fixed(t_s, 6)),
                        usecs: Some(fixed(usecs, 1)),
                        ..Default::default()
                    };
                    serde_json::to_writer(&mut *w, &e).map_err(|e| e.to_string())?;
                    w.write_all(b"\n").map_err(io)
                };
                if injected {
                    ev(INJECTED, dur / 1e3, &mut events)?;
                    ti += 1;
                }
                if late + dur > period_ns {
                    flags |= F_MISS;
                    tm += 1;
                    ev(DEADLINE_MISS, (late + dur - period_ns) / 1e3, &mut events)?;
                    if !injected && rng.unit() < s.xrun_share {
                        flags |= F_XRUN;
                        tx += 1;
                        ev(XRUN, (late + dur - period_ns) / 1e3, &mut events)?;
                    }
                }
                let c = Record {
                    start_ns: (i as f64 * period_ns + late) as u64,
                    callback_ns: dur as u32,
                    lateness_ns: late as i32,
                    flags,
                    wake_ns: wake as u32,
                };
                acc.cb.record(c.callback_ns as u64);
                acc.late.record(c.lateness_ns.max(0) as u64);
                acc.wake.record(c.wake_ns as u64);
                w.write_all(&c.encode()).map_err(io)?;
            }
            w.flush().map_err(io)?;
            total += spec.cycles_per_trial;
            acc.cycles += spec.cycles_per_trial;
            acc.xruns += tx;
            acc.misses += tm;
            acc.injected += ti;
            trials.push(TrialRow {
                setting: s.name.clone(),
                variant: spec.variant.clone(),
                trial: t,
                cycles_file: Some(name),
                counts: RowCounts {
                    cycles: spec.cycles_per_trial,
                    xruns: tx,
                    deadline_misses: tm,
                    injected: ti,
                    ..Default::default()
                },
                ..Default::default()
            });
        }
        let hours = acc.cycles as f64 * period_ns / 1e9 / 3600.0;
        // An older writer's row: the counters newer ones add are left out (None).
        rows.push(Row {
            backend: "clock".into(),
            backend_note: Some("synthetic: no audio device was used".into()),
            rate: Some(spec.rate),
            period: Some(spec.period),
            trials: Some(spec.trials),
            // Summed over the trials, as xrunrig writes it.
            duration_s: Some((spec.cycles_per_trial * spec.trials as u64) as f64 * period_ns / 1e9),
            counts: RowCounts {
                cycles: acc.cycles,
                xruns: acc.xruns,
                deadline_misses: acc.misses,
                injected: acc.injected,
                ..Default::default()
            },
            misses_per_hour: Some(acc.misses as f64 / hours),
            xruns_per_hour: Some(acc.xruns as f64 / hours),
            callback_us: pcts(&acc.cb),
            lateness_us: pcts(&acc.late),
            wake_us: pcts(&acc.wake),
            ..Row::new(&s.name, &spec.variant)
        });
        for (m, h) in [
            (CALLBACK_DURATION, &acc.cb),
            (LATENESS, &acc.late),
            (WAKE_LATENCY, &acc.wake),
        ] {
            hists.push(HistEntry {
                setting: s.name.clone(),
                variant: spec.variant.clone(),
                metric: m.into(),
                unit: UNIT_US.into(),
                count: h.len(),
                max: h.max() as f64 / 1e3,
                buckets: buckets(h),
            });
        }
    }
    events.flush().map_err(io)?;
    let summary = Summary {
        format: None,
        rig: "livefx".into(),
        kind: results::livefx::rows::KIND.into(),
        rows,
        trials,
        until_decided: None,
    };
    // Readers must ignore fields they do not know: every row carries one.
    let mut summary = serde_json::to_value(&summary).map_err(|e| e.to_string())?;
    for r in summary["rows"].as_array_mut().into_iter().flatten() {
        r["note"] = "unknown extra field: readers must ignore it".into();
    }
    write(
        &dir.join(results::SUMMARY_JSON),
        &(serde_json::to_string_pretty(&summary).unwrap() + "\n"),
    )?;
    write(
        &dir.join(results::HISTOGRAMS_JSON),
        &(serde_json::to_string(&hists).unwrap() + "\n"),
    )?;
    let settings: Vec<(&str, &str, &str)> = spec
        .settings
        .iter()
        .map(|s| (s.name.as_str(), "synthetic setting", s.name.as_str()))
        .collect();
    let run = run_json(
        "livefx",
        results::KIND_LIVEFX,
        &settings,
        &[(spec.variant.as_str(), "synthetic")],
        spec.trials,
    );
    write(
        &dir.join(results::RUN_JSON),
        &(serde_json::to_string_pretty(&run).unwrap() + "\n"),
    )?;
    write(
        &dir.join("README"),
        &format!("{LABEL}.\nMade by analysis::synth::livefx::generate: {spec:?}\n"),
    )?;
    Ok(total)
}
