//! Benchmark of `xrunrig report` over a large synthetic livefx results directory:
//! generates it (once) in /tmp, then times report + plots in a child process and prints
//! wall time and peak RSS (VmHWM). Printed, not asserted.
//!
//!   cargo run -p analysis --release --bin analysis-bench -- --cycles 100000000
//!
//! Also makes the synthetic inputs for development:
//!   analysis-bench --make-livefx DIR --cycles N [--trials T] [--inject-every K] [--stall-every S]
//!   analysis-bench --make-trials DIR

use analysis::synth;
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

fn usage() -> ! {
    eprintln!(
        "usage: analysis-bench [--cycles N] [--trials T] [--dir DIR]\n       analysis-bench --make-livefx DIR [--cycles N] [--trials T] [--inject-every K] [--stall-every S]\n       analysis-bench --make-trials DIR"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut cycles: u64 = 10_000_000;
    let mut trials: u32 = 2;
    let mut dir: Option<PathBuf> = None;
    let mut mode = "bench";
    let mut inject_every = 0u64;
    let mut stall_every: Option<u64> = None;
    let mut i = 1;
    while i < args.len() {
        let val = |i: usize| args.get(i + 1).cloned().unwrap_or_else(|| usage());
        match args[i].as_str() {
            "--cycles" => cycles = val(i).replace('_', "").parse().unwrap_or_else(|_| usage()),
            "--trials" => trials = val(i).parse().unwrap_or_else(|_| usage()),
            "--inject-every" => inject_every = val(i).parse().unwrap_or_else(|_| usage()),
            "--stall-every" => stall_every = Some(val(i).parse().unwrap_or_else(|_| usage())),
            "--dir" => dir = Some(PathBuf::from(val(i))),
            "--make-livefx" => {
                mode = "make-livefx";
                dir = Some(PathBuf::from(val(i)));
            }
            "--make-trials" => {
                mode = "make-trials";
                dir = Some(PathBuf::from(val(i)));
            }
            "--report-only" => {
                mode = "report-only";
                dir = Some(PathBuf::from(val(i)));
            }
            _ => usage(),
        }
        i += 2;
    }
    match mode {
        "make-trials" => {
            let d = dir.unwrap();
            synth::trials::generate(&d).unwrap_or_else(|e| panic!("{e}"));
            println!("wrote synthetic trials results into {}", d.display());
        }
        "make-livefx" => {
            let d = dir.unwrap();
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
        "report-only" => {
            let d = dir.unwrap();
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
            let d = dir.unwrap_or_else(|| PathBuf::from(format!("/tmp/xrunrig-bench-{cycles}")));
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
