//! `xrunrig check` (validate without running) and `xrunrig restore`.

use crate::cli::CheckArgs;
use crate::knobs::{self};
use crate::rig::{Rig, instruments, livefx};
use crate::sys::format_cpu_set;

pub fn main(a: &CheckArgs) -> i32 {
    match check(a, &crate::sys::online_cpus()) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

/// What `xrunrig check` prints for a good rig (and profile), line by line, judged
/// against the `online` CPUs; Err: every problem found, each with its position.
pub fn check(a: &CheckArgs, online: &[usize]) -> Result<Vec<String>, String> {
    let rig = crate::rig::load(&a.rig).map_err(|e| e.to_string())?;
    if let Some(p) = &a.profile {
        knobs::profile::load(p)?;
    }
    let path = a.rig.display();
    let mut out = Vec::new();
    if let Some(c) = &rig.livefx {
        out.push(format!(
            "{path}: [livefx] ok — {} worker(s), period {}, {} Hz, backend {}, CPUs {}",
            c.workers.len(),
            c.period,
            c.rate,
            c.backend,
            format_cpu_set(&c.cpus_used())
        ));
        out.extend(livefx_threads(c));
    }
    if let Some(i) = &rig.instruments {
        out.push(format!("{path}: [instruments] ok — {}", describe(i)));
    }
    out.push(format!(
        "{path}: ok — {} thread(s), {} variant(s), {} metric(s), CPUs {}",
        rig.variants.first().map_or(0, |v| v.plan.threads.len()),
        rig.variants.len(),
        rig.metrics.len(),
        format_cpu_set(&rig.cpus_used())
    ));
    if let Err(e) = rig.check_machine(online) {
        out.push(format!("note: {e}"));
    }
    if let Some(n) = livefx_machine_note(&rig, online) {
        out.push(format!("note: {n}"));
    }
    Ok(out)
}

/// An empty list: not pinned, any online CPU.
fn cpus_or_any(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "any".into()
    } else {
        format_cpu_set(cpus)
    }
}

/// One line per thread of the audio process: where it may run.
fn livefx_threads(c: &livefx::Config) -> Vec<String> {
    let mut out = vec![format!(
        "  callback: FIFO {}, CPUs {}",
        c.callback_priority,
        cpus_or_any(&c.callback_cpus)
    )];
    for w in &c.workers {
        out.push(format!(
            "  worker {}: FIFO {}, CPUs {}{}",
            w.name,
            w.priority,
            cpus_or_any(&w.cpus),
            if w.waited { "" } else { ", not waited for" }
        ));
    }
    out
}

/// The livefx CPUs this machine lacks: `run` refuses such a rig (`livefx::run_main`).
fn livefx_machine_note(rig: &Rig, online: &[usize]) -> Option<String> {
    let c = rig.livefx.as_ref()?;
    let need = c.cpus_used();
    let missing: Vec<usize> = need
        .iter()
        .copied()
        .filter(|x| !online.contains(x))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let want = need.iter().max().map_or(1, |m| m + 1).max(4);
    Some(format!(
        "[livefx] pins threads to CPUs {} but this machine has only {} online (missing {}).\n\
         Run it in a guest kernel with enough CPUs, e.g.\n  xrunrig run {} --kernel debian:6.12 --cpus {want}",
        format_cpu_set(&need),
        format_cpu_set(online),
        format_cpu_set(&missing),
        rig.path.display()
    ))
}

/// What an `[instruments]` table turns on, in one line.
fn describe(i: &instruments::Config) -> String {
    let mut parts = Vec::new();
    if let Some(p) = &i.ipi {
        parts.push(format!(
            "IPI counters {} every {} s on CPUs {}{}",
            p.counters.join(", "),
            p.interval_ns as f64 / 1e9,
            if p.cpus.is_empty() {
                "(all online)".into()
            } else {
                format_cpu_set(&p.cpus)
            },
            if p.senders { ", senders traced" } else { "" }
        ));
    }
    if let Some(t) = &i.trace {
        parts.push(format!(
            "sched trace of {} event(s), {} metric(s)",
            t.events.len(),
            t.metrics.len()
        ));
    }
    if let Some(c) = i.cpu {
        parts.push(format!("instrument threads on CPU {c}"));
    }
    if parts.is_empty() {
        "no instrument turned on".into()
    } else {
        parts.join("; ")
    }
}

pub fn restore_main(discard: bool) -> i32 {
    knobs::restore_main(discard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn args(rig: &Path) -> CheckArgs {
        CheckArgs {
            rig: rig.to_path_buf(),
            profile: None,
        }
    }

    #[test]
    fn rejects_a_bad_instruments_table_with_its_position() {
        let rig = "[[threads]]\nname = \"a\"\npolicy = \"other\"\nsteps = [ { run = \"1 ms\" } ]\n\
                   [instruments]\ncpu = 1\n[instruments.trace]\nbuffer_kb = 1\nthreads = [\"zz\"]\n";
        let path = std::env::temp_dir().join(format!("xrunrig-check-{}.toml", std::process::id()));
        std::fs::write(&path, rig).unwrap();
        let r = check(&args(&path), &[0, 1]);
        std::fs::remove_file(&path).unwrap();
        let e = r.unwrap_err();
        let p = path.display();
        assert!(
            e.contains(&format!("{p}:8:13: buffer_kb must be 64..=1048576")),
            "{e}"
        );
        assert!(
            e.contains(&format!("{p}:9:12: no thread 'zz' in this rig; threads: a")),
            "{e}"
        );
    }

    #[test]
    fn lists_the_livefx_workers_cpus() {
        let rig = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx-push-ipi.toml");
        let out = check(&args(&rig), &[0, 1]).unwrap().join("\n");
        for want in [
            "  callback: FIFO 70, CPUs {0}",
            "  worker live.0: FIFO 60, CPUs {0}",
            "  worker live.1: FIFO 60, CPUs {2}",
            "  worker render: FIFO 10, CPUs {1,3}, not waited for",
            "[instruments] ok — sched trace of 4 event(s)",
            "note: [livefx] pins threads to CPUs {0-3} but this machine has only {0,1} online (missing {2,3})",
        ] {
            assert!(out.contains(want), "{want:?} not in:\n{out}");
        }
    }
}
