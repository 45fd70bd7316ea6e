//! The real-time side of a client: what the backend's RT thread calls once per period.

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
