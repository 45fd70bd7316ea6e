//! histograms.json: per setting, variant and latency, the non-empty buckets of the run's
//! histogram, so distributions survive when the cycle files are not kept.

use crate::lenient;
use serde::{Deserialize, Deserializer, Serialize};

pub const CALLBACK_DURATION: &str = "callback_duration";
pub const LATENESS: &str = "lateness";
pub const WAKE_LATENCY: &str = "wake_latency";
pub const UNIT_US: &str = "us";

fn dash() -> String {
    "-".into()
}
fn default_variant() -> String {
    "default".into()
}

/// One entry of histograms.json (the file is a list of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistEntry {
    #[serde(default = "dash", deserialize_with = "super::rows::setting_name")]
    pub setting: String,
    #[serde(
        default = "default_variant",
        deserialize_with = "super::rows::variant_name"
    )]
    pub variant: String,
    /// CALLBACK_DURATION, LATENESS or WAKE_LATENCY.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub metric: String,
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub unit: String,
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub count: u64,
    /// The largest value, 0 when none.
    #[serde(default, deserialize_with = "max_value")]
    pub max: f64,
    /// (bucket's value in `unit`, count), ascending; unreadable buckets are left out.
    #[serde(default, deserialize_with = "buckets")]
    pub buckets: Vec<(f64, u64)>,
}

fn max_value<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(lenient::number(d)?.unwrap_or(0.0))
}

fn buckets<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, u64)>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .filter_map(|b| Some((b.get(0)?.as_f64()?, b.get(1)?.as_u64()?)))
            .collect(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_skip_bad_buckets() {
        let e = HistEntry {
            setting: "S".into(),
            variant: "v".into(),
            metric: LATENESS.into(),
            unit: UNIT_US.into(),
            count: 3,
            max: 2.5,
            buckets: vec![(1.0, 2), (2.5, 1)],
        };
        let t = serde_json::to_string(&e).unwrap();
        assert!(t.contains(r#""buckets":[[1.0,2],[2.5,1]]"#), "{t}");
        assert_eq!(serde_json::from_str::<HistEntry>(&t).unwrap(), e);
        let odd: HistEntry =
            serde_json::from_str(r#"{"metric":"lateness","buckets":[[1,2],["x",1],[3]]}"#).unwrap();
        assert_eq!((odd.setting.as_str(), odd.buckets), ("-", vec![(1.0, 2)]));
    }
}
