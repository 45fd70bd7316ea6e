//! `livefx-bench floor`: what one livefx cycle costs with N workers and no plugin work:
//! the callback wakes, publishes the cycle, every worker wakes, reports done, and the
//! callback returns. That is the rig's floor at any period: plugin work comes on top.
//! The real `livefx::rt` callback and workers run on the clock backend; their per-cycle
//! records come out through the same `rtrb` queue the writer drains.

use crate::pmqos::{self, DmaLatency};
use crate::stats::{self, figures};
use std::sync::Arc;
use xrunrig::audio::{self, Notes, StreamSpec};
use xrunrig::livefx::config::WorkerCfg;
use xrunrig::livefx::rt::{FLAG_MISS, LivefxProcess, LoopResult, Rec, RtCounters, Shared, Workers};

#[derive(clap::Args)]
pub struct Args {
    /// Worker counts to measure, one row each (0: the callback alone).
    #[arg(long, value_delimiter = ',', default_value = "0,1,2,4")]
    workers: Vec<usize>,
    /// Seconds per row.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    secs: u64,
    /// The callback's CPU.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
    /// The callback's FIFO priority.
    #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(i32).range(1..=99))]
    prio: i32,
    /// The workers' FIFO priority.
    #[arg(long, default_value_t = 70, value_parser = clap::value_parser!(i32).range(1..=99))]
    worker_prio: i32,
    /// CPUs the workers are pinned to, worker i on the (i mod n)th (default: every online CPU).
    #[arg(long, value_delimiter = ',')]
    worker_cpus: Vec<usize>,
    /// The period in µs.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    period_us: u64,
    /// /dev/cpu_dma_latency held for the run, in µs, or `none`.
    #[arg(long, default_value = "0")]
    dma_latency: DmaLatency,
}

/// One row: cycles, cycle cost (wake → back), slowest worker's wake after publish, misses.
struct Row {
    cost: hdrhistogram::Histogram<u64>,
    worker_wake: hdrhistogram::Histogram<u64>,
    misses: u64,
}

fn one(a: &Args, n: usize, cpus: &[usize]) -> Result<Row, String> {
    let cfgs: Vec<WorkerCfg> = (0..n)
        .map(|i| WorkerCfg {
            name: format!("floor{i}"),
            priority: a.worker_prio,
            cpus: vec![cpus[i % cpus.len()]],
            waited: true,
            plugins: Vec::new(),
        })
        .collect();
    let sh = Shared::new(&vec![true; n], &[])?;
    let (workers, _holds) = Workers::start(sh.clone(), &cfgs)?;
    let (tx, mut rx) = rtrb::RingBuffer::<Rec>::new(1 << 16);
    let process = LivefxProcess::new(
        sh,
        tx,
        Arc::new(RtCounters::default()),
        0,
        1.0,
        false,
        Arc::new(LoopResult::default()),
    );
    let spec = StreamSpec {
        period: a.period_us as u32,
        rate: 1_000_000,
        nperiods: 2,
        device: None,
        priority: a.prio,
        cpus: vec![a.cpu],
        period_explicit: true,
        journal: Some(xrunrig::knobs::JackPeriodJournal::shared()),
        loopback: None,
    };
    let stream = match audio::open(
        audio::BackendKind::Clock,
        &spec,
        Box::new(process),
        Arc::new(Notes::default()),
    ) {
        Ok(s) => s,
        Err(e) => {
            workers.stop();
            return Err(e);
        }
    };
    let mut row = Row {
        cost: stats::new_ns(),
        worker_wake: stats::new_ns(),
        misses: 0,
    };
    let take = |rx: &mut rtrb::Consumer<Rec>, row: &mut Row| {
        while let Ok(r) = rx.pop() {
            row.cost
                .saturating_record(r.end_ns.saturating_sub(r.wake_ns));
            if n > 0 {
                row.worker_wake.saturating_record(r.max_wake_ns as u64);
            }
            row.misses += u64::from(r.flags & FLAG_MISS != 0);
        }
    };
    let end = std::time::Instant::now() + std::time::Duration::from_secs(a.secs);
    while std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
        take(&mut rx, &mut row);
    }
    let stopped = stream.stop();
    workers.stop();
    take(&mut rx, &mut row);
    stopped?;
    Ok(row)
}

pub fn main(a: &Args) -> i32 {
    if let Err(e) = xrunrig::sys::mlockall() {
        eprintln!("livefx-bench floor: mlockall failed ({e}): page faults may add to the figures");
    }
    let _qos = match pmqos::hold(a.dma_latency) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("livefx-bench floor: {e}");
            return 2;
        }
    };
    let cpus = if a.worker_cpus.is_empty() {
        xrunrig::sys::online_cpus()
    } else {
        a.worker_cpus.clone()
    };
    println!(
        "livefx cycle floor: callback FIFO {} on CPU {}, workers FIFO {} on CPUs {} (worker i on the (i mod {})th), no plugin work, period {} µs, {} s per row, /dev/cpu_dma_latency {}",
        a.prio,
        a.cpu,
        a.worker_prio,
        xrunrig::sys::format_cpu_set(&cpus),
        cpus.len(),
        a.period_us,
        a.secs,
        a.dma_latency
    );
    println!(
        "{:>7} {:>7} {:>25}   {:>30} {:>6}",
        "workers", "cycles", "cycle p50 / p99 / max µs", "last worker awake p50 / p99 µs", "misses"
    );
    for &n in &a.workers {
        match one(a, n, &cpus) {
            Ok(r) => {
                let c = figures(&r.cost, 1e3);
                let w = figures(&r.worker_wake, 1e3);
                let wake = if n == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1} / {:.1}", w.p50, w.p99)
                };
                println!(
                    "{n:>7} {:>7} {:>25}   {wake:>30} {:>6}",
                    c.n,
                    format!("{:.1} / {:.1} / {:.0}", c.p50, c.p99, c.max),
                    r.misses
                );
            }
            Err(e) => {
                eprintln!("livefx-bench floor: {n} workers: {e}");
                return 1;
            }
        }
    }
    println!(
        "(cycle: callback woken → cycle published → every worker woken and done → callback back; period-independent)"
    );
    0
}
