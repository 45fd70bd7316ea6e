//! The clock backend's loopback cable: output comes back as input a fixed number of
//! frames later.

/// A delay line of `len` frames: what goes out comes back `len` frames later.
pub struct DelayLine {
    ring: Vec<f32>,
    pos: usize,
}

impl DelayLine {
    pub fn new(len: usize) -> DelayLine {
        DelayLine {
            ring: vec![0.0; len.max(1)],
            pos: 0,
        }
    }
    /// Fills `input` with what was written `len` frames ago.
    pub fn read(&self, input: &mut [f32]) {
        let n = self.ring.len();
        for (i, x) in input.iter_mut().enumerate() {
            *x = self.ring[(self.pos + i) % n];
        }
    }
    /// Stores `output` (same length as the last read) and advances.
    pub fn write(&mut self, output: &[f32]) {
        let n = self.ring.len();
        for (i, x) in output.iter().enumerate() {
            self.ring[(self.pos + i) % n] = *x;
        }
        self.pos = (self.pos + output.len()) % n;
    }
    /// Periods the device skipped: silence went out.
    pub fn skip(&mut self, frames: usize) {
        let n = self.ring.len();
        for i in 0..frames {
            self.ring[(self.pos + i) % n] = 0.0;
        }
        self.pos = (self.pos + frames) % n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_line_delays_by_its_length() {
        let mut d = DelayLine::new(6);
        let mut got = Vec::new();
        for block in 0..4 {
            let mut inp = [0.0f32; 3];
            d.read(&mut inp);
            got.extend_from_slice(&inp);
            let out: Vec<f32> = (0..3).map(|i| (block * 3 + i + 1) as f32).collect();
            d.write(&out);
        }
        assert_eq!(got, vec![0., 0., 0., 0., 0., 0., 1., 2., 3., 4., 5., 6.]);
        d.skip(3);
        let mut inp = [0.0f32; 3];
        d.read(&mut inp);
        assert_eq!(inp, [10., 11., 12.]);
    }
}
