//! Audio backends behind one trait, on the model of cpal's host/device/stream split:
//! a `Backend` opens a `Stream` that calls a `Process` once per period on the backend's
//! real-time thread. Backends: JACK (`jack`), ALSA through cpal (`alsa`), and a built-in
//! `clock` (a FIFO thread on absolute `clock_nanosleep` periods) for machines without
//! sound. `select` picks one for `--backend auto` and says why.

pub mod alsa;
pub mod clock;
pub mod jack;
pub mod select;

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One period as the backend hands it to the process, on the RT thread.
pub struct Cycle<'a> {
    /// Callbacks since the stream started (0, 1, 2, ...).
    pub index: u64,
    pub frames: u32,
    /// Nominal start of this period, CLOCK_MONOTONIC ns (JACK: `current_usecs`).
    pub start_ns: u64,
    /// When the output must be ready, CLOCK_MONOTONIC ns (JACK: `next_usecs`).
    pub deadline_ns: u64,
    /// When the callback began running.
    pub wake_ns: u64,
    /// Xruns the backend found on its RT path since the previous callback; they belong
    /// to the previous cycle (clock: periods skipped after an overrun; ALSA: underruns).
    pub xruns_before: u32,
    pub input: &'a [f32],
    pub output: &'a mut [f32],
}

/// The real-time side of an audio client. Everything here runs on the backend's RT
/// thread: no allocation, no I/O, no unbounded waits.
pub trait Process: Send + 'static {
    /// Once, on the RT thread, before the first cycle.
    fn rt_init(&mut self) {}
    /// One period. Return false to ask the backend to stop.
    fn cycle(&mut self, c: &mut Cycle) -> bool;
    /// Once after the last cycle (on the RT thread or, for JACK, after deactivation).
    fn end(&mut self) {}
}

/// What the stream should look like; backends say what they really got in `StreamInfo`.
#[derive(Debug, Clone)]
pub struct StreamSpec {
    pub period: u32,
    pub rate: u32,
    pub nperiods: u32,
    /// ALSA device name (e.g. hw:1) or JACK server name.
    pub device: Option<String>,
    /// The clock backend's thread priority (FIFO) and CPUs; JACK and ALSA choose their own
    /// priority, and CPUs are applied from the first callback when given.
    pub priority: i32,
    pub cpus: Vec<usize>,
    /// Whether the period was asked for explicitly (JACK then changes the server's).
    pub period_explicit: bool,
    pub loopback: Option<LoopbackSpec>,
}

/// Where the loopback test signal goes out and comes back in.
#[derive(Debug, Clone, Default)]
pub struct LoopbackSpec {
    /// JACK ports to connect: our output to `playback`, `capture` to our input.
    pub playback: Option<String>,
    pub capture: Option<String>,
    /// The clock backend's built-in delay line, in frames.
    pub clock_latency: u32,
}

/// What a backend actually opened.
#[derive(Debug, Clone)]
pub struct StreamInfo {
    pub backend: &'static str,
    pub rate: u32,
    pub period: u32,
    pub note: String,
    /// Offset to add to the backend's own time base to get CLOCK_MONOTONIC ns.
    pub clock_offset_ns: i64,
}

/// An xrun reported outside the RT path (JACK's notification thread).
#[derive(Debug, Clone, Copy)]
pub struct XrunNote {
    /// CLOCK_MONOTONIC ns when the notification ran.
    pub t_ns: u64,
    /// `jack_get_xrun_delayed_usecs` at that moment.
    pub delayed_us: f32,
}

/// What a backend reports from its non-RT threads: xrun notifications and server death.
#[derive(Default)]
pub struct Notes {
    /// Filled by a non-RT notification thread only; drained by the writer.
    pub xruns: Mutex<Vec<XrunNote>>,
    pub xrun_count: AtomicU64,
    pub server_gone: AtomicBool,
    pub gone_at_ns: AtomicU64,
    /// Where each notification is also written as a trace marker (tracefs), if tracing.
    pub marker: std::sync::OnceLock<std::fs::File>,
}

impl Notes {
    pub fn xrun(&self, n: XrunNote) {
        self.xrun_count.fetch_add(1, Ordering::SeqCst);
        if let Some(mut f) = self.marker.get() {
            use std::io::Write;
            let _ = writeln!(
                f,
                "xrunrig xrun (JACK notification) at={}.{:06} delayed_us={:.0}",
                n.t_ns / 1_000_000_000,
                n.t_ns % 1_000_000_000 / 1000,
                n.delayed_us
            );
        }
        if let Ok(mut v) = self.xruns.lock() {
            v.push(n);
        }
    }
    pub fn take_xruns(&self) -> Vec<XrunNote> {
        self.xruns
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
    /// Async-signal-safe: only atomics.
    pub fn gone(&self) {
        self.gone_at_ns
            .store(crate::sys::now_ns(), Ordering::SeqCst);
        self.server_gone.store(true, Ordering::SeqCst);
    }
    pub fn is_gone(&self) -> bool {
        self.server_gone.load(Ordering::SeqCst)
    }
}

/// A running stream; `stop` ends it and returns after the process's `end`.
pub trait Stream {
    fn info(&self) -> &StreamInfo;
    fn stop(self: Box<Self>) -> Result<(), String>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Jack,
    Alsa,
    Clock,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Jack => "jack",
            BackendKind::Alsa => "alsa",
            BackendKind::Clock => "clock",
        }
    }
}

/// A parsed `--backend` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Fixed(BackendKind),
}

impl BackendChoice {
    pub fn parse(s: &str) -> Result<BackendChoice, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "jack" => Ok(BackendChoice::Fixed(BackendKind::Jack)),
            "alsa" => Ok(BackendChoice::Fixed(BackendKind::Alsa)),
            "clock" => Ok(BackendChoice::Fixed(BackendKind::Clock)),
            o => Err(format!(
                "unknown backend '{o}': use auto, jack, alsa or clock"
            )),
        }
    }
}

/// `--backend`'s values, for clap's help and completions.
impl clap::ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            BackendChoice::Auto,
            BackendChoice::Fixed(BackendKind::Jack),
            BackendChoice::Fixed(BackendKind::Alsa),
            BackendChoice::Fixed(BackendKind::Clock),
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self {
            BackendChoice::Auto => clap::builder::PossibleValue::new("auto")
                .help("JACK if a server answers, else ALSA, else the clock"),
            BackendChoice::Fixed(k) => clap::builder::PossibleValue::new(k.name()),
        })
    }
}

/// Opens a stream on `kind` that drives `process`.
pub fn open(
    kind: BackendKind,
    spec: &StreamSpec,
    process: Box<dyn Process>,
    notes: std::sync::Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
    match kind {
        BackendKind::Jack => jack::open(spec, process, notes),
        BackendKind::Alsa => alsa::open(spec, process, notes),
        BackendKind::Clock => clock::open(spec, process, notes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_parse() {
        assert_eq!(BackendChoice::parse("auto"), Ok(BackendChoice::Auto));
        assert_eq!(
            BackendChoice::parse("clock"),
            Ok(BackendChoice::Fixed(BackendKind::Clock))
        );
        assert!(
            BackendChoice::parse("pulse")
                .unwrap_err()
                .contains("auto, jack")
        );
    }

    #[test]
    fn notes_collect_xruns() {
        let n = Notes::default();
        n.xrun(XrunNote {
            t_ns: 5,
            delayed_us: 1.0,
        });
        assert_eq!(n.xrun_count.load(Ordering::SeqCst), 1);
        assert_eq!(n.take_xruns().len(), 1);
        assert!(n.take_xruns().is_empty());
        assert!(!n.is_gone());
        n.gone();
        assert!(n.is_gone());
    }
}
