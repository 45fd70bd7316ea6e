//! A finished trial counted three ways: into its (setting, variant) group for the
//! summary row and histograms, as its own row of summary.json, and as the record the
//! sweep keeps (samples.jsonl).

use super::Told;
use super::bursts::BurstCounts;
use super::report::Group;
use super::trial::{Outcome, Params};
use crate::instruments::TrialFindings;
use crate::output::summary::TrialRecord;
use results::livefx::Counters;
use results::livefx::counters::record as names;
use results::livefx::rows::TrialRow;

/// One finished trial, as the tallies read it.
pub struct Done<'a> {
    pub o: &'a Outcome,
    pub told: &'a Told,
    /// The trial's counts, with the xruns its outcome tells (RT path and JACK's).
    pub counts: Counters,
    /// With a rig's `bursts`: what its bursts of background load did.
    pub bursts: Option<BurstCounts>,
}

impl<'a> Done<'a> {
    /// The trial as every tally counts it: its xruns are the outcome's (RT path and
    /// JACK's); its bursts are counted when the rig has them.
    pub fn new(o: &'a Outcome, told: &'a Told, with_bursts: bool) -> Done<'a> {
        Done {
            o,
            told,
            counts: Counters {
                xruns: o.xruns,
                ..o.stats.counts
            },
            bursts: with_bursts.then(|| super::bursts::count(&told.bursts)),
        }
    }
}

/// Adds the trial to its group; the backend is the stream's when it opened, else the
/// resolved one.
pub fn group(g: &mut Group, pr: &Params, d: &Done) {
    let o = d.o;
    let st = &o.stats;
    if let Some(i) = &o.info {
        g.backend = i.backend.to_string();
        g.backend_note = format!("{}; {}", pr.why, i.note);
        g.server = i.server.clone();
        g.rate = i.rate;
        g.period = i.period;
    } else if g.backend.is_empty() {
        g.backend = pr.kind.name().to_string();
        g.backend_note = pr.why.clone();
    }
    g.trials += 1;
    g.duration_s += o.duration_ns as f64 / 1e9;
    g.counts.merge(&d.counts);
    g.dropped += o.dropped;
    if let Some(n) = o.discontinuities {
        *g.discontinuities.get_or_insert(0) += n;
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
    if let Some(b) = &d.bursts {
        g.bursts.get_or_insert_with(Default::default).merge(b);
    }
    for (y, _) in &d.told.misses {
        g.why
            .entry(y.why.clone())
            .or_default()
            .add(y.stuck_ns, y.wait_ns);
    }
}

/// The trial's row of summary.json.
pub fn row(setting: &str, variant: &str, t: u32, d: &Done, found: &TrialFindings) -> TrialRow {
    let o = d.o;
    let mut row = TrialRow {
        setting: setting.to_string(),
        variant: variant.to_string(),
        trial: t,
        cycles_file: Some(results::cycles_path(setting, variant, t)),
        status: Some(o.status),
        detail: o.detail.clone(),
        instruments: (!found.metrics.is_empty()).then(|| found.metrics.clone()),
        ..Default::default()
    };
    row.counts.set(&d.counts);
    row.counts
        .set_loopback(o.discontinuities, o.unexplained, o.roundtrip);
    if let Some(b) = &d.bursts {
        row.set_bursts(b);
    }
    row
}

/// Metrics the record adds from the outcome (beside the counts); the names a trial's
/// pass or fail reads are the results format's (`results::livefx::counters::record`).
pub const DISCONTINUITIES: &str = names::DISCONTINUITIES;
pub const UNEXPLAINED: &str = "discontinuities_unexplained";
pub const ROUNDTRIP: &str = "roundtrip_frames";
pub const DROPPED: &str = "records_dropped";
/// Every metric `record` writes itself; the rest are the instruments'.
pub const OWN_METRICS: [&str; 12] = [
    names::CYCLES,
    names::XRUNS,
    names::DEADLINE_MISSES,
    names::INJECTED,
    names::MISSES_NOT_INJECTED,
    DISCONTINUITIES,
    UNEXPLAINED,
    ROUNDTRIP,
    DROPPED,
    "bursts",
    "bursts_caught",
    "bursts_caught_missed",
];

/// The sweep's record of the trial: status, duration, the counts as metrics, and the
/// instruments' metrics and evidence.
pub fn record(mut rec: TrialRecord, d: &Done, found: TrialFindings) -> TrialRecord {
    let (o, counts) = (d.o, &d.counts);
    rec.status = o.status;
    rec.detail = o.detail.clone();
    rec.duration_ms = o.duration_ns as f64 / 1e6;
    for (k, v) in [
        (names::CYCLES, counts.cycles),
        (names::XRUNS, counts.xruns),
        (names::DEADLINE_MISSES, counts.deadline_misses),
        (names::INJECTED, counts.injected),
        (names::MISSES_NOT_INJECTED, counts.misses_not_injected),
    ] {
        rec.metrics.insert(k.into(), vec![v as f64]);
    }
    // What only the trial's outcome knows, kept so that its row can be rebuilt from
    // the record (`stored`: a guest run merged from several boots).
    for (k, v) in [
        (DISCONTINUITIES, o.discontinuities),
        (UNEXPLAINED, o.unexplained),
        (ROUNDTRIP, o.roundtrip.map(u64::from)),
        (DROPPED, (o.dropped > 0).then_some(o.dropped)),
    ] {
        if let Some(v) = v {
            rec.metrics.insert(k.into(), vec![v as f64]);
        }
    }
    if let Some(b) = &d.bursts {
        for (k, v) in [
            ("bursts", b.bursts),
            ("bursts_caught", b.caught),
            ("bursts_caught_missed", b.caught_missed),
        ] {
            rec.metrics.insert(k.into(), vec![v as f64]);
        }
    }
    rec.metrics.extend(found.metrics);
    rec.evidence = found.evidence;
    rec
}
