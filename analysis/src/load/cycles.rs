//! cycles/*.bin (the record is `results::livefx::cycles::Record`), streamed in fixed
//! chunks (never the whole file) into the format's counters and fixed-size histograms.

use crate::dist::Dist;
use results::livefx::Counters;
use results::livefx::cycles::{self, F_MISS, Record};
use std::path::Path;

/// What the cycle files of a setting and variant hold: the format's counters, and the
/// distributions only analysis draws (latency histograms, early starts, who was last).
#[derive(Clone, Debug)]
pub struct CycleStats {
    pub files: usize,
    pub counts: Counters,
    /// Cycles whose callback started early (negative lateness).
    pub early: u64,
    pub min_lateness_ns: i64,
    pub callback: Dist,
    pub lateness: Dist,
    pub wake: Dist,
    /// Which worker finished last, on missed cycles.
    pub last_worker_on_miss: Vec<u64>,
    /// Longest trial, from the last cycle's start.
    pub span_ns: u64,
    pub truncated_bytes: u64,
}

impl Default for CycleStats {
    fn default() -> Self {
        CycleStats {
            files: 0,
            counts: Counters::default(),
            early: 0,
            min_lateness_ns: 0,
            callback: Dist::new(),
            lateness: Dist::new(),
            wake: Dist::new(),
            last_worker_on_miss: vec![0; 256],
            span_ns: 0,
            truncated_bytes: 0,
        }
    }
}

impl CycleStats {
    #[inline]
    pub fn add(&mut self, r: &Record) {
        self.counts.add_record(r);
        self.span_ns = self.span_ns.max(r.start_ns);
        self.callback.record(r.callback_ns as u64);
        if r.lateness_ns < 0 {
            self.early += 1;
            self.min_lateness_ns = self.min_lateness_ns.min(r.lateness_ns as i64);
            self.lateness.record(0);
        } else {
            self.lateness.record(r.lateness_ns as u64);
        }
        self.wake.record(r.wake_ns as u64);
        if r.flags & F_MISS != 0 {
            self.last_worker_on_miss[r.last_worker() as usize] += 1;
        }
    }

    pub fn merge(&mut self, o: &CycleStats) {
        self.files += o.files;
        self.counts.merge(&o.counts);
        self.early += o.early;
        self.min_lateness_ns = self.min_lateness_ns.min(o.min_lateness_ns);
        self.callback.merge(&o.callback);
        self.lateness.merge(&o.lateness);
        self.wake.merge(&o.wake);
        for (a, b) in self
            .last_worker_on_miss
            .iter_mut()
            .zip(&o.last_worker_on_miss)
        {
            *a += b;
        }
        self.span_ns = self.span_ns.max(o.span_ns);
        self.truncated_bytes += o.truncated_bytes;
    }
}

/// Streams one cycles file. `each` sees every record (for exports); memory is one chunk.
pub fn read_file(path: &Path, mut each: impl FnMut(&Record)) -> Result<CycleStats, String> {
    let f =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut st = CycleStats {
        files: 1,
        ..Default::default()
    };
    st.truncated_bytes = cycles::stream(f, |r| {
        st.add(r);
        each(r);
    })
    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::livefx::cycles::{CHUNK_RECORDS, F_INJECTED};

    #[test]
    fn streams_records_across_chunks_and_counts_flags() {
        let dir = std::env::temp_dir().join(format!("analysis-cycles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.bin");
        let n = CHUNK_RECORDS * 2 + 7; // crosses chunk boundaries
        let mut bytes = Vec::new();
        for i in 0..n as u64 {
            let flags = if i % 100 == 0 {
                F_MISS | F_INJECTED | (3 << 8)
            } else {
                255 << 8
            };
            let c = Record {
                start_ns: i * 1_000_000,
                callback_ns: 500_000,
                lateness_ns: if i == 5 { -20 } else { 10_000 },
                flags,
                wake_ns: 20_000,
            };
            bytes.extend_from_slice(&c.encode());
        }
        bytes.extend_from_slice(&[1, 2, 3]); // a torn last record
        std::fs::write(&p, &bytes).unwrap();
        let mut seen = 0;
        let st = read_file(&p, |_| seen += 1).unwrap();
        assert_eq!(st.counts.cycles, n as u64);
        assert_eq!(seen, n);
        assert_eq!(st.counts.deadline_misses, 82);
        assert_eq!(st.counts.injected, 82);
        assert_eq!(st.counts.misses_not_injected, 0);
        assert_eq!(st.last_worker_on_miss[3], 82);
        assert_eq!(st.early, 1);
        assert_eq!(st.min_lateness_ns, -20);
        assert_eq!(st.truncated_bytes, 3);
        assert_eq!(st.span_ns, (n as u64 - 1) * 1_000_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
