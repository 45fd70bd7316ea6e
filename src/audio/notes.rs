//! What a backend reports from its non-RT threads: xrun notifications and server death.

use crossbeam::channel::{Receiver, Sender, bounded};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// An xrun reported outside the RT path (JACK's notification thread).
#[derive(Debug, Clone, Copy)]
pub struct XrunNote {
    /// CLOCK_MONOTONIC ns when the notification ran.
    pub t_ns: u64,
    /// `jack_get_xrun_delayed_usecs` at that moment.
    pub delayed_us: f32,
}

/// Xrun notes kept between two drains by the writer (one per trial): a trial with
/// more keeps its count exact and the first this many notes' times.
pub const XRUN_NOTES_CAP: usize = 4096;

/// Shared between a backend's notification side and the writer.
pub struct Notes {
    /// Sent by JACK's xrun callback, drained by the writer. jackd2 calls it on its
    /// non-RT notification thread, but PipeWire's libjack calls it on the audio thread
    /// (for driver xruns), so sending must neither allocate nor wait: a bounded
    /// channel (its ring allocated here) and `try_send`; a full ring counts in
    /// `xruns_unrecorded` instead.
    xruns_tx: Sender<XrunNote>,
    xruns_rx: Receiver<XrunNote>,
    pub xrun_count: AtomicU64,
    /// Xruns counted in `xrun_count` whose note did not fit the ring.
    pub xruns_unrecorded: AtomicU64,
    pub server_gone: AtomicBool,
    pub gone_at_ns: AtomicU64,
    /// Where each notification is also written as a trace marker (tracefs), if tracing.
    pub marker: std::sync::OnceLock<std::fs::File>,
}

impl Default for Notes {
    fn default() -> Self {
        let (xruns_tx, xruns_rx) = bounded(XRUN_NOTES_CAP);
        Notes {
            xruns_tx,
            xruns_rx,
            xrun_count: AtomicU64::new(0),
            xruns_unrecorded: AtomicU64::new(0),
            server_gone: AtomicBool::new(false),
            gone_at_ns: AtomicU64::new(0),
            marker: std::sync::OnceLock::new(),
        }
    }
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
        // The receiver lives as long as the sender, in this struct: only a full ring fails.
        if self.xruns_tx.try_send(n).is_err() {
            self.xruns_unrecorded.fetch_add(1, Ordering::SeqCst);
        }
    }
    /// The notes sent since the last call, in order.
    pub fn take_xruns(&self) -> Vec<XrunNote> {
        self.xruns_rx.try_iter().collect()
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // Notification threads fan in; each one's notes stay in its order.
        let n = std::sync::Arc::new(n);
        let senders: Vec<_> = (0..2u64)
            .map(|k| {
                let n = n.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        n.xrun(XrunNote {
                            t_ns: k * 1000 + i,
                            delayed_us: 0.0,
                        });
                    }
                })
            })
            .collect();
        senders.into_iter().for_each(|t| t.join().unwrap());
        let got = n.take_xruns();
        assert_eq!(got.len(), 200);
        for k in 0..2u64 {
            let mine: Vec<u64> = got
                .iter()
                .map(|x| x.t_ns)
                .filter(|t| t / 1000 == k)
                .collect();
            assert_eq!(mine, (k * 1000..k * 1000 + 100).collect::<Vec<_>>());
        }
        assert_eq!(n.xruns_unrecorded.load(Ordering::SeqCst), 0);
        // A full ring drops the note, never blocks, and keeps the count.
        for i in 0..XRUN_NOTES_CAP as u64 + 3 {
            n.xrun(XrunNote {
                t_ns: i,
                delayed_us: 0.0,
            });
        }
        assert_eq!(n.take_xruns().len(), XRUN_NOTES_CAP);
        assert_eq!(n.xruns_unrecorded.load(Ordering::SeqCst), 3);
        assert_eq!(
            n.xrun_count.load(Ordering::SeqCst),
            201 + XRUN_NOTES_CAP as u64 + 3
        );
        assert!(!n.is_gone());
        n.gone();
        assert!(n.is_gone());
    }
}
