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

/// Loopback discontinuities with no xrun and no deadline miss in the `window` cycles
/// before them (the round trip delays a dropout's arrival): the clicks nothing reported.
pub fn unexplained_discontinuities(flags: &[u32], window: usize) -> u64 {
    use super::rt::FLAG_DISCONTINUITY;
    flags
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            **f & FLAG_DISCONTINUITY != 0
                && !flags[i.saturating_sub(window)..=*i]
                    .iter()
                    .any(|g| g & (FLAG_MISS | FLAG_XRUN) != 0)
        })
        .count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clicks_after_an_xrun_are_explained_and_others_not() {
        use crate::livefx::rt::FLAG_DISCONTINUITY as D;
        let mut f = vec![0u32; 40];
        f[5] = FLAG_MISS | FLAG_XRUN;
        f[8] = D; // 3 cycles after the xrun: the dropout coming back
        f[30] = D; // nothing before it: unexplained
        assert_eq!(unexplained_discontinuities(&f, 4), 1);
        assert_eq!(unexplained_discontinuities(&f, 2), 2);
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
