//! Under PipeWire, xruns as pw-top counts them. PipeWire's libjack reports no client
//! overrun to the client (only a driver's, and not the first), so watch reads the
//! profiler instead: a follower node whose status is not "finished" when its driver
//! starts the next cycle is an error in pw-top's ERR column. PipeWire's own
//! `pw-profiler` writes one row per cycle with each follower's status, which this
//! reads through a pipe: no PipeWire library is linked, and the profiler module is the
//! one pw-top uses. Its rows carry no absolute time (PipeWire 0.3's log format), so
//! they are tied to the passive client's stamped cycles by a signature the passive
//! client writes into its own rows: under PipeWire it works 40 µs more in the cycles a
//! fixed pseudo-random bit of the cycle's number picks (`signature_bit`), and its row's
//! busy time shows which; one shift of the row numbers matches that sequence.

use super::cycles::History;
use crate::audio::jack::passive::{SIGNATURE_US, signature_bit};
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};

/// A follower that had not finished its cycle when the next began.
#[derive(Debug, Clone, PartialEq)]
pub struct Late {
    /// The node's name (`node.name`), or its id.
    pub node: String,
    pub start_ns: u64,
    pub deadline_ns: u64,
}

/// One follower's columns in a pw-profiler row: id, its busy time (finish less awake,
/// µs), status (3 = finished).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Follower {
    pub id: u32,
    pub busy_us: i64,
    pub status: i32,
}

/// One row of pw-profiler's log: the driver's period as it measured it (its signal
/// less the one before, µs; 0 in the extra sample of an incomplete graph) and the
/// followers.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub period_us: i64,
    pub followers: Vec<Follower>,
}

/// Parses one row of pw-profiler's log: 4 driver columns, then 8 per follower slot
/// (a blank slot is 8 blank columns).
pub fn parse_row(line: &str) -> Option<Row> {
    let cols: Vec<&str> = line.split('\t').collect();
    if cols.len() < 4 || cols[..4].iter().any(|c| c.trim().parse::<i64>().is_err()) {
        return None;
    }
    let period_us = cols[0].trim().parse().ok()?;
    let mut out = Vec::new();
    for g in cols[4..].chunks(8) {
        if g.len() < 7 || g[0].trim().is_empty() {
            continue;
        }
        let id = g[0].trim().parse().ok()?;
        let busy_us = g[5].trim().parse().ok()?;
        let status = g[6].trim().parse().ok()?;
        out.push(Follower {
            id,
            busy_us,
            status,
        });
    }
    Some(Row {
        period_us,
        followers: out,
    })
}

/// The shift (stamp index = row index + shift) that ties the profiler's rows to the
/// passive client's cycles: its busy time in each row (`rows`: row, µs) against the
/// signature bits of its cycle numbers up to `max_index`. The one shift that agrees on
/// 90 % of the rows or more, and no other does; else no answer.
pub fn align(rows: &[(u64, i64)], max_index: u64) -> Option<u64> {
    if rows.len() < 48 {
        return None;
    }
    let threshold = (SIGNATURE_US / 2) as i64;
    let need = rows.len() * 9 / 10;
    let mut found = None;
    for k in 0..=max_index {
        let agree = rows
            .iter()
            .filter(|(r, busy)| (*busy >= threshold) == signature_bit(r + k))
            .count();
        if agree >= need {
            if found.is_some() {
                return None;
            }
            found = Some(k);
        }
    }
    found
}

pub struct Profiler {
    child: Child,
    pipe: std::fs::File,
    dir: std::path::PathBuf,
    buf: Vec<u8>,
    row: u64,
    own: String,
    own_id: Option<u32>,
    names: HashMap<u32, String>,
    /// Cycles seen in the rows (rows of incomplete graphs not counted).
    cycle: u64,
    /// (cycle, the passive client's busy time), the newest 8192.
    own_rows: std::collections::VecDeque<(u64, i64)>,
    /// (cycle, node, polls waited) errors not yet placed in time.
    waiting: Vec<(u64, u32, u32)>,
    /// (node, the passive client's cycle index) of the late cycles reported: the
    /// profiler's extra sample of an incomplete graph names the same one again.
    placed: std::collections::HashSet<(u32, u64)>,
    /// Errors as pw-top counts them, in all and per node.
    pub errors: u64,
    errors_by_node: HashMap<u32, u64>,
    repeated: u64,
    unaligned: u64,
}

impl Profiler {
    /// Starts `pw-profiler` writing into a pipe this process reads. `own` is the passive
    /// client's name (its node name under PipeWire's libjack).
    pub fn start(own: &str) -> Result<Profiler, String> {
        let dir = std::env::temp_dir().join(format!("xrunrig-watch-pw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let fifo = dir.join("profiler.fifo");
        let c = std::ffi::CString::new(fifo.display().to_string()).unwrap_or_default();
        // SAFETY: a valid path.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            return Err(format!(
                "cannot make a pipe: {}",
                std::io::Error::last_os_error()
            ));
        }
        // Opened for reading first (non-blocking), so pw-profiler's open does not wait.
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .map_err(|e| format!("cannot open the pipe: {e}"))?;
        let child = Command::new("pw-profiler")
            .arg("-o")
            .arg(&fifo)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot run pw-profiler ({e}): install PipeWire's tools (apt-get install pipewire-bin)")
            })?;
        Ok(Profiler {
            child,
            pipe,
            dir,
            buf: Vec::new(),
            row: 0,
            own: own.to_string(),
            own_id: None,
            names: HashMap::new(),
            cycle: 0,
            own_rows: std::collections::VecDeque::new(),
            waiting: Vec::new(),
            placed: std::collections::HashSet::new(),
            errors: 0,
            errors_by_node: HashMap::new(),
            repeated: 0,
            unaligned: 0,
        })
    }

    /// Node names and ids from pw-dump.
    fn refresh_names(&mut self) {
        let Ok(o) = Command::new("pw-dump").stderr(Stdio::null()).output() else {
            return;
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else {
            return;
        };
        for obj in v.as_array().into_iter().flatten() {
            if obj["type"].as_str() != Some("PipeWire:Interface:Node") {
                continue;
            }
            let (Some(id), Some(name)) = (
                obj["id"].as_u64(),
                obj["info"]["props"]["node.name"].as_str(),
            ) else {
                continue;
            };
            self.names.insert(id as u32, name.to_string());
            if name == self.own {
                self.own_id = Some(id as u32);
            }
        }
    }

    fn name(&mut self, id: u32) -> String {
        if !self.names.contains_key(&id) {
            self.refresh_names();
        }
        self.names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("node {id}"))
    }

    /// Reads what pw-profiler wrote; the late followers it can place in time.
    pub fn poll(&mut self, hist: &History) -> Vec<Late> {
        let mut chunk = [0u8; 1 << 16];
        loop {
            match self.pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(_) => break,
            }
            if self.buf.len() > 1 << 24 {
                break;
            }
        }
        if self.own_id.is_none() {
            self.refresh_names();
        }
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=nl).collect();
            let Some(row) = parse_row(&String::from_utf8_lossy(&line)) else {
                continue;
            };
            self.row += 1;
            // A row describes the cycle its driver period closes. A row whose period is 0
            // is the profiler's extra sample of an incomplete graph, taken as the next
            // cycle starts and before the driver's times move on: it is about the cycle
            // the next row closes (measured against ground truth in tests/pipewire_watch.rs:
            // a 30 ms overrun from the start of cycle C gives samples of C, C and C+1)
            // and counts no cycle of its own.
            let q = if row.period_us > 0 {
                self.cycle += 1;
                self.cycle
            } else {
                self.cycle + 1
            };
            for f in row.followers {
                if Some(f.id) == self.own_id {
                    if row.period_us > 0 {
                        if self.own_rows.len() == 8192 {
                            self.own_rows.pop_front();
                        }
                        self.own_rows.push_back((q, f.busy_us));
                    }
                } else if f.status != 3 {
                    self.errors += 1;
                    *self.errors_by_node.entry(f.id).or_default() += 1;
                    if self.waiting.len() < 1 << 16 {
                        self.waiting.push((q, f.id, 0));
                    } else {
                        self.unaligned += 1;
                    }
                }
            }
        }
        let newest = self.own_rows.back().map_or(0, |r| r.0);
        let max = hist.iter().map(|s| s.index).max().unwrap_or(0);
        let mut out = Vec::new();
        let mut keep = Vec::new();
        for (q, id, polls) in std::mem::take(&mut self.waiting) {
            // The passive client's own rows around the error tie its cycle number to the
            // stamps (locally: a dropped row or cycle elsewhere does not matter).
            let local: Vec<(u64, i64)> = self
                .own_rows
                .iter()
                .filter(|r| r.0 + 64 >= q && r.0 <= q + 16)
                .copied()
                .collect();
            if newest < q + 8 && polls < 100 {
                keep.push((q, id, polls + 1));
                continue;
            }
            let idx = align(&local, max).map(|k| q + k);
            // The node had not finished the cycle the row describes: that one is late.
            match idx.and_then(|i| hist.by_index(i)) {
                Some(s) if self.placed.insert((id, s.index)) => {
                    let node = self.name(id);
                    out.push(Late {
                        node,
                        start_ns: s.start_ns,
                        deadline_ns: s.deadline_ns,
                    });
                }
                Some(_) => self.repeated += 1,
                None => self.unaligned += 1,
            }
        }
        self.waiting = keep;
        if self.placed.len() > 1 << 16 {
            self.placed.clear();
        }
        out
    }

    /// Stops pw-profiler; a line for run.json saying what was counted and how.
    pub fn finish(mut self) -> Option<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        let mut nodes: Vec<(u32, u64)> = self.errors_by_node.clone().into_iter().collect();
        nodes.sort();
        let per: Vec<String> = nodes
            .into_iter()
            .map(|(id, n)| format!("{} {n}", self.name(id)))
            .collect();
        Some(format!(
            "pw-profiler: {} rows ({} cycles) read; {} errors as pw-top's ERR counts them (a \
             follower not finished when its driver began the next cycle, each profiler sample \
             counted: {}); {} of them samples of a late cycle already reported, {} not placed \
             in time",
            self.row,
            self.cycle,
            self.errors,
            if per.is_empty() {
                "none".into()
            } else {
                per.join(", ")
            },
            self.repeated,
            self.unaligned + self.waiting.len() as u64
        ))
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_with_blank_slots() {
        let row = "5333\t120\t0\t5333\t35\t3\t10\t60\t7\t50\t3\t0\t \t \t \t \t \t \t \t \t40\t3\t900\t5000\t897\t4100\t2\t0\t";
        let r = parse_row(row).unwrap();
        assert_eq!(r.period_us, 5333);
        assert_eq!(
            r.followers,
            vec![
                Follower {
                    id: 35,
                    busy_us: 50,
                    status: 3
                },
                Follower {
                    id: 40,
                    busy_us: 4100,
                    status: 2
                }
            ]
        );
        assert_eq!(parse_row("logging 5 samples"), None);
    }

    /// Rows made from cycles 40.. with the signature's busy time (and noise) align at
    /// 40 even with a few rows wrong; rows with no signature do not align.
    #[test]
    fn alignment_finds_the_signature() {
        let ones = (0..64u64).filter(|i| signature_bit(*i)).count();
        assert!((20..=44).contains(&ones), "{ones} of 64 bits set");
        let rows: Vec<(u64, i64)> = (0..100u64)
            .map(|r| {
                let busy = if signature_bit(r + 40) { 43 } else { 3 };
                // 4 rows in 100 disturbed (a preempted callback works longer).
                (r, if r % 25 == 7 { 200 } else { busy })
            })
            .collect();
        assert_eq!(align(&rows, 500), Some(40));
        let flat: Vec<(u64, i64)> = (0..100u64).map(|r| (r, 3)).collect();
        assert_eq!(align(&flat, 500), None);
        assert_eq!(align(&rows[..10], 500), None);
    }
}
