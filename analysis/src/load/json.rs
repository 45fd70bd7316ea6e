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
/// typed structs: the results format's (results::lenient).
pub use results::lenient;
