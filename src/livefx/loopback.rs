//! The loopback check: a known signal goes out, comes back in (a cable, snd-aloop, or the
//! clock backend's delay line) and is checked sample by sample. The signal is a ramp of
//! `CODES` distinct levels, so every sample says which output frame it was (modulo
//! `CODES`): the first lock gives the round-trip latency in frames, as `jack_iodelay`
//! measures it, and every later sample that is not the next code is a discontinuity — a
//! click — counted whether or not the backend reported an xrun. Runs on the RT thread:
//! no allocation.

/// Distinct levels of the ramp: the longest round trip measurable, in frames.
pub const CODES: u32 = 4096;
/// Peak level: well inside full scale, 8 LSB of 16-bit per step.
const AMP: f32 = 0.5;
/// Consecutive codes that count as locked.
pub const LOCK_RUN: u32 = 8;

#[inline]
pub fn level(code: u32) -> f32 {
    ((code as f32 + 0.5) / CODES as f32 - 0.5) * 2.0 * AMP
}

/// The code a sample carries, or None when it is not one of ours (silence, noise).
#[inline]
pub fn decode(v: f32) -> Option<u32> {
    let x = (v / (2.0 * AMP) + 0.5) * CODES as f32 - 0.5;
    let c = x.round();
    if (x - c).abs() < 0.25 && c >= 0.0 && c < CODES as f32 {
        Some(c as u32)
    } else {
        None
    }
}

#[derive(Debug, Default)]
pub struct Generator {
    n: u64,
}

impl Generator {
    pub fn fill(&mut self, out: &mut [f32]) {
        for x in out.iter_mut() {
            *x = level((self.n % CODES as u64) as u32);
            self.n += 1;
        }
    }
}

#[derive(Debug, Default)]
pub struct Checker {
    locked: bool,
    expected: u32,
    prev: Option<u32>,
    run: u32,
    frames_in: u64,
    pub discontinuities: u64,
    /// Round trip in frames, from the first lock.
    pub roundtrip: Option<u32>,
}

impl Checker {
    /// Checks one block of input; returns the discontinuities found in it.
    pub fn feed(&mut self, input: &[f32]) -> u32 {
        let mut found = 0;
        for &v in input {
            let d = decode(v);
            if self.locked {
                if d == Some(self.expected) {
                    self.expected = (self.expected + 1) % CODES;
                } else {
                    found += 1;
                    self.locked = false;
                    self.run = u32::from(d.is_some());
                }
            } else {
                self.run = match (d, self.prev) {
                    (Some(c), Some(p)) if c == (p + 1) % CODES => self.run + 1,
                    (Some(_), _) => 1,
                    (None, _) => 0,
                };
                // Before the ramp has wrapped, a code not yet played is left over
                // from an earlier run (a card's ring still holding its signal).
                let played = |c: u32| self.frames_in >= CODES as u64 || c as u64 <= self.frames_in;
                if let Some(c) = d
                    && self.run >= LOCK_RUN
                    && played(c)
                {
                    self.locked = true;
                    self.expected = (c + 1) % CODES;
                    if self.roundtrip.is_none() {
                        let i = (self.frames_in % CODES as u64) as u32;
                        self.roundtrip = Some((i + CODES - c) % CODES);
                    }
                }
            }
            self.prev = d;
            self.frames_in += 1;
        }
        self.discontinuities += found as u64;
        found
    }
    pub fn locked(&self) -> bool {
        self.locked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_16_bit() {
        for c in 0..CODES {
            let v = level(c);
            let q = (v * 32767.0).round() / 32767.0;
            assert_eq!(decode(q), Some(c));
        }
        assert_eq!(decode(0.0), None, "silence is not a code");
        assert_eq!(decode(0.9), None);
    }

    /// Output through a delay of `lat` frames, in blocks of `period`.
    fn through(
        lat: usize,
        period: usize,
        blocks: usize,
        mut mangle: impl FnMut(usize, &mut [f32]),
    ) -> Checker {
        let mut g = Generator::default();
        let mut ch = Checker::default();
        let mut line = vec![0.0f32; lat];
        let mut out = vec![0.0f32; period];
        for b in 0..blocks {
            g.fill(&mut out);
            line.extend_from_slice(&out);
            let mut inp: Vec<f32> = line.drain(..period).collect();
            mangle(b, &mut inp);
            ch.feed(&inp);
        }
        ch
    }

    #[test]
    fn clean_loop_gives_latency_and_no_clicks() {
        let c = through(384, 128, 200, |_, _| {});
        assert_eq!(c.roundtrip, Some(384));
        assert_eq!(c.discontinuities, 0);
        assert!(c.locked());
        let c = through(0, 64, 10, |_, _| {});
        assert_eq!(c.roundtrip, Some(0));
    }

    #[test]
    fn dropouts_and_repeats_are_counted_once_each() {
        // A period of silence at block 50, a repeated sample at block 100,
        // and a single flipped sample at block 150.
        let c = through(256, 128, 200, |b, inp| match b {
            50 => inp.iter_mut().for_each(|x| *x = 0.0),
            100 => inp[10] = inp[9],
            150 => inp[3] = -inp[3],
            _ => {}
        });
        assert_eq!(c.roundtrip, Some(256));
        assert_eq!(c.discontinuities, 3);
    }

    #[test]
    fn lost_frames_are_a_discontinuity() {
        let mut g = Generator::default();
        let mut ch = Checker::default();
        let mut out = vec![0.0f32; 64];
        for b in 0..20 {
            g.fill(&mut out);
            if b == 10 {
                continue; // this block never arrived: the stream jumps
            }
            ch.feed(&out);
        }
        assert_eq!(ch.discontinuities, 1);
    }

    #[test]
    fn a_stale_signal_before_ours_is_not_locked_on() {
        // The capture first replays codes 3000.. from an earlier run, then our ramp
        // arrives 512 frames in: the round trip is ours and the switch no click.
        let mut ch = Checker::default();
        let stale: Vec<f32> = (3000..3512).map(level).collect();
        ch.feed(&stale);
        assert!(!ch.locked());
        let ours: Vec<f32> = (0..1024).map(level).collect();
        ch.feed(&ours);
        assert_eq!(ch.roundtrip, Some(512));
        assert_eq!(ch.discontinuities, 0);
    }

    #[test]
    fn never_locked_reports_no_latency() {
        let mut ch = Checker::default();
        ch.feed(&[0.0; 1000]);
        assert_eq!(ch.roundtrip, None);
        assert_eq!(ch.discontinuities, 0);
    }
}
