//! The livefx side of the results format: summary.json rows (`rows`), events.jsonl lines
//! (`events`), the cycles/*.bin record (`cycles`), histograms.json (`hist`), run.json's
//! `livefx` section (`LivefxSection`), and the counters both the engine and analysis
//! sum cycles with (`counters`).

pub mod counters;
pub mod cycles;
pub mod events;
pub mod hist;
pub mod rows;

pub use counters::{BurstCounts, Counters, EPISODE_GAP_NS, Episodes};
pub use cycles::Record;
pub use events::Event;
pub use hist::HistEntry;
pub use rows::{Cause, Causes, Pcts, Row, RowCounts, Summary, TrialRow};

use crate::lenient;
use serde::{Deserialize, Serialize};

/// The `livefx` section of run.json: what each setting ran on and the worker layout.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LivefxSection {
    /// One trial's length.
    #[serde(deserialize_with = "lenient::number")]
    pub duration_s: Option<f64>,
    pub backends: Vec<BackendUsed>,
    pub notes: Vec<BackendNote>,
    pub callback: CallbackInfo,
    pub workers: Vec<WorkerInfo>,
}

/// The audio parameters one setting ran with, and why that backend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendUsed {
    pub setting: String,
    pub backend: String,
    pub why: String,
    #[serde(deserialize_with = "lenient::count")]
    pub period: Option<u32>,
    #[serde(deserialize_with = "lenient::count")]
    pub rate: Option<u32>,
    #[serde(deserialize_with = "lenient::count")]
    pub nperiods: Option<u32>,
    #[serde(deserialize_with = "lenient::text")]
    pub device: Option<String>,
    #[serde(deserialize_with = "lenient::count")]
    pub inject_every: Option<u64>,
    #[serde(deserialize_with = "lenient::number")]
    pub inject_factor: Option<f64>,
    pub loopback: bool,
}

/// The backend's own note per setting and variant (what its xruns mean).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendNote {
    pub setting: String,
    pub variant: String,
    pub backend_note: String,
    /// The server or driver the stream ran on; absent in results from before it was
    /// recorded, and for the clock backend (then not written: files from before it was
    /// added read and write back the same).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<AudioServer>,
}

/// Whether a driver (`AudioServer::driver`) plays through no sound card: JACK's dummy and network
/// drivers, and an ALSA device on snd-aloop's Loopback card.
pub fn no_sound_card(driver: &str) -> bool {
    let mut w = driver.split_whitespace();
    match w.next() {
        Some("dummy" | "net" | "netone" | "loopback") => true,
        Some("alsa") => driver.contains("Loopback"),
        _ => false,
    }
}

/// The audio server or driver behind a stream, as the backend found it when it opened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AudioServer {
    /// "jackd2", "pipewire" (PipeWire's libjack), "jack" (another libjack), or "alsa"
    /// (a card through cpal).
    pub kind: String,
    /// The server's version (PipeWire's, jackd2's libjack's).
    #[serde(deserialize_with = "lenient::text")]
    pub version: Option<String>,
    /// The library that served (libjack's file) or the ALSA device opened.
    #[serde(deserialize_with = "lenient::text")]
    pub library: Option<String>,
    /// Frames per cycle the stream was granted (PipeWire: the graph's quantum).
    #[serde(deserialize_with = "lenient::count")]
    pub period: Option<u32>,
    #[serde(deserialize_with = "lenient::count")]
    pub rate: Option<u32>,
    /// What the backend's xrun count does and does not cover on this server.
    #[serde(deserialize_with = "lenient::text")]
    pub xruns: Option<String>,
    /// How each cycle's deadline was found where the server gives none (ALSA through
    /// cpal); absent where it does (JACK) and in older results.
    #[serde(
        deserialize_with = "lenient::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub deadline: Option<String>,
    /// What the driver layer does not report (ALSA through cpal: the buffer granted, an
    /// xrun's time); absent where nothing is known to be missing.
    #[serde(
        deserialize_with = "lenient::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub unreported: Option<String>,
    /// The loopback check's capture device (ALSA); absent without the check.
    #[serde(
        deserialize_with = "lenient::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub capture: Option<String>,
    /// The driver the server runs, as its command line names it ("dummy", "alsa
    /// hw:0", "net"); absent when no server process was found (PipeWire, another
    /// machine's server, a jackd of another user).
    #[serde(
        deserialize_with = "lenient::text",
        skip_serializing_if = "Option::is_none"
    )]
    pub driver: Option<String>,
}

/// The process callback's thread (the clock backend's; servers set their own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallbackInfo {
    #[serde(deserialize_with = "lenient::integer")]
    pub priority: Option<i64>,
    #[serde(deserialize_with = "lenient::counts")]
    pub cpus: Vec<u64>,
}

/// One worker thread instance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerInfo {
    #[serde(deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// FIFO priority.
    #[serde(deserialize_with = "lenient::integer")]
    pub priority: Option<i64>,
    #[serde(deserialize_with = "lenient::counts")]
    pub cpus: Vec<u64>,
    /// The callback waits for it each cycle.
    pub waited: bool,
    pub plugins: Vec<PluginInfo>,
}

/// One plugin of a worker: CPU work, optionally under a lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginInfo {
    #[serde(deserialize_with = "lenient::number")]
    pub run_us: Option<f64>,
    #[serde(deserialize_with = "lenient::number")]
    pub jitter_us: Option<f64>,
    #[serde(deserialize_with = "lenient::text")]
    pub lock: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// run.json from before the server was recorded still reads; a new one round-trips.
    #[test]
    fn notes_read_with_and_without_a_server() {
        let old: BackendNote = serde_json::from_str(
            r#"{"setting":"as-is","variant":"pi","backend_note":"JACK server 'default'"}"#,
        )
        .unwrap();
        assert_eq!(old.server, None);
        let new = BackendNote {
            server: Some(AudioServer {
                kind: "pipewire".into(),
                version: Some("0.3.65".into()),
                library: Some("/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0".into()),
                period: Some(256),
                rate: Some(48000),
                xruns: Some("driver xruns only".into()),
                ..Default::default()
            }),
            ..old
        };
        let text = serde_json::to_string(&new).unwrap();
        assert_eq!(serde_json::from_str::<BackendNote>(&text).unwrap(), new);
        // The ALSA-only fields are not written when absent: a JACK note is as before.
        for k in ["deadline", "unreported", "capture"] {
            assert!(!text.contains(k), "{k} in {text}");
        }
        // A server written with fields of the wrong type loses those, not the run.
        let odd: AudioServer =
            serde_json::from_str(r#"{"kind":"jackd2","period":"x","rate":48000}"#).unwrap();
        assert_eq!((odd.period, odd.rate), (None, Some(48000)));
    }

    /// What cpal does not report and how ALSA deadlines were found round-trip.
    #[test]
    fn an_alsa_server_keeps_what_cpal_does_not_report() {
        let s = AudioServer {
            kind: "alsa".into(),
            library: Some("hw:Loopback,0".into()),
            period: Some(512),
            deadline: Some("wake + queued".into()),
            unreported: Some("the buffer size".into()),
            capture: Some("hw:CARD=Loopback,DEV=1".into()),
            ..Default::default()
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(
            text.contains(r#""capture":"hw:CARD=Loopback,DEV=1""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<AudioServer>(&text).unwrap(), s);
    }
}
