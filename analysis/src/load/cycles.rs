//! cycles/*.bin: 24-byte little-endian records per audio cycle, read in fixed chunks
//! (never the whole file) into fixed-size histograms and counters.
//!
//! Record: u64 start ns | u32 callback ns | i32 lateness ns | u32 flags | u32 wake ns.
//! Flags: bit0 deadline miss, bit1 xrun, bit2 injected overrun, bit3 discontinuity,
//! bits 8..15 the worker that finished last (255 = none).

use crate::hist::LogHist;
use std::io::Read;
use std::path::Path;

pub const RECORD: usize = 24;
/// 4096 records (96 KiB) per read.
pub const CHUNK: usize = RECORD * 4096;

pub const F_MISS: u32 = 1;
pub const F_XRUN: u32 = 2;
pub const F_INJECTED: u32 = 4;
pub const F_DISCONT: u32 = 8;

#[derive(Clone, Debug)]
pub struct CycleStats {
    pub files: usize,
    pub cycles: u64,
    pub misses: u64,
    /// Misses on cycles that were not injected on purpose.
    pub misses_uninjected: u64,
    pub xruns: u64,
    pub injected: u64,
    pub discontinuities: u64,
    /// Cycles whose callback started early (negative lateness).
    pub early: u64,
    pub min_lateness_ns: i64,
    pub callback: LogHist,
    pub lateness: LogHist,
    pub wake: LogHist,
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
            cycles: 0,
            misses: 0,
            misses_uninjected: 0,
            xruns: 0,
            injected: 0,
            discontinuities: 0,
            early: 0,
            min_lateness_ns: 0,
            callback: LogHist::new(),
            lateness: LogHist::new(),
            wake: LogHist::new(),
            last_worker_on_miss: vec![0; 256],
            span_ns: 0,
            truncated_bytes: 0,
        }
    }
}

impl CycleStats {
    #[inline]
    pub fn add(&mut self, rec: &[u8]) {
        let start = u64::from_le_bytes(rec[0..8].try_into().unwrap());
        let dur = u32::from_le_bytes(rec[8..12].try_into().unwrap());
        let late = i32::from_le_bytes(rec[12..16].try_into().unwrap());
        let flags = u32::from_le_bytes(rec[16..20].try_into().unwrap());
        let wake = u32::from_le_bytes(rec[20..24].try_into().unwrap());
        self.cycles += 1;
        self.span_ns = self.span_ns.max(start);
        self.callback.record(dur as u64);
        if late < 0 {
            self.early += 1;
            self.min_lateness_ns = self.min_lateness_ns.min(late as i64);
            self.lateness.record(0);
        } else {
            self.lateness.record(late as u64);
        }
        self.wake.record(wake as u64);
        if flags & (F_MISS | F_XRUN | F_INJECTED | F_DISCONT) != 0 {
            if flags & F_MISS != 0 {
                self.misses += 1;
                if flags & F_INJECTED == 0 {
                    self.misses_uninjected += 1;
                }
                self.last_worker_on_miss[((flags >> 8) & 0xff) as usize] += 1;
            }
            if flags & F_XRUN != 0 {
                self.xruns += 1;
            }
            if flags & F_INJECTED != 0 {
                self.injected += 1;
            }
            if flags & F_DISCONT != 0 {
                self.discontinuities += 1;
            }
        }
    }

    pub fn merge(&mut self, o: &CycleStats) {
        self.files += o.files;
        self.cycles += o.cycles;
        self.misses += o.misses;
        self.misses_uninjected += o.misses_uninjected;
        self.xruns += o.xruns;
        self.injected += o.injected;
        self.discontinuities += o.discontinuities;
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

/// Reads up to buf.len() bytes, fewer only at end of file.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Streams one cycles file. `each` sees every record (for exports); memory is one chunk.
pub fn read_file(path: &Path, mut each: impl FnMut(&[u8])) -> Result<CycleStats, String> {
    let mut f =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut st = CycleStats {
        files: 1,
        ..Default::default()
    };
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n =
            fill(&mut f, &mut buf).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let whole = n / RECORD * RECORD;
        for rec in buf[..whole].chunks_exact(RECORD) {
            st.add(rec);
            each(rec);
        }
        if n < buf.len() {
            st.truncated_bytes += (n - whole) as u64;
            break;
        }
    }
    Ok(st)
}

/// Decoded record, for exports and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    pub start_ns: u64,
    pub callback_ns: u32,
    pub lateness_ns: i32,
    pub flags: u32,
    pub wake_ns: u32,
}

impl Cycle {
    pub fn decode(rec: &[u8]) -> Cycle {
        Cycle {
            start_ns: u64::from_le_bytes(rec[0..8].try_into().unwrap()),
            callback_ns: u32::from_le_bytes(rec[8..12].try_into().unwrap()),
            lateness_ns: i32::from_le_bytes(rec[12..16].try_into().unwrap()),
            flags: u32::from_le_bytes(rec[16..20].try_into().unwrap()),
            wake_ns: u32::from_le_bytes(rec[20..24].try_into().unwrap()),
        }
    }

    pub fn encode(&self) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[0..8].copy_from_slice(&self.start_ns.to_le_bytes());
        r[8..12].copy_from_slice(&self.callback_ns.to_le_bytes());
        r[12..16].copy_from_slice(&self.lateness_ns.to_le_bytes());
        r[16..20].copy_from_slice(&self.flags.to_le_bytes());
        r[20..24].copy_from_slice(&self.wake_ns.to_le_bytes());
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_records_across_chunks_and_counts_flags() {
        let dir = std::env::temp_dir().join(format!("analysis-cycles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.bin");
        let n = 4096 * 2 + 7; // crosses chunk boundaries
        let mut bytes = Vec::new();
        for i in 0..n as u64 {
            let flags = if i % 100 == 0 {
                F_MISS | F_INJECTED | (3 << 8)
            } else {
                255 << 8
            };
            let c = Cycle {
                start_ns: i * 1_000_000,
                callback_ns: 500_000,
                lateness_ns: if i == 5 { -20 } else { 10_000 },
                flags,
                wake_ns: 20_000,
            };
            assert_eq!(Cycle::decode(&c.encode()), c);
            bytes.extend_from_slice(&c.encode());
        }
        bytes.extend_from_slice(&[1, 2, 3]); // a torn last record
        std::fs::write(&p, &bytes).unwrap();
        let mut seen = 0;
        let st = read_file(&p, |_| seen += 1).unwrap();
        assert_eq!(st.cycles, n as u64);
        assert_eq!(seen, n);
        assert_eq!(st.misses, 82);
        assert_eq!(st.injected, 82);
        assert_eq!(st.misses_uninjected, 0);
        assert_eq!(st.last_worker_on_miss[3], 82);
        assert_eq!(st.early, 1);
        assert_eq!(st.min_lateness_ns, -20);
        assert_eq!(st.truncated_bytes, 3);
        assert_eq!(st.span_ns, (n as u64 - 1) * 1_000_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
