//! The built-in clock backend: a FIFO thread on absolute `clock_nanosleep` periods, the
//! embedded default where no sound device exists, and the fallback of `--backend auto`.
//! `timing` is the period arithmetic, `delay` the loopback delay line, `stream` the
//! thread.

mod delay;
mod stream;
mod timing;

pub use delay::DelayLine;
pub use timing::{next_period, period_start, sleep_until};

use super::{
    Available, Backend, BackendKind, Notes, Probe, ProbeSpec, Process, Stream, StreamSpec,
};
use std::sync::Arc;

/// The clock backend.
pub struct Clock;

impl Backend for Clock {
    fn kind(&self) -> BackendKind {
        BackendKind::Clock
    }
    /// Always available: it needs only CLOCK_MONOTONIC (whether FIFO is allowed is
    /// found when the stream opens, and the doctor's concern).
    fn probe(&self, _spec: &ProbeSpec) -> Probe {
        Ok(Available {
            device: "CLOCK_MONOTONIC".into(),
            rate: None,
            period: None,
            text: "the built-in clock".into(),
        })
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
