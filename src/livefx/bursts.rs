//! Bursts of background load set against the audio: which bursts caught a lock holder
//! (a worker held a lock, on one of the burst thread's CPUs, at the moment the burst
//! began) and which misses each burst accounts for (deadline within the burst, or up to
//! `slack` after it, the time a released holder needs to hand the lock on).

use super::rt::Hold;

#[derive(Debug, Clone, PartialEq)]
pub struct Burst {
    /// CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    pub end_ns: u64,
    /// (worker, lock) of the holder it caught.
    pub caught: Option<(usize, usize)>,
    pub misses: u64,
}

/// `holds` in any order; `cpus`: the burst thread's CPUs; `misses`: deadlines (ns) in
/// time order. Returns the bursts and, per miss, the burst it falls in.
pub fn classify(
    spans: &[(u64, u64)],
    holds: &mut [Hold],
    cpus: &[usize],
    misses: &[u64],
    slack_ns: u64,
) -> (Vec<Burst>, Vec<Option<usize>>) {
    // Per worker, holds never overlap: sorted by (worker, acquired), the one spanning a
    // time is the last acquired at or before it.
    holds.sort_by_key(|h| (h.worker, h.acquired_ns));
    let workers: Vec<u8> = {
        let mut w: Vec<u8> = holds.iter().map(|h| h.worker).collect();
        w.dedup();
        w
    };
    let mut out: Vec<Burst> = spans
        .iter()
        .map(|&(s, e)| {
            let caught = workers.iter().find_map(|&w| {
                let lo = holds.partition_point(|h| h.worker < w);
                let hi = holds.partition_point(|h| h.worker <= w);
                let mine = &holds[lo..hi];
                let i = mine.partition_point(|h| h.acquired_ns <= s);
                let h = mine.get(i.checked_sub(1)?)?;
                (h.released_ns > s && cpus.contains(&(h.cpu as usize)))
                    .then_some((h.worker as usize, h.lock as usize))
            });
            Burst {
                start_ns: s,
                end_ns: e,
                caught,
                misses: 0,
            }
        })
        .collect();
    let of: Vec<Option<usize>> = misses
        .iter()
        .map(|&d| {
            let i = out.partition_point(|b| b.start_ns <= d).checked_sub(1)?;
            (d <= out[i].end_ns + slack_ns).then_some(i)
        })
        .collect();
    for i in of.iter().flatten() {
        out[*i].misses += 1;
    }
    (out, of)
}

/// Counts over a set of bursts for the summary row (the results format's counter).
pub use results::livefx::BurstCounts;

pub fn count(b: &[Burst]) -> BurstCounts {
    let mut c = BurstCounts::default();
    for x in b {
        c.add(x.caught.is_some(), x.misses);
    }
    c
}

/// A 95 % interval for a Poisson rate: `k` events in `t` (any unit), Byar's
/// approximation of the exact (Garwood) interval; close even for small k.
pub fn poisson_ci95(k: u64, t: f64) -> Option<(f64, f64)> {
    if t <= 0.0 {
        return None;
    }
    let z = 1.959_964;
    let k = k as f64;
    let lo = if k == 0.0 {
        0.0
    } else {
        k * (1.0 - 1.0 / (9.0 * k) - z / (3.0 * k.sqrt())).powi(3)
    };
    let k1 = k + 1.0;
    let hi = k1 * (1.0 - 1.0 / (9.0 * k1) + z / (3.0 * k1.sqrt())).powi(3);
    Some((lo / t, hi / t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(worker: u8, a: u64, r: u64, cpu: u16) -> Hold {
        Hold {
            acquired_ns: a,
            released_ns: r,
            worker,
            lock: 0,
            cpu,
        }
    }

    #[test]
    fn a_burst_catches_a_holder_on_its_cpu_only() {
        let mut holds = vec![
            hold(2, 100, 200, 1),
            hold(0, 150, 160, 2),
            hold(2, 300, 400, 3),
            hold(2, 500, 600, 1),
        ];
        // 150: render holds on CPU1; 350: render holds but on CPU3; 450: nobody; 550: CPU1.
        let spans = [(150, 180), (350, 380), (450, 480), (550, 700)];
        let misses = [170, 190, 395, 720, 900];
        let (b, of) = classify(&spans, &mut holds, &[1], &misses, 30);
        let caught: Vec<_> = b.iter().map(|x| x.caught).collect();
        assert_eq!(caught, vec![Some((2, 0)), None, None, Some((2, 0))]);
        assert_eq!(of, vec![Some(0), Some(0), Some(1), Some(3), None]);
        assert_eq!(
            count(&b),
            BurstCounts {
                bursts: 4,
                caught: 2,
                caught_missed: 2,
                missed: 3,
                misses_in_bursts: 4
            }
        );
    }

    #[test]
    fn the_edges_belong_to_the_burst() {
        // A hold taken at the burst's first instant is caught; one released at that
        // instant is not. A miss at the burst's start, and one exactly `slack` after its
        // end, are the burst's; one a nanosecond later is nobody's.
        let mut holds = vec![hold(1, 100, 200, 0), hold(1, 300, 400, 0)];
        let spans = [(100, 150), (400, 450)];
        let misses = [100, 180, 181, 400, 480];
        let (b, of) = classify(&spans, &mut holds, &[0], &misses, 30);
        let caught: Vec<_> = b.iter().map(|x| x.caught).collect();
        assert_eq!(caught, vec![Some((1, 0)), None]);
        assert_eq!(of, vec![Some(0), Some(0), None, Some(1), Some(1)]);
        assert_eq!(b.iter().map(|x| x.misses).collect::<Vec<_>>(), vec![2, 2]);
    }

    #[test]
    fn poisson_interval_matches_exact_values() {
        // Exact Garwood 95 % limits: k=0 -> [0, 3.689]; k=10 -> [4.795, 18.39].
        let (lo, hi) = poisson_ci95(0, 1.0).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 3.689).abs() < 0.03, "{hi}");
        let (lo, hi) = poisson_ci95(10, 2.0).unwrap();
        assert!((lo - 4.795 / 2.0).abs() < 0.02, "{lo}");
        assert!((hi - 18.39 / 2.0).abs() < 0.02, "{hi}");
        assert_eq!(poisson_ci95(3, 0.0), None);
    }
}
