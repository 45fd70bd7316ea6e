//! The report of a livefx run: counts (xruns, misses), latency percentiles from the raw
//! cycles, a verdict per setting in LatencyMon's terms, the timeline and the plots.

use super::common::{self, fmt_count, fmt_dur, fmt_us};
use super::part::{Answer, Part};
use crate::dist::Dist;
use crate::doc::Block;
use crate::load::Results;
use crate::load::events::Event;
use crate::load::livefx::{LRow, LivefxData};
use crate::out::Ctx;
use crate::plot::cdf::{Figure, Panel, PanelKind, Series, hist_ccdf, hist_cdf, hist_steps};
use crate::plot::timeline::TimelinePlot;
use crate::stats::zero_events_upper_per_hour;
use results::file_part as safe;
use results::livefx::Cause;

/// Facts per (setting, variant), from the raw cycles where present, else summary.json.
pub struct Case<'a> {
    pub setting: String,
    pub variant: String,
    pub row: Option<&'a LRow>,
    pub cycles: u64,
    pub xruns: u64,
    pub misses: u64,
    pub injected: u64,
    /// Misses not explained by an injected overrun.
    pub real_misses: u64,
    pub injected_detected: Option<u64>,
    pub discontinuities: Option<u64>,
    pub audio_s: Option<f64>,
    pub period_us: Option<f64>,
    pub callback: Option<&'a Dist>,
    pub lateness: Option<&'a Dist>,
    pub wake: Option<&'a Dist>,
    /// Each trial's dropouts and seconds of audio (`trial_dropouts`).
    pub trial_dropouts: Vec<(u64, f64)>,
    /// Each trial's dropout episodes (`trial_episodes`), None in an older run.
    pub trial_episodes: Option<Vec<u64>>,
    /// Each trial's callback p99 in µs (empty without cycle files).
    pub trial_callback_p99_us: Vec<f64>,
}

impl Case<'_> {
    /// Audible trouble: an xrun usually comes with a miss on the same cycle, so count the
    /// larger of the two, plus loopback discontinuities.
    pub fn trouble(&self) -> u64 {
        self.xruns.max(self.real_misses) + self.discontinuities.unwrap_or(0)
    }
}

/// Each trial's dropouts (counted as `Case::trouble` counts them) and seconds of audio,
/// for one setting and variant: the per-trial counts the verdicts compare. Empty when
/// the period is unknown.
pub fn trial_dropouts(d: &LivefxData, setting: &str, variant: &str) -> Vec<(u64, f64)> {
    let Some(period_us) = d.row(setting, variant).and_then(|r| r.period_us()) else {
        return vec![];
    };
    d.trials
        .iter()
        .filter(|t| t.setting == setting && t.variant == variant)
        .map(|t| {
            let c = &t.counts;
            let real = c
                .misses_not_injected
                .unwrap_or(c.deadline_misses.saturating_sub(c.injected));
            (
                c.xruns.max(real) + c.discontinuities.unwrap_or(0),
                c.cycles as f64 * period_us / 1e6,
            )
        })
        .collect()
}

/// Each trial's dropout episodes, beside `trial_dropouts` (same trials, same order):
/// from its cycle file, else from its row (newer writers); None when a trial has
/// neither (an older run: only its dropouts can be tested).
pub fn trial_episodes(d: &LivefxData, setting: &str, variant: &str) -> Option<Vec<u64>> {
    let from_cycles = d
        .trial_latency
        .get(&(setting.to_string(), variant.to_string()));
    d.trials
        .iter()
        .filter(|t| t.setting == setting && t.variant == variant)
        .map(|t| {
            from_cycles
                .and_then(|v| {
                    v.iter()
                        .find(|x| x.trial.is_some() && x.trial == Some(t.trial))
                })
                .map(|x| x.episodes)
                .or(t.counts.episodes)
        })
        .collect()
}

pub fn cases(d: &LivefxData) -> Vec<Case<'_>> {
    d.keys()
        .into_iter()
        .map(|(s, v)| {
            let row = d.row(&s, &v);
            let st = d.cycle_stats.get(&(s.clone(), v.clone()));
            let lat = d.latency.get(&(s.clone(), v.clone()));
            let st = st.map(|x| &x.counts);
            let cycles = st
                .map(|x| x.cycles)
                .or(row.map(|r| r.counts.cycles))
                .unwrap_or(0);
            let misses = st
                .map(|x| x.deadline_misses)
                .or(row.map(|r| r.counts.deadline_misses))
                .unwrap_or(0);
            let injected = st
                .map(|x| x.injected)
                .or(row.map(|r| r.counts.injected))
                .unwrap_or(0);
            let real_misses = st
                .map(|x| x.misses_not_injected)
                .or(row.and_then(|r| r.counts.misses_not_injected))
                .unwrap_or(misses.saturating_sub(injected));
            let period_us = row.and_then(|r| r.period_us());
            let audio_s = period_us
                .map(|p| cycles as f64 * p / 1e6)
                .or(row.and_then(|r| r.audio_s()));
            Case {
                row,
                cycles,
                xruns: row
                    .map(|r| r.counts.xruns)
                    .or(st.map(|x| x.xruns))
                    .unwrap_or(0),
                misses,
                injected,
                real_misses,
                injected_detected: st.map(|x| x.injected_detected()).or(row.and_then(|r| {
                    r.counts
                        .injected_undetected
                        .map(|u| r.counts.injected.saturating_sub(u))
                })),
                discontinuities: row
                    .and_then(|r| r.counts.discontinuities)
                    .or(st.map(|x| x.discontinuities)),
                audio_s,
                period_us,
                callback: lat.map(|l| &l.callback).filter(|h| !h.is_empty()),
                lateness: lat.map(|l| &l.lateness).filter(|h| !h.is_empty()),
                wake: lat.map(|l| &l.wake).filter(|h| !h.is_empty()),
                trial_dropouts: trial_dropouts(d, &s, &v),
                trial_episodes: trial_episodes(d, &s, &v),
                trial_callback_p99_us: d
                    .trial_latency
                    .get(&(s.clone(), v.clone()))
                    .map(|ts| {
                        ts.iter()
                            .filter_map(|t| t.callback_p99_ns)
                            .map(|ns| ns as f64 / 1e3)
                            .collect()
                    })
                    .unwrap_or_default(),
                setting: s,
                variant: v,
            }
        })
        .collect()
}

fn us(h: Option<&Dist>, q: f64) -> String {
    h.and_then(|h| h.quantile(q))
        .map_or("-".into(), |v| fmt_us(v as f64 / 1e3))
}

pub fn tables(cs: &[Case]) -> Vec<Block> {
    let mut rows = Vec::new();
    for c in cs {
        let per_h = |k: u64| -> String {
            c.audio_s
                .filter(|s| *s > 0.0)
                .map_or("-".into(), |s| format!("{:.1}", k as f64 * 3600.0 / s))
        };
        rows.push(vec![
            format!("{} / {}", c.setting, c.variant),
            fmt_count(c.cycles),
            c.audio_s.map_or("-".into(), fmt_dur),
            c.xruns.to_string(),
            c.real_misses.to_string(),
            c.injected.to_string(),
            per_h(c.trouble()),
        ]);
    }
    let counts = Block::Table {
        head: [
            "setting / variant",
            "cycles",
            "audio",
            "xruns",
            "misses",
            "injected",
            "per hour",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows,
        right: vec![false, true, true, true, true, true, true],
    };
    let mut lrows = Vec::new();
    for c in cs {
        for (name, h) in [
            ("callback", c.callback),
            ("lateness", c.lateness),
            ("wake", c.wake),
        ] {
            if h.is_none() {
                continue;
            }
            lrows.push(vec![
                format!("{} / {}", c.setting, c.variant),
                name.to_string(),
                us(h, 0.5),
                us(h, 0.99),
                us(h, 0.999),
                us(h, 1.0),
            ]);
        }
    }
    let mut out = vec![
        Block::Para(
            "misses: deadline misses not caused by an injected overrun; per hour: dropouts \
             (the larger of xruns and misses, plus discontinuities) per hour of audio."
                .into(),
        ),
        counts,
    ];
    out.extend(burst_table(cs));
    if !lrows.is_empty() {
        out.push(Block::Table {
            head: ["setting / variant", "latency", "p50", "p99", "p99.9", "max"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows: lrows,
            right: vec![false, false, true, true, true, true],
        });
    }
    out
}

/// "setting / variant", or the setting alone when every case has the same variant.
fn case_name(c: &Case, multi_variant: bool) -> String {
    if multi_variant {
        format!("{} / {}", c.setting, c.variant)
    } else {
        c.setting.clone()
    }
}

fn multi_variant(cs: &[Case]) -> bool {
    cs.iter().any(|c| c.variant != cs[0].variant)
}

/// A small rate or duration with the precision its size needs: 118, 4.1, 0.35, 0.031,
/// 0.
pub fn fmt_small(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 10.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// "31–118", or "31" when both ends print the same.
pub fn fmt_range(lo: f64, hi: f64) -> String {
    let (a, b) = (fmt_small(lo), fmt_small(hi));
    if a == b { a } else { format!("{a}–{b}") }
}

/// "9/11 (82 %)"; no percentage when there is nothing to share ("0/0").
pub fn fmt_share(k: u64, n: u64) -> String {
    if n == 0 {
        format!("{k}/0")
    } else {
        format!("{k}/{n} ({:.0} %)", 100.0 * k as f64 / n as f64)
    }
}

/// Rigs with a bursting hog: per setting and variant, how many bursts caught the lock
/// holder, how many of those (and of all bursts) saw a miss, and the miss rate.
pub fn burst_table(cs: &[Case]) -> Vec<Block> {
    let with: Vec<(&Case, &LRow)> = cs
        .iter()
        .filter_map(|c| Some((c, c.row?)))
        .filter(|(_, b)| b.burst.bursts.is_some())
        .collect();
    if with.is_empty() {
        return vec![];
    }
    let mv = multi_variant(cs);
    let opt = |x: Option<u64>| x.map_or("-".to_string(), |x| x.to_string());
    let share = |k: Option<u64>, n: Option<u64>| match (k, n) {
        (Some(k), Some(n)) => fmt_share(k, n),
        _ => "-".into(),
    };
    let rows = with
        .iter()
        .map(|(c, b)| {
            vec![
                case_name(c, mv),
                opt(b.burst.bursts),
                opt(b.burst.bursts_caught),
                share(b.burst.bursts_caught_missed, b.burst.bursts_caught),
                share(b.bursts_missed, b.burst.bursts),
                match (b.misses_per_min, b.misses_per_min_ci95) {
                    (Some(r), Some((lo, hi))) => {
                        format!("{} ({})", fmt_small(r), fmt_range(lo, hi))
                    }
                    (Some(r), None) => fmt_small(r),
                    _ => "-".into(),
                },
            ]
        })
        .collect();
    vec![
        Block::Para(
            "Hog bursts: caught: bursts that started while a lock holder sat on the hog's \
             CPU; caught → miss: of those, the ones with at least one deadline miss; \
             any → miss: all bursts with a miss; misses/min: deadline misses per minute, \
             95 % interval in brackets."
                .into(),
        ),
        Block::Table {
            head: [
                if mv { "setting / variant" } else { "setting" },
                "bursts",
                "caught",
                "caught → miss",
                "any → miss",
                "misses/min",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
            right: vec![false, true, true, true, true, true],
        },
    ]
}

/// "14 of 15 misses: <cause> (holder off-CPU 31–118 ms)".
pub fn cause_line(c: &Cause, of: u64) -> String {
    let mut s = format!(
        "{} of {of} misses: {}",
        c.count.unwrap_or(0),
        c.cause
            .as_deref()
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .unwrap_or("(no cause given)")
    );
    if let Some((lo, hi)) = c.stuck_ms {
        s += &format!(" (holder off-CPU {} ms)", fmt_range(lo, hi));
    } else if let Some((lo, hi)) = c.wait_ms {
        s += &format!(" (wait {} ms)", fmt_range(lo, hi));
    }
    s
}

/// "Why the misses": each setting and variant's misses grouped by cause, from the
/// summary rows' "why"; nothing when no row carries one or nothing missed.
pub fn why_blocks(cs: &[Case]) -> Vec<Block> {
    let has_why = |c: &Case| c.row.is_some_and(|r| r.why.list().is_some());
    // Nothing to explain: no row with causes, or no misses anywhere.
    if !cs.iter().any(has_why) || cs.iter().all(|c| c.real_misses == 0) {
        return vec![];
    }
    let mv = multi_variant(cs);
    let mut out = Vec::new();
    for c in cs {
        let Some(row) = c.row else { continue };
        let b = row;
        let why = b.why.list().unwrap_or(&[]);
        let explained: u64 = why.iter().filter_map(|w| w.count).sum();
        let n = c.real_misses.max(explained);
        let name = case_name(c, mv);
        if n == 0 {
            out.push(Block::Para(format!("{name}: no deadline misses.")));
            continue;
        }
        let in_bursts = b.misses_in_bursts.map_or(String::new(), |k| {
            format!(", {k} of them inside a hog burst")
        });
        if why.is_empty() {
            out.push(Block::Para(format!(
                "{name}: {n} deadline misses{in_bursts}, but the run recorded no cause for \
                 any of them."
            )));
            continue;
        }
        out.push(Block::Para(format!(
            "{name}: {n} deadline misses{in_bursts}."
        )));
        let mut lines: Vec<String> = why.iter().map(|w| cause_line(w, n)).collect();
        if explained < n {
            lines.push(format!(
                "{} of {n} misses: no cause recorded",
                n - explained
            ));
        }
        out.push(Block::Bullets(lines));
    }
    out
}

/// Clean runs shorter than this are too short to call suitable.
pub const MIN_CLEAN_S: f64 = 60.0;

#[derive(Clone, Copy, PartialEq)]
enum Judgement {
    Suitable,
    TooShort,
    NotSuitable,
}

fn one_case(c: &Case, multi_variant: bool) -> (String, Judgement) {
    let name = if multi_variant {
        format!("{} / {}", c.setting, c.variant)
    } else {
        c.setting.clone()
    };
    let span = match (c.audio_s, c.row) {
        (Some(s), Some(r)) => format!(
            "{} cycles, {} of audio at {} frames / {} Hz ({} per period)",
            fmt_count(c.cycles),
            fmt_dur(s),
            r.period.map_or("?".into(), |p| format!("{p:.0}")),
            r.rate.map_or("?".into(), |x| format!("{x:.0}")),
            c.period_us.map_or("?".into(), fmt_us)
        ),
        (Some(s), None) => format!("{} cycles, {}", fmt_count(c.cycles), fmt_dur(s)),
        _ => format!("{} cycles", fmt_count(c.cycles)),
    };
    let bad = c.trouble();
    let mut s = if bad == 0 {
        let mut s = format!("{name}: no xruns and no deadline misses in {span}.");
        if let Some(u) = c
            .audio_s
            .and_then(|x| zero_events_upper_per_hour(x / 3600.0))
        {
            s += &format!(
                " With none seen, the true rate is below {} per hour (95 % confidence).",
                rate_fmt(u)
            );
        }
        if c.audio_s.is_some_and(|a| a < MIN_CLEAN_S) {
            s += " Too short a run to call it suitable: run at least 10 minutes.";
        } else {
            s += " Suitable for real-time audio at this period.";
        }
        s
    } else {
        let mut s = format!(
            "{name}: {} xruns and {} deadline misses in {span}",
            c.xruns, c.real_misses
        );
        if let Some(d) = c.discontinuities.filter(|d| *d > 0) {
            s += &format!(", {d} loopback discontinuities (clicks JACK may not have reported)");
        }
        if let Some(a) = c.audio_s.filter(|a| *a > 0.0) {
            s += &format!(": a dropout about every {}", fmt_dur(a / bad as f64));
        }
        s += ". NOT suitable for real-time audio at this period: clicks are to be expected.";
        s
    };
    if let (Some(h), Some(p)) = (c.callback, c.period_us) {
        let max = h.max() as f64 / 1e3;
        s += &format!(
            " Longest callback {} ({:.0} % of the period{}).",
            fmt_us(max),
            100.0 * max / p,
            if c.injected > 0 {
                ", injected overruns included"
            } else {
                ""
            }
        );
    }
    if c.injected > 0 {
        match c.injected_detected {
            Some(d) => {
                s += &format!(
                    " {} overruns were injected on purpose to check the counters; {d} of them were seen as deadline misses.",
                    c.injected
                )
            }
            None => {
                s += &format!(
                    " {} overruns were injected on purpose and are not counted above.",
                    c.injected
                )
            }
        }
    }
    let j = if bad > 0 {
        Judgement::NotSuitable
    } else if c.audio_s.is_some_and(|a| a < MIN_CLEAN_S) {
        Judgement::TooShort
    } else {
        Judgement::Suitable
    };
    (s, j)
}

fn rate_fmt(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}")
    } else if x >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Settings against the first one, per variant; with one setting, variants against the
/// first variant: one line each, judged as `xrunrig compare` judges, trial against trial
/// inside the one run (`judge`, `Across::OneRun`: its settings are interleaved, so the
/// run's own effect is shared): dropouts as rates allowing over-dispersion, callback
/// p99s on their logarithms, each worse, better, the same or inconclusive from its 95 %
/// interval against a 10 % threshold, Holm-adjusted over every test in the lines.
/// Returns the lines and, per line, (name, answer, the change's words).
pub fn contrasts(cs: &[Case]) -> (Vec<String>, Vec<(String, Answer2)>) {
    use crate::judge::{self, Across, MetricRuns, RunData, Scale};
    let multi_setting = cs.iter().any(|c| c.setting != cs[0].setting);
    struct Line<'c> {
        c: &'c Case<'c>,
        base: &'c Case<'c>,
        rate: Option<Result<judge::Tested, judge::Untested>>,
        ep: Option<Result<judge::Tested, judge::Untested>>,
        lat: Option<Result<judge::Tested, judge::Untested>>,
    }
    let one = |scale: Scale, a: RunData, b: RunData, c: &Case, m: &str| {
        judge::test(
            &MetricRuns {
                scale,
                a: vec![a],
                b: vec![b],
                log1p: false,
                lower_is_worse: false,
                hangs: false,
            },
            (&c.setting, &c.variant, m),
            Across::OneRun,
            crate::judge::answer::THRESHOLD,
        )
    };
    let mut lines: Vec<Line> = Vec::new();
    for c in cs {
        let base = if multi_setting {
            cs.iter().find(|b| b.variant == c.variant)
        } else {
            cs.iter().find(|b| b.setting == c.setting)
        };
        let Some(base) = base else { continue };
        if std::ptr::eq(base, c) || c.audio_s.is_none() || base.audio_s.is_none() {
            continue;
        }
        let rate = (!c.trial_dropouts.is_empty() && !base.trial_dropouts.is_empty()).then(|| {
            one(
                Scale::LogRate,
                RunData::Events(base.trial_dropouts.clone()),
                RunData::Events(c.trial_dropouts.clone()),
                c,
                "dropouts",
            )
        });
        // Episodes too, when both sides counted them: how often the sound broke (one
        // stall is one), beside how much of it was lost (one stall is many dropouts).
        let ep_of = |x: &Case| -> Option<Vec<(u64, f64)>> {
            let e = x.trial_episodes.as_ref()?;
            (e.len() == x.trial_dropouts.len() && !e.is_empty()).then(|| {
                e.iter()
                    .zip(&x.trial_dropouts)
                    .map(|(&k, &(_, s))| (k, s))
                    .collect()
            })
        };
        let ep = ep_of(base).zip(ep_of(c)).map(|(a, b)| {
            one(
                Scale::LogRate,
                RunData::Events(a),
                RunData::Events(b),
                c,
                "dropouts (episodes)",
            )
        });
        let lat = (!c.trial_callback_p99_us.is_empty() && !base.trial_callback_p99_us.is_empty())
            .then(|| {
                one(
                    Scale::LogP99,
                    RunData::Values(base.trial_callback_p99_us.clone()),
                    RunData::Values(c.trial_callback_p99_us.clone()),
                    c,
                    "callback p99",
                )
            });
        lines.push(Line {
            c,
            base,
            rate,
            ep,
            lat,
        });
    }
    let judged: Vec<judge::Judged> = lines
        .iter()
        .flat_map(|l| [&l.rate, &l.ep, &l.lat])
        .filter_map(|t| t.as_ref().and_then(|t| t.as_ref().ok()).map(|t| t.judged))
        .collect();
    let calls = judge::answer::answers(&judged, judge::answer::ONE_SIDED);
    let tests = calls.len();
    let mut next = calls.into_iter();
    let mut out = Vec::new();
    let mut answers = Vec::new();
    for l in &lines {
        let mut take = |t: &Option<Result<judge::Tested, judge::Untested>>| match t {
            Some(Ok(t)) => Some((t.clone(), next.next())),
            _ => None,
        };
        let (rate, ep, lat) = (take(&l.rate), take(&l.ep), take(&l.lat));
        let (c, base) = (l.c, l.base);
        let (cn, bn) = if multi_setting {
            (c.setting.clone(), format!("under {}", base.setting))
        } else {
            (c.variant.clone(), format!("with {}", base.variant))
        };
        let (ka, kb) = (c.trouble(), base.trouble());
        let (ta, tb) = (c.audio_s.unwrap_or(0.0), base.audio_s.unwrap_or(0.0));
        let (na, nb) = (c.trial_dropouts.len(), base.trial_dropouts.len());
        let episodes = |x: &Case| x.trial_episodes.as_ref().map(|e| e.iter().sum::<u64>());
        let mut s = match (episodes(c), episodes(base)) {
            (Some(ea), Some(eb)) => format!(
                "{cn}: {ka} dropouts (xruns or misses) in {ea} episode(s) against {kb} in {eb} {bn} ({} against {} of audio, {na} and {nb} trial(s))",
                fmt_dur(ta),
                fmt_dur(tb)
            ),
            _ => format!(
                "{cn}: {ka} dropouts (xruns or misses) against {kb} {bn} ({} against {} of audio, {na} and {nb} trial(s))",
                fmt_dur(ta),
                fmt_dur(tb)
            ),
        };
        let family = if tests > 1 {
            format!(", Holm-adjusted over {tests} tests")
        } else {
            String::new()
        };
        let words = |t: &judge::Tested, call: Option<judge::answer::Call>| -> String {
            let j = &t.judged;
            // The interval the answer was taken from (Holm-adjusted where it is).
            let (lo, hi) = call.map_or((j.lo, j.hi), |c| (c.lo, c.hi));
            let adjusted = call.is_some_and(|c| c.adjusted);
            let ch = format!(
                "{}, 95 % {}interval {} to {}",
                judge::answer::fmt_change(j.effect.d),
                if adjusted { "Holm-adjusted " } else { "" },
                judge::answer::fmt_change(lo),
                judge::answer::fmt_change(hi)
            );
            match call.map(|c| c.answer) {
                Some(judge::Answer::Worse) => format!("worse ({ch})"),
                Some(judge::Answer::Better) => format!("better ({ch})"),
                Some(judge::Answer::Same) => {
                    format!(
                        "the same within ±{:.0} % ({ch})",
                        crate::judge::answer::THRESHOLD
                    )
                }
                _ if j.detectable.is_infinite() => format!(
                    "inconclusive ({ch}; too few dropouts in all for any change to be called \
                     worse)"
                ),
                _ => format!(
                    "inconclusive ({ch}; only a change beyond {} could have been called worse)",
                    judge::answer::fmt_change(j.detectable)
                ),
            }
        };
        let mut each = Vec::new();
        let mut said = Vec::new();
        match &rate {
            Some((t, a)) => {
                let w = words(t, *a);
                s += &format!(
                    ": dropouts {w} (dropouts as counts: exact conditional test of the two totals over their audio, allowing over-dispersion{family}{})",
                    t.within_note
                        .as_ref()
                        .map_or(String::new(), |n| format!("; within the run: {n}"))
                );
                each.push(a.map_or(judge::Answer::Inconclusive, |c| c.answer));
                said.push(format!("dropouts {w}"));
            }
            None if ka + kb > 0 => s += "; dropouts not judged (no per-trial counts)",
            None => {}
        }
        if let Some(Ok(t)) = &l.ep
            && let Some((_, a)) = &ep
        {
            let w = words(t, *a);
            s += &format!("; episodes (dropouts less than 50 ms apart are one) {w}");
            each.push(a.map_or(judge::Answer::Inconclusive, |c| c.answer));
            said.push(format!("episodes {w}"));
        }
        if let (Some(a), Some(b)) = (c.callback, base.callback)
            && let (Some(pa), Some(pb)) = (a.quantile(0.99), b.quantile(0.99))
        {
            s += &format!(
                "; callback p99 {} against {}",
                fmt_us(pa as f64 / 1e3),
                fmt_us(pb as f64 / 1e3),
            );
            match &lat {
                Some((t, a)) => {
                    let w = words(t, *a);
                    s += &format!(": {w} by the trials' p99s");
                    each.push(a.map_or(judge::Answer::Inconclusive, |c| c.answer));
                    said.push(format!("callback p99 {w}"));
                }
                None => s += " (not judged: no per-trial p99s)",
            }
        }
        let answer = judge::Answer::overall(&each).unwrap_or(judge::Answer::Inconclusive);
        let said = said.join("; ");
        answers.push((format!("{cn} {bn}"), Answer2 { answer, said }));
        out.push(s + ".");
    }
    (out, answers)
}

/// One contrast's answer and its words.
#[derive(Debug, Clone)]
pub struct Answer2 {
    pub answer: crate::judge::Answer,
    pub said: String,
}

pub fn verdict(cs: &[Case]) -> (Vec<String>, String) {
    let multi_variant = cs.iter().any(|c| c.variant != cs[0].variant);
    let mut bullets = Vec::new();
    let mut ok = Vec::new();
    let mut not_ok = Vec::new();
    let mut short = Vec::new();
    for c in cs {
        let (s, good) = one_case(c, multi_variant);
        bullets.push(s);
        let n = if multi_variant {
            format!("{} / {}", c.setting, c.variant)
        } else {
            c.setting.clone()
        };
        match good {
            Judgement::Suitable => ok.push(n),
            Judgement::TooShort => short.push(n),
            Judgement::NotSuitable => not_ok.push(n),
        }
    }
    let (lines, answers) = contrasts(cs);
    bullets.extend(lines);
    let mut parts = Vec::new();
    if !ok.is_empty() {
        parts.push(format!(
            "suitable for real-time audio under {}",
            ok.join(", ")
        ));
    }
    if !not_ok.is_empty() {
        parts.push(format!(
            "{} under {}: xruns or deadline misses",
            if ok.is_empty() {
                "NOT suitable for real-time audio"
            } else {
                "NOT"
            },
            not_ok.join(", ")
        ));
    }
    if !short.is_empty() {
        parts.push(format!(
            "no dropouts under {}, but in too short a run to call it suitable",
            short.join(", ")
        ));
    }
    let mut c = format!("Conclusion: {}.", parts.join("; "));
    // Where the cases differ, what the trials of this run say of it (one rule with
    // compare: worse or better only when the interval clears 10 %).
    if !(not_ok.is_empty() || (ok.is_empty() && short.is_empty())) {
        let told: Vec<String> = answers
            .iter()
            .map(|(name, a)| format!("{name}: {} ({})", a.answer.word(), a.said))
            .collect();
        if !told.is_empty() {
            c += &format!(" Trial against trial: {}.", told.join("; "));
        }
    }
    (bullets, c)
}

pub fn first_events(d: &LivefxData) -> Vec<String> {
    let Some(tl) = &d.timeline else { return vec![] };
    tl.first
        .iter()
        .map(|e| {
            format!(
                "{} / {} #{}: {} at {:.3} s, cycle {}{}{}",
                e.setting,
                e.variant,
                e.trial.map_or("?".into(), |t| t.to_string()),
                e.kind.replace('_', " "),
                e.t_s.unwrap_or(0.0),
                e.cycle.map_or("?".into(), |c| c.to_string()),
                e.usecs
                    .map_or(String::new(), |u| format!(", {}", fmt_us(u))),
                lock_wait(e)
            )
        })
        .collect()
}

/// "; fx.1 waited 30.1 ms for bus held by render (burst 3)", from a newer writer's
/// miss; empty for older ones.
fn lock_wait(e: &Event) -> String {
    let mut s = String::new();
    if let Some(w) = &e.worker {
        match (e.wait_us, &e.lock) {
            (Some(u), Some(l)) => s += &format!("; {w} waited {} for {l}", fmt_us(u)),
            (None, Some(l)) => s += &format!("; {w} waited for {l}"),
            (Some(u), None) => s += &format!("; {w} waited {}", fmt_us(u)),
            // The worker the cycle waited for (it finished last, or not at all).
            (None, None) => s += &format!("; the cycle waited for {w}"),
        }
        if let Some(h) = &e.holder {
            s += &format!(" held by {h}");
        }
    }
    if let Some(b) = e.burst {
        s += &format!(" (burst {b})");
    }
    s
}

pub fn plots(d: &LivefxData, cs: &[Case], ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let r = ctx.red.clone();
    let mut blocks = Vec::new();
    let period = cs.iter().find_map(|c| c.period_us);
    let vline = |p: Option<f64>| -> Vec<(f64, String)> {
        p.map(|p| (p, format!("one period ({})", fmt_us(p))))
            .into_iter()
            .collect()
    };
    // Per setting (and variant): OSADL-style histogram and CDF of the three latencies.
    for c in cs {
        let mut hs = Vec::new();
        for (i, (name, h)) in [
            ("callback duration", c.callback),
            ("start lateness", c.lateness),
            ("worker wake latency", c.wake),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(h) = h {
                hs.push((i, name, h));
            }
        }
        if hs.is_empty() {
            continue;
        }
        let log_x = hs
            .iter()
            .any(|(_, _, h)| h.max() > 50 * h.quantile(0.5).unwrap_or(1).max(1));
        let hist = Panel {
            title: "histogram".into(),
            x_label: format!("latency (us{})", if log_x { ", log scale" } else { "" }),
            kind: PanelKind::Hist { log_x },
            series: hs
                .iter()
                .map(|(i, n, h)| Series {
                    label: format!("{n}, max {}", fmt_us(h.max() as f64 / 1e3)),
                    color: *i,
                    pts: hist_steps(h, 150, log_x),
                    dots: false,
                })
                .collect(),
            vlines: vline(c.period_us),
        };
        let cdf = Panel {
            title: "cumulative distribution".into(),
            x_label: "latency (us, log scale)".into(),
            kind: PanelKind::Cdf,
            series: hs
                .iter()
                .map(|(i, n, h)| Series {
                    label: n.to_string(),
                    color: *i,
                    pts: hist_cdf(h),
                    dots: false,
                })
                .collect(),
            vlines: vline(c.period_us),
        };
        let fig = Figure {
            title: r.apply(&format!(
                "{}: {} / {}, {} cycles",
                ctx.rig,
                c.setting,
                c.variant,
                fmt_count(c.cycles)
            )),
            panels: vec![hist, cdf],
            panel_size: (760, 540),
        };
        let f = format!("plots/latency_{}__{}", safe(&c.setting), safe(&c.variant));
        ctx.save(&fig, &f)?;
        blocks.push(Block::Image {
            file: f,
            caption: r.apply(&format!(
                "{} / {}: latency histogram (log count, OSADL style) and CDF",
                c.setting, c.variant
            )),
        });
    }
    // A/B: each latency, all settings on one axis.
    let mut panels = Vec::new();
    for (name, pick) in [
        ("callback duration", 0usize),
        ("start lateness", 1),
        ("worker wake latency", 2),
    ] {
        let series: Vec<Series> = cs
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let h = [c.callback, c.lateness, c.wake][pick]?;
                Some(Series {
                    label: r.apply(&format!("{} / {}", c.setting, c.variant)),
                    color: i,
                    pts: hist_ccdf(h),
                    dots: false,
                })
            })
            .collect();
        if !series.is_empty() {
            panels.push(Panel {
                title: name.into(),
                x_label: "us, log scale".into(),
                kind: PanelKind::Ccdf,
                series,
                vlines: vline(period),
            });
        }
    }
    if !panels.is_empty() {
        let fig = Figure {
            title: r.apply(&format!("{}: settings side by side", ctx.rig)),
            panels,
            panel_size: (620, 520),
        };
        ctx.save(&fig, "plots/ab_latency")?;
        blocks.push(Block::Image {
            file: "plots/ab_latency".into(),
            caption: "A/B: every setting on one axis, as the share of cycles slower than x (the tail is where clicks come from)".into(),
        });
    }
    if let Some(tl) = &d.timeline {
        let p = TimelinePlot {
            title: r.apply(&format!(
                "{}: xruns and deadline misses over the run",
                ctx.rig
            )),
            tl,
            red: r.clone(),
        };
        ctx.save(&p, "plots/timeline")?;
        let mut caption = "timeline: when xruns (red), deadline misses (orange) and injected overruns (grey) happened".to_string();
        if !tl.bursts.is_empty() {
            caption += "; hog bursts shaded blue behind them, darker where the burst caught the lock holder";
        }
        blocks.push(Block::Image {
            file: "plots/timeline".into(),
            caption,
        });
    }
    Ok(blocks)
}

/// A livefx rig's part, writing its plots.
pub fn part(res: &Results, d: &LivefxData, ctx: &mut Ctx) -> Result<Part, String> {
    let cs = cases(d);
    let (bullets, conclusion) = verdict(&cs);
    let what_ran = common::what_ran(&res.run, &res.rig, res.kind, livefx_what_ran(res, d));
    let table = tables(&cs);
    let ev = first_events(d);
    let plots = plots(d, &cs, ctx)?;
    let sections = livefx_sections(d, &cs, ev);
    Ok(Part {
        conclusion,
        verdict: bullets,
        table,
        what_ran,
        kernel: None,
        sections,
        plots,
    })
}

/// "What ran" for a livefx rig: the backend, the audio format, the workers, the round
/// trip (from the first row) and the trials.
fn livefx_what_ran(res: &Results, d: &LivefxData) -> Vec<(String, String)> {
    let mut extra = Vec::new();
    if let Some(r) = d.rows.first() {
        let mut b = r.backend.clone();
        if let Some(n) = &r.backend_note {
            b += &format!(" ({n})");
        }
        extra.push(("backend".to_string(), b));
        extra.push((
            "audio".to_string(),
            format!(
                "{} frames at {} Hz{}",
                r.period.map_or("?".into(), |p| format!("{p:.0}")),
                r.rate.map_or("?".into(), |x| format!("{x:.0}")),
                r.period_us().map_or(String::new(), |p| format!(
                    " ({} per period)",
                    common::fmt_us(p)
                ))
            ),
        ));
        if let Some(w) = workers(&res.run) {
            extra.push(("workers".to_string(), w));
        }
        if let Some(rt) = r.counts.roundtrip_frames {
            extra.push(("round trip".into(), format!("{rt} frames (loopback)")));
        }
    }
    extra.push((
        "trials".to_string(),
        format!(
            "{} trial{} in all{}{}",
            d.trials.len(),
            if d.trials.len() == 1 { "" } else { "s" },
            d.rows
                .first()
                .and_then(|r| r.trial_s())
                .map_or(String::new(), |s| format!(", {} each", common::fmt_dur(s))),
            match (&d.until_decided, res.run.trials) {
                (Some(_), Some(n)) => {
                    format!(", at most {n} per setting and variant (--until-decided)")
                }
                _ => String::new(),
            }
        ),
    ));
    extra
}

/// A livefx report's sections after "Results": why the misses, the first events
/// (`ev`), and where the numbers come from.
fn livefx_sections(d: &LivefxData, cs: &[Case], ev: Vec<String>) -> Vec<(String, Vec<Block>)> {
    let mut sections = Vec::new();
    if let Some(u) = &d.until_decided {
        sections.push(("Until decided".to_string(), super::trials::until_decided(u)));
    }
    let why = why_blocks(cs);
    if !why.is_empty() {
        sections.push(("Why the misses".to_string(), why));
    }
    if !ev.is_empty() {
        sections.push((
            "First events (events.jsonl)".to_string(),
            vec![Block::Pre(ev)],
        ));
    }
    if let Some(s) = d.latency.values().map(|l| l.source).next() {
        sections.push((
            "Where the numbers come from".to_string(),
            vec![Block::Para(format!(
                "Latency percentiles from {}; counts from {}.",
                if s == crate::load::livefx::Source::Cycles {
                    "every cycle's raw record (cycles/*.bin)"
                } else {
                    results::HISTOGRAMS_JSON
                },
                if d.cycle_stats.is_empty() {
                    results::SUMMARY_JSON
                } else {
                    "the raw cycle records"
                }
            ))],
        ));
    }
    sections
}

/// run.json's livefx worker layout in one line: "fx.0 FIFO 60 on CPU 0: 150 us, 60 us
/// under bus, 40 us under state; ...".
fn workers(run: &results::run::RunDoc) -> Option<String> {
    let out: Vec<String> = run
        .livefx
        .as_ref()?
        .workers
        .iter()
        .map(|w| {
            let plugins: Vec<String> = w
                .plugins
                .iter()
                .map(|p| {
                    let us = p.run_us.map_or("?".into(), |v| {
                        if v.fract() == 0.0 {
                            format!("{v:.0}")
                        } else {
                            common::fmt_val(v)
                        }
                    });
                    match &p.lock {
                        Some(l) => format!("{us} us under {l}"),
                        None => format!("{us} us"),
                    }
                })
                .collect();
            let cpus: Vec<String> = w.cpus.iter().map(u64::to_string).collect();
            format!(
                "{} FIFO {}{}: {}",
                w.name.as_deref().unwrap_or("worker"),
                w.priority.map_or("?".into(), |p| p.to_string()),
                if cpus.is_empty() {
                    String::new()
                } else {
                    format!(" on CPU {}", cpus.join(","))
                },
                plugins.join(", ")
            )
        })
        .collect();
    (!out.is_empty()).then(|| out.join("; "))
}

/// A livefx run's answer: the verdict, with each backend named for what it measured.
pub fn answer(d: &LivefxData) -> Answer {
    let cs = cases(d);
    let (lines, conclusion) = verdict(&cs);
    let mut backends: Vec<(&str, Option<&str>)> = Vec::new();
    for r in &d.rows {
        let b = (r.backend.as_str(), r.driver.as_deref());
        if !backends.contains(&b) {
            backends.push(b);
        }
    }
    let words: Vec<String> = backends
        .iter()
        .map(|(b, driver)| backend_words(b, *driver))
        .collect();
    let backend = if words.is_empty() {
        String::new()
    } else {
        format!(" Backend: {}.", words.join("; "))
    };
    Answer {
        lines,
        one_line: format!("{conclusion}{backend}"),
    }
}

/// What a backend (as summary.json names it) measured, in words; `driver`: the driver
/// under the server, when the run found it (a dummy or loopback one is no sound card).
pub fn backend_words(backend: &str, driver: Option<&str>) -> String {
    let no_card = driver.is_some_and(results::livefx::no_sound_card);
    match backend {
        "clock" => "built-in clock: no sound hardware was tested (timers only; a card's \
                    interrupts and driver are not in these numbers)"
            .into(),
        "jack" | "alsa" if no_card => format!(
            "{}, driver {}: no sound card (a timer or a loopback paced the stream; a \
             card's interrupts and driver are not in these numbers)",
            backend.to_uppercase(),
            driver.unwrap_or_default()
        ),
        "jack" => match driver {
            Some(d) => {
                format!("JACK, driver {d}: the server's sound card and driver were exercised")
            }
            None => "JACK: the server's driver was exercised (which one, and whether a sound \
                     card, was not found)"
                .into(),
        },
        "alsa" => "ALSA: a sound card's driver was exercised".into(),
        other => format!("backend {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `jackd -d dummy` is no sound card, and a JACK run never claims one it did not find.
    #[test]
    fn a_dummy_driver_is_named_no_sound_card() {
        let w = backend_words("jack", Some("dummy"));
        assert!(w.contains("no sound card") && w.contains("dummy"), "{w}");
        assert!(!w.contains("exercised"), "{w}");
        let w = backend_words("jack", Some("alsa hw:Loopback,0"));
        assert!(w.contains("no sound card"), "{w}");
        let w = backend_words("jack", Some("alsa hw:0"));
        assert!(w.contains("sound card and driver were exercised"), "{w}");
        let w = backend_words("jack", None);
        assert!(!w.contains("sound card and driver were exercised"), "{w}");
    }

    #[test]
    fn cause_lines_and_shares() {
        let mut c = Cause {
            cause: Some("render was stuck".into()),
            count: Some(14),
            stuck_ms: Some((31.2, 118.4)),
            wait_ms: Some((30.0, 117.0)),
        };
        assert_eq!(
            cause_line(&c, 15),
            "14 of 15 misses: render was stuck (holder off-CPU 31–118 ms)"
        );
        c.stuck_ms = None;
        assert_eq!(
            cause_line(&c, 15),
            "14 of 15 misses: render was stuck (wait 30–117 ms)"
        );
        c.wait_ms = Some((0.8, 0.8));
        assert!(cause_line(&c, 15).ends_with("(wait 0.80 ms)"));
        c.wait_ms = None;
        c.cause = Some(" ".into());
        assert_eq!(cause_line(&c, 15), "14 of 15 misses: (no cause given)");
        assert_eq!(fmt_share(9, 11), "9/11 (82 %)");
        assert_eq!(fmt_share(0, 0), "0/0");
        assert_eq!(fmt_range(2.94, 5.61), "2.9–5.6");
        assert_eq!(fmt_small(0.0), "0");
        assert_eq!(fmt_small(0.354), "0.35");
        assert_eq!(fmt_small(0.0308), "0.031");
    }

    #[test]
    fn workers_in_one_line() {
        let run = results::run::RunDoc::from_json(
            r#"{"livefx": {"workers": [
                {"name": "fx.0", "priority": 60, "cpus": [0, 2],
                 "plugins": [{"run_us": 150}, {"run_us": 60.5, "lock": "bus"}]},
                {"priority": "x", "plugins": [{"lock": "state"}]}
            ]}}"#,
        )
        .unwrap();
        assert_eq!(
            workers(&run).unwrap(),
            format!(
                "fx.0 FIFO 60 on CPU 0,2: 150 us, {} us under bus; worker FIFO ?: ? us under state",
                super::common::fmt_val(60.5)
            )
        );
        assert_eq!(workers(&results::run::RunDoc::default()), None);
    }
}
