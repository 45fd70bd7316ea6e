//! serde `deserialize_with` helpers for reading results leniently: results written by
//! other versions may add fields, leave some null, or write an integer as a float. A field
//! of the wrong shape reads as absent instead of failing the whole record (a line of
//! events.jsonl, a summary row).

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

/// A count: a non-negative number, an integer written as a float rounds; one that does
/// not fit the type reads as absent.
pub fn count<'de, D: Deserializer<'de>, T: TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(number(d)?
        .filter(|x| *x >= 0.0)
        .and_then(|x| T::try_from(x.round() as u64).ok()))
}

/// A count that reads as 0 when absent or unreadable (the totals of a row).
pub fn count_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(count(d)?.unwrap_or(0))
}

/// A signed integer (a number, rounded).
pub fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(number(d)?.map(|x| x.round() as i64))
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

/// A value of any serde type, or its default when absent or of the wrong shape.
pub fn or_default<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<Value>::deserialize(d)?
        .and_then(|v| T::deserialize(v).ok())
        .unwrap_or_default())
}

/// A list of records: each one that does not read becomes the default record (the
/// others still read); no list at all reads as empty.
pub fn records<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned + Default>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Array(a)) => a
            .into_iter()
            .map(|v| T::deserialize(v).unwrap_or_default())
            .collect(),
        _ => Vec::new(),
    })
}

/// Non-negative integers; anything else in the list is left out.
pub fn counts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(num)
            .filter(|x| *x >= 0.0)
            .map(|x| x.round() as u64)
            .collect(),
        _ => Vec::new(),
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
        #[serde(deserialize_with = "super::count")]
        small: Option<u8>,
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
            serde_json::from_str(r#"{"n":3.0,"small":300,"x":"2.5","s":7,"r":[9,2]}"#).unwrap();
        assert_eq!(t.n, Some(3));
        assert_eq!(t.small, None, "300 does not fit a u8");
        assert_eq!(t.x, Some(2.5));
        assert_eq!(t.s.as_deref(), Some("7"));
        assert_eq!(t.r, Some((2.0, 9.0)));
        let t: T = serde_json::from_str(r#"{"n":-1,"x":{},"s":[1],"r":[1,2,3]}"#).unwrap();
        assert_eq!((t.n, t.x, t.s, t.r), (None, None, None, None));
        let t: T = serde_json::from_str(r#"{"n":null,"r":null}"#).unwrap();
        assert_eq!((t.n, t.r), (None, None));
    }
}
