//! IPI counters from /proc/interrupts (`IWI` irq work, `RES` rescheduling, `CAL`
//! function call on x86), sampled at a fixed interval on a normal-priority thread for
//! the length of a trial; reported per CPU per interval as mean and CoV.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// One reading: time (CLOCK_MONOTONIC ns) and counts by row name, then CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub t_ns: u64,
    pub counts: BTreeMap<String, BTreeMap<usize, u64>>,
}

/// Parses /proc/interrupts text, keeping the rows named in `rows` (e.g. "IWI").
/// CPU numbers come from the header, which lists online CPUs only.
pub fn parse_interrupts(
    text: &str,
    rows: &[String],
) -> Result<BTreeMap<String, BTreeMap<usize, u64>>, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("/proc/interrupts is empty")?;
    let cpus: Vec<usize> = header
        .split_whitespace()
        .map(|c| {
            c.strip_prefix("CPU")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("unexpected /proc/interrupts header '{header}'"))
        })
        .collect::<Result<_, _>>()?;
    let mut out = BTreeMap::new();
    for l in lines {
        let Some((name, rest)) = l.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if !rows.iter().any(|r| r == name) {
            continue;
        }
        let vals: BTreeMap<usize, u64> = rest
            .split_whitespace()
            .take(cpus.len())
            .map_while(|v| v.parse::<u64>().ok())
            .zip(&cpus)
            .map(|(v, &c)| (c, v))
            .collect();
        out.insert(name.to_string(), vals);
    }
    for r in rows {
        if !out.contains_key(r) {
            let have: Vec<&str> = text
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim()))
                .filter(|n| n.chars().all(|c| c.is_ascii_uppercase()))
                .collect();
            return Err(format!(
                "/proc/interrupts has no '{r}' row on this machine; rows it has: {}",
                have.join(", ")
            ));
        }
    }
    Ok(out)
}

pub fn snapshot(rows: &[String]) -> Result<Snapshot, String> {
    let text = std::fs::read_to_string("/proc/interrupts")
        .map_err(|e| format!("cannot read /proc/interrupts: {e}"))?;
    Ok(Snapshot {
        t_ns: crate::sys::now_ns(),
        counts: parse_interrupts(&text, rows)?,
    })
}

/// Samples in the background until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Vec<Snapshot>>>,
    first: Snapshot,
}

impl Sampler {
    /// Takes the first snapshot now, then one every `interval_ns` (absolute times, so
    /// intervals do not drift) until `stop`.
    pub fn start(
        rows: Vec<String>,
        interval_ns: u64,
        cpu: Option<usize>,
    ) -> Result<Sampler, String> {
        let first = snapshot(&rows)?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let t0 = first.t_ns;
        let handle = std::thread::Builder::new()
            .name("xrunrig-ipi".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    let _ = crate::engine::thread::set_affinity(0, &[c]);
                }
                let mut out = Vec::new();
                let mut k = 1u64;
                loop {
                    let due = t0 + k * interval_ns;
                    while crate::sys::now_ns() < due {
                        if st.load(Ordering::SeqCst) {
                            return out;
                        }
                        let left = due.saturating_sub(crate::sys::now_ns());
                        std::thread::sleep(std::time::Duration::from_nanos(left.min(20_000_000)));
                    }
                    if let Ok(s) = snapshot(&rows) {
                        out.push(s);
                    }
                    k += 1;
                }
            })
            .map_err(|e| format!("cannot start the IPI sampler: {e}"))?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
            first,
        })
    }

    /// Stops; returns every snapshot, the first included. When no full interval passed
    /// a final snapshot is added so the trial still gives one (shorter) interval.
    pub fn stop(mut self, rows: &[String]) -> Vec<Snapshot> {
        self.stop.store(true, Ordering::SeqCst);
        let mut v = vec![self.first.clone()];
        if let Some(h) = self.handle.take() {
            v.extend(h.join().unwrap_or_default());
        }
        if v.len() == 1
            && let Ok(s) = snapshot(rows)
        {
            v.push(s);
        }
        v
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Per-interval counts of one row on one CPU.
pub fn deltas(snaps: &[Snapshot], row: &str, cpu: usize) -> Vec<u64> {
    snaps
        .windows(2)
        .map(|w| {
            let get = |s: &Snapshot| {
                s.counts
                    .get(row)
                    .and_then(|m| m.get(&cpu))
                    .copied()
                    .unwrap_or(0)
            };
            get(&w[1]).saturating_sub(get(&w[0]))
        })
        .collect()
}

/// Mean and coefficient of variation in percent (sample standard deviation / mean);
/// CoV is None with fewer than two intervals or a zero mean.
pub fn mean_cov(v: &[u64]) -> (f64, Option<f64>) {
    if v.is_empty() {
        return (0.0, None);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<u64>() as f64 / n;
    if v.len() < 2 || mean == 0.0 {
        return (mean, None);
    }
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, Some(var.sqrt() / mean * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PI: &str = "           CPU0       CPU1       CPU3
  0:         36          0          0   IO-APIC    2-edge      timer
IWI:          1          0          5   IRQ work interrupts
RES:       6544       5773         10   Rescheduling interrupts
CAL:      41527      34634         11   Function call interrupts
";

    #[test]
    fn parses_rows_per_cpu() {
        let rows = vec!["IWI".to_string(), "RES".to_string()];
        let m = parse_interrupts(PI, &rows).unwrap();
        assert_eq!(m["RES"][&1], 5773);
        assert_eq!(m["IWI"][&3], 5);
        assert!(!m["IWI"].contains_key(&2));
        let e = parse_interrupts(PI, &["XYZ".to_string()]).unwrap_err();
        assert!(e.contains("no 'XYZ'") && e.contains("IWI"), "{e}");
    }

    #[test]
    fn deltas_and_stats() {
        let s = |t, v| Snapshot {
            t_ns: t,
            counts: BTreeMap::from([("RES".to_string(), BTreeMap::from([(1, v)]))]),
        };
        let snaps = [s(0, 100), s(5, 200), s(10, 310), s(15, 400)];
        let d = deltas(&snaps, "RES", 1);
        assert_eq!(d, vec![100, 110, 90]);
        let (m, c) = mean_cov(&d);
        assert!((m - 100.0).abs() < 1e-9);
        assert!((c.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(mean_cov(&[5]), (5.0, None));
        assert_eq!(deltas(&snaps, "RES", 2), vec![0, 0, 0]);
    }
}
