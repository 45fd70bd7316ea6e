//! Benchmark of `xrunrig report` over a large synthetic livefx results directory:
//! generates it (once) in /tmp, then times report + plots in a child process and prints
//! wall time and peak RSS (VmHWM). Printed, not asserted.
//!
//!   cargo run -p analysis --release --bin analysis-bench -- --cycles 100000000
//!
//! Also makes the synthetic inputs for development:
//!   analysis-bench --make-livefx DIR --cycles N [--trials T] [--inject-every K] [--stall-every S]
//!   analysis-bench --make-trials DIR
//!   analysis-bench --make-watch DIR
//!   analysis-bench --make-bisect DIR

use analysis::synth;
use clap::Parser;
use std::path::PathBuf;
use std::time::Instant;

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Times `xrunrig report` over a large synthetic livefx results directory, or makes
/// synthetic inputs.
#[derive(Parser)]
#[command(name = "analysis-bench")]
struct Args {
    /// Cycles to generate (underscores allowed: 100_000_000).
    #[arg(long, default_value = "10000000", value_parser = parse_count)]
    cycles: u64,
    /// Trials per setting.
    #[arg(long, default_value_t = 2)]
    trials: u32,
    /// Where the benchmark's synthetic directory lives (default /tmp/xrunrig-bench-CYCLES).
    #[arg(long, conflicts_with_all = ["make_livefx", "make_trials", "make_watch", "make_bisect", "report_only"])]
    dir: Option<PathBuf>,
    /// Write a synthetic livefx results directory into DIR and stop.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["make_trials", "report_only"])]
    make_livefx: Option<PathBuf>,
    /// Write a synthetic trials results directory into DIR and stop.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["make_watch", "report_only"])]
    make_trials: Option<PathBuf>,
    /// Write a synthetic `xrunrig watch` directory into DIR and stop.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["make_livefx", "report_only"])]
    make_watch: Option<PathBuf>,
    /// Write a synthetic `xrunrig bisect` directory into DIR and stop.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["make_livefx", "make_trials", "make_watch", "report_only"])]
    make_bisect: Option<PathBuf>,
    /// With --make-livefx: an injected overrun every K cycles.
    #[arg(long, default_value_t = 0)]
    inject_every: u64,
    /// With --make-livefx: a stall in setting B every S cycles.
    #[arg(long)]
    stall_every: Option<u64>,
    /// The timed child: report + plots over DIR (run by the benchmark itself).
    #[arg(long, value_name = "DIR", hide = true)]
    report_only: Option<PathBuf>,
}

fn parse_count(s: &str) -> Result<u64, String> {
    s.replace('_', "")
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number of cycles"))
}

fn main() {
    let a = Args::parse();
    let (cycles, trials) = (a.cycles, a.trials);
    let (inject_every, stall_every) = (a.inject_every, a.stall_every);
    if let Some(d) = a.make_bisect {
        synth::bisect::generate(&d).unwrap_or_else(|e| panic!("{e}"));
        println!("wrote a synthetic bisect directory into {}", d.display());
        return;
    }
    if let Some(d) = a.make_watch {
        synth::watch::generate(&d).unwrap_or_else(|e| panic!("{e}"));
        println!("wrote a synthetic watch directory into {}", d.display());
        return;
    }
    match (a.make_livefx, a.make_trials, a.report_only) {
        (_, Some(d), _) => {
            synth::trials::generate(&d).unwrap_or_else(|e| panic!("{e}"));
            println!("wrote synthetic trials results into {}", d.display());
        }
        (Some(d), _, _) => {
            let mut spec = synth::livefx::Spec::ab(cycles, trials);
            spec.inject_every = inject_every;
            if let Some(s) = stall_every {
                spec.settings[1].stall_every = s;
            }
            let n = synth::livefx::generate(&d, &spec).unwrap_or_else(|e| panic!("{e}"));
            println!(
                "wrote a synthetic livefx results directory with {n} cycles into {}",
                d.display()
            );
        }
        (_, _, Some(d)) => {
            let t0 = Instant::now();
            let (_, files) =
                analysis::report::write_all(&d, false).unwrap_or_else(|e| panic!("{e}"));
            let wall = t0.elapsed().as_secs_f64();
            println!(
                "report+plots: {wall:.2} s wall, peak RSS {:.1} MiB, {} files",
                vm_hwm_kib().unwrap_or(0) as f64 / 1024.0,
                files.len()
            );
        }
        _ => {
            let d = a
                .dir
                .unwrap_or_else(|| PathBuf::from(format!("/tmp/xrunrig-bench-{cycles}")));
            let stamp = d.join(".bench-cycles");
            let have = std::fs::read_to_string(&stamp)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
            let spec = synth::livefx::Spec::ab(cycles, trials);
            let expect = spec.cycles_per_trial * spec.trials as u64 * spec.settings.len() as u64;
            if have != Some(expect) {
                let _ = std::fs::remove_dir_all(&d);
                let t0 = Instant::now();
                let n = synth::livefx::generate(&d, &spec).unwrap_or_else(|e| panic!("{e}"));
                std::fs::write(&stamp, n.to_string()).unwrap_or_else(|e| panic!("{e}"));
                println!(
                    "generated {n} cycles ({:.2} GB of cycles/*.bin) in {:.1} s into {}",
                    n as f64 * 24.0 / 1e9,
                    t0.elapsed().as_secs_f64(),
                    d.display()
                );
            } else {
                println!("reusing {} ({expect} cycles)", d.display());
            }
            // A child process, so its peak RSS is the report's alone.
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .arg("--report-only")
                .arg(&d)
                .output()
                .unwrap_or_else(|e| panic!("cannot run the report child: {e}"));
            print!("{}", String::from_utf8_lossy(&out.stdout));
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            println!(
                "(page cache warm; {} CPUs)",
                std::thread::available_parallelism().map_or(1, |n| n.get())
            );
            std::process::exit(out.status.code().unwrap_or(1));
        }
    }
}
