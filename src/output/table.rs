//! The table a run prints, shaped like the seed's: setting, variant, n, within bound,
//! median, min / max.

use super::summary::Row;

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
        let med = r
            .median
            .map_or("-".into(), |m| format!("{} {}", fmt_val(m), r.unit));
        let mm = match (r.min, r.max) {
            (Some(a), Some(b)) => format!("{} / {} {}", fmt_val(a), fmt_val(b), r.unit),
            _ => "-".into(),
        };
        let n = if r.missing > 0 {
            format!("{} ({} no value)", r.n, r.missing)
        } else {
            r.n.to_string()
        };
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
    out
}

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
        };
        let t = render(&[row]);
        let l: Vec<&str> = t.lines().collect();
        assert!(l[0].starts_with("setting"));
        assert!(l[1].contains("0/8 (< 100 ms)"), "{t}");
        assert!(l[1].contains("1499.6 ms"), "{t}");
        assert!(l[1].contains("1146.1 / 1502.6 ms"), "{t}");
    }
}
