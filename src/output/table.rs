//! The table a run prints, shaped like the seed's: setting, variant, n, within bound,
//! median, min / max.

use super::summary::Row;
use results::trials::at_least;

/// A value with precision that suits its size (1499.6, 12.34, 0.830): one function,
/// so the run's table and the report print the same figures.
pub use analysis::report::common::fmt_val;

pub fn render(rows: &[Row]) -> String {
    let mut lines: Vec<[String; 7]> = vec![[
        "setting".into(),
        "variant".into(),
        "metric".into(),
        "n".into(),
        "within bound".into(),
        "median".into(),
        "min / max".into(),
    ]];
    for r in rows {
        let within = match (&r.bound, r.within_bound) {
            (Some(b), Some(w)) => format!("{w}/{} ({b})", r.n),
            _ => "-".into(),
        };
        // "≥ 100 ms": a figure that falls on a censored value is only a lower bound.
        let med = r.median.map_or("-".into(), |m| {
            format!("{} {}", at_least(r.median_at_least, fmt_val(m)), r.unit)
        });
        let mm = match (r.min, r.max) {
            (Some(a), Some(b)) => format!(
                "{} / {} {}",
                at_least(r.min_at_least, fmt_val(a)),
                at_least(r.max_at_least, fmt_val(b)),
                r.unit
            ),
            _ => "-".into(),
        };
        let n = format!("{}{}", r.n, r.not_measured("no value"));
        lines.push([
            r.setting.clone(),
            r.variant.clone(),
            r.metric.clone(),
            n,
            within,
            med,
            mm,
        ]);
    }
    let mut w = [0usize; 7];
    // Widths in chars: "≥" is one column, three bytes.
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for l in &lines {
        let mut s = String::new();
        for (i, c) in l.iter().enumerate() {
            // Numbers right-aligned, names left-aligned.
            if i == 3 || i == 5 {
                s.push_str(&format!("{c:>width$}  ", width = w[i]));
            } else {
                s.push_str(&format!("{c:<width$}  ", width = w[i]));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    if rows.iter().any(|r| !r.censored.is_empty()) {
        out.push_str(CENSORED_NOTE);
        out.push('\n');
    }
    out
}

/// Under a table with censored values: what "censored" and "≥" mean.
pub const CENSORED_NOTE: &str = "censored: the trial ended early once the metric had passed its bound\n\
     (end_early): its value is only known to be at least the bound; ≥ marks a figure on one";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_seed_shape() {
        let row = Row {
            setting: "NO_RT_PUSH_IPI".into(),
            variant: "pi".into(),
            metric: "wait".into(),
            unit: "ms".into(),
            bound: Some("< 100 ms".into()),
            n: 8,
            within_bound: Some(0),
            missing: 0,
            median: Some(1499.61),
            min: Some(1146.1),
            max: Some(1502.6),
            values: vec![],
            ..Row::default()
        };
        let t = render(std::slice::from_ref(&row));
        let l: Vec<&str> = t.lines().collect();
        assert!(l[0].starts_with("setting"));
        assert!(l[1].contains("0/8 (< 100 ms)"), "{t}");
        assert!(l[1].contains("1499.6 ms"), "{t}");
        assert!(l[1].contains("1146.1 / 1502.6 ms"), "{t}");
        assert_eq!(l.len(), 2, "no note without censored values: {t}");
        // Ended early: 5 censored at the bound, 2 measured within it, 1 without a value.
        let mut c = Row {
            n: 8,
            within_bound: Some(2),
            missing: 1,
            values: vec![0.8, 0.9],
            censored: vec![100.0; 5],
            ..row
        };
        c.set_order_stats();
        let t = render(&[c]);
        let l: Vec<&str> = t.lines().collect();
        assert!(l[1].contains("8 (1 no value, 5 censored)"), "{t}");
        assert!(l[1].contains("2/8 (< 100 ms)"), "{t}");
        assert!(
            l[1].contains("≥ 100.0 ms"),
            "the median falls on a censored value: {t}"
        );
        assert!(l[1].contains("0.800 / ≥ 100.0 ms"), "{t}");
        assert!(l[2].starts_with("censored: the trial ended early"), "{t}");
    }
}
