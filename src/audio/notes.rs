//! What a backend reports from its non-RT threads: xrun notifications and server death.

use std::sync::Mutex;
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
        assert!(!n.is_gone());
        n.gone();
        assert!(n.is_gone());
    }
}
