//! The built-in clock backend: one FIFO thread waking on absolute `clock_nanosleep`
//! periods, the embedded default where no sound device exists. A callback that runs past
//! the next period's start makes it skip the periods it missed, as a device underruns:
//! those skipped periods are its xruns. With loopback, a delay line stands in for the
//! cable: the output comes back as input `clock_latency` frames later, and skipped
//! periods come back as silence.

use super::{Cycle, Notes, Process, Stream, StreamInfo, StreamSpec};
use crate::engine::thread::{Sched, apply_current};
use crate::sys::now_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Start of period `k` after `t0`, without accumulating rounding error.
pub fn period_start(t0: u64, k: u64, frames: u32, rate: u32) -> u64 {
    t0 + (k as u128 * frames as u128 * 1_000_000_000 / rate as u128) as u64
}

/// Sleeps until CLOCK_MONOTONIC reaches `t_ns` (absolute, so lateness does not drift).
pub fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// The first period after `end` that has not started yet, given the period that
/// should have come next; returns it and how many periods were skipped.
pub fn next_period(t0: u64, next: u64, end: u64, frames: u32, rate: u32) -> (u64, u64) {
    if end <= period_start(t0, next, frames, rate) {
        return (next, 0);
    }
    let elapsed = (end - t0) as u128 * rate as u128 / (frames as u128 * 1_000_000_000);
    let k = (elapsed as u64 + 1).max(next + 1);
    (k, k - next)
}

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

struct ClockStream {
    info: StreamInfo,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Stream for ClockStream {
    fn info(&self) -> &StreamInfo {
        &self.info
    }
    fn stop(mut self: Box<Self>) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take().map(|h| h.join()) {
            Some(Err(_)) => Err("the clock thread panicked".into()),
            _ => Ok(()),
        }
    }
}

pub fn open(
    spec: &StreamSpec,
    mut process: Box<dyn Process>,
    _notes: Arc<Notes>,
) -> Result<Box<dyn Stream>, String> {
    if spec.period == 0 || spec.rate == 0 {
        return Err("the clock backend needs a period and a rate above 0".into());
    }
    let period_ns = spec.period as u64 * 1_000_000_000 / spec.rate as u64;
    if period_ns > 1_000_000_000 {
        return Err(format!(
            "period {} frames at {} Hz is over a second: choose a shorter period",
            spec.period, spec.rate
        ));
    }
    let latency = spec
        .loopback
        .as_ref()
        .map(|l| l.clock_latency.max(spec.period) as usize);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<Result<(), String>>();
    // Unpinned means any online CPU: the thread would otherwise inherit the control
    // thread's pin.
    let cpus = if spec.cpus.is_empty() {
        crate::sys::online_cpus()
    } else {
        spec.cpus.clone()
    };
    let sched = Sched::fifo(spec.priority, cpus);
    let (frames, rate) = (spec.period, spec.rate);
    let stop2 = stop.clone();
    let handle = std::thread::Builder::new()
        .name("livefx-clock".into())
        .spawn(move || {
            // Preallocated before the first period: nothing below allocates.
            let mut input = vec![0.0f32; frames as usize];
            let mut output = vec![0.0f32; frames as usize];
            let mut delay = latency.map(DelayLine::new);
            if let Err(e) = apply_current(&sched) {
                let _ = tx.send(Err(e));
                return;
            }
            let _ = tx.send(Ok(()));
            drop(tx);
            process.rt_init();
            let t0 = now_ns() + 2 * period_ns;
            let (mut k, mut index, mut xruns_before) = (0u64, 0u64, 0u32);
            while !stop2.load(Ordering::Relaxed) {
                let start = period_start(t0, k, frames, rate);
                sleep_until(start);
                let wake = now_ns();
                if let Some(d) = &delay {
                    d.read(&mut input);
                }
                output.iter_mut().for_each(|x| *x = 0.0);
                let mut c = Cycle {
                    index,
                    frames,
                    start_ns: start,
                    deadline_ns: period_start(t0, k + 1, frames, rate),
                    wake_ns: wake,
                    xruns_before,
                    input: &input,
                    output: &mut output,
                };
                let go_on = process.cycle(&mut c);
                if let Some(d) = &mut delay {
                    d.write(&output);
                }
                if !go_on {
                    break;
                }
                let (next, skipped) = next_period(t0, k + 1, now_ns(), frames, rate);
                if let Some(d) = &mut delay {
                    d.skip(skipped as usize * frames as usize);
                }
                xruns_before = skipped.min(u32::MAX as u64) as u32;
                k = next;
                index += 1;
            }
            process.end();
        })
        .map_err(|e| format!("cannot start the clock thread: {e}"))?;
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = handle.join();
            return Err(format!("clock backend: {e}"));
        }
        Err(_) => {
            let _ = handle.join();
            return Err("clock backend: the thread ended before starting".into());
        }
    }
    Ok(Box::new(ClockStream {
        info: StreamInfo {
            backend: "clock",
            rate,
            period: frames,
            note: format!(
                "FIFO {} thread on absolute clock_nanosleep periods{}; xruns are periods skipped after an overrun",
                spec.priority,
                if spec.cpus.is_empty() {
                    String::new()
                } else {
                    format!(", CPUs {}", crate::sys::format_cpu_set(&spec.cpus))
                }
            ),
            clock_offset_ns: 0,
        },
        stop,
        handle: Some(handle),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_do_not_drift() {
        // 256 frames at 48 kHz is 5333333.33 ns: 3 periods must be 16 ms exactly.
        assert_eq!(period_start(0, 3, 256, 48000), 16_000_000);
        assert_eq!(period_start(10, 1, 48, 48000), 1_000_010);
    }

    #[test]
    fn overrun_skips_the_missed_periods() {
        // Period 1 ms. Ending before period 1 starts: no skip.
        assert_eq!(next_period(0, 1, 900_000, 48, 48000), (1, 0));
        // Ending at 1.5 ms: period 1 was missed; next is 2, one skipped.
        assert_eq!(next_period(0, 1, 1_500_000, 48, 48000), (2, 1));
        // Ending at 3.2 ms when 1 was next: 1, 2, 3 missed; next is 4.
        assert_eq!(next_period(0, 1, 3_200_000, 48, 48000), (4, 3));
    }

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

    struct Count {
        n: Arc<std::sync::atomic::AtomicU64>,
        late: Arc<std::sync::atomic::AtomicU64>,
    }
    impl Process for Count {
        fn cycle(&mut self, c: &mut Cycle) -> bool {
            assert!(c.deadline_ns > c.start_ns);
            self.late
                .fetch_max(c.wake_ns.saturating_sub(c.start_ns), Ordering::Relaxed);
            self.n.fetch_add(1, Ordering::Relaxed) < 49
        }
    }

    #[test]
    fn clock_stream_runs_periods() {
        let _g = crate::engine::test_lock();
        let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let late = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let spec = StreamSpec {
            period: 48,
            rate: 48000,
            nperiods: 2,
            device: None,
            priority: 10,
            cpus: vec![],
            period_explicit: true,
            loopback: None,
        };
        if !crate::sys::is_root() {
            eprintln!("skipped: SCHED_FIFO needs root");
            return;
        }
        let t0 = now_ns();
        let s = open(
            &spec,
            Box::new(Count {
                n: n.clone(),
                late: late.clone(),
            }),
            Arc::new(Notes::default()),
        )
        .unwrap();
        while n.load(Ordering::Relaxed) < 50 && now_ns() - t0 < 5_000_000_000 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        s.stop().unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 50);
        // 50 periods of 1 ms: at least 49 ms must have passed.
        assert!(now_ns() - t0 >= 49_000_000);
    }
}
