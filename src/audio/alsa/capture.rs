//! The loopback check's way back on ALSA: a cpal input stream on the capture side of the
//! cable (snd-aloop: `hw:Loopback,1,N` hears `hw:Loopback,0,N`), whose callback hands
//! channel 0 to the playback callback through an `rtrb` ring. The two are separate cpal
//! streams on separate threads (cpal has no duplex stream), so the ring is the only thing
//! they share: no lock, no allocation on either side.

use crate::engine::thread::Sched;
use cpal::traits::{DeviceTrait, StreamTrait};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Room for this many periods of captured frames: the playback side keeps one to two
/// periods queued (see `Input::take`), the rest absorbs a stalled playback thread.
const RING_PERIODS: usize = 8;

/// The running capture stream.
pub(super) struct Capture {
    pub stream: cpal::Stream,
    /// Frames the capture callback found no room for (the playback side stalled).
    pub dropped: Arc<AtomicU64>,
}

/// The playback callback's end of the ring.
pub struct Input {
    rx: rtrb::Consumer<f32>,
    /// Whether the ring held two periods since the last shortfall: consuming starts
    /// only then, so the two threads' wake-up order within a period never starves it.
    primed: bool,
    /// Cycles that found less than a period captured (their input is silence).
    pub short: Arc<AtomicU64>,
}

impl Input {
    /// Fills `dst` with the next captured frames, or silence while the ring is not
    /// primed (start, or after a shortfall: the checker then counts the gap). A ring
    /// grown past four periods (the playback side stalled while capture went on) is
    /// trimmed back to two, so the round trip does not grow without bound.
    pub fn take(&mut self, dst: &mut [f32]) {
        let n = dst.len();
        let avail = self.rx.slots();
        if !self.primed {
            if n == 0 || avail < 2 * n {
                dst.fill(0.0);
                return;
            }
            self.primed = true;
        }
        if avail < n {
            self.short.fetch_add(1, Ordering::Relaxed);
            self.primed = false;
            dst.fill(0.0);
            return;
        }
        if avail > 4 * n {
            self.skip(avail - 2 * n);
        }
        match self.rx.read_chunk(n) {
            Ok(c) => {
                let (a, b) = c.as_slices();
                dst[..a.len()].copy_from_slice(a);
                dst[a.len()..a.len() + b.len()].copy_from_slice(b);
                c.commit_all();
            }
            Err(_) => dst.fill(0.0),
        }
    }

    fn skip(&mut self, k: usize) {
        if let Ok(c) = self.rx.read_chunk(k) {
            c.commit_all();
        }
    }
}

/// A ring and its playback end, for `period` frames a cycle.
pub(super) fn ring(period: usize) -> (rtrb::Producer<f32>, Input) {
    let (tx, rx) = rtrb::RingBuffer::new(RING_PERIODS * period.max(1));
    (
        tx,
        Input {
            rx,
            primed: false,
            short: Arc::new(AtomicU64::new(0)),
        },
    )
}

/// Opens (not starts) the capture stream on `d` in the playback's `format`, channels,
/// rate and period (snd-aloop's two sides must agree). Capture xruns (overruns) are
/// counted in `xruns`, which the playback callback adds to its next cycle's.
pub(super) fn open(
    d: &cpal::Device,
    config: cpal::StreamConfig,
    format: cpal::SampleFormat,
    tx: rtrb::Producer<f32>,
    sched: Sched,
    xruns: Arc<AtomicU32>,
) -> Result<Capture, String> {
    let sink = Sink::new(tx, config.channels as usize, sched);
    let dropped = sink.dropped.clone();
    let err = move |e: cpal::Error| {
        if e.kind() == cpal::ErrorKind::Xrun {
            xruns.fetch_add(1, Ordering::Relaxed);
        }
    };
    let stream = match format {
        cpal::SampleFormat::F32 => build::<f32>(d, config, sink, err),
        cpal::SampleFormat::I16 => build::<i16>(d, config, sink, err),
        cpal::SampleFormat::I32 => build::<i32>(d, config, sink, err),
        cpal::SampleFormat::U8 => build::<u8>(d, config, sink, err),
        cpal::SampleFormat::U16 => build::<u16>(d, config, sink, err),
        other => {
            return Err(format!(
                "ALSA loopback: the capture side's sample format {other} is not one xrunrig reads"
            ));
        }
    }
    .map_err(|e| format!("ALSA loopback: cannot open the capture stream: {e}"))?;
    stream
        .play()
        .map_err(|e| format!("ALSA loopback: cannot start the capture stream: {e}"))?;
    Ok(Capture { stream, dropped })
}

/// The capture callback's state: what cpal's capture thread runs each period (`push`).
pub struct Sink {
    tx: rtrb::Producer<f32>,
    channels: usize,
    dropped: Arc<AtomicU64>,
    /// Applied once, from the first callback: cpal's thread is not FIFO by itself.
    sched: Option<Sched>,
}

impl Sink {
    pub(super) fn new(tx: rtrb::Producer<f32>, channels: usize, sched: Sched) -> Sink {
        Sink {
            tx,
            channels: channels.max(1),
            dropped: Arc::new(AtomicU64::new(0)),
            sched: Some(sched),
        }
    }

    /// Channel 0 of each interleaved frame into the ring; what finds no room is counted.
    pub fn push<T>(&mut self, data: &[T])
    where
        T: cpal::SizedSample,
        f32: cpal::FromSample<T>,
    {
        if let Some(s) = self.sched.take() {
            let _ = crate::engine::thread::apply_current(&s);
        }
        let mut lost = 0u64;
        for frame in data.chunks_exact(self.channels) {
            if self
                .tx
                .push(cpal::Sample::to_sample::<f32>(frame[0]))
                .is_err()
            {
                lost += 1;
            }
        }
        if lost > 0 {
            self.dropped.fetch_add(lost, Ordering::Relaxed);
        }
    }
}

fn build<T>(
    d: &cpal::Device,
    config: cpal::StreamConfig,
    mut sink: Sink,
    err: impl FnMut(cpal::Error) + Send + 'static,
) -> Result<cpal::Stream, cpal::Error>
where
    T: cpal::SizedSample + 'static,
    f32: cpal::FromSample<T>,
{
    d.build_input_stream::<T, _, _>(
        config,
        move |data: &[T], _: &cpal::InputCallbackInfo| sink.push(data),
        err,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(tx: &mut rtrb::Producer<f32>, from: u32, n: u32) {
        for v in from..from + n {
            tx.push(v as f32).unwrap();
        }
    }

    /// Consuming starts at two periods, takes exactly one a cycle, and a shortfall gives
    /// silence and waits for two periods again.
    #[test]
    fn the_ring_primes_takes_and_recovers() {
        let (mut tx, mut inp) = ring(4);
        let mut dst = [9.0f32; 4];
        feed(&mut tx, 0, 4);
        inp.take(&mut dst);
        assert_eq!(dst, [0.0; 4], "one period is not primed");
        feed(&mut tx, 4, 4);
        inp.take(&mut dst);
        assert_eq!(dst, [0.0, 1.0, 2.0, 3.0]);
        inp.take(&mut dst);
        assert_eq!(dst, [4.0, 5.0, 6.0, 7.0]);
        inp.take(&mut dst);
        assert_eq!(dst, [0.0; 4], "a shortfall is silence");
        assert_eq!(inp.short.load(Ordering::Relaxed), 1);
        feed(&mut tx, 8, 4);
        inp.take(&mut dst);
        assert_eq!(dst, [0.0; 4], "primed again only at two periods");
        feed(&mut tx, 12, 4);
        inp.take(&mut dst);
        assert_eq!(dst, [8.0, 9.0, 10.0, 11.0]);
    }

    /// A ring left to fill while playback stalled is trimmed to two periods.
    #[test]
    fn an_overgrown_ring_is_trimmed() {
        let (mut tx, mut inp) = ring(4);
        let mut dst = [0.0f32; 4];
        feed(&mut tx, 0, 8);
        inp.take(&mut dst);
        feed(&mut tx, 8, 20);
        inp.take(&mut dst);
        // 24 were waiting: 16 skipped, the next of the last two periods read.
        assert_eq!(dst, [20.0, 21.0, 22.0, 23.0]);
        assert_eq!(inp.rx.slots(), 4);
    }
}
