//! What a backend reports from its non-RT threads: xrun notifications and server death.

use crossbeam::channel::{Receiver, Sender, unbounded};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// An xrun reported outside the RT path (JACK's notification thread).
#[derive(Debug, Clone, Copy)]
pub struct XrunNote {
    /// CLOCK_MONOTONIC ns when the notification ran.
    pub t_ns: u64,
    /// `jack_get_xrun_delayed_usecs` at that moment.
    pub delayed_us: f32,
}

/// Shared between a backend's notification side and the writer.
pub struct Notes {
    /// Sent by a non-RT notification thread only (JACK's xrun callback; never the
    /// process callback), drained by the writer. Lock-free: the notification thread
    /// never waits for the writer's drain, as it could behind a Mutex.
    xruns_tx: Sender<XrunNote>,
    xruns_rx: Receiver<XrunNote>,
    pub xrun_count: AtomicU64,
    pub server_gone: AtomicBool,
    pub gone_at_ns: AtomicU64,
    /// Where each notification is also written as a trace marker (tracefs), if tracing.
    pub marker: std::sync::OnceLock<std::fs::File>,
}

impl Default for Notes {
    fn default() -> Self {
        let (xruns_tx, xruns_rx) = unbounded();
        Notes {
            xruns_tx,
            xruns_rx,
            xrun_count: AtomicU64::new(0),
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
        // Cannot fail: the receiver lives as long as the sender, in this struct.
        let _ = self.xruns_tx.send(n);
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
        assert!(!n.is_gone());
        n.gone();
        assert!(n.is_gone());
    }
}
