//! serde `deserialize_with` helpers for reading results written by other versions: a
//! field of the wrong shape (an integer written as a float, a number as a string, a
//! null) reads as absent or as its default instead of failing the whole record.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use std::collections::BTreeMap;

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn as_text(v: Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
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

/// A count, 0 when absent or of the wrong shape.
pub fn count_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    Ok(count(d)?.unwrap_or(0) as usize)
}

/// A count as usize; None when absent or of the wrong shape.
pub fn count_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    Ok(count(d)?.map(|x| x as usize))
}

/// A count as u32, 0 when absent or of the wrong shape.
pub fn count_u32<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    Ok(count(d)?.unwrap_or(0) as u32)
}

/// A number, NaN (unknown) when absent or of the wrong shape.
pub fn number_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(number(d)?.unwrap_or(f64::NAN))
}

/// A string, or a number/bool rendered as text.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.and_then(as_text))
}

/// As `text`, the empty string when absent.
pub fn text_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(text(d)?.unwrap_or_default())
}

/// `true` only for a JSON true; anything else (absent, null, a string) is false.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(matches!(
        Option::<Value>::deserialize(d)?,
        Some(Value::Bool(true))
    ))
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

/// A list of numbers; elements that are not numbers are dropped, a non-list is empty.
pub fn numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(list_of_numbers(Option::<Value>::deserialize(d)?))
}

fn list_of_numbers(v: Option<Value>) -> Vec<f64> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_f64).collect(),
        _ => vec![],
    }
}

/// `{name: [numbers]}`, each list read as `numbers` does.
pub fn number_lists<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<f64>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Object(o)) => o
            .into_iter()
            .map(|(k, v)| (k, list_of_numbers(Some(v))))
            .collect(),
        _ => BTreeMap::new(),
    })
}

/// `{name: [counts]}`; a list with anything but non-negative integers is dropped.
pub fn count_lists<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<u64>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Object(o)) => o
            .into_iter()
            .filter_map(|(k, v)| {
                let a = v.as_array()?;
                let c: Option<Vec<u64>> = a.iter().map(Value::as_u64).collect();
                Some((k, c?))
            })
            .collect(),
        _ => BTreeMap::new(),
    })
}

/// A list of strings; elements that are not strings are dropped.
pub fn texts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Array(a)) => a
            .into_iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => vec![],
    })
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
