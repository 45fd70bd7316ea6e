//! Benchmarks for livefx, printed, not asserted (needs root for SCHED_FIFO).
//!
//!   livefx-bench wake [--secs 15] [--cpu 1] [--prio 80] [--interval-us 1000]
//!       The clock backend's wake-up latency against Debian's `cyclictest` at the same
//!       priority, CPU and interval, one after the other in one run: p50, p99, max, ratio.
//!   livefx-bench rss [--minutes 10] [--rig rigs/livefx.toml]
//!       Runs livefx on the clock backend and prints the resident set size after 1 minute
//!       and at the end: memory must stay flat over long runs.

use hdrhistogram::Histogram;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use xrunrig::audio::{self, Cycle, Notes, Process, StreamSpec};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, def: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(def)
}

struct WakeProbe {
    hist: Option<Histogram<u64>>,
    tx: std::sync::mpsc::Sender<Histogram<u64>>,
}

impl Process for WakeProbe {
    fn cycle(&mut self, c: &mut Cycle) -> bool {
        if let Some(h) = &mut self.hist {
            // Bounded histogram: record never allocates.
            let _ = h.record(c.wake_ns.saturating_sub(c.start_ns).max(1));
        }
        true
    }
    fn end(&mut self) {
        if let Some(h) = self.hist.take() {
            let _ = self.tx.send(h);
        }
    }
}

/// (p50, p99, max) in µs.
type Figures = (f64, f64, f64);

fn clock_wake(
    secs: u64,
    cpu: usize,
    prio: i32,
    interval_us: u64,
) -> Result<(Figures, u64), String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let frames = (interval_us * 48_000 / 1_000_000) as u32;
    let spec = StreamSpec {
        period: frames,
        rate: 48_000,
        nperiods: 2,
        device: None,
        priority: prio,
        cpus: vec![cpu],
        period_explicit: true,
        loopback: None,
    };
    let p = WakeProbe {
        hist: Some(Histogram::new_with_bounds(1, 10_000_000_000, 3).map_err(|e| e.to_string())?),
        tx,
    };
    let s = audio::open(
        audio::BackendKind::Clock,
        &spec,
        Box::new(p),
        Arc::new(Notes::default()),
    )?;
    std::thread::sleep(std::time::Duration::from_secs(secs));
    s.stop()?;
    let h = rx.recv().map_err(|e| e.to_string())?;
    let us = |v: u64| v as f64 / 1e3;
    Ok((
        (
            us(h.value_at_quantile(0.5)),
            us(h.value_at_quantile(0.99)),
            us(h.max()),
        ),
        h.len(),
    ))
}

/// Runs cyclictest and reads its histogram (1 µs buckets) and max.
fn cyclictest(
    secs: u64,
    cpu: usize,
    prio: i32,
    interval_us: u64,
) -> Result<(Figures, u64), String> {
    let out = Command::new("cyclictest")
        .args(["-m", "-q", "-t", "1", "-h", "20000"])
        .arg(format!("-p{prio}"))
        .arg(format!("-a{cpu}"))
        .arg(format!("-i{interval_us}"))
        .arg(format!("-D{secs}"))
        .output()
        .map_err(|e| format!("cannot run cyclictest (apt-get install rt-tests): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cyclictest failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut buckets: Vec<(u64, u64)> = Vec::new();
    let mut max = None;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# Max Latencies:") {
            max = rest
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok());
        } else if !l.starts_with('#') {
            let mut it = l.split_whitespace();
            if let (Some(a), Some(b)) = (it.next(), it.next())
                && let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>())
                && b > 0
            {
                buckets.push((a, b));
            }
        }
    }
    let n: u64 = buckets.iter().map(|b| b.1).sum();
    if n == 0 {
        return Err("cyclictest printed no histogram".into());
    }
    let q = |q: f64| {
        let want = (q * n as f64).ceil() as u64;
        let mut acc = 0;
        for (v, c) in &buckets {
            acc += c;
            if acc >= want {
                return *v as f64;
            }
        }
        buckets.last().map_or(0.0, |b| b.0 as f64)
    };
    Ok(((q(0.5), q(0.99), max.unwrap_or(0) as f64), n))
}

fn wake(args: &[String]) -> i32 {
    let secs = arg(args, "--secs", 15u64);
    let cpu = arg(args, "--cpu", 1usize);
    let prio = arg(args, "--prio", 80i32);
    let iv = arg(args, "--interval-us", 1000u64);
    println!(
        "wake-up latency, FIFO {prio} on CPU {cpu}, every {iv} µs, {secs} s each (clock backend, then cyclictest -m -p{prio} -a{cpu} -i{iv} -D{secs})"
    );
    let c = match clock_wake(secs, cpu, prio, iv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("livefx-bench: clock backend: {e}");
            return 1;
        }
    };
    let t = match cyclictest(secs, cpu, prio, iv) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("livefx-bench: {e}");
            return 1;
        }
    };
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>9}",
        "", "wake-ups", "p50 µs", "p99 µs", "max µs"
    );
    for (name, ((p50, p99, max), n)) in [("clock", c), ("cyclictest", t)] {
        println!("{name:<12} {n:>9} {p50:>9.1} {p99:>9.1} {max:>9.1}");
    }
    let r = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            "-".into()
        }
    };
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>9}",
        "ratio",
        "",
        r(c.0.0, t.0.0),
        r(c.0.1, t.0.1),
        r(c.0.2, t.0.2)
    );
    println!(
        "(cyclictest buckets are 1 µs wide; this VM stalls now and then, so max varies run to run)"
    );
    0
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn rss(args: &[String]) -> i32 {
    let minutes = arg(args, "--minutes", 10u64).max(1);
    let rig_path: String = arg(args, "--rig", "rigs/livefx.toml".to_string());
    let rig = match xrunrig::rig::load(std::path::Path::new(&rig_path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("livefx-bench: {e}");
            return 2;
        }
    };
    let Some(mut cfg) = rig.livefx else {
        eprintln!("livefx-bench: {rig_path} is not a livefx rig");
        return 2;
    };
    cfg.duration_ns = minutes * 60_000_000_000;
    if let Err(e) = xrunrig::sys::mlockall() {
        eprintln!("livefx-bench: mlockall: {e}");
    }
    let params = xrunrig::livefx::trial::Params {
        kind: audio::BackendKind::Clock,
        why: "bench".into(),
        spec: StreamSpec {
            period: cfg.period,
            rate: cfg.rate,
            nperiods: cfg.nperiods,
            device: None,
            priority: cfg.callback_priority,
            cpus: cfg.callback_cpus.clone(),
            period_explicit: true,
            loopback: None,
        },
        duration_ns: cfg.duration_ns,
        inject_every: 0,
        inject_factor: 1.5,
        loopback: false,
        progress: false,
    };
    let path = std::env::temp_dir().join(format!("livefx-bench-{}.bin", std::process::id()));
    let plan = rig.variants[0].plan.clone();
    let rig_period = cfg.period;
    let p2 = path.clone();
    let before = rss_kb();
    let h = std::thread::spawn(move || {
        let o = xrunrig::livefx::trial::run(
            &cfg,
            &plan,
            &params,
            xrunrig::livefx::trial::Out {
                cycles: &p2,
                label: "rss",
                marker: None,
            },
            &AtomicBool::new(false),
            &mut |_| {},
        );
        (
            o.stats.counts.cycles,
            o.stats.counts.deadline_misses,
            o.status,
        )
    });
    println!(
        "livefx on the clock backend ({rig_path}, period {}, {minutes} min); RSS before start {before} kB",
        rig_period
    );
    let t0 = std::time::Instant::now();
    let mut at_1 = None;
    let mut last = before;
    while !h.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(200));
        // The last sample taken while the trial still runs is the "at the end" figure.
        if !h.is_finished() {
            last = rss_kb();
        }
        if at_1.is_none() && t0.elapsed().as_secs() >= 60 {
            let r = rss_kb();
            println!("RSS after 1 min: {r} kB");
            at_1 = Some(r);
        }
    }
    let end = last;
    let (cycles, misses, status) =
        h.join()
            .unwrap_or((0, 0, xrunrig::output::summary::TrialStatus::Failed));
    let _ = std::fs::remove_file(&path);
    println!(
        "RSS after {minutes} min: {end} kB ({} kB since 1 min); {cycles} cycles, {misses} misses, trial {status}",
        at_1.map_or("-".into(), |a| format!("{:+}", end as i64 - a as i64))
    );
    0
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = match args.get(1).map(String::as_str) {
        Some("wake") => wake(&args),
        Some("rss") => rss(&args),
        _ => {
            eprintln!(
                "usage: livefx-bench wake [--secs 15] [--cpu 1] [--prio 80] [--interval-us 1000]\n       livefx-bench rss [--minutes 10] [--rig rigs/livefx.toml]"
            );
            2
        }
    };
    std::process::exit(code);
}
