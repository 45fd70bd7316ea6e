//! An output stream with a fixed period; cpal reports an underrun as an error of kind
//! `Xrun` on its worker thread and recovers by itself: we count it, never treat it as
//! fatal. Cycle times are estimated from the first callback and the frames played,
//! re-anchored after each xrun.

use super::device;
use crate::audio::stream::cpus_or_all;
use crate::audio::{Cycle, Notes, Process, Stream, StreamInfo, StreamSpec};
use crate::rig::limits::MAX_PERIOD;
use crate::sys::now_ns;
use cpal::traits::{DeviceTrait, StreamTrait};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

struct AlsaStream {
    stream: Option<cpal::Stream>,
    info: StreamInfo,
    stopping: Arc<AtomicBool>,
    ended: Arc<AtomicBool>,
}

impl Stream for AlsaStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }
    fn stop(mut self: Box<Self>) -> Result<(), String> {
        // Let the callback run `end` on its own thread, then drop the stream.
        self.stopping.store(true, Ordering::SeqCst);
        let t0 = now_ns();
        while !self.ended.load(Ordering::SeqCst) && now_ns() - t0 < 1_000_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        if let Some(s) = self.stream.take() {
            let _ = s.pause();
        }
        Ok(())
    }
}

pub(super) fn open(
    spec: &StreamSpec,
    mut process: Box<dyn Process>,
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
    let xruns = Arc::new(AtomicU32::new(0));
    let stopping = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let (rate, frames_nominal) = (spec.rate, spec.period);
    let cpus = cpus_or_all(spec);
    let sched = crate::engine::thread::Sched::fifo(spec.priority, cpus);
    let (xr, st, en) = (xruns.clone(), stopping.clone(), ended.clone());
    // Preallocated: the callback never allocates. Sized for the largest period cpal
    // may round ours up to; a callback with more frames than this plays silence past it.
    let mut mono = vec![0.0f32; MAX_PERIOD as usize];
    let silence = vec![0.0f32; MAX_PERIOD as usize];
    let mut index = 0u64;
    let mut anchor = 0u64;
    let mut frames_since_anchor = 0u64;
    // The cycle itself, on f32 samples; `build` converts to the card's format.
    let mut data_cb = move |data: &mut [f32]| {
        let wake = now_ns();
        if en.load(Ordering::Relaxed) {
            data.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        if st.load(Ordering::Relaxed) {
            process.end();
            en.store(true, Ordering::SeqCst);
            data.iter_mut().for_each(|x| *x = 0.0);
            return;
        }
        if index == 0 {
            // cpal's worker is not FIFO by default: raise and place it as the rig asks.
            let _ = crate::engine::thread::apply_current(&sched);
            process.rt_init();
        }
        let xruns_before = xr.swap(0, Ordering::Relaxed);
        if index == 0 || xruns_before > 0 {
            anchor = wake;
            frames_since_anchor = 0;
        }
        let frames = (data.len() / channels as usize).min(mono.len());
        let start = anchor + frames_since_anchor * 1_000_000_000 / rate as u64;
        frames_since_anchor += frames as u64;
        let deadline = anchor + frames_since_anchor * 1_000_000_000 / rate as u64;
        let out = &mut mono[..frames];
        out.iter_mut().for_each(|x| *x = 0.0);
        let mut c = Cycle {
            index,
            frames: frames as u32,
            start_ns: start,
            deadline_ns: deadline,
            wake_ns: wake,
            xruns_before,
            input: &silence[..frames],
            output: out,
        };
        index += 1;
        if !process.cycle(&mut c) {
            st.store(true, Ordering::Relaxed);
        }
        interleave(&mono, data, channels as usize);
    };
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
            move |data: &mut [f32], _: &cpal::OutputCallbackInfo| data_cb(data),
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
    Ok(Box::new(AlsaStream {
        stream: Some(stream),
        info: StreamInfo {
            backend: "alsa",
            rate,
            period,
            note: format!(
                "ALSA device '{}' through cpal 0.18.2, {channels} channels of {format}, period {} (asked {frames_nominal}); cycle times estimated from frames played; xruns are cpal's error callbacks, with no time of their own",
                spec.device.as_deref().unwrap_or("default"),
                granted.map_or("not reported".to_string(), |g| g.to_string()),
            ),
            clock_offset_ns: 0,
            server: Some(results::livefx::AudioServer {
                kind: "alsa".into(),
                version: None,
                library: Some(spec.device.clone().unwrap_or_else(|| "default".into())),
                period: granted,
                rate: Some(rate),
                xruns: Some(
                    "cpal's error callback (ErrorKind::Xrun: EPIPE from ALSA, recovered by \
                     cpal with prepare): counted and tied to the next cycle; cpal gives no \
                     time of its own for an xrun"
                        .into(),
                ),
            }),
        },
        stopping,
        ended,
    }))
}

/// An output stream in an integer sample format `T`: `cycle` fills a preallocated f32
/// buffer, converted sample by sample; nothing allocates in the callback. Past `scratch`
/// samples is silence, as in `interleave`.
fn build<T>(
    d: &cpal::Device,
    config: cpal::StreamConfig,
    mut cycle: impl FnMut(&mut [f32]) + Send + 'static,
    err_cb: impl FnMut(cpal::Error) + Send + 'static,
    scratch: usize,
) -> Result<cpal::Stream, cpal::Error>
where
    T: cpal::SizedSample + cpal::FromSample<f32> + 'static,
{
    let mut buf = vec![0.0f32; scratch];
    d.build_output_stream::<T, _, _>(
        config,
        move |data: &mut [T], _: &cpal::OutputCallbackInfo| {
            let n = data.len().min(buf.len());
            cycle(&mut buf[..n]);
            for (o, s) in data.iter_mut().zip(&buf[..n]) {
                *o = T::from_sample(*s);
            }
            data[n..].fill(T::EQUILIBRIUM);
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
}
