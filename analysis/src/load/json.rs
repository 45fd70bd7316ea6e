//! Lenient access into serde_json values: results written by other versions may add
//! fields, leave some null, or write an integer as a float.

use serde_json::Value;
use std::path::Path;

pub fn read_value(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}

pub fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// A string, or a number/bool rendered as text.
pub fn str_at(v: &Value, path: &[&str]) -> Option<String> {
    match at(v, path)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub fn f64_at(v: &Value, path: &[&str]) -> Option<f64> {
    match at(v, path)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub fn u64_at(v: &Value, path: &[&str]) -> Option<u64> {
    let f = f64_at(v, path)?;
    (f >= 0.0).then_some(f.round() as u64)
}

pub fn str_or(v: &Value, key: &str, dflt: &str) -> String {
    str_at(v, &[key]).unwrap_or_else(|| dflt.to_string())
}

/// serde `deserialize_with` helpers with the leniency of the `*_at` functions above, for
/// typed structs: a field of the wrong shape reads as absent instead of failing the whole
/// record (a line of events.jsonl, a summary row).
pub mod lenient {
    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    fn num(v: &Value) -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// A number (or numeric string); null or anything else is None.
    pub fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<Value>::deserialize(d)?
            .as_ref()
            .and_then(num)
            .filter(|x| x.is_finite()))
    }

    /// A count: a non-negative number, an integer written as a float rounds.
    pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(number(d)?.filter(|x| *x >= 0.0).map(|x| x.round() as u64))
    }

    /// A string, or a number/bool rendered as text.
    pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Option::<Value>::deserialize(d)? {
            Some(Value::String(s)) => Some(s),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        })
    }

    /// `[lo, hi]`; a single number reads as `[x, x]`; the pair is put in order.
    pub fn range<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
        let v = Option::<Value>::deserialize(d)?;
        let pair = match v.as_ref() {
            Some(Value::Array(a)) if a.len() == 2 => num(&a[0]).zip(num(&a[1])),
            Some(x) => num(x).map(|x| (x, x)),
            None => None,
        };
        Ok(pair
            .filter(|(a, b)| a.is_finite() && b.is_finite())
            .map(|(a, b)| (a.min(b), a.max(b))))
    }

    #[cfg(test)]
    mod tests {
        use serde::Deserialize;

        #[derive(Deserialize, Default, Debug)]
        #[serde(default)]
        struct T {
            #[serde(deserialize_with = "super::count")]
            n: Option<u64>,
            #[serde(deserialize_with = "super::number")]
            x: Option<f64>,
            #[serde(deserialize_with = "super::text")]
            s: Option<String>,
            #[serde(deserialize_with = "super::range")]
            r: Option<(f64, f64)>,
        }

        #[test]
        fn wrong_shapes_read_as_absent() {
            let t: T = serde_json::from_str(r#"{"n":3.0,"x":"2.5","s":7,"r":[9,2]}"#).unwrap();
            assert_eq!(t.n, Some(3));
            assert_eq!(t.x, Some(2.5));
            assert_eq!(t.s.as_deref(), Some("7"));
            assert_eq!(t.r, Some((2.0, 9.0)));
            let t: T = serde_json::from_str(r#"{"n":-1,"x":{},"s":[1],"r":[1,2,3]}"#).unwrap();
            assert_eq!((t.n, t.x, t.s, t.r), (None, None, None, None));
            let t: T = serde_json::from_str(r#"{"n":null,"r":null}"#).unwrap();
            assert_eq!((t.n, t.r), (None, None));
        }
    }
}
