//! JACK through the `jack` crate (default features kept, so libjack is loaded at run
//! time and `jack_sys::library()` says whether it is installed). The user's running
//! server, or one named by `--device` (as `JACK_DEFAULT_SERVER`). Works with PipeWire's
//! JACK too. `probe` connects a client without starting a server; `stream` runs the
//! process on JACK's thread; `server` is how a jackd is started and waited for (the
//! guest's launcher) and read back from its command line (the doctor); `period` reads and
//! sets a server's period as a client (putting back a period a killed run changed).

pub mod passive;
pub mod period;
mod probe;
pub mod server;
mod stream;

pub use probe::{PROBE_CLIENT, identity, server_name};
pub use stream::CLIENT_NAME;

use super::{Backend, BackendKind, Notes, Probe, ProbeSpec, Process, Stream, StreamSpec};
use std::sync::Arc;

/// The JACK backend.
pub struct Jack;

impl Backend for Jack {
    fn kind(&self) -> BackendKind {
        BackendKind::Jack
    }
    fn probe(&self, spec: &ProbeSpec) -> Probe {
        probe::probe(spec)
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
