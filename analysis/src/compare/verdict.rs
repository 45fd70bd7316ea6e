//! The verdict: each directory's metric against the baseline's, as a table row and a
//! sentence, counted as a regression or an improvement when the change is beyond the
//! threshold and significant.

use super::ALPHA;
use super::load::Metric;
use super::sample::{Key, Sample, p_of, value_of};
use crate::report::common::{bound_words, fmt_us, fmt_val};
use crate::stats::fmt_p;

pub struct Verdicts {
    /// The table's rows: metric, baseline, candidate, %change, p, flag.
    pub rows: Vec<Vec<String>>,
    /// One sentence per metric and directory.
    pub verdicts: Vec<String>,
    pub regressions: usize,
    pub improvements: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Flag {
    Regression,
    Improvement,
    Same,
}

pub fn judge(metrics: &[Metric], labels: &[String], threshold: f64) -> Verdicts {
    let mut v = Verdicts {
        rows: Vec::new(),
        verdicts: Vec::new(),
        regressions: 0,
        improvements: 0,
    };
    for m in metrics {
        let Some(base) = &m.per_dir[0] else { continue };
        let name = format!("{} / {} {}", m.key.0, m.key.1, m.key.2);
        for (i, cand) in m.per_dir.iter().enumerate().skip(1) {
            let Some(cand) = cand else {
                v.verdicts.push(format!("{name}: not in {}.", labels[i]));
                continue;
            };
            let (row, sentence, flag) = one(&m.key, base, cand, labels, i, threshold);
            match flag {
                Flag::Regression => v.regressions += 1,
                Flag::Improvement => v.improvements += 1,
                Flag::Same => {}
            }
            v.rows.push(row);
            v.verdicts.push(sentence);
        }
    }
    v
}

impl Verdicts {
    /// The verdict in one sentence.
    pub fn summary(&self, threshold: f64) -> String {
        let (regressions, improvements) = (self.regressions, self.improvements);
        if regressions > 0 {
            format!(
                "{regressions} metric(s) regressed beyond {threshold}% with p < {ALPHA}: exit code 1."
            )
        } else if improvements > 0 {
            format!("no regression beyond {threshold}%; {improvements} metric(s) improved.")
        } else {
            format!("no significant change (threshold {threshold}%, p < {ALPHA}).")
        }
    }
}

/// The change in percent of the baseline; "new" (infinite) from a zero baseline.
fn change(bv: Option<f64>, cv: Option<f64>) -> Option<f64> {
    match (bv, cv) {
        (Some(b), Some(c)) if b.abs() > 0.0 => Some(100.0 * (c - b) / b.abs()),
        (Some(b), Some(c)) if b == 0.0 && c > 0.0 => Some(f64::INFINITY),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    }
}

/// Directory `i`'s sample against the baseline's: the table row, the sentence, the flag.
fn one(
    key: &Key,
    base: &Sample,
    cand: &Sample,
    labels: &[String],
    i: usize,
    threshold: f64,
) -> (Vec<String>, String, Flag) {
    let (bv, bs, unit) = value_of(base);
    let (cv, cs, _) = value_of(cand);
    let change = change(bv, cv);
    let p = p_of(base, cand);
    let sig = p.is_some_and(|p| p < ALPHA);
    let flag = match change {
        Some(ch) if sig && ch > threshold => Flag::Regression,
        Some(ch) if sig && ch < -threshold => Flag::Improvement,
        _ => Flag::Same,
    };
    let values = matches!(base, Sample::Values { .. });
    let fmt = |v: Option<f64>| match (v, base) {
        (Some(v), Sample::Hist(_)) => fmt_us(v),
        (Some(v), _) => format!("{} {unit}", fmt_val(v)),
        (None, _) => "-".into(),
    };
    // Table cells: the unit is in the metric column.
    let bare = |v: Option<f64>| v.map_or("-".to_string(), fmt_val);
    let ch_s = match change {
        Some(c) if c.is_infinite() => "new".to_string(),
        Some(c) => format!("{c:+.1}%"),
        None => "-".into(),
    };
    let spread = |s: &str| {
        if values { s.to_string() } else { String::new() }
    };
    let row = vec![
        format!("{}/{} {} {unit}", key.0, key.1, key.2),
        format!("{}{}", bare(bv), spread(&bs)),
        if labels.len() > 2 {
            format!("{}: {}{}", labels[i], bare(cv), spread(&cs))
        } else {
            format!("{}{}", bare(cv), spread(&cs))
        },
        ch_s.clone(),
        p.map_or("-".into(), |p| {
            if p < 0.001 {
                "<0.001".into()
            } else {
                format!("{p:.3}")
            }
        }),
        match flag {
            Flag::Regression => "WORSE",
            Flag::Improvement => "better",
            Flag::Same => "",
        }
        .to_string(),
    ];
    let mut v = format!(
        "{}: {}{} {} against {} in {}",
        labels[i],
        key.2,
        if values { " median" } else { "" },
        fmt(cv),
        fmt(bv),
        labels[0]
    );
    if let (
        Sample::Values {
            within: Some((wa, na)),
            bound: Some(b),
            ..
        },
        Sample::Values {
            within: Some((wb, nb)),
            ..
        },
    ) = (cand, base)
    {
        v += &format!(", {wa}/{na} against {wb}/{nb} {}", bound_words(b));
    }
    v += &format!(
        " ({ch_s}{}): {}",
        p.map_or(String::new(), |p| format!(", {}", fmt_p(p))),
        match flag {
            Flag::Regression => format!("REGRESSION beyond the {threshold}% threshold"),
            Flag::Improvement => "improvement".into(),
            Flag::Same => "no significant change".into(),
        }
    );
    (row, format!("{} / {}: {v}.", key.0, key.1), flag)
}
