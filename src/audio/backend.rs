//! The `Backend` trait every backend implements and what a probe answers. The names
//! `--backend` and a rig's `[livefx] backend` take are the rig's vocabulary
//! (`rig::backend`), typed where they are read.

use super::{Notes, Process, Stream, StreamSpec};
use std::sync::Arc;
use std::time::Duration;

/// One way of running a `Process` once per period. `probe` says whether it can run
/// here (and why not) without starting anything; `open` starts it.
pub trait Backend: Sync {
    fn kind(&self) -> BackendKind;
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// Whether the backend is available, touching nothing that outlives the call (a
    /// probe past `spec.limit` is left to the process exit).
    fn probe(&self, spec: &ProbeSpec) -> Probe;
    /// Opens a stream that drives `process` until `Stream::stop`.
    fn open(
        &self,
        spec: &StreamSpec,
        process: Box<dyn Process>,
        notes: Arc<Notes>,
    ) -> Result<Box<dyn Stream>, String>;
}

/// What to probe and how long to wait.
#[derive(Debug, Clone, Default)]
pub struct ProbeSpec {
    /// ALSA device or JACK server name; None: the backend's default.
    pub device: Option<String>,
    /// Give up after this long (the doctor must not hang on a stuck server); None:
    /// wait as long as the backend's own connection does.
    pub limit: Option<Duration>,
    /// The client name a probe that connects shows (JACK), so a server's log says
    /// who asked.
    pub client: Option<&'static str>,
}

impl ProbeSpec {
    pub fn device(device: &Option<String>) -> ProbeSpec {
        ProbeSpec {
            device: device.clone(),
            ..Default::default()
        }
    }
}

/// A backend that answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Available {
    /// The server or device that answered ("default" when none was named).
    pub device: String,
    pub rate: Option<u32>,
    /// The period the server runs at, where it has one of its own (JACK).
    pub period: Option<u32>,
    /// One line saying what answered, for the run's backend reason.
    pub text: String,
}

/// Available, or why not (one line, to print as it is).
pub type Probe = Result<Available, String>;

pub use crate::rig::backend::{BackendChoice, BackendKind};

impl BackendKind {
    /// The backend itself.
    pub fn backend(self) -> &'static dyn Backend {
        match self {
            BackendKind::Jack => &super::jack::Jack,
            BackendKind::Alsa => &super::alsa::Alsa,
            BackendKind::Clock => &super::clock::Clock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn backend_names_parse() {
        assert_eq!(BackendChoice::parse("auto"), Ok(BackendChoice::Auto));
        assert_eq!(
            BackendChoice::parse("clock").map(BackendChoice::fixed),
            Ok(Some(BackendKind::Clock))
        );
        assert!(
            BackendChoice::parse("pulse")
                .unwrap_err()
                .contains("auto, jack")
        );
    }

    /// clap's names and parse() agree, and each backend answers to its own name.
    #[test]
    fn value_enum_names_match_parse() {
        for c in BackendChoice::value_variants() {
            let name = c.to_possible_value().unwrap().get_name().to_string();
            assert_eq!(BackendChoice::parse(&name), Ok(*c));
            assert_eq!(c.to_string(), name);
            if let Some(k) = c.fixed() {
                assert_eq!(k.name(), name);
                assert_eq!(k.backend().name(), name);
                assert_eq!(BackendChoice::from(k), *c);
            }
        }
        assert_eq!(BackendChoice::value_variants().len(), 4);
    }
}
