//! Kernel knobs a test changes (through xrunrig or itself): read them, and put them
//! back whatever a failed assertion left.

#![allow(dead_code)]

pub const RR_TIMESLICE: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";

/// A knob file's value, trimmed.
pub fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .trim()
        .to_string()
}

/// The values of `paths` when made; written back when dropped.
pub struct Saved {
    knobs: Vec<(&'static str, String)>,
}

impl Saved {
    pub fn now(paths: &[&'static str]) -> Saved {
        Saved {
            knobs: paths.iter().map(|&p| (p, read(p))).collect(),
        }
    }

    /// The values as saved, in the order of `paths`.
    pub fn values(&self) -> Vec<String> {
        self.knobs.iter().map(|(_, v)| v.clone()).collect()
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        for (p, v) in &self.knobs {
            let _ = std::fs::write(p, v);
        }
    }
}
