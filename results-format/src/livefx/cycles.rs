//! cycles/*.bin: one 24-byte little-endian record per audio cycle, written by the engine's
//! writer thread and streamed by analysis (in fixed chunks, never the whole file).
//!
//! Record: u64 start ns since the trial's start | u32 callback ns | i32 lateness ns |
//! u32 flags | u32 worker wake ns. Flags: bit 0 deadline miss, bit 1 xrun, bit 2 injected
//! overrun, bit 3 discontinuity, bits 8..15 the worker that finished last (255 = none).

use std::io::Read;

pub const RECORD_BYTES: usize = 24;

pub const F_MISS: u32 = 1;
pub const F_XRUN: u32 = 2;
pub const F_INJECTED: u32 = 4;
pub const F_DISCONTINUITY: u32 = 8;
/// The flags' low byte holds the bits above; the next byte the last worker.
pub const LAST_WORKER_SHIFT: u32 = 8;
pub const NO_WORKER: u8 = 255;

/// One cycle as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Record {
    /// ns since the trial's start.
    pub start_ns: u64,
    pub callback_ns: u32,
    /// Negative when the callback started before its nominal start.
    pub lateness_ns: i32,
    pub flags: u32,
    /// The slowest waited worker's wake-up latency.
    pub wake_ns: u32,
}

impl Record {
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..8].copy_from_slice(&self.start_ns.to_le_bytes());
        b[8..12].copy_from_slice(&self.callback_ns.to_le_bytes());
        b[12..16].copy_from_slice(&self.lateness_ns.to_le_bytes());
        b[16..20].copy_from_slice(&self.flags.to_le_bytes());
        b[20..24].copy_from_slice(&self.wake_ns.to_le_bytes());
        b
    }

    /// `b` is one record; a short slice reads its missing bytes as 0.
    pub fn decode(b: &[u8]) -> Record {
        let mut r = [0u8; RECORD_BYTES];
        let n = b.len().min(RECORD_BYTES);
        r[..n].copy_from_slice(&b[..n]);
        let u32_at = |o: usize| u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
        Record {
            start_ns: u64::from_le_bytes(r[0..8].try_into().unwrap_or([0; 8])),
            callback_ns: u32_at(8),
            lateness_ns: u32_at(12) as i32,
            flags: u32_at(16),
            wake_ns: u32_at(20),
        }
    }

    /// Flag bits and the last worker in one u32, as stored.
    pub fn pack_flags(flags: u32, last_worker: u8) -> u32 {
        (flags & 0xff) | ((last_worker as u32) << LAST_WORKER_SHIFT)
    }

    pub fn last_worker(&self) -> u8 {
        ((self.flags >> LAST_WORKER_SHIFT) & 0xff) as u8
    }
}

/// Records per read while streaming: 4096 (96 KiB).
pub const CHUNK_RECORDS: usize = 4096;

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

/// Streams the records of `r` to `each`, one chunk in memory; returns the bytes of a torn
/// last record (a file cut short), which are left out.
pub fn stream(mut r: impl Read, mut each: impl FnMut(&Record)) -> std::io::Result<u64> {
    let mut buf = vec![0u8; RECORD_BYTES * CHUNK_RECORDS];
    loop {
        let n = fill(&mut r, &mut buf)?;
        let whole = n / RECORD_BYTES * RECORD_BYTES;
        for rec in buf[..whole].chunks_exact(RECORD_BYTES) {
            each(&Record::decode(rec));
        }
        if n < buf.len() {
            return Ok((n - whole) as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_stream_across_chunks() {
        let n = CHUNK_RECORDS * 2 + 7;
        let mut bytes = Vec::new();
        for i in 0..n as u64 {
            let r = Record {
                start_ns: i * 1000,
                callback_ns: 500,
                lateness_ns: if i == 5 { -20 } else { 10 },
                flags: Record::pack_flags(F_MISS, (i % 3) as u8),
                wake_ns: 7,
            };
            assert_eq!(Record::decode(&r.encode()), r);
            bytes.extend_from_slice(&r.encode());
        }
        bytes.extend_from_slice(&[1, 2, 3]);
        let mut seen = Vec::new();
        let torn = stream(&bytes[..], |r| seen.push(*r)).unwrap();
        assert_eq!((seen.len(), torn), (n, 3));
        assert_eq!(seen[5].lateness_ns, -20);
        assert_eq!(seen[4].last_worker(), 1);
        assert_eq!(seen[4].flags & 0xff, F_MISS);
    }
}
