//! events.jsonl: one JSON object per line for every xrun, deadline miss, injected
//! overrun, loopback discontinuity, server loss and burst of background load.

use crate::lenient;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

pub const XRUN: &str = "xrun";
pub const DEADLINE_MISS: &str = "deadline_miss";
pub const INJECTED: &str = "injected";
pub const DISCONTINUITY: &str = "discontinuity";
pub const SERVER_GONE: &str = "server_gone";
/// A burst of background load (t_s its start, usecs its length): not a dropout.
pub const BURST: &str = "burst";

/// One line of events.jsonl. Reading: every field may be missing in older results.
/// Writing: the fields of the line's kind, as the format has them (see `Serialize`).
#[derive(Deserialize, Debug, Clone, Default, PartialEq)]
#[serde(default)]
pub struct Event {
    pub setting: String,
    pub variant: String,
    pub trial: Option<u32>,
    pub kind: String,
    /// The cycle's index in its trial; null on a burst.
    pub cycle: Option<u64>,
    /// Seconds since the trial's start.
    pub t_s: Option<f64>,
    pub usecs: Option<f64>,
    /// Newer writers, on every event: CLOCK_MONOTONIC seconds (the kernel trace's
    /// clock) and UTC wall time, to find the event in a trace or a system log.
    #[serde(deserialize_with = "lenient::number")]
    pub mono_s: Option<f64>,
    #[serde(deserialize_with = "lenient::text")]
    pub wall: Option<String>,
    /// On "deadline_miss": the waited worker that finished last (or never), the lock
    /// it waited for, who held it, for how long it waited, the cause in one sentence
    /// (identical for identical causes), how long the holder was kept off a CPU, and
    /// the index of the burst it falls in. Written together, when `why` is known.
    #[serde(deserialize_with = "lenient::text")]
    pub worker: Option<String>,
    /// On "deadline_miss" the lock waited for; on "burst" the lock the caught holder held.
    #[serde(deserialize_with = "lenient::text")]
    pub lock: Option<String>,
    #[serde(deserialize_with = "lenient::text")]
    pub holder: Option<String>,
    #[serde(deserialize_with = "lenient::number")]
    pub wait_us: Option<f64>,
    #[serde(deserialize_with = "lenient::text")]
    pub why: Option<String>,
    #[serde(deserialize_with = "lenient::number")]
    pub stuck_ms: Option<f64>,
    #[serde(deserialize_with = "lenient::count")]
    pub burst: Option<u64>,
    /// On "burst": the lock holder it caught at its start and the misses attributed
    /// to it, and its index in the trial (the one its misses give as "burst").
    #[serde(deserialize_with = "lenient::text")]
    pub caught: Option<String>,
    #[serde(deserialize_with = "lenient::count")]
    pub misses: Option<u64>,
    #[serde(deserialize_with = "lenient::count")]
    pub index: Option<u64>,
}

impl Event {
    /// When it ended, for a burst; when it happened, for the rest.
    pub fn t_end(&self) -> f64 {
        let t = self.t_s.unwrap_or(0.0);
        if self.kind == BURST {
            t + self.usecs.unwrap_or(0.0).max(0.0) / 1e6
        } else {
            t
        }
    }
}

/// The line's shape depends on its kind: every line has setting, variant, trial, kind,
/// cycle, t_s and usecs (null when unknown) and mono_s and wall when known; a miss with
/// a known cause all seven cause fields (null when unknown); a burst its index, caught,
/// lock and misses.
impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("setting", &self.setting)?;
        m.serialize_entry("variant", &self.variant)?;
        m.serialize_entry("trial", &self.trial)?;
        m.serialize_entry("kind", &self.kind)?;
        m.serialize_entry("cycle", &self.cycle)?;
        m.serialize_entry("t_s", &self.t_s)?;
        m.serialize_entry("usecs", &self.usecs)?;
        if let Some(x) = &self.mono_s {
            m.serialize_entry("mono_s", x)?;
        }
        if let Some(x) = &self.wall {
            m.serialize_entry("wall", x)?;
        }
        if self.kind == DEADLINE_MISS && self.why.is_some() {
            m.serialize_entry("worker", &self.worker)?;
            m.serialize_entry("lock", &self.lock)?;
            m.serialize_entry("holder", &self.holder)?;
            m.serialize_entry("wait_us", &self.wait_us)?;
            m.serialize_entry("why", &self.why)?;
            m.serialize_entry("stuck_ms", &self.stuck_ms)?;
            m.serialize_entry("burst", &self.burst)?;
        }
        if self.kind == BURST {
            m.serialize_entry("index", &self.index)?;
            m.serialize_entry("caught", &self.caught)?;
            m.serialize_entry("lock", &self.lock)?;
            m.serialize_entry("misses", &self.misses)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn keys(e: &Event) -> Vec<String> {
        let v: Value = serde_json::to_value(e).unwrap();
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    #[test]
    fn each_kind_has_its_fields() {
        let base = Event {
            setting: "S".into(),
            variant: "v".into(),
            trial: Some(0),
            kind: XRUN.into(),
            cycle: Some(3),
            t_s: Some(1.5),
            usecs: None,
            mono_s: Some(10.0),
            wall: Some("2026-11-30T13:50:01Z".into()),
            ..Default::default()
        };
        let common = "cycle kind mono_s setting t_s trial usecs variant wall";
        assert_eq!(keys(&base).join(" "), common);
        let miss = Event {
            kind: DEADLINE_MISS.into(),
            why: Some("held".into()),
            ..base.clone()
        };
        assert_eq!(
            keys(&miss).join(" "),
            "burst cycle holder kind lock mono_s setting stuck_ms t_s trial usecs variant wait_us wall why worker"
        );
        let v = serde_json::to_value(&miss).unwrap();
        assert_eq!((&v["holder"], &v["usecs"]), (&Value::Null, &Value::Null));
        let burst = Event {
            kind: BURST.into(),
            cycle: None,
            index: Some(2),
            misses: Some(1),
            ..base.clone()
        };
        assert_eq!(
            keys(&burst).join(" "),
            "caught cycle index kind lock misses mono_s setting t_s trial usecs variant wall"
        );
        assert_eq!(serde_json::to_value(&burst).unwrap()["cycle"], Value::Null);
        let back: Event = serde_json::from_value(serde_json::to_value(&miss).unwrap()).unwrap();
        assert_eq!(back, miss);
        // Older lines: no mono_s, wall or cause; odd shapes read as absent.
        let old: Event = serde_json::from_value(json!({
            "setting": "S", "variant": "v", "trial": 0, "kind": "deadline_miss",
            "cycle": 9, "t_s": 0.5, "usecs": 12.5, "burst": 1.0, "wait_us": "x"
        }))
        .unwrap();
        assert_eq!((old.mono_s, old.burst, old.wait_us), (None, Some(1), None));
    }
}
