//! Durations ("1.5 s", "250 us") and bounds ("< 100 ms") as written in rig files.

use serde::Serialize;

/// Parses a duration such as `100 ms`, `1.5s`, `250 us`, `250 µs`, `500 ns` into nanoseconds.
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
    let scale = unit_scale(unit).ok_or_else(|| {
        format!("'{s}' has no known time unit: use s, ms, us (or µs) or ns, e.g. \"100 ms\"")
    })?;
    let ns = v * scale;
    if !ns.is_finite() || ns > 1e15 {
        return Err(format!("'{s}' is too long"));
    }
    Ok(ns.round() as u64)
}

/// Nanoseconds per unit, for the units a rig may use.
pub fn unit_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "s" | "sec" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        _ => return None,
    })
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

impl Bound {
    pub fn parse(s: &str) -> Result<Bound, String> {
        let t = s.trim();
        let (op, rest) = if let Some(r) = t.strip_prefix("<=") {
            (BoundOp::Le, r)
        } else if let Some(r) = t.strip_prefix(">=") {
            (BoundOp::Ge, r)
        } else if let Some(r) = t.strip_prefix('<') {
            (BoundOp::Lt, r)
        } else if let Some(r) = t.strip_prefix('>') {
            (BoundOp::Gt, r)
        } else {
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
        let op = match self.op {
            BoundOp::Lt => "<",
            BoundOp::Le => "<=",
            BoundOp::Gt => ">",
            BoundOp::Ge => ">=",
        };
        let scale = unit_scale(unit).unwrap_or(1e6);
        format!("{op} {} {unit}", trim_float(self.limit_ns as f64 / scale))
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
        assert_eq!(parse_duration("250 us").unwrap(), 250_000);
        assert_eq!(parse_duration("250 µs").unwrap(), 250_000);
        assert_eq!(parse_duration("7ns").unwrap(), 7);
        assert!(parse_duration("100").unwrap_err().contains("unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("1.2.3 ms").is_err());
        assert!(parse_duration("10 min").is_err());
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
}
