//! Audio backends behind one trait, on the model of cpal's host/device/stream split:
//! a `Backend` probes whether it can run here and opens a `Stream` that calls a
//! `Process` once per period on the backend's real-time thread. One folder per backend:
//! JACK (`jack/`, which also knows how a jackd server is started and waited for), ALSA
//! through cpal (`alsa/`), and a built-in `clock/` (a FIFO thread on absolute
//! `clock_nanosleep` periods) for machines without sound. `select` picks one for
//! `--backend auto` by probing each in turn, and says why.
//!
//! A new backend: a folder with a unit struct implementing `Backend`, a `BackendKind`
//! and `BackendChoice` variant, and its place in `select::AUTO_ORDER`.

mod backend;
mod notes;
mod process;
mod stream;

pub mod alsa;
pub mod clock;
pub mod jack;
pub mod select;

pub use backend::{Available, Backend, BackendChoice, BackendKind, Probe, ProbeSpec};
pub use notes::{Notes, XrunNote};
pub use process::{Cycle, Process};
pub use stream::{JournalPeriod, LoopbackSpec, PeriodJournal, Stream, StreamInfo, StreamSpec};

/// Opens a stream on `kind` that drives `process`.
pub fn open(
    kind: BackendKind,
    spec: &StreamSpec,
    process: Box<dyn Process>,
    notes: std::sync::Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
    kind.backend().open(spec, process, notes)
}
