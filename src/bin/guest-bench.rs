//! Benchmark (not a test): boot-to-rig-start time and the whole pi-boost A/B plus
//! control wall time in a guest kernel.
//!
//!   cargo build && ./target/debug/guest-bench [KERNEL…]     (default debian:6.12)
//!
//! Runs `xrunrig run rigs/pi-boost-affinity.toml --profile profiles/rt-push-ipi.toml
//! --kernel K --trials 8 --variant pi --variant no-pi` with the xrunrig binary next
//! to this one (or $XRUNRIG_BIN), from the current directory (the repository root).

use clap::Parser;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

/// Boot-to-rig-start time and the PI-boost A/B + control wall time in guest kernels.
#[derive(Parser)]
#[command(name = "guest-bench")]
struct Args {
    /// Kernels as `xrunrig run --kernel` takes them.
    #[arg(value_name = "KERNEL", default_values_t = ["debian:6.12".to_string()])]
    kernels: Vec<String>,
}

fn main() {
    let kernels = Args::parse().kernels;
    let bin = std::env::var_os("XRUNRIG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .expect("own path")
                .with_file_name("xrunrig")
        });
    let mut failed = false;
    for k in &kernels {
        let out = std::env::temp_dir().join(format!("xrunrig-guest-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let t0 = Instant::now();
        let st = Command::new(&bin)
            .args([
                "run",
                "rigs/pi-boost-affinity.toml",
                "--profile",
                "profiles/rt-push-ipi.toml",
            ])
            .args([
                "--kernel",
                k,
                "--trials",
                "8",
                "--variant",
                "pi",
                "--variant",
                "no-pi",
                "--out",
            ])
            .arg(&out)
            .status();
        let wall = t0.elapsed().as_secs_f64();
        let guest = std::fs::read_to_string(out.join(results::RUN_JSON))
            .ok()
            .and_then(|t| results::run::RunDoc::from_json(&t).ok())
            .and_then(|r| r.guest);
        match (st, guest) {
            (Ok(s), Some(g)) if s.success() => {
                let or_q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
                println!();
                println!("guest-bench {k} ({}):", or_q(&g.kernel_release));
                println!(
                    "  accel {} ({}), {} vCPUs, {}",
                    or_q(&g.accel),
                    if g.emulated { "emulated" } else { "hardware" },
                    g.cpus.map_or("?".into(), |c| c.to_string()),
                    or_q(&g.boot)
                );
                println!(
                    "  boot to rig start: {:.2} s (QEMU start to the guest's ready marker)",
                    g.boot_s.unwrap_or(f64::NAN)
                );
                println!(
                    "  A/B + control, 8 trials each (32 trials, 1.5 s dwell): {wall:.1} s wall, \
                     including kernel resolution, initramfs, boot and shipping"
                );
            }
            (s, _) => {
                eprintln!("guest-bench {k}: the run failed ({s:?}); see above");
                failed = true;
            }
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    std::process::exit(i32::from(failed));
}
