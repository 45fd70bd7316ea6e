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
    /// Dropout episodes (`EPISODE_GAP_NS`), counted over each trial's cycles in order
    /// (`add_cycle`) and summed over trials.
    pub episodes: Episodes,
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

    /// One cycle by its start (ns, one clock per trial) and flags: `add`, and the
    /// episodes counted.
    #[inline]
    pub fn add_cycle(&mut self, start_ns: u64, flags: u32, xruns: u64) {
        self.add(flags, xruns);
        self.episodes.add(start_ns, flags);
    }

    /// One stored cycle: an xrun flag counts one.
    #[inline]
    pub fn add_record(&mut self, r: &Record) {
        self.add_cycle(r.start_ns, r.flags, 1);
    }

    pub fn merge(&mut self, o: &Counters) {
        self.cycles += o.cycles;
        self.deadline_misses += o.deadline_misses;
        self.injected += o.injected;
        self.injected_undetected += o.injected_undetected;
        self.misses_not_injected += o.misses_not_injected;
        self.xruns += o.xruns;
        self.discontinuities += o.discontinuities;
        // Another trial's: its episodes are its own, never joined to this one's.
        self.episodes.count += o.episodes.count;
    }

    /// Injected overruns that were seen as deadline misses.
    pub fn injected_detected(&self) -> u64 {
        self.deadline_misses - self.misses_not_injected
    }
}

/// Dropouts closer together than this are one episode: one break in the sound as a
/// listener hears it (clicks more than about 20 a second fuse into one buzz, so a gap
/// under 50 ms does not make two), and one event of the machine (a stall of the VM or a
/// long preemption loses every cycle it covers, hundreds of dropouts from one cause).
/// Episodes are what `compare` tests as counts: dropouts within one are not independent.
pub const EPISODE_GAP_NS: u64 = 50_000_000;

/// A dropout cycle: a deadline miss not injected on purpose, an xrun, or a loopback
/// discontinuity, on a cycle without an injected overrun.
#[inline]
pub fn is_dropout(flags: u32) -> bool {
    flags & F_INJECTED == 0 && flags & (F_MISS | F_XRUN | F_DISCONTINUITY) != 0
}

/// Counts episodes (`EPISODE_GAP_NS`) over one trial's cycles, in order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Episodes {
    pub count: u64,
    /// The last dropout cycle's start, ns (any clock, one per trial).
    last_ns: Option<u64>,
}

impl Episodes {
    /// One cycle, by its start and flags: a dropout more than the gap after the last
    /// one (or the first) starts an episode.
    #[inline]
    pub fn add(&mut self, start_ns: u64, flags: u32) {
        if !is_dropout(flags) {
            return;
        }
        if self
            .last_ns
            .is_none_or(|l| start_ns.saturating_sub(l) > EPISODE_GAP_NS)
        {
            self.count += 1;
        }
        self.last_ns = Some(start_ns);
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

    #[test]
    fn dropouts_within_the_gap_are_one_episode() {
        let ms = 1_000_000u64;
        let mut e = Episodes::default();
        // A stall: 100 consecutive missed cycles of 2.67 ms, one episode.
        for i in 0..100 {
            e.add(i * 2_666_667, F_MISS);
        }
        assert_eq!(e.count, 1);
        // 50 ms after the last one is still the same; just past it, a new one.
        let last = 99 * 2_666_667;
        e.add(last + EPISODE_GAP_NS, F_XRUN);
        assert_eq!(e.count, 1);
        e.add(last + 2 * EPISODE_GAP_NS + 1, F_DISCONTINUITY);
        assert_eq!(e.count, 2);
        // Injected overruns and clean cycles are no dropouts, however far apart.
        e.add(last + 1000 * ms, F_INJECTED | F_MISS | F_XRUN);
        e.add(last + 2000 * ms, 0);
        assert_eq!(e.count, 2);
        // A burst a second: one episode each.
        for s in 3..13 {
            e.add(last + s * 1000 * ms, F_MISS);
            e.add(last + s * 1000 * ms + 3 * ms, F_MISS);
        }
        assert_eq!(e.count, 12);
    }
}
