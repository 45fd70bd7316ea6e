//! `livefx-bench wake`: the clock backend's wake-up latency against cyclictest, in
//! alternating slices (clock, cyclictest, clock, …) of one run, so drift hits both; same
//! CPU, FIFO priority, interval, mlockall and /dev/cpu_dma_latency setting. Both sides
//! measure alike: sleep with `clock_nanosleep(TIMER_ABSTIME)`, read CLOCK_MONOTONIC, and
//! count now − expected in whole µs.

use crate::pmqos::{self, DmaLatency};
use crate::stats::{self, Figures, figures, median_spread, ratio};
use crate::{cyclic, trace};
use hdrhistogram::Histogram;
use std::sync::Arc;
use xrunrig::audio::{self, Cycle, Notes, Process, StreamSpec};

#[derive(clap::Args)]
pub struct Args {
    /// Slice pairs (one clock slice and one cyclictest slice each).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    slices: u32,
    /// Seconds per slice (whole seconds: cyclictest's -D).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=3600))]
    slice_secs: u64,
    /// The CPU both sides run on.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
    /// FIFO priority of both sides.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(i32).range(1..=99))]
    prio: i32,
    /// Wake-up interval in µs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    interval_us: u64,
    /// /dev/cpu_dma_latency held for the whole run, in µs, or `none`. cyclictest holds 0
    /// on its own unless told `--laptop`; here both sides get this one setting.
    #[arg(long, default_value = "0")]
    dma_latency: DmaLatency,
    /// Also split every wake-up of both sides with tracefs (timer interrupt, wake-up,
    /// on the CPU, idle state).
    #[arg(long)]
    trace: bool,
    /// Skip the `rtla timerlat` attempt.
    #[arg(long)]
    no_rtla: bool,
}

/// Records each wake-up's lateness in whole µs into a preallocated histogram.
struct WakeProbe {
    hist: Option<Histogram<u64>>,
    tx: std::sync::mpsc::Sender<Histogram<u64>>,
}

impl Process for WakeProbe {
    fn cycle(&mut self, c: &mut Cycle) -> bool {
        if let Some(h) = &mut self.hist {
            // Truncated to µs as cyclictest does; saturating: never resizes, never allocates.
            h.saturating_record(c.wake_ns.saturating_sub(c.start_ns) / 1_000);
        }
        true
    }
    fn end(&mut self) {
        if let Some(h) = self.hist.take() {
            let _ = self.tx.send(h);
        }
    }
}

/// One slice of the clock backend with nothing but the probe.
fn clock_slice(a: &Args) -> Result<Histogram<u64>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    // A 1 MHz "rate" makes the period exactly interval_us at any interval.
    let spec = StreamSpec {
        period: a.interval_us as u32,
        rate: 1_000_000,
        nperiods: 2,
        device: None,
        priority: a.prio,
        cpus: vec![a.cpu],
        period_explicit: true,
        journal: Some(xrunrig::knobs::JackPeriodJournal::shared()),
        loopback: None,
    };
    let p = WakeProbe {
        hist: Some(stats::new_us()),
        tx,
    };
    let s = audio::open(
        audio::BackendKind::Clock,
        &spec,
        Box::new(p),
        Arc::new(Notes::default()),
    )?;
    std::thread::sleep(std::time::Duration::from_secs(a.slice_secs));
    s.stop()?;
    rx.recv().map_err(|e| e.to_string())
}

fn fig_cols(f: &Figures) -> String {
    format!(
        "{:>7} {:>6.0} {:>6.0} {:>6.0} {:>7.0}",
        f.n, f.p50, f.p99, f.p999, f.max
    )
}

fn r2(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

pub fn main(a: &Args) -> i32 {
    match run(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("livefx-bench wake: {e}");
            1
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    // cyclictest -m locks its memory; this side does the same.
    let mlock = match xrunrig::sys::mlockall() {
        Ok(()) => "mlockall ok".to_string(),
        Err(e) => format!("mlockall FAILED ({e})"),
    };
    let _qos = pmqos::hold(a.dma_latency)?;
    let tracer = if a.trace {
        Some(trace::Tracer::new(a.cpu)?)
    } else {
        None
    };
    println!(
        "wake-up latency, FIFO {} on CPU {}, every {} µs; {} × ({} s clock backend, {} s cyclictest -m -q --laptop -t1 -p{} -a{} -i{} -D{}); /dev/cpu_dma_latency {}; {mlock}",
        a.prio,
        a.cpu,
        a.interval_us,
        a.slices,
        a.slice_secs,
        a.slice_secs,
        a.prio,
        a.cpu,
        a.interval_us,
        a.slice_secs,
        a.dma_latency
    );
    println!(
        "{:<5} {:<10} {:>7} {:>6} {:>6} {:>6} {:>7}   ratio clock/cyclictest",
        "slice", "side", "wakes", "p50", "p99", "p99.9", "max µs"
    );
    let (mut all_c, mut all_t) = (stats::new_us(), stats::new_us());
    let (mut r50, mut r99) = (Vec::new(), Vec::new());
    let (mut tw_c, mut tw_t) = (Vec::new(), Vec::new());
    for i in 1..=a.slices {
        if let Some(t) = &tracer {
            t.start()?;
        }
        let c = clock_slice(a).map_err(|e| format!("clock backend: {e}"))?;
        if let Some(t) = &tracer {
            tw_c.extend(trace::wakes(&t.stop()?, "livefx-clock"));
            t.start()?;
        }
        let t = cyclic::slice(a.slice_secs, a.cpu, a.prio, a.interval_us)?;
        if let Some(tr) = &tracer {
            tw_t.extend(trace::wakes(&tr.stop()?, "cyclictest"));
        }
        let (fc, ft) = (figures(&c, 1.0), figures(&t, 1.0));
        let (q50, q99) = (ratio(fc.p50, ft.p50), ratio(fc.p99, ft.p99));
        r50.extend(q50);
        r99.extend(q99);
        println!("{i:<5} {:<10} {}", "clock", fig_cols(&fc));
        println!(
            "{:<5} {:<10} {}   p50 {}  p99 {}",
            "",
            "cyclictest",
            fig_cols(&ft),
            r2(q50),
            r2(q99)
        );
        all_c.add(&c).map_err(|e| e.to_string())?;
        all_t.add(&t).map_err(|e| e.to_string())?;
    }
    let (fc, ft) = (figures(&all_c, 1.0), figures(&all_t, 1.0));
    println!("{:<5} {:<10} {}", "all", "clock", fig_cols(&fc));
    println!(
        "{:<5} {:<10} {}   p50 {}  p99 {}  p99.9 {}  max {}",
        "",
        "cyclictest",
        fig_cols(&ft),
        r2(ratio(fc.p50, ft.p50)),
        r2(ratio(fc.p99, ft.p99)),
        r2(ratio(fc.p999, ft.p999)),
        r2(ratio(fc.max, ft.max))
    );
    let ms = |v: &[f64]| {
        median_spread(v).map_or("-".into(), |(m, lo, hi)| {
            format!("{m:.2} (slices {lo:.2}–{hi:.2}, {} pairs)", v.len())
        })
    };
    println!(
        "per-slice ratio clock/cyclictest: p50 median {}; p99 median {}",
        ms(&r50),
        ms(&r99)
    );
    println!("(both sides count whole µs; this VM stalls now and then, so max varies run to run)");
    if tracer.is_some() {
        println!();
        println!("{}", trace::header());
        println!("{}", trace::row("clock", &tw_c));
        println!("{}", trace::row("cyclictest", &tw_t));
        println!(
            "(timer late: hrtimer interrupt − requested expiry, ns-exact from the event fields; the rest at the trace's 1 µs resolution)"
        );
    }
    drop(tracer);
    if !a.no_rtla {
        println!();
        rtla(a);
    }
    Ok(())
}

/// One slice of `rtla timerlat top` on the same CPU and priority, printed as rtla prints
/// it; where the kernel has no timerlat tracer, what rtla said instead.
fn rtla(a: &Args) {
    let args = [
        "timerlat".to_string(),
        "top".into(),
        "-q".into(),
        "-c".into(),
        a.cpu.to_string(),
        "-P".into(),
        format!("f:{}", a.prio),
        "-p".into(),
        a.interval_us.to_string(),
        "-d".into(),
        format!("{}s", a.slice_secs),
    ];
    println!("rtla {}:", args.join(" "));
    match std::process::Command::new("rtla").args(&args).output() {
        Err(e) => println!("  does not run: {e} (apt-get install rtla)"),
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            for l in text.lines().filter(|l| !l.trim().is_empty()).take(20) {
                println!("  {l}");
            }
            if !o.status.success() {
                let tracers = std::fs::read_to_string("/sys/kernel/tracing/available_tracers")
                    .unwrap_or_default();
                println!(
                    "  rtla exited with {}; this kernel's tracers: {} (timerlat needs CONFIG_TIMERLAT_TRACER)",
                    o.status,
                    tracers.trim()
                );
            }
        }
    }
}
