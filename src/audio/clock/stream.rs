//! The clock stream: one FIFO thread waking on absolute `clock_nanosleep` periods. A
//! callback that runs past the next period's start makes it skip the periods it
//! missed, as a device underruns: those skipped periods are its xruns. With loopback,
//! the delay line stands in for the cable, and skipped periods come back as silence.

use super::delay::DelayLine;
use super::timing::{next_period, period_start, sleep_until};
use crate::audio::stream::cpus_or_all;
use crate::audio::{Cycle, Notes, Process, Stream, StreamInfo, StreamSpec};
use crate::engine::thread::{Sched, apply_current};
use crate::sys::now_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

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

pub(super) fn open(
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
    // Room for the one answer, so the clock thread's send never waits.
    let (tx, rx) = crossbeam::channel::bounded::<Result<(), String>>(1);
    let sched = Sched::fifo(spec.priority, cpus_or_all(spec));
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
            crate::sys::prefault_stack();
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
            server: None,
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
            journal: None,
        };
        if !crate::testkit::root() {
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
