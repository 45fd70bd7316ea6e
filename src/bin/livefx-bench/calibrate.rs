//! `livefx-bench calibrate`: how often `xrunrig compare` cries wolf, and whether it
//! still hears the wolf, with the run (not the trial) as the unit.
//!
//! 1. Calibration: `xrunrig calibrate` of the rig (`--calibrate-pairs` A/A pairs) into a
//!    private cache, as a user would make one before comparing one run a side.
//! 2. A/A: `--pairs` pairs of sides, each side `--runs-a-side` separate `xrunrig run`s
//!    of one rig with nothing changed between them, the sides' runs interleaved (A B A
//!    B A B, as `--boots` interleaves two kernels' boots) or, with `--order blocked`, one
//!    side after the other (A A A, then B B B: as runs on two kernels are, natively, with
//!    a reboot between).
//!    Each pair is judged three ways: one run a side (the first of each) with the
//!    calibration, one run a side without any (the largest spread measured assumed), and
//!    every run a side (`compare A1 A2 A3 -- B1 B2 B3`). Each answer is counted: worse
//!    (a false regression), better, same, inconclusive.
//! 3. A/B: `--ab-pairs` pairs the same way where every run of B runs beside a real
//!    disturbance: a FIFO 80 thread on one of the rig's CPUs that takes it for
//!    `--hog-burst` every `--hog-every` (a lock holder kept off its CPU, the seed's
//!    mechanism, made on purpose); caught = called worse. With `--b-arg`, B differs by
//!    those `xrunrig run` arguments instead of the hog.
//!
//! A/A and A/B pairs are spread evenly through the measurement, so one stopped early
//! has both in proportion. Every pair judged is appended to `--record`
//! (`record.rs`) at once; `--minutes` ends the measurement after the pair that passes
//! it, and the next one, with the same options, adds its pairs to the same file
//! (`livefx-bench table` pools them).
//!
//! Printed, not asserted; needs root (SCHED_FIFO). `--rejudge` judges the runs an
//! earlier calibrate left in `--out` again (a changed compare, the same runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// A/A pairs of sides.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pairs: u32,
    /// A/B pairs of sides, B beside the hog (0: none).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=1000))]
    ab_pairs: u32,
    /// Runs on each side of a pair.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    runs_a_side: u32,
    /// A/A pairs `xrunrig calibrate` runs first (0: no calibration).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=100))]
    calibrate_pairs: u32,
    /// Trials per setting and variant of each run.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    trials: u32,
    /// Each trial's length, as `xrunrig run --duration` takes it.
    #[arg(long, default_value = "2")]
    duration: String,
    /// The rig (a livefx rig; it runs on the clock backend unless --arg says otherwise).
    #[arg(long, default_value = "rigs/livefx.toml")]
    rig: PathBuf,
    /// The xrunrig binary (default: the one beside this bench).
    #[arg(long)]
    xrunrig: Option<PathBuf>,
    /// Where the runs and comparisons go (emptied first, unless --rejudge).
    #[arg(long, default_value = "/tmp/xrunrig-calibrate")]
    out: PathBuf,
    /// Run nothing: judge the sides an earlier calibrate left in --out again.
    #[arg(long)]
    rejudge: bool,
    /// An argument given to every `xrunrig run` and to `xrunrig calibrate` (repeatable,
    /// in order), e.g. `--arg --kernel --arg debian-src:6.12`.
    #[arg(long = "arg", allow_hyphen_values = true)]
    run_args: Vec<String>,
    /// An argument given only to B of the A/B pairs, after the `--arg`s (repeatable);
    /// with any, B differs by these and no hog runs.
    #[arg(long = "b-arg", allow_hyphen_values = true)]
    b_args: Vec<String>,
    /// How a pair's runs follow each other: interleaved (A B A B A B, as boots of two
    /// kernels are with `--boots`) or blocked (A A A, then B B B, as runs on two kernels
    /// are natively, with a reboot between).
    #[arg(long, value_enum, default_value_t = Order::Interleaved)]
    order: Order,
    /// The hog's CPU.
    #[arg(long, default_value_t = 1)]
    hog_cpu: usize,
    /// How long each hog burst spins, in ms: at least this ...
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=1000))]
    hog_burst: u64,
    /// ... and at most this (each burst drawn uniformly between the two).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    hog_burst_max: u64,
    /// A burst every this many ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    hog_every: u64,
    /// The file each judged pair is appended to (`livefx-bench table` reads it).
    #[arg(long, default_value = crate::record::DEFAULT_DATA)]
    record: PathBuf,
    /// Append nothing (a trial of the options).
    #[arg(long)]
    no_record: bool,
    /// End after the pair that passes this many minutes (0: no bound).
    #[arg(long, default_value_t = 0)]
    minutes: u64,
    /// What else the machine is doing, in words ("quiet", "builds running beside"):
    /// kept with every pair; pairs of different conditions are different rows.
    #[arg(long, default_value = "")]
    condition: String,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Order {
    Interleaved,
    Blocked,
}

/// What one `compare` answered.
#[derive(Debug, Default, Clone)]
struct Said {
    code: i32,
    answer: String,
    summary: String,
}

/// `xrunrig compare` of `a` against `b` (several runs a side after `--`), with the cache
/// `cache` (where a calibration is found, or none).
fn compare(bin: &Path, a: &[PathBuf], b: &[PathBuf], out: &Path, cache: &Path) -> Said {
    // Options first: after `--` every argument is a candidate's run.
    let mut c = Command::new(bin);
    c.arg("compare").arg("--out").arg(out).arg("--json").args(a);
    if a.len() > 1 || b.len() > 1 {
        c.arg("--");
    }
    let o = c.args(b).env("XRUNRIG_CACHE_DIR", cache).output();
    let Ok(o) = o else {
        return Said {
            code: -1,
            ..Default::default()
        };
    };
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    Said {
        code: o.status.code().unwrap_or(-1),
        answer: v["answer"].as_str().unwrap_or("?").to_string(),
        summary: v["summary"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| String::from_utf8_lossy(&o.stderr).trim().to_string()),
    }
}

/// A FIFO 80 thread on `cpu` spinning between `burst.0` and `burst.1` (drawn afresh
/// each time) every `every`, until `stop`.
fn hog(
    cpu: usize,
    burst: (Duration, Duration),
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
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now < next {
                std::thread::sleep((next - now).min(Duration::from_millis(50)));
                continue;
            }
            // Ends itself: the burst is bounded by the clock, never by another thread.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = burst.1.saturating_sub(burst.0).as_micros() as u64;
            let len = burst.0 + Duration::from_micros(x % (span + 1));
            let end = Instant::now() + len;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
            next += every;
        }
    })
}

fn base_args(a: &Args) -> Vec<String> {
    let mut v: Vec<String> = vec![
        a.rig.display().to_string(),
        "--backend".into(),
        "clock".into(),
        "--trials".into(),
        a.trials.to_string(),
        "--duration".into(),
        a.duration.clone(),
    ];
    v.extend(a.run_args.iter().cloned());
    v
}

fn run(a: &Args, bin: &Path, dir: &Path, state: &Path, b: bool) -> Result<f64, String> {
    let t = Instant::now();
    let o = Command::new(bin)
        .arg("run")
        .args(base_args(a))
        .args(if b { &a.b_args[..] } else { &[] })
        .arg("--out")
        .arg(dir)
        .arg("-q")
        .env("XRUNRIG_STATE_DIR", state)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    if o.status.success() {
        Ok(t.elapsed().as_secs_f64())
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

/// Dropout episodes of a run: its summary rows' `episodes`, summed.
fn episodes(dir: &Path) -> u64 {
    let t = std::fs::read_to_string(dir.join("summary.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
    v["rows"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["episodes"].as_u64()).sum())
        .unwrap_or(0)
}

/// One way of judging a pair, and its answers' counts.
#[derive(Default, Clone)]
struct Tally {
    pairs: u32,
    worse: u32,
    better: u32,
    same: u32,
    inconclusive: u32,
    other: u32,
}

impl Tally {
    fn add(&mut self, s: &Said) {
        self.pairs += 1;
        match s.answer.as_str() {
            "worse" => self.worse += 1,
            "better" => self.better += 1,
            "same" => self.same += 1,
            "inconclusive" => self.inconclusive += 1,
            _ => self.other += 1,
        }
    }
    fn line(&self) -> String {
        let pct = |k: u32| 100.0 * k as f64 / self.pairs.max(1) as f64;
        format!(
            "{:>3} pairs: worse {:>3} ({:>4.1} %), better {:>3}, same {:>3}, inconclusive {:>3} ({:>4.1} %){}",
            self.pairs,
            self.worse,
            pct(self.worse),
            self.better,
            self.same,
            self.inconclusive,
            pct(self.inconclusive),
            if self.other > 0 {
                format!(", {} refused or failed", self.other)
            } else {
                String::new()
            }
        )
    }
}

const WAYS: [&str; 3] = [
    "1 run a side, calibrated",
    "1 run a side, no calibration",
    "all runs a side",
];

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
    let (state, cache, no_cache) = (
        a.out.join("state"),
        a.out.join("cache"),
        a.out.join("no-cache"),
    );
    for d in [&state, &cache, &no_cache] {
        if let Err(e) = std::fs::create_dir_all(d) {
            eprintln!("livefx-bench: cannot create {}: {e}", d.display());
            return 2;
        }
    }
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700));
    let r = a.runs_a_side as usize;
    println!(
        "calibrate{}: {} A/A and {} A/B pairs of {r} run(s) a side, {}, of `xrunrig run {}` (load {} at start)",
        if a.rejudge { " (rejudging)" } else { "" },
        a.pairs,
        a.ab_pairs,
        match a.order {
            Order::Interleaved => "interleaved (A B A B ...)",
            Order::Blocked => "blocked (A A A, then B B B)",
        },
        base_args(a).join(" "),
        load()
    );
    if a.b_args.is_empty() {
        println!(
            "A/B: every run of B beside a FIFO 80 thread on CPU {} spinning {} ms every {} ms",
            a.hog_cpu, a.hog_burst, a.hog_every
        );
        println!(
            "(each burst between {} and {} ms)",
            a.hog_burst,
            a.hog_burst_max.max(a.hog_burst)
        );
    } else {
        println!("A/B: B runs with {}", a.b_args.join(" "));
    }
    let t0 = Instant::now();
    if !a.rejudge && a.calibrate_pairs > 0 {
        let o = Command::new(&bin)
            .arg("calibrate")
            .args(base_args(a))
            .args(["--pairs", &a.calibrate_pairs.to_string()])
            .arg("--out")
            .arg(a.out.join("calibration"))
            .env("XRUNRIG_STATE_DIR", &state)
            .env("XRUNRIG_CACHE_DIR", &cache)
            .output();
        match o {
            Ok(o) if o.status.success() => {
                // The runs' own tables come first; the calibration's from its header on.
                let text = String::from_utf8_lossy(&o.stdout);
                let table = text
                    .find("metric (log scale)")
                    .map_or(&text[..], |i| &text[i..]);
                println!(
                    "calibration ({} runs, {:.1} min):\n{}",
                    2 * a.calibrate_pairs,
                    t0.elapsed().as_secs_f64() / 60.0,
                    table.trim_end()
                );
            }
            Ok(o) => {
                eprintln!(
                    "livefx-bench: xrunrig calibrate exited {:?}: {}",
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr)
                );
                return 3;
            }
            Err(e) => {
                eprintln!("livefx-bench: cannot run {}: {e}", bin.display());
                return 3;
            }
        }
    }
    let part = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let version = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let uname = |flag: &str| {
        Command::new("uname")
            .arg(flag)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let (kernel, host) = (uname("-r"), uname("-n"));
    let setup = crate::record::Setup {
        rig: a.rig.display().to_string(),
        run_args: base_args(a)[1..].to_vec(),
        order: match a.order {
            Order::Interleaved => "interleaved",
            Order::Blocked => "blocked",
        }
        .into(),
        runs_a_side: a.runs_a_side,
        calibrate_pairs: a.calibrate_pairs,
        tested: "dropouts and episodes".into(),
        culprit: if a.b_args.is_empty() {
            format!(
                "every run of B beside a FIFO 80 thread on CPU {} spinning {}–{} ms every {} ms",
                a.hog_cpu, a.hog_burst, a.hog_burst_max, a.hog_every
            )
        } else {
            format!("B runs with {}", a.b_args.join(" "))
        },
        condition: a.condition.clone(),
    };
    // A/A and A/B spread evenly through the measurement (each pair at its share of its
    // kind's count), so one stopped early has both in proportion.
    let mut schedule: Vec<(f64, &str, u32)> = (0..a.pairs)
        .map(|i| ((i as f64 + 0.5) / a.pairs as f64, "A/A", i))
        .chain((0..a.ab_pairs).map(|i| ((i as f64 + 0.5) / a.ab_pairs as f64, "A/B", i)))
        .collect();
    schedule.sort_by(|x, y| x.0.total_cmp(&y.0));
    let schedule: Vec<(&str, u32)> = schedule.into_iter().map(|(_, k, i)| (k, i)).collect();
    let mut results: Vec<(&str, [Tally; 3], f64)> = vec![
        ("A/A", Default::default(), 0.0),
        ("A/B", Default::default(), 0.0),
    ];
    {
        for (kind, i) in schedule {
            if a.minutes > 0 && t0.elapsed() >= Duration::from_secs(60 * a.minutes) {
                println!(
                    "--minutes {}: ended after {:.1} min; the next run adds to {}",
                    a.minutes,
                    t0.elapsed().as_secs_f64() / 60.0,
                    a.record.display()
                );
                break;
            }
            let t_pair = Instant::now();
            let load_at = load();
            let mut run_seconds = Vec::new();
            let slot = usize::from(kind == "A/B");
            let t = &mut results[slot].1;
            let tag = format!("{}{i:02}", if kind == "A/A" { "aa" } else { "ab" });
            let side = |s: &str| -> Vec<PathBuf> {
                (1..=r)
                    .map(|j| a.out.join(format!("{tag}-{s}{j}")))
                    .collect()
            };
            let (da, db) = (side("a"), side("b"));
            // Which side runs first alternates from pair to pair, so drift over the
            // benchmark falls on both alike; within a pair the runs alternate side by
            // side (interleaved) or each side's follow each other (blocked).
            let b_side = kind == "A/B";
            let (first, second) = if i % 2 == 0 {
                ((&da, false), (&db, b_side))
            } else {
                ((&db, b_side), (&da, false))
            };
            let order: Vec<(&PathBuf, bool)> = match a.order {
                Order::Blocked => first
                    .0
                    .iter()
                    .map(|d| (d, first.1))
                    .chain(second.0.iter().map(|d| (d, second.1)))
                    .collect(),
                Order::Interleaved => first
                    .0
                    .iter()
                    .zip(second.0.iter())
                    .flat_map(|(x, y)| [(x, first.1), (y, second.1)])
                    .collect(),
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
                        (
                            Duration::from_millis(a.hog_burst),
                            Duration::from_millis(a.hog_burst_max.max(a.hog_burst)),
                        ),
                        Duration::from_millis(a.hog_every),
                        stop.clone(),
                    )
                });
                let res = run(a, &bin, d, &state, is_b);
                stop.store(true, Ordering::Relaxed);
                if let Some(h) = h {
                    let _ = h.join();
                }
                match res {
                    Ok(s) => run_seconds.push(s),
                    Err(e) => {
                        eprintln!("livefx-bench: {tag}: {e}");
                        return 3;
                    }
                }
            }
            let cmp = |w: usize| a.out.join(format!("{tag}-compare-{w}"));
            for w in 0..3 {
                let _ = std::fs::remove_dir_all(cmp(w));
            }
            let said = [
                compare(&bin, &da[..1], &db[..1], &cmp(0), &cache),
                compare(&bin, &da[..1], &db[..1], &cmp(1), &no_cache),
                compare(&bin, &da, &db, &cmp(2), &cache),
            ];
            for (w, s) in said.iter().enumerate() {
                t[w].add(s);
            }
            let drops = |v: &[PathBuf]| {
                v.iter()
                    .map(|d| format!("{} in {}", dropouts(d), episodes(d)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{kind} pair {i:2}: dropouts in episodes A [{}] B [{}]; 1 calibrated: {}, 1 uncalibrated: {}, {r} a side: {}",
                drops(&da),
                drops(&db),
                said[0].answer,
                said[1].answer,
                said[2].answer,
            );
            if said.iter().any(|s| s.answer == "?") {
                for s in &said {
                    println!("    exit {}: {}", s.code, s.summary);
                }
            }
            results[slot].2 += t_pair.elapsed().as_secs_f64() / 60.0;
            if a.rejudge || a.no_record {
                continue;
            }
            let p = crate::record::Pair {
                setup: setup.clone(),
                kind: if kind == "A/A" { "aa" } else { "ab" }.into(),
                unix_time: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                part,
                xrunrig: version.clone(),
                kernel: kernel.clone(),
                host: host.clone(),
                load: load_at,
                dropouts_a: da.iter().map(|d| dropouts(d)).collect(),
                dropouts_b: db.iter().map(|d| dropouts(d)).collect(),
                episodes_a: da.iter().map(|d| episodes(d)).collect(),
                episodes_b: db.iter().map(|d| episodes(d)).collect(),
                run_seconds,
                one_calibrated: said[0].answer.clone(),
                one_uncalibrated: said[1].answer.clone(),
                all: said[2].answer.clone(),
            };
            if let Err(e) = crate::record::append(&a.record, &p) {
                eprintln!("livefx-bench: {e}");
                return 3;
            }
        }
    }
    println!(
        "\n{:.0} min in all; load {} at the end",
        t0.elapsed().as_secs_f64() / 60.0,
        load()
    );
    for (kind, t, min) in &results {
        if t[0].pairs == 0 {
            continue;
        }
        println!("{kind} ({min:.0} min):");
        for (w, x) in t.iter().enumerate() {
            let name = if w == 2 {
                format!("{r} runs a side")
            } else {
                WAYS[w].to_string()
            };
            println!("  {name:<30} {}", x.line());
        }
    }
    0
}
