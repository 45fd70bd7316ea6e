//! JACK's xrun notifications arrive on a non-RT thread, some time after the cycle that
//! caused them. They are tied to cycles afterwards, by time: an xrun belongs to the latest
//! cycle that missed its deadline within a few periods before the notification and has
//! no xrun yet; failing that, to the cycle that was running when it arrived.

use super::rt::{FLAG_MISS, FLAG_XRUN};

/// How far back (in cycles) a notification may reach for its cause.
pub const LOOK_BACK: usize = 8;

/// `cycles`: (start ns since trial start, flags) in file order; `notes`: notification
/// times in ns since trial start. Returns the cycle position each note is tied to, and
/// sets FLAG_XRUN on it.
pub fn attribute(cycles: &mut [(u64, u32)], notes: &[u64]) -> Vec<Option<usize>> {
    let mut out = Vec::with_capacity(notes.len());
    for &t in notes {
        // Cycles that had started when the notification ran.
        let n = cycles.partition_point(|c| c.0 <= t);
        if n == 0 {
            out.push(None);
            continue;
        }
        let running = n - 1;
        let lo = running.saturating_sub(LOOK_BACK);
        let culprit = (lo..=running)
            .rev()
            .find(|&i| cycles[i].1 & FLAG_MISS != 0 && cycles[i].1 & FLAG_XRUN == 0)
            .unwrap_or(running);
        cycles[culprit].1 |= FLAG_XRUN;
        out.push(Some(culprit));
    }
    out
}

/// Loopback discontinuities with no sign of a dropout in the `window` cycles before them
/// (the round trip delays a dropout's arrival): the clicks nothing reported. `cycles`:
/// (start ns, flags) in order. A sign is a miss, an xrun, or a cycle that started more
/// than 1.5 periods (the median spacing) after the one before: the server skipped a cycle
/// (a driver restart), which JACK's notification may report only after the click has
/// come back (measured on snd-aloop under TCG: the note 1-2 cycles after the click).
pub fn unexplained_discontinuities(cycles: &[(u64, u32)], window: usize) -> u64 {
    use super::rt::FLAG_DISCONTINUITY;
    let mut gaps: Vec<u64> = cycles
        .windows(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .collect();
    gaps.sort_unstable();
    let spacing = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
    let sign = |i: usize| {
        cycles[i].1 & (FLAG_MISS | FLAG_XRUN) != 0
            || (i > 0
                && spacing > 0
                && cycles[i].0.saturating_sub(cycles[i - 1].0) > spacing * 3 / 2)
    };
    (0..cycles.len())
        .filter(|&i| {
            cycles[i].1 & FLAG_DISCONTINUITY != 0 && !(i.saturating_sub(window)..=i).any(sign)
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_after_an_xrun_are_explained_and_others_not() {
        use crate::livefx::rt::FLAG_DISCONTINUITY as D;
        let mut c: Vec<(u64, u32)> = (0..40).map(|i| (i * 1000, 0)).collect();
        c[5].1 = FLAG_MISS | FLAG_XRUN;
        c[8].1 = D; // 3 cycles after the xrun: the dropout coming back
        c[30].1 = D; // nothing before it: unexplained
        assert_eq!(unexplained_discontinuities(&c, 4), 1);
        assert_eq!(unexplained_discontinuities(&c, 2), 2);
    }

    #[test]
    fn a_click_after_a_skipped_cycle_is_explained_before_its_xrun_note() {
        use crate::livefx::rt::FLAG_DISCONTINUITY as D;
        // Cycles every 1000 ns; the server skipped two after cycle 19 (a driver restart),
        // the click came back on cycle 20, JACK's note was tied to cycle 22.
        let mut c: Vec<(u64, u32)> = (0..40)
            .map(|i| (i * 1000 + if i >= 20 { 2000 } else { 0 }, 0))
            .collect();
        c[20].1 = D;
        c[22].1 = FLAG_XRUN;
        c[35].1 = D; // no gap, no xrun, no miss before it
        assert_eq!(unexplained_discontinuities(&c, 4), 1);
        // A start 1.4 periods late is lateness, not a skipped cycle.
        let mut late: Vec<(u64, u32)> = (0..40).map(|i| (i * 1000, 0)).collect();
        late[20].0 += 400;
        late[20].1 = D;
        assert_eq!(unexplained_discontinuities(&late, 4), 1);
    }

    #[test]
    fn xruns_go_to_the_missed_cycle_before_them() {
        // Cycles every 1000 ns; cycle 3 and 6 missed.
        let mut c: Vec<(u64, u32)> = (0..10).map(|i| (i * 1000, 0)).collect();
        c[3].1 = FLAG_MISS;
        c[6].1 = FLAG_MISS;
        let got = attribute(&mut c, &[4200, 6100, 7050, 9500]);
        // 4200: cycle 3 missed just before. 6100: cycle 6 had started and missed (its
        // miss is what the server saw). 7050 and 9500: no untied miss within reach, so the
        // cycle running then.
        assert_eq!(got, vec![Some(3), Some(6), Some(7), Some(9)]);
        assert!(c[3].1 & FLAG_XRUN != 0 && c[6].1 & FLAG_XRUN != 0);
    }

    #[test]
    fn a_note_before_any_cycle_is_untied() {
        let mut c = vec![(1000u64, 0u32)];
        assert_eq!(attribute(&mut c, &[10]), vec![None]);
    }
}
