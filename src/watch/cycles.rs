//! The cycles the passive client saw, kept for as long as a report can reach back: an
//! xrun reported at time t is tied to the cycles whose deadlines passed just before t
//! (JACK reports a cycle's xrun when the next one starts). A cycle the client did not
//! see (it was late itself, or skipped) is filled in from the period.

use super::explain::Cycle;
use crate::audio::jack::passive::Stamp;
use std::collections::VecDeque;

pub struct History {
    stamps: VecDeque<Stamp>,
    cap: usize,
}

impl History {
    pub fn new(cap: usize) -> History {
        History {
            stamps: VecDeque::with_capacity(cap.min(1 << 16)),
            cap: cap.max(2),
        }
    }

    pub fn push(&mut self, s: Stamp) {
        if s.deadline_ns <= s.start_ns {
            return; // no cycle times (should not happen with libjack's dynamic loading)
        }
        if self.stamps.len() == self.cap {
            self.stamps.pop_front();
        }
        self.stamps.push_back(s);
    }

    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Stamp> {
        self.stamps.iter()
    }

    /// The stamp of the passive client's cycle number `index`, if still kept.
    pub fn by_index(&self, index: u64) -> Option<Stamp> {
        let first = self.stamps.front()?.index;
        let i = index.checked_sub(first)? as usize;
        self.stamps
            .get(i)
            .filter(|s| s.index == index)
            .copied()
            .or_else(|| self.stamps.iter().find(|s| s.index == index).copied())
    }

    /// The server's frame time at a cycle's start, if the client saw that cycle.
    pub fn frame_at(&self, start_ns: u64) -> Option<u64> {
        self.stamps
            .iter()
            .find(|s| s.start_ns == start_ns)
            .map(|s| s.frame_time as u64)
    }

    /// Up to `n` cycles whose deadlines passed at or before `t` (a report's time), in
    /// time order, the one just before `t` last. Cycles between two stamps further apart
    /// than 1.5 periods are filled in at the period.
    pub fn candidates(&self, t: u64, n: usize) -> Vec<Cycle> {
        let mut out: Vec<Cycle> = Vec::new();
        let mut prev: Option<&Stamp> = None;
        for s in &self.stamps {
            if let Some(p) = prev {
                let period = p.deadline_ns - p.start_ns;
                let mut start = p.deadline_ns;
                // Cycles nobody stamped, between p and s.
                while start + period / 2 < s.start_ns && out.len() < 1 << 16 {
                    out.push(Cycle {
                        start_ns: start,
                        deadline_ns: start + period,
                        frame: None,
                    });
                    start += period;
                }
            }
            out.push(Cycle {
                start_ns: s.start_ns,
                deadline_ns: s.deadline_ns,
                frame: Some(s.frame_time as u64),
            });
            prev = Some(s);
        }
        // And after the last stamp, up to t.
        if let Some(p) = prev {
            let period = p.deadline_ns - p.start_ns;
            let mut start = p.deadline_ns;
            while start + period <= t && out.len() < 1 << 17 {
                out.push(Cycle {
                    start_ns: start,
                    deadline_ns: start + period,
                    frame: None,
                });
                start += period;
            }
        }
        out.retain(|c| c.deadline_ns <= t);
        let k = out.len().saturating_sub(n);
        out.split_off(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(i: u64, start: u64) -> Stamp {
        Stamp {
            index: i,
            frames: 256,
            frame_time: (i * 256) as u32,
            start_ns: start,
            deadline_ns: start + 1000,
            wake_ns: start + 10,
        }
    }

    #[test]
    fn candidates_end_at_the_report_and_fill_gaps() {
        let mut h = History::new(100);
        for (i, s) in [0u64, 1000, 2000, 5000].iter().enumerate() {
            h.push(st(i as u64, *s));
        }
        // Deadlines <= 4500: 1000, 2000, 3000 (stamped), 4000 (filled), 5000 is later.
        let c = h.candidates(4500, 3);
        assert_eq!(
            c.iter().map(|c| (c.start_ns, c.frame)).collect::<Vec<_>>(),
            vec![(1000, Some(256)), (2000, Some(512)), (3000, None)]
        );
        let c = h.candidates(4500, 10);
        assert_eq!(c.len(), 4);
        // After the last stamp, the period carries on.
        let c = h.candidates(8000, 2);
        assert_eq!(
            c.iter().map(|c| c.start_ns).collect::<Vec<_>>(),
            vec![6000, 7000]
        );
        assert_eq!(h.frame_at(5000), Some(768));
        assert!(h.candidates(500, 3).is_empty());
    }

    #[test]
    fn history_is_bounded() {
        let mut h = History::new(3);
        for i in 0..10 {
            h.push(st(i, i * 1000));
        }
        assert_eq!(h.len(), 3);
        assert_eq!(h.frame_at(9000), Some(9 * 256));
        assert_eq!(h.frame_at(0), None);
    }
}
