//! An output stream with a fixed period; cpal reports an underrun as an error of kind
//! `Xrun` on its worker thread and recovers by itself: we count it, never treat it as
//! fatal. Each cycle's deadline is the moment the frames already queued for the card
//! have played (`window`), from cpal's callback timestamps. With the loopback check, a
//! capture stream on the cable's other side feeds the cycle's input (`capture`).

use super::capture::{self, Capture, Input, Sink};
use super::{device, names};
use crate::audio::stream::cpus_or_all;
use crate::audio::{Cycle, Notes, Process, Stream, StreamInfo, StreamSpec};
use crate::engine::thread::Sched;
use crate::rig::limits::MAX_PERIOD;
use crate::sys::now_ns;
use cpal::traits::{DeviceTrait, StreamTrait};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

struct AlsaStream {
    stream: Option<cpal::Stream>,
    capture: Option<Capture>,
    /// The loopback ring's shortfalls (cycles whose input was silence), for `stop`.
    short: Option<Arc<AtomicU64>>,
    info: StreamInfo,
    stopping: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
}

impl Stream for AlsaStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }
    fn stop(mut self: Box<Self>) -> Result<(), String> {
        // Let the callback run `end` on its own thread, then drop the streams.
        self.stopping.store(true, Ordering::SeqCst);
        let t0 = now_ns();
        while !self.ended.load(Ordering::SeqCst) && now_ns() - t0 < 1_000_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if let Some(s) = self.stream.take() {
            let _ = s.pause();
        }
        if let Some(c) = self.capture.take() {
            let _ = c.stream.pause();
            // Both are also loopback discontinuities; this says where they came from.
            let (lost, short) = (
                c.dropped.load(Ordering::Relaxed),
                self.short.as_ref().map_or(0, |s| s.load(Ordering::Relaxed)),
            );
            if lost > 0 || short > 0 {
                eprintln!(
                    "xrunrig: ALSA loopback: {lost} captured frames found the ring full and {short} cycles found less than a period captured (each a gap the checker counts)"
                );
            }
        }
        Ok(())
    }
}

/// One callback's cycle on CLOCK_MONOTONIC, (start, deadline). cpal gives a callback no
/// deadline, but its timestamps say how much is still queued for the card when the
/// callback runs (`OutputCallbackInfo`: playback − callback, ALSA's delay): this
/// callback's frames must be written before those have played, so the deadline is
/// `wake + queued`, and the cycle began a period before it (when a period's room opened).
/// With cpal's buffer of two periods and a callback only once a period is free, `queued`
/// is at most one period, so work of more than a period from the wake misses. A stream
/// that is not running (nothing queued: the first fill; or `restarted`, the first
/// callback after cpal recovered an underrun with `prepare`, where cpal's monotonic
/// clamp of `playback` can make an empty buffer look non-empty) plays nothing until the
/// buffer is full again: the cycle gets one period from its wake.
pub(super) fn window(wake_ns: u64, queued_ns: u64, period_ns: u64, restarted: bool) -> (u64, u64) {
    let budget = if queued_ns == 0 || restarted {
        period_ns
    } else {
        queued_ns
    };
    let deadline = wake_ns + budget;
    (deadline.saturating_sub(period_ns), deadline)
}

/// The playback side's real-time part: what cpal's worker thread runs each period
/// (`cycle`), apart from cpal so it can be driven and measured without a card
/// (tests/livefx_noalloc.rs counts its allocations). Everything it touches per cycle
/// is preallocated here.
pub struct Callback {
    process: Box<dyn Process>,
    /// The loopback ring's playback end.
    input: Option<Input>,
    /// Applied from the first cycle: cpal's worker is not FIFO by itself.
    sched: Sched,
    channels: usize,
    rate: u32,
    /// Sized for the largest period cpal may round ours up to; a callback with more
    /// frames than this plays silence past it.
    mono: Vec<f32>,
    inbuf: Vec<f32>,
    index: u64,
    /// Playback underruns (cpal's error callback) and capture overruns since the last
    /// cycle.
    xruns: Arc<AtomicU32>,
    capture_xruns: Arc<AtomicU32>,
    stopping: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
}

impl Callback {
    fn new(
        process: Box<dyn Process>,
        input: Option<Input>,
        sched: Sched,
        channels: u16,
        rate: u32,
    ) -> Callback {
        Callback {
            process,
            input,
            sched,
            channels: channels.max(1) as usize,
            rate,
            mono: vec![0.0; MAX_PERIOD as usize],
            inbuf: vec![0.0; MAX_PERIOD as usize],
            index: 0,
            xruns: Arc::new(AtomicU32::new(0)),
            capture_xruns: Arc::new(AtomicU32::new(0)),
            stopping: Arc::new(AtomicBool::new(false)),
            ended: Arc::new(AtomicBool::new(false)),
        }
    }

    /// One period: `data` is cpal's interleaved buffer, `queued_ns` what cpal's
    /// timestamps say is still queued for the card (`window`).
    pub fn cycle(&mut self, data: &mut [f32], queued_ns: u64) {
        let wake = now_ns();
        if self.ended.load(Ordering::Relaxed) {
            data.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        if self.stopping.load(Ordering::Relaxed) {
            self.process.end();
            self.ended.store(true, Ordering::SeqCst);
            data.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        if self.index == 0 {
            // cpal's worker is not FIFO by default: raise and place it as the rig asks.
            let _ = crate::engine::thread::apply_current(&self.sched);
            self.process.rt_init();
        }
        // Playback underruns restart the stream (`window`); capture overruns do not.
        let played = self.xruns.swap(0, Ordering::Relaxed);
        let xruns_before = played + self.capture_xruns.swap(0, Ordering::Relaxed);
        let frames = (data.len() / self.channels).min(self.mono.len());
        let period_ns = frames as u64 * 1_000_000_000 / self.rate as u64;
        let (start, deadline) = window(wake, queued_ns, period_ns, played > 0);
        let inp = &mut self.inbuf[..frames];
        match &mut self.input {
            Some(i) => i.take(inp),
            None => inp.fill(0.0),
        }
        let out = &mut self.mono[..frames];
        out.iter_mut().for_each(|x| *x = 0.0);
        let mut c = Cycle {
            index: self.index,
            frames: frames as u32,
            start_ns: start,
            deadline_ns: deadline,
            wake_ns: wake,
            xruns_before,
            input: &self.inbuf[..frames],
            output: out,
        };
        self.index += 1;
        if !self.process.cycle(&mut c) {
            self.stopping.store(true, Ordering::Relaxed);
        }
        interleave(&self.mono, data, self.channels);
    }

    /// What cpal's error callback does with an underrun.
    pub fn xrun(&self) {
        self.xruns.fetch_add(1, Ordering::Relaxed);
    }

    /// What `Stream::stop` asks: the next cycle ends the process on this thread.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether the process has ended.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
}

/// A period in an integer sample format: `cycle` fills a preallocated f32 buffer,
/// converted sample by sample; past it is silence, as in `interleave`.
pub struct Convert {
    buf: Vec<f32>,
}

impl Convert {
    /// Room for `samples` interleaved samples a period.
    pub fn new(samples: usize) -> Convert {
        Convert {
            buf: vec![0.0; samples],
        }
    }

    pub fn run<T>(
        &mut self,
        data: &mut [T],
        queued_ns: u64,
        cycle: &mut impl FnMut(&mut [f32], u64),
    ) where
        T: cpal::SizedSample + cpal::FromSample<f32>,
    {
        let n = data.len().min(self.buf.len());
        cycle(&mut self.buf[..n], queued_ns);
        for (o, s) in data.iter_mut().zip(&self.buf[..n]) {
            *o = T::from_sample(*s);
        }
        data[n..].fill(T::EQUILIBRIUM);
    }
}

/// The backend's real-time parts connected as `open` connects them, without cpal: the
/// playback callback (reading the loopback ring when `loopback`), and the capture
/// side's sink that fills that ring. For tests that drive them as cpal's two worker
/// threads would (tests/livefx_noalloc.rs).
#[doc(hidden)]
pub fn parts(
    process: Box<dyn Process>,
    sched: Sched,
    channels: u16,
    rate: u32,
    loopback: bool,
) -> (Callback, Option<Sink>) {
    let (sink, input) = if loopback {
        let (tx, rx) = capture::ring(MAX_PERIOD as usize);
        (
            Some(Sink::new(tx, channels as usize, sched.clone())),
            Some(rx),
        )
    } else {
        (None, None)
    };
    (Callback::new(process, input, sched, channels, rate), sink)
}

pub(super) fn open(
    spec: &StreamSpec,
    process: Box<dyn Process>,
    notes: Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
    if !(1..=MAX_PERIOD).contains(&spec.period) {
        return Err(format!(
            "ALSA: period {} frames: use 1..={MAX_PERIOD}",
            spec.period
        ));
    }
    let d = device(&spec.device)?;
    let def = d
        .default_output_config()
        .map_err(|e| format!("ALSA: the device did not open: {e}"))?;
    let channels = def.channels().max(1);
    let config = cpal::StreamConfig {
        channels,
        sample_rate: spec.rate,
        buffer_size: cpal::BufferSize::Fixed(spec.period),
    };
    let (rate, frames_nominal) = (spec.rate, spec.period);
    let cpus = cpus_or_all(spec);
    let sched = crate::engine::thread::Sched::fifo(spec.priority, cpus);
    // The loopback's capture side: named in the rig, else the aloop cable's other end.
    let capture_name = match &spec.loopback {
        None => None,
        Some(lb) => Some(capture_device(
            spec.device.as_deref(),
            lb.capture.as_deref(),
        )?),
    };
    let (ring_tx, input) = match capture_name {
        Some(_) => {
            let (tx, rx) = capture::ring(MAX_PERIOD as usize);
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    let short = input.as_ref().map(|i| i.short.clone());
    // Preallocated: the callback never allocates.
    let mut cb = Callback::new(process, input, sched.clone(), channels, rate);
    let (xruns, capture_xruns) = (cb.xruns.clone(), cb.capture_xruns.clone());
    let (stopping, ended) = (cb.stopping.clone(), cb.ended.clone());
    // The cycle itself, on f32 samples; `build` converts to the card's format.
    let mut data_cb = move |data: &mut [f32], queued_ns: u64| cb.cycle(data, queued_ns);
    let (xr2, notes2) = (xruns.clone(), notes.clone());
    let err_cb = move |e: cpal::Error| match e.kind() {
        cpal::ErrorKind::Xrun => {
            xr2.fetch_add(1, Ordering::Relaxed);
        }
        cpal::ErrorKind::DeviceNotAvailable | cpal::ErrorKind::StreamInvalidated => notes2.gone(),
        _ => {}
    };
    // Cards' hw: devices often take integers only (snd-dummy: U8 and S16_LE): play in
    // the device's own default format.
    let format = def.sample_format();
    let scratch = MAX_PERIOD as usize * channels as usize;
    let stream = match format {
        cpal::SampleFormat::F32 => d.build_output_stream::<f32, _, _>(
            config,
            move |data: &mut [f32], info: &cpal::OutputCallbackInfo| {
                data_cb(data, queued_ns(info))
            },
            err_cb,
            None,
        ),
        cpal::SampleFormat::I16 => build::<i16>(&d, config, data_cb, err_cb, scratch),
        cpal::SampleFormat::I32 => build::<i32>(&d, config, data_cb, err_cb, scratch),
        cpal::SampleFormat::U8 => build::<u8>(&d, config, data_cb, err_cb, scratch),
        cpal::SampleFormat::U16 => build::<u16>(&d, config, data_cb, err_cb, scratch),
        other => {
            return Err(format!(
                "ALSA: the device's sample format {other} is not one xrunrig plays (f32, i16, i32, u8, u16)"
            ));
        }
    }
    .map_err(|e| {
        format!(
            "ALSA: cannot open a stream at {} Hz, period {frames_nominal}: {e}",
            spec.rate
        )
    })?;
    // cpal 0.18 says which period ALSA granted (set_period_size_near may round the
    // request); its callbacks then carry exactly that many frames.
    let granted = stream.buffer_size().ok();
    let period = granted.unwrap_or(frames_nominal);
    stream
        .play()
        .map_err(|e| format!("ALSA: cannot start the stream: {e}"))?;
    // Capture opens after playback (snd-aloop's capture side takes the playback's
    // format, rate and period) and starts at once; the ring absorbs which of the two
    // threads wakes first in a period.
    let capture = match (capture_name.as_deref(), ring_tx) {
        (Some(name), Some(tx)) => {
            let cd = device(&Some(name.to_string()))?;
            let cconf = cpal::StreamConfig {
                buffer_size: cpal::BufferSize::Fixed(period),
                ..config
            };
            Some(capture::open(&cd, cconf, format, tx, sched, capture_xruns)?)
        }
        _ => None,
    };
    let device_name = spec.device.as_deref().unwrap_or("default");
    Ok(Box::new(AlsaStream {
        stream: Some(stream),
        info: StreamInfo {
            backend: "alsa",
            rate,
            period,
            note: format!(
                "ALSA device '{device_name}' through cpal 0.18.2, {channels} channels of {format}, period {} (asked {frames_nominal}), buffer of 2 periods asked (cpal's, whatever --nperiods says; the size granted is not reported); deadline = callback + frames still queued (cpal's playback − callback); xruns are cpal's error callbacks, with no time of their own{}",
                granted.map_or("not reported".to_string(), |g| g.to_string()),
                capture_name.as_deref().map_or(String::new(), |c| format!(
                    "; loopback: captured on '{c}' into a ring the playback callback reads, primed at 2 periods"
                )),
            ),
            clock_offset_ns: 0,
            server: Some(results::livefx::AudioServer {
                kind: "alsa".into(),
                version: None,
                library: Some(device_name.to_string()),
                period: granted,
                rate: Some(rate),
                xruns: Some(
                    "cpal's error callback (ErrorKind::Xrun: EPIPE from ALSA, recovered by \
                     cpal with prepare; with --loopback also the capture side's overruns): \
                     counted and tied to the next cycle; cpal gives no time of its own for \
                     an xrun"
                        .into(),
                ),
                deadline: Some(DEADLINE.into()),
                unreported: Some(UNREPORTED.into()),
                capture: capture_name.clone(),
                // snd-aloop's card is named Loopback: no sound card (`no_sound_card`).
                driver: Some(format!("alsa {device_name}")),
            }),
        },
        capture,
        short,
        stopping,
        ended,
    }))
}

/// How an ALSA cycle's deadline is found, for run.json.
const DEADLINE: &str = "callback wake + the frames cpal says are still queued \
    (OutputCallbackInfo playback − callback, ALSA's delay); the cycle starts one period \
    before; a stream not running (nothing queued at the first fill, or the first callback \
    after an underrun's recovery) gets one period from the wake";

/// What cpal 0.18.2 does not report, for run.json.
const UNREPORTED: &str = "the buffer size and period count granted (cpal asks 2 periods \
    whatever --nperiods says and reports only the period), the time of an xrun (an error \
    of kind Xrun, after the fact), the subdevice opened, the hardware timestamps' clock \
    (MONOTONIC_RAW, relative to the stream's creation: only their difference is used)";

/// What cpal's timestamps say is still queued for the card, in ns.
fn queued_ns(info: &cpal::OutputCallbackInfo) -> u64 {
    let t = info.timestamp();
    t.playback.duration_since(t.callback).as_nanos() as u64
}

/// The loopback's capture device: `named` (the rig's `[livefx.loopback] capture`, an
/// ALSA name on this backend), else the snd-aloop cable's other side of `playback`.
fn capture_device(playback: Option<&str>, named: Option<&str>) -> Result<String, String> {
    if let Some(n) = named {
        return Ok(n.to_string());
    }
    let p = playback.unwrap_or("default");
    names::aloop_capture(p, names::proc_card_id)
        .map(|h| h.id())
        .ok_or_else(|| {
            format!(
                "ALSA loopback: '{p}' is not an snd-aloop card's device, so the capture side is \
                 not known: play on hw:Loopback,0 (its sound comes back on hw:Loopback,1), or \
                 name the capture device in the rig's [livefx] loopback = {{ capture = \"hw:...\" }}"
            )
        })
}

/// An output stream in an integer sample format `T` (`Convert`); nothing allocates in
/// the callback.
fn build<T>(
    d: &cpal::Device,
    config: cpal::StreamConfig,
    mut cycle: impl FnMut(&mut [f32], u64) + Send + 'static,
    err_cb: impl FnMut(cpal::Error) + Send + 'static,
    scratch: usize,
) -> Result<cpal::Stream, cpal::Error>
where
    T: cpal::SizedSample + cpal::FromSample<f32> + 'static,
{
    let mut conv = Convert::new(scratch);
    d.build_output_stream::<T, _, _>(
        config,
        move |data: &mut [T], info: &cpal::OutputCallbackInfo| {
            conv.run(data, queued_ns(info), &mut cycle)
        },
        err_cb,
        None,
    )
}

/// Copies the mono `out` buffer to every channel of cpal's interleaved `data`.
/// Frames past `mono` (cpal gave more than the buffer holds) and a torn last frame are
/// silence: the callback must never index past its preallocated buffer.
fn interleave(mono: &[f32], data: &mut [f32], channels: usize) {
    for (i, frame) in data.chunks_mut(channels.max(1)).enumerate() {
        let v = if frame.len() == channels {
            mono.get(i).copied().unwrap_or(0.0)
        } else {
            0.0
        };
        frame.fill(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cpal may hand the callback more frames than the period asked for (ALSA rounds
    /// periods up); before, every frame past the 16384-frame buffer indexed past it and
    /// panicked in the audio callback.
    #[test]
    fn interleave_never_reads_past_the_mono_buffer() {
        let mono = vec![0.5f32; 16384];
        let mut data = vec![1.0f32; 2 * 20_000];
        interleave(&mono, &mut data, 2);
        assert!(data[..2 * 16384].iter().all(|&x| x == 0.5));
        assert!(
            data[2 * 16384..].iter().all(|&x| x == 0.0),
            "frames past the buffer are silence"
        );
        let mut data = vec![1.0f32; 7];
        interleave(&[0.25, 0.75], &mut data, 3);
        assert_eq!(data, [0.25, 0.25, 0.25, 0.75, 0.75, 0.75, 0.0]);
    }

    /// 512 frames at 48 kHz.
    const P: u64 = 10_666_666;

    /// A callback that wakes with frames still queued must be done before they have
    /// played; the cycle began a period earlier. Not running (nothing queued): one period
    /// from the wake.
    #[test]
    fn the_deadline_is_when_the_queue_runs_dry() {
        let wake = 1_000_000_000;
        assert_eq!(
            window(wake, 9_000_000, P, false),
            (wake + 9_000_000 - P, wake + 9_000_000)
        );
        assert_eq!(window(5_000, 0, P, false), (5_000, 5_000 + P));
        // Right after an underrun's recovery, whatever cpal's clamped timestamps say:
        // measured in the guest, 0.6 ms "queued" in an empty, stopped buffer.
        assert_eq!(window(5_000, 630_000, P, true), (5_000, 5_000 + P));
    }

    /// The injected overrun burns 1.5 periods from the wake: whatever is queued (at most a
    /// period with cpal's two-period buffer, nothing while not running) it ends past the
    /// deadline. The estimate before (deadlines from frames played since the first
    /// callback) put them up to two periods after the wake: the first two callbacks fill
    /// the buffer back to back, so a 1.5-period burn often passed as no miss.
    #[test]
    fn a_burn_of_one_and_a_half_periods_always_misses() {
        let wake = 3_000_000_000;
        for (q, restarted) in (0..=P)
            .step_by((P / 97) as usize)
            .chain([P])
            .flat_map(|q| [(q, false), (q, true)])
        {
            let (start, deadline) = window(wake, q, P, restarted);
            assert_eq!(deadline - start, P, "a cycle is one period");
            let end = wake + (P as f64 * 1.5) as u64;
            assert!(
                end > deadline,
                "queued {q} ns: the burn ends before the deadline"
            );
        }
        // A device granting a longer buffer could queue more than 1.5 periods: then the
        // same burn is no overrun, and the deadline says so.
        let (_, d) = window(wake, 2 * P, P, false);
        assert!(d > wake + P * 3 / 2);
    }
}
