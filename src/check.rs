//! `xrunrig check` (validate without running) and `xrunrig restore`.

use crate::knobs::knob::{KNOWN_FEATURES, RealIo, close_names, known_in};
use crate::knobs::profile::{Change, Profile};
use crate::knobs::{self};
use crate::options::CheckOptions;
use crate::rig::instruments;
use crate::sys::format_cpu_set;
use std::path::{Path, PathBuf};

pub fn main(a: &CheckOptions) -> i32 {
    let online: Vec<usize> = match a.cpus {
        Some(n) => (0..n as usize).collect(),
        None => crate::sys::online_cpus(),
    };
    match check(a, &online) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            crate::exit::EXIT_REFUSED
        }
    }
}

/// What `xrunrig check` prints for a rig (and profile) that `run` would take, line by
/// line, judged against the `online` CPUs (this machine's, or a guest's with `--cpus`);
/// Err: everything `run` would refuse, each with its position or reason. Sched features
/// that cannot be read here say "cannot verify on this kernel", never "ok".
pub fn check(a: &CheckOptions, online: &[usize]) -> Result<Vec<String>, String> {
    let rig = crate::rig::load(&a.rig).map_err(|e| e.to_string())?;
    let profile = match &a.profile {
        Some(p) => Some(knobs::profile::load(p)?),
        None => None,
    };
    let guest = a.cpus.is_some();
    let path = a.rig.display();
    let mut out = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let kind = crate::kinds::of(rig.kind);
    out.extend(kind.check_lines(&rig, &path.to_string()));
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
    for m in rig.metrics.iter().filter(|m| m.end_early) {
        out.push(format!(
            "{path}: metric '{}' ends a trial once it has passed its bound ({}, end_early): \
             the trial's value is then recorded as censored there",
            m.name,
            m.bound.map(|b| b.display(&m.unit)).unwrap_or_default()
        ));
    }
    let where_ = if guest {
        format!("in a guest with {} vCPU(s) (--cpus)", online.len())
    } else {
        "on this machine".to_string()
    };
    // The CPUs, as `run` checks them (prepare's check_machine, the kind's own threads').
    if let Err(e) = rig.check_machine(online) {
        problems.push(format!("{where_}: {e}"));
    }
    if let Err(e) = kind.check_cpus(&rig, online) {
        problems.push(format!("{where_}: {e}"));
    }
    if let Some(p) = &profile {
        let (lines, bad) = feature_names(p, guest);
        out.extend(lines);
        problems.extend(bad);
        // Here: the knobs must be writable, as `run`'s preflight wants them.
        if !guest && p.changes_anything() {
            let io = RealIo;
            if let Err(e) = knobs::preflight(&io, p, crate::sys::is_root()) {
                problems.push(format!(
                    "on this machine the profile's settings cannot be applied: {e}\n\
                     (to check it for a guest kernel instead: xrunrig check {} --profile {} --cpus 4)",
                    a.rig.display(),
                    p.path.as_ref().map_or("PROFILE".into(), |x| x.display().to_string())
                ));
            }
        }
    }
    // Here: what each setting asks of this machine (an audio rig's parameters resolve
    // and a backend named answers).
    if !guest {
        let settings = match &profile {
            Some(p) => p.settings.clone(),
            None => Profile::as_is().settings,
        };
        problems.extend(kind.check_settings(&rig, &settings));
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "{}\n`xrunrig run` would refuse this {where_}; nothing was run.",
            problems.join("\n")
        ))
    }
}

/// The profile's sched feature names: present or not on this kernel when its features
/// can be read; else (and always for a guest) only whether the kernels xrunrig knows
/// have them, said as "cannot verify on this kernel". (lines, problems)
fn feature_names(p: &Profile, guest: bool) -> (Vec<String>, Vec<String>) {
    let mut names: Vec<&str> = Vec::new();
    for s in &p.settings {
        for c in &s.changes {
            if let Change::Feature(n, _) = c
                && !names.contains(&n.as_str())
            {
                names.push(n);
            }
        }
    }
    let (mut lines, mut problems) = (Vec::new(), Vec::new());
    if names.is_empty() {
        return (lines, problems);
    }
    let here = if guest {
        Err("a guest kernel's features are read in the guest".to_string())
    } else {
        knobs::features_here(&RealIo)
    };
    let known_all = || KNOWN_FEATURES.iter().flat_map(|(_, n)| n.iter().copied());
    let mean = |close: Vec<&str>| {
        if close.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", close.join(" or "))
        }
    };
    for n in names {
        match &here {
            Ok(have) if have.iter().any(|(h, _)| h == n) => lines.push(format!(
                "profile '{}': sched feature {n}: this kernel has it",
                p.name
            )),
            Ok(have) => problems.push(format!(
                "profile '{}': sched feature {n} is not known to this kernel{}",
                p.name,
                mean(close_names(n, have.iter().map(|(h, _)| h.as_str())))
            )),
            Err(why) => {
                let known = known_in(n);
                if known.is_empty() {
                    problems.push(format!(
                        "profile '{}': sched feature {n} is not a sched feature of the kernels \
                         xrunrig knows (Debian {}) and cannot be verified on this kernel \
                         ({why}){}",
                        p.name,
                        KNOWN_FEATURES
                            .iter()
                            .map(|k| k.0)
                            .collect::<Vec<_>>()
                            .join(", "),
                        mean(close_names(n, known_all()))
                    ));
                } else {
                    lines.push(format!(
                        "profile '{}': sched feature {n}: cannot verify on this kernel ({why}); \
                         Debian's {} kernel(s) have it",
                        p.name,
                        known.join(" and ")
                    ));
                }
            }
        }
    }
    (lines, problems)
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

/// `xrunrig restore [--discard]`: under the run lock, puts back what a killed run left
/// (tracing state, knobs, a JACK period), or with `discard` drops the journal, printing
/// every entry dropped.
/// `xrunrig restore [--discard [JOURNAL]]`. Each journal stands alone: a refused one is
/// reported and kept, and the others are still put back (exit 1 if any was refused).
pub fn restore_main(discard: Option<Option<PathBuf>>) -> i32 {
    let _lock = match knobs::lock::RunLock::for_run() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return 2;
        }
    };
    let dir = match knobs::state() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return 2;
        }
    };
    match discard {
        Some(only) => discard_main(&dir, only.as_deref()),
        None => restore_all(&dir),
    }
}

/// Which journals `--discard JOURNAL` names: the settings journal, or one trace journal
/// (by file name). Anything else, or a file outside the state directory, is refused.
#[derive(Debug, PartialEq)]
enum Which {
    Settings,
    Trace(String),
}

fn which_journal(state: &Path, given: &Path) -> Result<Which, String> {
    let name = given.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = given.parent().filter(|p| !p.as_os_str().is_empty());
    let in_state = match parent {
        None => true,
        Some(p) => match (p.canonicalize(), state.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
    };
    let which = if name == knobs::journal::JOURNAL_FILE {
        Some(Which::Settings)
    } else if crate::instruments::is_trace_journal_name(name) {
        Some(Which::Trace(name.to_string()))
    } else {
        None
    };
    match which {
        Some(w) if in_state => Ok(w),
        _ => Err(format!(
            "{} is not a journal in the state directory {} (journal.json, or \
             trace-journal-PID.json): name one as `xrunrig restore` printed it, or give \
             --discard alone to drop every journal",
            given.display(),
            state.display()
        )),
    }
}

fn discard_main(dir: &knobs::StateDir, only: Option<&Path>) -> i32 {
    let which = match only.map(|p| which_journal(dir.path(), p)).transpose() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return 2;
        }
    };
    let mut dropped = 0;
    if !matches!(which, Some(Which::Settings)) {
        let name = match &which {
            Some(Which::Trace(n)) => Some(n.as_str()),
            _ => None,
        };
        for l in crate::instruments::discard(name) {
            println!("discarded the trace journal {l}; nothing in it was undone");
            dropped += 1;
        }
    }
    if matches!(which, None | Some(Which::Settings)) {
        match knobs::journal::discard(dir) {
            Ok(None) => {}
            Ok(Some(lines)) => {
                dropped += 1;
                println!(
                    "discarded the settings journal {}; these values were NOT written back:",
                    knobs::journal::journal_path(dir.path()).display()
                );
                for l in lines {
                    println!("  {l}");
                }
            }
            Err(e) => {
                eprintln!("xrunrig: {e}");
                return 1;
            }
        }
    }
    if dropped == 0 {
        match only {
            Some(p) => println!(
                "nothing to discard: {} is not there (or is a live run's)",
                p.display()
            ),
            None => println!("nothing to discard: no journal in {}", dir.path().display()),
        }
    }
    0
}

fn restore_all(dir: &knobs::StateDir) -> i32 {
    let mut refused = false;
    match crate::instruments::recover() {
        Ok(lines) => {
            for l in lines {
                println!("restored tracing state: {l}");
            }
        }
        Err(e) => {
            // Reported, and the settings journal is still read: one refused journal
            // must not keep another's knobs from coming back.
            eprintln!("xrunrig: {e}");
            refused = true;
        }
    }
    match knobs::recover(&RealIo, dir) {
        Ok(None) => {
            println!(
                "no settings journal in {}: no kernel setting to put back",
                dir.path().display()
            );
        }
        Ok(Some(r)) if r.other_boot => {
            println!(
                "the journal of run pid {} (started {}) is from before the last reboot, which \
                 reset those settings: discarded, nothing written:",
                r.journal.pid, r.journal.started
            );
            for l in r.lines {
                println!("  {l}");
            }
        }
        Ok(Some(r)) => {
            println!(
                "restored what run pid {} (started {}) left behind:",
                r.journal.pid, r.journal.started
            );
            for l in r.lines {
                println!("  {l}");
            }
        }
        Err(e) => {
            eprintln!("xrunrig: {e}");
            refused = true;
        }
    }
    i32::from(refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    fn args(rig: &Path) -> CheckOptions {
        CheckOptions {
            rig: rig.to_path_buf(),
            profile: None,
            cpus: None,
        }
    }

    #[test]
    fn discard_names_only_journals_of_the_state_directory() {
        let state = std::env::temp_dir().join(format!("xrunrig-which-{}", std::process::id()));
        std::fs::create_dir_all(&state).unwrap();
        assert_eq!(
            which_journal(&state, Path::new("journal.json")),
            Ok(Which::Settings)
        );
        assert_eq!(
            which_journal(&state, &state.join("trace-journal-12.json")),
            Ok(Which::Trace("trace-journal-12.json".into()))
        );
        for bad in [
            "/etc/passwd",
            "/tmp/journal.json",
            "trace-journal-x.json",
            "",
        ] {
            let e = which_journal(&state, Path::new(bad)).unwrap_err();
            assert!(
                e.contains("not a journal in the state directory"),
                "{bad}: {e}"
            );
        }
        std::fs::remove_dir_all(&state).unwrap();
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
        let mut a = args(&rig);
        a.cpus = Some(4);
        let out = check(&a, &[0, 1, 2, 3]).unwrap().join("\n");
        for want in [
            "  callback: FIFO 70, CPUs {0}",
            "  worker live.0: FIFO 60, CPUs {0}",
            "  worker live.1: FIFO 60, CPUs {2}",
            "  worker render: FIFO 10, CPUs {1,3}, not waited for",
            "  --until-decided: a trial passes with at most 0 deadline misses (not injected)",
            "[instruments] ok — sched trace of 4 event(s)",
        ] {
            assert!(out.contains(want), "{want:?} not in:\n{out}");
        }
    }

    #[test]
    fn says_which_metric_ends_a_trial_early() {
        let rig = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rigs/pi-boost-affinity.toml");
        let mut a = args(&rig);
        a.cpus = Some(4);
        let out = check(&a, &[0, 1, 2, 3]).unwrap().join("\n");
        assert!(
            out.contains(
                "metric 'wait' ends a trial once it has passed its bound (< 100 ms, end_early)"
            ),
            "{out}"
        );
    }

    /// What `run` refuses on a 2-CPU machine, `check` refuses (it used to pass it with
    /// a note, exit 0).
    #[test]
    fn refuses_livefx_cpus_the_machine_lacks() {
        let rig = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx-push-ipi.toml");
        let e = check(&args(&rig), &[0, 1]).unwrap_err();
        assert!(
            e.contains("pins livefx threads to CPUs {2,3} but this machine has only {0,1} online"),
            "{e}"
        );
        assert!(
            e.contains("`xrunrig run` would refuse this on this machine"),
            "{e}"
        );
    }

    /// A feature name no known kernel has is refused even where features cannot be
    /// read; a known one says it cannot be verified here, never "ok".
    #[test]
    fn feature_names_are_checked_or_said_unverifiable() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let d = crate::testkit::private_dir("check-features");
        let text = std::fs::read_to_string(root.join("profiles/rt-push-ipi.toml")).unwrap();
        let bad = d.join("typo.toml");
        std::fs::write(&bad, text.replace("RT_PUSH_IPI", "RT_PUSH_IPII")).unwrap();
        let mut a = args(&root.join("rigs/livefx-push-ipi.toml"));
        a.cpus = Some(4);
        a.profile = Some(bad);
        let e = check(&a, &[0, 1, 2, 3]).unwrap_err();
        assert!(
            e.contains(
                "sched feature RT_PUSH_IPII is not a sched feature of the kernels xrunrig knows"
            ) && e.contains("did you mean RT_PUSH_IPI?"),
            "{e}"
        );
        a.profile = Some(root.join("profiles/rt-push-ipi.toml"));
        let out = check(&a, &[0, 1, 2, 3]).unwrap().join("\n");
        assert!(
            out.contains("sched feature RT_PUSH_IPI: cannot verify on this kernel"),
            "{out}"
        );
        assert!(!out.contains("RT_PUSH_IPI: ok"), "{out}");
    }
}
