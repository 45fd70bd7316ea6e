//! The livefx counters and their one aggregation: the engine counts a trial's cycles as
//! its writer drains them and sums trials into a summary row; analysis counts the cycles
//! it streams back from cycles/*.bin. Both go through `Counters::add` and `merge`.

use super::cycles::{F_DISCONTINUITY, F_INJECTED, F_MISS, F_XRUN, Record};

/// Counts over cycles: one trial's, or a setting and variant's over its trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub cycles: u64,
    pub deadline_misses: u64,
    /// Cycles overrun on purpose (`--inject-every`).
    pub injected: u64,
    /// Injected cycles not flagged as a miss: a counter that lost the truth.
    pub injected_undetected: u64,
    /// Misses on cycles that were not injected on purpose.
    pub misses_not_injected: u64,
    pub xruns: u64,
    /// Cycles flagged with a loopback discontinuity.
    pub discontinuities: u64,
}

impl Counters {
    /// One cycle by its flags. `xruns`: how many xruns a cycle flagged with one stands for
    /// (the RT side may see several in one cycle; a cycles file records only the flag).
    #[inline]
    pub fn add(&mut self, flags: u32, xruns: u64) {
        self.cycles += 1;
        let inj = flags & F_INJECTED != 0;
        let miss = flags & F_MISS != 0;
        if inj {
            self.injected += 1;
            if !miss {
                self.injected_undetected += 1;
            }
        }
        if miss {
            self.deadline_misses += 1;
            if !inj {
                self.misses_not_injected += 1;
            }
        }
        if flags & F_XRUN != 0 {
            self.xruns += xruns;
        }
        if flags & F_DISCONTINUITY != 0 {
            self.discontinuities += 1;
        }
    }

    /// One stored cycle: an xrun flag counts one.
    #[inline]
    pub fn add_record(&mut self, r: &Record) {
        self.add(r.flags, 1);
    }

    pub fn merge(&mut self, o: &Counters) {
        self.cycles += o.cycles;
        self.deadline_misses += o.deadline_misses;
        self.injected += o.injected;
        self.injected_undetected += o.injected_undetected;
        self.misses_not_injected += o.misses_not_injected;
        self.xruns += o.xruns;
        self.discontinuities += o.discontinuities;
    }

    /// Injected overruns that were seen as deadline misses.
    pub fn injected_detected(&self) -> u64 {
        self.deadline_misses - self.misses_not_injected
    }
}

/// The names of a trial's counts in its samples.jsonl record (`metrics`): the engine
/// writes them, and a livefx rig's pass or fail (`--until-decided`, and a bisect reading
/// a results directory back) is read from them.
pub mod record {
    pub const CYCLES: &str = "cycles";
    pub const XRUNS: &str = "xruns";
    pub const DEADLINE_MISSES: &str = "deadline_misses";
    pub const INJECTED: &str = "injected";
    pub const MISSES_NOT_INJECTED: &str = "misses_not_injected";
    /// Loopback clicks (present only with the loopback check).
    pub const DISCONTINUITIES: &str = "discontinuities";
}

/// Counts over a rig's bursts of background load: the summary row's `bursts*` fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BurstCounts {
    pub bursts: u64,
    /// Bursts that started while a lock holder sat on the burst thread's CPU.
    pub caught: u64,
    /// Of those, the ones with at least one deadline miss.
    pub caught_missed: u64,
    /// All bursts with at least one deadline miss.
    pub missed: u64,
    pub misses_in_bursts: u64,
}

impl BurstCounts {
    /// One burst: whether it caught the lock holder, and the misses it accounts for.
    pub fn add(&mut self, caught: bool, misses: u64) {
        self.bursts += 1;
        self.caught += u64::from(caught);
        self.caught_missed += u64::from(caught && misses > 0);
        self.missed += u64::from(misses > 0);
        self.misses_in_bursts += misses;
    }

    pub fn merge(&mut self, o: &BurstCounts) {
        self.bursts += o.bursts;
        self.caught += o.caught;
        self.caught_missed += o.caught_missed;
        self.missed += o.missed;
        self.misses_in_bursts += o.misses_in_bursts;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_and_spurious_misses_apart() {
        let mut c = Counters::default();
        for f in [0, F_INJECTED | F_MISS, F_MISS, F_INJECTED, F_XRUN | F_MISS] {
            c.add(f, 2);
        }
        assert_eq!((c.cycles, c.deadline_misses, c.injected), (5, 3, 2));
        assert_eq!((c.injected_undetected, c.misses_not_injected), (1, 2));
        assert_eq!((c.xruns, c.injected_detected()), (2, 1));
        let mut d = Counters::default();
        d.add_record(&Record {
            flags: F_XRUN | F_DISCONTINUITY,
            ..Default::default()
        });
        c.merge(&d);
        assert_eq!((c.cycles, c.xruns, c.discontinuities), (6, 3, 1));
    }
}
