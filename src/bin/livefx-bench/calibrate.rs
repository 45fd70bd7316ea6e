//! `livefx-bench calibrate`: how often `xrunrig compare` cries wolf, and whether it
//! still hears the wolf. It makes `--pairs` A/A pairs (two separate `xrunrig run`s of
//! one rig with the same settings on the clock backend, nothing changed between them)
//! and counts how many `compare` calls a regression (or any change) at its stated error
//! rate; then, on the same budget (the same trials and durations per run), `--ab-pairs`
//! A/B pairs where B runs beside a real disturbance: a FIFO 80 thread on one of the
//! rig's CPUs that takes it for `--hog-burst` every `--hog-every` (a lock holder kept
//! off its CPU, the seed's mechanism, made on purpose), and counts how many are caught.
//! With `--contrast BIN`, another xrunrig's `compare` (e.g. one built before issue 23)
//! judges the same pairs. With `--b-arg`, B differs from A by those `xrunrig run`
//! arguments instead of the hog: e.g. the seed's A/B, unpatched against patched guest
//! kernels (`--arg --kernel --arg debian-src:6.12 --b-arg --patch --b-arg FILE`).
//! Printed, not asserted; needs root (SCHED_FIFO).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// A/A pairs (two runs each).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pairs: u32,
    /// A/B pairs, B beside the hog (0: none).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=1000))]
    ab_pairs: u32,
    /// Trials per setting and variant of each run.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    trials: u32,
    /// Each trial's length, as `xrunrig run --duration` takes it.
    #[arg(long, default_value = "3")]
    duration: String,
    /// The rig (a livefx rig; it runs on the clock backend).
    #[arg(long, default_value = "rigs/livefx.toml")]
    rig: PathBuf,
    /// The xrunrig binary (default: the one beside this bench).
    #[arg(long)]
    xrunrig: Option<PathBuf>,
    /// Another xrunrig binary whose `compare` also judges every pair, for contrast.
    #[arg(long)]
    contrast: Option<PathBuf>,
    /// Where the runs and comparisons go (emptied first, unless --rejudge).
    #[arg(long, default_value = "/tmp/xrunrig-calibrate")]
    out: PathBuf,
    /// Run nothing: judge the pairs an earlier calibrate left in --out again (a changed
    /// compare on the same recorded runs).
    #[arg(long)]
    rejudge: bool,
    /// An argument given to every `xrunrig run` (repeatable, in order), e.g. `--arg
    /// --kernel --arg debian-src:6.12`.
    #[arg(long = "arg", allow_hyphen_values = true)]
    run_args: Vec<String>,
    /// An argument given only to B of the A/B pairs, after the `--arg`s (repeatable);
    /// with any, B differs by these and no hog runs.
    #[arg(long = "b-arg", allow_hyphen_values = true)]
    b_args: Vec<String>,
    /// The hog's CPU.
    #[arg(long, default_value_t = 1)]
    hog_cpu: usize,
    /// How long each hog burst spins, in ms.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    hog_burst: u64,
    /// A burst every this many ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    hog_every: u64,
}

/// What one `compare` said: its exit code and compare.json's counts.
#[derive(Debug, Default, Clone)]
struct Said {
    code: i32,
    regressions: u64,
    improvements: u64,
    tests: Option<u64>,
    summary: String,
}

fn compare(bin: &Path, a: &Path, b: &Path, out: &Path) -> Said {
    let o = Command::new(bin)
        .args(["compare"])
        .arg(a)
        .arg(b)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .output();
    let Ok(o) = o else {
        return Said {
            code: -1,
            ..Default::default()
        };
    };
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    Said {
        code: o.status.code().unwrap_or(-1),
        regressions: v["regressions"].as_u64().unwrap_or(0),
        improvements: v["improvements"].as_u64().unwrap_or(0),
        tests: v["tests"].as_u64(),
        summary: v["summary"].as_str().unwrap_or_default().to_string(),
    }
}

/// A FIFO 80 thread on `cpu` spinning `burst` every `every`, until `stop`.
fn hog(
    cpu: usize,
    burst: Duration,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // SAFETY: plain libc calls on this thread's own attributes.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let p = libc::sched_param { sched_priority: 80 };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) != 0 {
                eprintln!("livefx-bench: the hog could not become FIFO 80 (not root?)");
            }
        }
        let mut next = Instant::now() + every;
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now < next {
                std::thread::sleep((next - now).min(Duration::from_millis(50)));
                continue;
            }
            let end = Instant::now() + burst;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
            next += every;
        }
    })
}

fn run(a: &Args, bin: &Path, dir: &Path, state: &Path, b: bool) -> Result<(), String> {
    let o = Command::new(bin)
        .arg("run")
        .arg(&a.rig)
        .args(["--backend", "clock", "--trials"])
        .arg(a.trials.to_string())
        .args(["--duration", &a.duration])
        .args(&a.run_args)
        .args(if b { &a.b_args[..] } else { &[] })
        .arg("--out")
        .arg(dir)
        .arg("-q")
        .env("XRUNRIG_STATE_DIR", state)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "xrunrig run exited {:?}: {}",
            o.status.code(),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Dropouts of a run: its summary rows' xruns or misses, summed.
fn dropouts(dir: &Path) -> u64 {
    let t = std::fs::read_to_string(dir.join("summary.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
    v["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    let m = r["misses_not_injected"]
                        .as_u64()
                        .or(r["deadline_misses"].as_u64())
                        .unwrap_or(0);
                    r["xruns"].as_u64().unwrap_or(0).max(m)
                })
                .sum()
        })
        .unwrap_or(0)
}

struct Tally {
    pairs: u32,
    regressions: u32,
    improvements: u32,
    no_verdict: u32,
    metric_calls: u64,
    tests: u64,
    contrast_regressions: u32,
    contrast_changes: u32,
}

pub fn main(a: &Args) -> i32 {
    let bin = a.xrunrig.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(|p| p.join("xrunrig")))
            .unwrap_or_else(|| PathBuf::from("xrunrig"))
    });
    if !a.rejudge {
        let _ = std::fs::remove_dir_all(&a.out);
    }
    let state = a.out.join("state");
    if let Err(e) = std::fs::create_dir_all(&state) {
        eprintln!("livefx-bench: cannot create {}: {e}", state.display());
        return 2;
    }
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700));
    println!(
        "calibrate{}: {} A/A pairs and {} A/B pairs of `xrunrig run {} --backend clock --trials {} --duration {}{}` (load {} at start)",
        if a.rejudge {
            " (rejudging recorded runs)"
        } else {
            ""
        },
        a.pairs,
        a.ab_pairs,
        a.rig.display(),
        a.trials,
        a.duration,
        a.run_args
            .iter()
            .map(|x| format!(" {x}"))
            .collect::<String>(),
        load()
    );
    if a.b_args.is_empty() {
        println!(
            "A/B: B runs beside a FIFO 80 thread on CPU {} spinning {} ms every {} ms",
            a.hog_cpu, a.hog_burst, a.hog_every
        );
    } else {
        println!("A/B: B runs with {}", a.b_args.join(" "));
    }
    let t0 = Instant::now();
    let mut results = Vec::new();
    for (kind, n) in [("A/A", a.pairs), ("A/B", a.ab_pairs)] {
        let mut t = Tally {
            pairs: 0,
            regressions: 0,
            improvements: 0,
            no_verdict: 0,
            metric_calls: 0,
            tests: 0,
            contrast_regressions: 0,
            contrast_changes: 0,
        };
        for i in 0..n {
            let tag = format!("{}{i:02}", if kind == "A/A" { "aa" } else { "ab" });
            let (da, db) = (
                a.out.join(format!("{tag}-a")),
                a.out.join(format!("{tag}-b")),
            );
            // Alternate which side runs first, so drift in the machine's load over the
            // benchmark falls on both sides alike.
            let order: [(&Path, bool); 2] = if i % 2 == 0 {
                [(&da, false), (&db, kind == "A/B")]
            } else {
                [(&db, kind == "A/B"), (&da, false)]
            };
            for (d, is_b) in order {
                if a.rejudge {
                    if !d.join("summary.json").is_file() {
                        eprintln!("livefx-bench: --rejudge: no run in {}", d.display());
                        return 2;
                    }
                    continue;
                }
                let stop = Arc::new(AtomicBool::new(false));
                let h = (is_b && a.b_args.is_empty()).then(|| {
                    hog(
                        a.hog_cpu,
                        Duration::from_millis(a.hog_burst),
                        Duration::from_millis(a.hog_every),
                        stop.clone(),
                    )
                });
                let r = run(a, &bin, d, &state, is_b);
                stop.store(true, Ordering::Relaxed);
                if let Some(h) = h {
                    let _ = h.join();
                }
                if let Err(e) = r {
                    eprintln!("livefx-bench: {tag}: {e}");
                    return 3;
                }
            }
            let cmp = a.out.join(format!("{tag}-compare"));
            let _ = std::fs::remove_dir_all(&cmp);
            let s = compare(&bin, &da, &db, &cmp);
            t.pairs += 1;
            match s.code {
                1 => t.regressions += 1,
                0 if s.improvements > 0 => t.improvements += 1,
                _ => {}
            }
            if s.tests == Some(0) {
                t.no_verdict += 1;
            }
            t.metric_calls += s.regressions + s.improvements;
            t.tests += s.tests.unwrap_or(0);
            let mut line = format!(
                "{kind} pair {i:2}: dropouts A {} B {}; compare exit {} ({} regressed, {} improved of {} tests): {}",
                dropouts(&da),
                dropouts(&db),
                s.code,
                s.regressions,
                s.improvements,
                s.tests.map_or("?".into(), |x| x.to_string()),
                s.summary
            );
            if let Some(c) = &a.contrast {
                let cmp = a.out.join(format!("{tag}-contrast"));
                let _ = std::fs::remove_dir_all(&cmp);
                let o = compare(c, &da, &db, &cmp);
                if o.code == 1 {
                    t.contrast_regressions += 1;
                }
                if o.regressions + o.improvements > 0 {
                    t.contrast_changes += 1;
                }
                line += &format!(
                    " | contrast: exit {} ({} regressed, {} improved)",
                    o.code, o.regressions, o.improvements
                );
            }
            println!("{line}");
        }
        results.push((kind, t));
    }
    println!(
        "\n{:.0} min in all; load {} at the end",
        t0.elapsed().as_secs_f64() / 60.0,
        load()
    );
    for (kind, t) in &results {
        if t.pairs == 0 {
            continue;
        }
        let pct = |k: u32| 100.0 * k as f64 / t.pairs as f64;
        println!(
            "{kind}: {}/{} pairs called a regression ({:.0} %), {} an improvement ({:.0} %), {} no verdict; {} of {} metric tests called a change",
            t.regressions,
            t.pairs,
            pct(t.regressions),
            t.improvements,
            pct(t.improvements),
            t.no_verdict,
            t.metric_calls,
            t.tests
        );
        if a.contrast.is_some() {
            println!(
                "{kind}, contrast compare: {}/{} pairs called a regression ({:.0} %), {} with any change",
                t.contrast_regressions,
                t.pairs,
                pct(t.contrast_regressions),
                t.contrast_changes
            );
        }
    }
    0
}
