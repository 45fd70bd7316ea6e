//! `livefx-bench rss`: livefx on the clock backend, printing the resident set size after
//! 1 minute and at the end: memory must stay flat over long runs.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use xrunrig::audio::{self, StreamSpec};

#[derive(clap::Args)]
pub struct Args {
    /// How long the livefx run lasts.
    #[arg(long, default_value_t = 10)]
    minutes: u64,
    /// The livefx rig to run.
    #[arg(long, default_value = "rigs/livefx.toml")]
    rig: PathBuf,
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

pub fn main(a: &Args) -> i32 {
    let minutes = a.minutes.max(1);
    let rig_path = a.rig.display().to_string();
    let rig = match xrunrig::rig::load(&a.rig) {
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
            journal: Some(xrunrig::knobs::JackPeriodJournal::shared()),
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
