//! ALSA through cpal 0.18.2 (pinned: cpal's xrun reporting has changed across releases).
//! `probe` opens the device's configuration (cpal lists a "default" device even with no
//! card); `stream` plays a fixed-period output stream in the device's own sample format
//! (hw: devices such as snd-dummy's take integers only), gives each cycle the deadline
//! cpal's timestamps imply and records the period cpal says ALSA granted; `capture`
//! brings the loopback check's signal back from the cable's other side; `names` matches
//! `--device` to cpal's list of devices.

mod capture;
mod names;
mod probe;
mod stream;

/// The real-time parts without cpal, for tests that drive them (tests/livefx_noalloc.rs).
#[doc(hidden)]
pub use capture::Sink;
#[doc(hidden)]
pub use stream::{Callback, Convert, parts};

use super::{Backend, BackendKind, Notes, Probe, ProbeSpec, Process, Stream, StreamSpec};
use cpal::traits::{DeviceTrait, HostTrait};
use std::sync::Arc;

/// The ALSA backend.
pub struct Alsa;

impl Backend for Alsa {
    fn kind(&self) -> BackendKind {
        BackendKind::Alsa
    }
    /// Bounded by alsa-lib itself: `spec.limit` is not needed.
    fn probe(&self, spec: &ProbeSpec) -> Probe {
        probe::probe(&spec.device)
    }
    fn open(
        &self,
        spec: &StreamSpec,
        process: Box<dyn Process>,
        notes: Arc<Notes>,
    ) -> Result<Box<dyn Stream>, String> {
        stream::open(spec, process, notes)
    }
}

fn host() -> Result<cpal::Host, String> {
    cpal::host_from_id(cpal::HostId::Alsa).map_err(|e| format!("ALSA host unavailable: {e}"))
}

/// The named device (e.g. `hw:Loopback,0`, `hw:CARD=Dummy`, `default`) or ALSA's
/// default; a name cpal does not list is refused with the names it does list.
fn device(name: &Option<String>) -> Result<cpal::Device, String> {
    let h = host()?;
    match name {
        None => h
            .default_output_device()
            .ok_or_else(|| "ALSA has no default output device".to_string()),
        Some(n) => {
            let devices: Vec<cpal::Device> = h
                .devices()
                .map_err(|e| format!("ALSA: cannot list devices: {e}"))?
                .collect();
            let ids: Vec<String> = devices
                .iter()
                .map(|d| d.id().map(|i| i.id().to_string()).unwrap_or_default())
                .collect();
            let i = names::match_device(n, &ids)?;
            Ok(devices
                .into_iter()
                .nth(i)
                .expect("index from the same list"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `--device` that names nothing cpal lists is refused with what it does list
    /// (on any machine: cpal lists at least alsa-lib's configured names, e.g. "null").
    #[test]
    fn an_unknown_device_is_refused_with_the_list() {
        let e = device(&Some("hw:NoSuchCard,0".into()))
            .map(|_| ())
            .expect_err("refused");
        assert!(e.contains("no ALSA device 'hw:NoSuchCard,0'"), "{e}");
        assert!(e.contains("looked for hw:CARD=NoSuchCard,DEV=0"), "{e}");
        let listed = e
            .split("cpal lists ")
            .nth(1)
            .unwrap_or_else(|| panic!("{e}"));
        assert!(
            listed.starts_with("hw:CARD=") || listed.contains(" other name"),
            "the names cpal lists: {e}"
        );
    }
}
