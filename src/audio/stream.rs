//! What a stream is asked to be, what it turned out to be, and the handle that stops it.

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
    /// Whether the period was asked for explicitly (JACK then changes the server's,
    /// journaling it first through `journal`; without one it is left as it is).
    pub period_explicit: bool,
    pub loopback: Option<LoopbackSpec>,
    pub journal: Option<PeriodJournal>,
}

/// Where a stream that changes a server's period writes down the period it found
/// before changing it, and strikes it out once it is put back: the run's knob journal
/// (`knobs::JackPeriodJournal`), so a run killed outright is put back by the next start.
pub trait JournalPeriod: Send + Sync {
    /// Err: it could not be written down, so the period must not be changed.
    fn journal(&self, server: &str, original: u32) -> Result<(), String>;
    fn forget(&self, server: &str) -> Result<(), String>;
}

/// A shared `JournalPeriod`.
#[derive(Clone)]
pub struct PeriodJournal(pub std::sync::Arc<dyn JournalPeriod>);

impl std::fmt::Debug for PeriodJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("PeriodJournal")
    }
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
    /// The server or driver behind the stream (JACK, ALSA), for run.json.
    pub server: Option<results::livefx::AudioServer>,
}

/// A running stream; `stop` ends it and returns after the process's `end`.
pub trait Stream {
    fn info(&self) -> &StreamInfo;
    fn stop(self: Box<Self>) -> Result<(), String>;
}

/// Unpinned means any online CPU: a backend's RT thread would otherwise inherit the
/// control thread's pin.
pub(crate) fn cpus_or_all(spec: &StreamSpec) -> Vec<usize> {
    if spec.cpus.is_empty() {
        crate::sys::online_cpus()
    } else {
        spec.cpus.clone()
    }
}
