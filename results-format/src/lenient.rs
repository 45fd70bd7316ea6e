//! serde `deserialize_with` helpers for reading results leniently: results written by
//! other versions may add fields, leave some null, write an integer as a float or a
//! number as a string. A field of the wrong shape reads as absent or as its default
//! instead of failing the whole record (a run.json section, a summary row, a line of
//! events.jsonl).

use serde::de::DeserializeOwned;
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

/// A number, NaN (unknown) when absent or of the wrong shape.
pub fn number_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(number(d)?.unwrap_or(f64::NAN))
}

/// A count: a non-negative number, an integer written as a float rounds; one that does
/// not fit the type reads as absent.
pub fn count<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(number(d)?
        .filter(|x| *x >= 0.0)
        .and_then(|x| T::try_from(x.round() as u64).ok()))
}

/// A count that reads as 0 when absent or unreadable (the totals of a row, a trial's
/// index).
pub fn count_or_zero<'de, D: Deserializer<'de>, T: TryFrom<u64> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(count(d)?.unwrap_or_default())
}

/// A signed integer (a number, rounded).
pub fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(number(d)?.map(|x| x.round() as i64))
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

/// A value of any serde type, or its default when absent or of the wrong shape.
pub fn or_default<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<Value>::deserialize(d)?
        .and_then(|v| T::deserialize(v).ok())
        .unwrap_or_default())
}

/// The elements of a list, or nothing when there is no list.
fn elements(v: Option<Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

/// A list of records: each one that does not read becomes the default record (the
/// others still read); no list at all reads as empty.
pub fn records<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Ok(elements(Option::<Value>::deserialize(d)?)
        .into_iter()
        .map(|v| T::deserialize(v).unwrap_or_default())
        .collect())
}

/// Non-negative numbers (numeric strings too), rounded; anything else in the list is
/// left out.
pub fn counts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    Ok(elements(Option::<Value>::deserialize(d)?)
        .iter()
        .filter_map(num)
        .filter(|x| *x >= 0.0)
        .map(|x| x.round() as u64)
        .collect())
}

/// A list of JSON numbers; elements that are not numbers (strings included) are
/// dropped, a non-list is empty.
pub fn numbers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    Ok(json_numbers(Option::<Value>::deserialize(d)?))
}

fn json_numbers(v: Option<Value>) -> Vec<f64> {
    elements(v).iter().filter_map(Value::as_f64).collect()
}

/// `{name: [numbers]}`, each list read as `numbers` does.
pub fn number_lists<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<f64>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Object(o)) => o
            .into_iter()
            .map(|(k, v)| (k, json_numbers(Some(v))))
            .collect(),
        _ => BTreeMap::new(),
    })
}

/// `{name: number}`; an entry whose value is not a finite number is dropped.
pub fn number_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Object(o)) => o
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_f64().filter(|x| x.is_finite())?)))
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
                let c: Option<Vec<u64>> = v.as_array()?.iter().map(Value::as_u64).collect();
                Some((k, c?))
            })
            .collect(),
        _ => BTreeMap::new(),
    })
}

/// A list of strings; elements that are not strings are dropped.
pub fn texts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(elements(Option::<Value>::deserialize(d)?)
        .into_iter()
        .filter_map(|x| match x {
            Value::String(s) => Some(s),
            _ => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct T {
        #[serde(deserialize_with = "super::count")]
        n: Option<u64>,
        #[serde(deserialize_with = "super::count")]
        small: Option<u8>,
        #[serde(deserialize_with = "super::count_or_zero")]
        total: usize,
        #[serde(deserialize_with = "super::number")]
        x: Option<f64>,
        #[serde(deserialize_with = "super::text")]
        s: Option<String>,
        #[serde(deserialize_with = "super::range")]
        r: Option<(f64, f64)>,
    }

    #[test]
    fn wrong_shapes_read_as_absent() {
        let t: T =
            serde_json::from_str(r#"{"n":3.0,"small":300,"total":"4","x":"2.5","s":7,"r":[9,2]}"#)
                .unwrap();
        assert_eq!(t.n, Some(3));
        assert_eq!(t.small, None, "300 does not fit a u8");
        assert_eq!(t.total, 4);
        assert_eq!(t.x, Some(2.5));
        assert_eq!(t.s.as_deref(), Some("7"));
        assert_eq!(t.r, Some((2.0, 9.0)));
        let t: T =
            serde_json::from_str(r#"{"n":-1,"total":-2,"x":{},"s":[1],"r":[1,2,3]}"#).unwrap();
        assert_eq!((t.n, t.total, t.x, t.s, t.r), (None, 0, None, None, None));
        let t: T = serde_json::from_str(r#"{"n":null,"r":null}"#).unwrap();
        assert_eq!((t.n, t.r), (None, None));
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    #[serde(default)]
    struct L {
        #[serde(deserialize_with = "super::counts")]
        counts: Vec<u64>,
        #[serde(deserialize_with = "super::numbers")]
        numbers: Vec<f64>,
        #[serde(deserialize_with = "super::texts")]
        texts: Vec<String>,
        #[serde(deserialize_with = "super::count_lists")]
        count_lists: BTreeMap<String, Vec<u64>>,
        #[serde(deserialize_with = "super::records")]
        records: Vec<R>,
        #[serde(deserialize_with = "super::flag")]
        flag: bool,
    }

    #[derive(Deserialize, Default, Debug, PartialEq)]
    struct R {
        a: u32,
    }

    #[test]
    fn lists_keep_what_reads() {
        let l: L = serde_json::from_str(
            r#"{"counts":[1,"2",-3,2.6,"x"],"numbers":[1,"2",3.5],"texts":["a",1,"b"],
                "count_lists":{"ok":[1,2],"bad":[1,-2]},"records":[{"a":1},{"a":"x"},{"a":3}],
                "flag":"true"}"#,
        )
        .unwrap();
        assert_eq!(
            l.counts,
            vec![1, 2, 3],
            "numeric strings count, negatives do not"
        );
        assert_eq!(l.numbers, vec![1.0, 3.5], "strings are not numbers here");
        assert_eq!(l.texts, vec!["a", "b"]);
        assert_eq!(l.count_lists.keys().collect::<Vec<_>>(), vec!["ok"]);
        assert_eq!(l.records, vec![R { a: 1 }, R { a: 0 }, R { a: 3 }]);
        assert!(!l.flag, "only a JSON true is true");
        let l: L = serde_json::from_str(r#"{"counts":7,"records":{}}"#).unwrap();
        assert_eq!(l, L::default(), "a non-list reads as empty");
    }
}
