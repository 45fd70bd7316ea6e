//! `xrunrig check` (validate without running) and `xrunrig restore`.

use crate::cli::CheckArgs;
use crate::knobs::{self, knob::RealIo};

pub fn main(a: &CheckArgs) -> i32 {
    let rig = match crate::rig::load(&a.rig) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return 2;
        }
    };
    if rig.kind == crate::rig::Kind::Livefx {
        match crate::livefx::config::parse(&rig) {
            Ok(c) => println!(
                "{}: [livefx] ok — {} worker(s), period {}, {} Hz, backend {}, CPUs {}",
                a.rig.display(),
                c.workers.len(),
                c.period,
                c.rate,
                c.backend,
                crate::sys::format_cpu_set(&c.cpus_used())
            ),
            Err(e) => {
                eprintln!("{e}");
                return 2;
            }
        }
    }
    if let Some(p) = &a.profile
        && let Err(e) = knobs::profile::load(p)
    {
        eprintln!("{e}");
        return 2;
    }
    println!(
        "{}: ok — {} thread(s), {} variant(s), {} metric(s), CPUs {}",
        a.rig.display(),
        rig.variants.first().map_or(0, |v| v.plan.threads.len()),
        rig.variants.len(),
        rig.metrics.len(),
        crate::sys::format_cpu_set(&rig.cpus_used())
    );
    if let Err(e) = rig.check_machine(&crate::sys::online_cpus()) {
        println!("note: {e}");
    }
    0
}

pub fn restore_main() -> i32 {
    match crate::instruments::recover() {
        Ok(lines) => {
            for l in lines {
                println!("restored tracing state: {l}");
            }
        }
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return 1;
        }
    }
    match knobs::recover(&RealIo, &knobs::state_dir()) {
        Ok(None) => {
            println!(
                "nothing to restore: no journal in {}",
                knobs::state_dir().display()
            );
            0
        }
        Ok(Some((j, lines))) => {
            println!(
                "restored what run pid {} (started {}) left behind:",
                j.pid, j.started
            );
            for l in lines {
                println!("  {l}");
            }
            0
        }
        Err(e) => {
            eprintln!("xrunrig: {e}");
            1
        }
    }
}
