//! ALSA through cpal 0.18.2 (pinned: cpal's xrun reporting has changed across releases).
//! `probe` opens the device's configuration (cpal lists a "default" device even with no
//! card); `stream` plays a fixed-period output stream in the device's own sample format
//! (hw: devices such as snd-dummy's take integers only) and records the period cpal
//! says ALSA granted. The loopback check needs capture
//! too: use JACK on the card for that (this backend plays only).

mod probe;
mod stream;

use super::{Backend, BackendKind, Notes, Probe, ProbeSpec, Process, Stream, StreamSpec};
use cpal::traits::HostTrait;
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

/// The named device (e.g. `hw:1`, `default`) or ALSA's default.
fn device(name: &Option<String>) -> Result<cpal::Device, String> {
    let h = host()?;
    match name {
        None => h
            .default_output_device()
            .ok_or_else(|| "ALSA has no default output device".to_string()),
        Some(n) => {
            let id: cpal::DeviceId = format!("alsa:{n}")
                .parse()
                .map_err(|e| format!("ALSA device name '{n}': {e}"))?;
            h.device_by_id(&id).ok_or_else(|| {
                format!("no ALSA device '{n}' (see `aplay -L` for names such as hw:CARD=...,DEV=0)")
            })
        }
    }
}
