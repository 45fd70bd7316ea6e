//! ALSA through cpal 0.18.2 (pinned: cpal's xrun reporting has changed across releases).
//! An output stream with a fixed period; cpal reports an underrun as an error of kind
//! `Xrun` on its worker thread and recovers by itself: we count it, never treat it as
//! fatal. Cycle times are estimated from the first callback and the frames played,
//! re-anchored after each xrun. The loopback check needs capture too: use JACK on the
//! card for that (this backend plays only).

use super::{Cycle, Notes, Process, Stream, StreamInfo, StreamSpec};
use crate::sys::now_ns;
use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

fn host() -> Result<cpal::Host, String> {
    cpal::host_from_id(cpal::HostId::Alsa).map_err(|e| format!("ALSA host unavailable: {e}"))
}

/// The named device (e.g. `hw:1`, `default`) or ALSA's default.
fn device(name: &Option<String>) -> Result<cpal::Device, String> {
    let h = host()?;
    match name {
        None => h
            .default_output_device()
            .ok_or_else(|| "ALSA has no default output device".to_string()),
        Some(n) => {
            let id: cpal::DeviceId = format!("alsa:{n}")
                .parse()
                .map_err(|e| format!("ALSA device name '{n}': {e}"))?;
            h.device_by_id(&id).ok_or_else(|| {
                format!("no ALSA device '{n}' (see `aplay -L` for names such as hw:CARD=...,DEV=0)")
            })
        }
    }
}

/// cpal lists ALSA's "default" even with no card: only opening a configuration tells.
pub fn probe(name: &Option<String>) -> Result<String, String> {
    // alsa-lib prints its own errors to stderr while it looks for a card; the reason
    // we give is enough, so they are hidden during the probe.
    let _quiet = QuietStderr::new();
    let d = device(name)?;
    let cfg = d.default_output_config().map_err(|e| {
        format!(
            "ALSA device '{}' did not open ({e})",
            name.as_deref().unwrap_or("default")
        )
    })?;
    Ok(format!(
        "ALSA device '{}' opened ({} Hz, {} channels)",
        name.as_deref().unwrap_or("default"),
        cfg.sample_rate(),
        cfg.channels()
    ))
}

/// Points fd 2 at /dev/null until dropped.
struct QuietStderr(Option<i32>);

impl QuietStderr {
    fn new() -> QuietStderr {
        // SAFETY: plain fd calls; the saved fd is restored and closed in drop.
        unsafe {
            let saved = libc::dup(2);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if saved < 0 || null < 0 {
                if saved >= 0 {
                    libc::close(saved);
                }
                if null >= 0 {
                    libc::close(null);
                }
                return QuietStderr(None);
            }
            libc::dup2(null, 2);
            libc::close(null);
            QuietStderr(Some(saved))
        }
    }
}

impl Drop for QuietStderr {
    fn drop(&mut self) {
        if let Some(fd) = self.0 {
            // SAFETY: fd is the saved stderr from new().
            unsafe {
                libc::dup2(fd, 2);
                libc::close(fd);
            }
        }
    }
}

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

pub fn open(
    spec: &StreamSpec,
    mut process: Box<dyn Process>,
    notes: Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
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
    let cpus = if spec.cpus.is_empty() {
        crate::sys::online_cpus()
    } else {
        spec.cpus.clone()
    };
    let sched = crate::engine::thread::Sched::fifo(spec.priority, cpus);
    let (xr, st, en) = (xruns.clone(), stopping.clone(), ended.clone());
    // Preallocated: the callback never allocates.
    let mut mono = vec![0.0f32; 16384];
    let silence = vec![0.0f32; 16384];
    let mut index = 0u64;
    let mut anchor = 0u64;
    let mut frames_since_anchor = 0u64;
    let data_cb = move |data: &mut [f32], _: &cpal::OutputCallbackInfo| {
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
        for (i, s) in data.iter_mut().enumerate() {
            *s = mono[i / channels as usize];
        }
    };
    let (xr2, notes2) = (xruns.clone(), notes.clone());
    let err_cb = move |e: cpal::Error| match e.kind() {
        cpal::ErrorKind::Xrun => {
            xr2.fetch_add(1, Ordering::Relaxed);
        }
        cpal::ErrorKind::DeviceNotAvailable | cpal::ErrorKind::StreamInvalidated => notes2.gone(),
        _ => {}
    };
    let stream = d
        .build_output_stream::<f32, _, _>(config, data_cb, err_cb, None)
        .map_err(|e| {
            format!(
                "ALSA: cannot open a stream at {} Hz, period {frames_nominal}: {e}",
                spec.rate
            )
        })?;
    stream
        .play()
        .map_err(|e| format!("ALSA: cannot start the stream: {e}"))?;
    Ok(Box::new(AlsaStream {
        stream: Some(stream),
        info: StreamInfo {
            backend: "alsa",
            rate,
            period: frames_nominal,
            note: format!(
                "ALSA device '{}' through cpal 0.18.2, {channels} channels; cycle times estimated from frames played",
                spec.device.as_deref().unwrap_or("default")
            ),
            clock_offset_ns: 0,
        },
        stopping,
        ended,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no card, cpal still names a default device; the probe must say it did not open.
    #[test]
    fn probe_without_a_card_says_so() {
        if std::path::Path::new("/dev/snd").exists() {
            eprintln!("skipped: this machine has sound devices");
            return;
        }
        let e = probe(&None).unwrap_err();
        assert!(
            e.contains("did not open") || e.contains("no default"),
            "{e}"
        );
    }
}
