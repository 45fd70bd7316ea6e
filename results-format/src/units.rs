//! Durations ("1.5 s", "250 us", "10 min") and bounds ("< 100 ms") as written in rig
//! files and in summary.json's `bound`: one parser for the engine and for analysis.

use serde::Serialize;

/// Parses a duration such as `100 ms`, `1.5s`, `250 us`, `250 µs`, `500 ns`, `10 min`
/// or `2 h` into nanoseconds.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    if num.is_empty() {
        return Err(format!(
            "'{s}' is not a duration: write a number and a unit, e.g. \"100 ms\""
        ));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{num}' is not a number"))?;
    let scale = duration_scale(unit).ok_or_else(|| {
        format!(
            "'{s}' has no known time unit: use d, h, min (or m), s, ms, us (or µs) or ns, e.g. \"100 ms\""
        )
    })?;
    let ns = v * scale;
    if !ns.is_finite() || ns > 1e15 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(ns.round() as u64)
}

/// Nanoseconds per unit, for the units a metric may be measured in (a metric's `unit`).
pub fn unit_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        _ => return None,
    })
}

/// Nanoseconds per unit for durations: the metric units plus minutes, hours and days,
/// which long runs (`--duration`, `--max-time`) are written in. `m` is minutes, as
/// cyclictest's `-D 10m` and rtla's `-d 10m` write them (`ms` stays milliseconds).
fn duration_scale(unit: &str) -> Option<f64> {
    match unit {
        "min" | "m" => Some(60e9),
        "h" => Some(3600e9),
        "d" => Some(86400e9),
        u => unit_scale(u),
    }
}

/// A bound on a metric, e.g. `< 100 ms`: a value meets it when `value OP limit`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bound {
    pub op: BoundOp,
    pub limit_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum BoundOp {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl BoundOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BoundOp::Lt => "<",
            BoundOp::Le => "<=",
            BoundOp::Gt => ">",
            BoundOp::Ge => ">=",
        }
    }

    /// Splits the operator off `s` ("<= 1 ms" -> (Le, " 1 ms")).
    fn split(s: &str) -> Option<(BoundOp, &str)> {
        let t = s.trim();
        if let Some(r) = t.strip_prefix("<=") {
            Some((BoundOp::Le, r))
        } else if let Some(r) = t.strip_prefix(">=") {
            Some((BoundOp::Ge, r))
        } else if let Some(r) = t.strip_prefix('<') {
            Some((BoundOp::Lt, r))
        } else {
            t.strip_prefix('>').map(|r| (BoundOp::Gt, r))
        }
    }
}

impl Bound {
    pub fn parse(s: &str) -> Result<Bound, String> {
        let Some((op, rest)) = BoundOp::split(s) else {
            return Err(format!(
                "bound '{s}' must start with <, <=, > or >=, e.g. \"< 100 ms\""
            ));
        };
        Ok(Bound {
            op,
            limit_ns: parse_duration(rest)?,
        })
    }

    pub fn holds(&self, value_ns: u64) -> bool {
        match self.op {
            BoundOp::Lt => value_ns < self.limit_ns,
            BoundOp::Le => value_ns <= self.limit_ns,
            BoundOp::Gt => value_ns > self.limit_ns,
            BoundOp::Ge => value_ns >= self.limit_ns,
        }
    }

    /// The bound as written back for people, in the metric's unit.
    pub fn display(&self, unit: &str) -> String {
        let scale = unit_scale(unit).unwrap_or(1e6);
        format!(
            "{} {} {unit}",
            self.op.symbol(),
            trim_float(self.limit_ns as f64 / scale)
        )
    }
}

/// The limit of a bound as summary.json writes it ("< 100 ms"), in the metric's `unit`
/// (1 s in a ms metric -> 1000.0). Lenient, as results from other versions may be: a
/// limit without a unit is taken in the metric's unit, and one in a unit this does not
/// know is returned as written.
pub fn bound_limit(bound: &str, unit: &str) -> Option<f64> {
    let rest = bound.trim().trim_start_matches(['<', '>', '=']).trim();
    let mut it = rest.split_whitespace();
    let v: f64 = it.next()?.parse().ok()?;
    let u = it.next().unwrap_or(unit);
    match (unit_scale(u), unit_scale(unit)) {
        (Some(a), Some(b)) => Some(v * a / b),
        _ => Some(v),
    }
}

/// A float without a trailing `.0` where it is whole.
pub fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e12 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("100 ms").unwrap(), 100_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("2 sec").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration("250 us").unwrap(), 250_000);
        assert_eq!(parse_duration("250 µs").unwrap(), 250_000);
        assert_eq!(parse_duration("7ns").unwrap(), 7);
        assert_eq!(parse_duration("10 min").unwrap(), 600_000_000_000);
        assert_eq!(parse_duration("1.5h").unwrap(), 5_400_000_000_000);
        assert!(parse_duration("100").unwrap_err().contains("unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3 ms").is_err());
        assert!(parse_duration("10 days").is_err());
        assert!(parse_duration("300 h").unwrap_err().contains("too long"));
    }

    #[test]
    fn metric_units_are_time_units_without_min_and_h() {
        assert_eq!(unit_scale("ms"), Some(1e6));
        assert_eq!(unit_scale("min"), None);
        assert_eq!(unit_scale("h"), None);
    }

    #[test]
    fn bounds() {
        let b = Bound::parse("< 100 ms").unwrap();
        assert!(b.holds(99_999_999));
        assert!(!b.holds(100_000_000));
        assert!(Bound::parse("<= 1 ms").unwrap().holds(1_000_000));
        assert!(Bound::parse(">5us").unwrap().holds(6_000));
        assert!(Bound::parse("100 ms").is_err());
        assert_eq!(b.display("ms"), "< 100 ms");
        assert_eq!(Bound::parse("< 1500 us").unwrap().display("ms"), "< 1.5 ms");
    }

    #[test]
    fn bound_limits_in_the_metric_unit() {
        assert_eq!(bound_limit("< 100 ms", "ms"), Some(100.0));
        assert_eq!(bound_limit("< 1 s", "ms"), Some(1000.0));
        assert_eq!(bound_limit("<= 500 us", "ms"), Some(0.5));
        assert_eq!(bound_limit(">= 2", "us"), Some(2.0));
        assert_eq!(bound_limit("< 3 furlongs", "ms"), Some(3.0));
        assert_eq!(bound_limit("< soon", "ms"), None);
    }
}
