//! Everything checked and decided before the first knob is touched.

use super::Prepared;
use crate::knobs::StateDir;
use crate::knobs::knob::{KnobIo, RealIo};
use crate::knobs::profile::{Profile, Setting};
use crate::knobs::{self};
use crate::options::RunOptions;
use crate::output::{self};
use crate::rig::{self};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// What `prepare` reads of the machine and where it keeps state: the live machine, or
/// (tests) a stand-in, so a refusal that depends on the machine (too few CPUs, sched
/// features locked down) is tested on any machine, not only one that lacks them.
pub struct Machine<'a> {
    pub io: &'a dyn KnobIo,
    pub online_cpus: Vec<usize>,
    pub root: bool,
    pub state: StateDir,
}

/// Loads and checks the rig and profile, restores a killed run's leftovers, and checks
/// the knobs can be written. Changes nothing except that restore, and creates no
/// directory (`Prepared::create_dir` does, after the rig kind's checks). The caller
/// holds the run lock (`knobs::lock`).
pub fn prepare(args: &RunOptions) -> Result<Prepared, String> {
    let state = knobs::state()?;
    // Tracing state a killed run left (its trace instance, a tracefs it mounted).
    crate::instruments::tracefs::warn_recovered(crate::instruments::recover());
    let m = Machine {
        io: &RealIo,
        online_cpus: crate::sys::online_cpus(),
        root: crate::sys::is_root(),
        state,
    };
    prepare_on(args, &m)
}

/// `prepare` on `m`, after the tracing state is recovered.
pub fn prepare_on(args: &RunOptions, m: &Machine) -> Result<Prepared, String> {
    let (io, state) = (m.io, &m.state);
    // The run lock is held (run.rs): a journal here is from a run that is gone.
    let changes_knobs = args.profile.is_some() && !args.settings_as_is;
    match knobs::recover(io, state) {
        Ok(None) => {}
        Ok(Some(r)) if r.other_boot => {
            eprintln!(
                "xrunrig: a settings journal from before the last reboot (run pid {}, started {}) was found; \
                 the reboot already reset those settings, so it was discarded, not replayed:",
                r.journal.pid, r.journal.started
            );
            for l in r.lines {
                eprintln!("  {l}");
            }
        }
        Ok(Some(r)) => {
            eprintln!(
                "xrunrig: a previous run (pid {}, started {}) ended without restoring its settings; restored now:",
                r.journal.pid, r.journal.started
            );
            for l in r.lines {
                eprintln!("  {l}");
            }
        }
        // A run that changes nothing may measure beside a journal it cannot restore,
        // but says so; one that would change knobs must not add to it.
        Err(e) if !changes_knobs => {
            eprintln!(
                "xrunrig: warning: {e}\nxrunrig: this run changes no kernel settings, so it goes ahead; \
                 the machine may still hold that run's settings. Runs with a profile are refused until \
                 `xrunrig restore` (or `xrunrig restore --discard`) clears the journal."
            );
        }
        Err(e) => return Err(e),
    }
    // Checks [livefx] and [instruments] too: a bad rig is refused before anything runs.
    let rig = rig::load(&args.rig).map_err(|e| e.to_string())?;
    let profile = match &args.profile {
        Some(p) => knobs::profile::load(p)?,
        None => Profile::as_is(),
    };
    let mut settings = profile.settings.clone();
    if !args.settings.is_empty() {
        for s in &args.settings {
            if !settings.iter().any(|x| &x.name == s) {
                return Err(format!(
                    "no setting '{s}' in profile '{}'; it has: {}",
                    profile.name,
                    names(settings.iter().map(|x| &x.name))
                ));
            }
        }
        settings.retain(|x| args.settings.contains(&x.name));
    }
    let mut variants: Vec<usize> = (0..rig.variants.len()).collect();
    if !args.variants.is_empty() {
        for v in &args.variants {
            if !rig.variants.iter().any(|x| &x.name == v) {
                return Err(format!(
                    "no variant '{v}' in rig '{}'; it has: {}",
                    rig.name,
                    names(rig.variants.iter().map(|x| &x.name))
                ));
            }
        }
        variants.retain(|&i| args.variants.contains(&rig.variants[i].name));
    }
    let trials = args.trials.unwrap_or(rig.trials);
    // Refused here, before the results directory exists, when the run has no rule.
    let until = if args.until_decided {
        if args.settings_as_is {
            return Err("--until-decided compares two settings the run applies; \
                        --settings-as-is applies none: leave one of them out"
                .into());
        }
        let s: Vec<String> = settings.iter().map(|s| s.name.clone()).collect();
        let v: Vec<String> = variants
            .iter()
            .map(|&i| rig.variants[i].name.clone())
            .collect();
        Some(super::decide::rule(&rig, &s, &v, trials)?)
    } else {
        None
    };
    rig.check_machine(&m.online_cpus)?;
    let changes = settings.iter().any(|s| !s.changes.is_empty());
    let (knobs, settings_note) = if !changes {
        (vec![], None)
    } else if args.settings_as_is {
        let note = format!(
            "--settings-as-is: profile '{}' was not applied; its settings {} were NOT in force, the machine's own were",
            profile.name,
            names(settings.iter().map(|x| &x.name))
        );
        settings = vec![Setting {
            name: "as-is".into(),
            description: note.clone(),
            changes: vec![],
            audio: None,
        }];
        (vec![], Some(note))
    } else {
        let p = Profile {
            settings: settings.clone(),
            ..profile.clone()
        };
        (knobs::preflight(io, &p, m.root)?, None)
    };
    // The directory is only named here: the rig kind creates it (`create_dir`) after
    // its own checks, so a refusal leaves nothing behind.
    let dir = output::results_dir(&rig.name, args.out.as_deref());
    if args.out.is_some() {
        output::check_results_dir(&dir)?;
    }
    Ok(Prepared {
        rig,
        profile,
        settings,
        variants,
        trials,
        dir,
        dir_named: args.out.is_some(),
        dir_created: false,
        knobs,
        settings_note,
        stop: Arc::new(AtomicBool::new(false)),
        audio: args.audio.clone(),
        max_time_ns: args.max_time_ns,
        until,
    })
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    it.cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::tests::{FEAT, FakeIo};
    use clap::Parser;
    use std::path::Path;

    fn options(args: &[&str]) -> RunOptions {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a.starts_with("rigs/") || a.starts_with("profiles/") {
                    root.join(a).display().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        match crate::cli::Cli::try_parse_from(std::iter::once("xrunrig".to_string()).chain(args))
            .unwrap()
            .cmd
        {
            crate::cli::Cmd::Run(a) => a.into_options(),
            _ => unreachable!(),
        }
    }

    /// Issue 25, item 4: the refusal tests/engine.rs could only make on a machine with
    /// fewer than 4 CPUs, on a stand-in 2-CPU machine: refused, and nothing written,
    /// journaled or created.
    #[test]
    fn a_rig_the_machine_cannot_fit_is_refused_and_nothing_changes() {
        let d = crate::testkit::private_dir("prepare-cpus");
        let out = d.join("res");
        let io = FakeIo::machine();
        let m = Machine {
            io: &io,
            online_cpus: vec![0, 1],
            root: true,
            state: StateDir::open(&d, false).unwrap(),
        };
        let e = match prepare_on(
            &options(&[
                "run",
                "rigs/pi-boost-affinity.toml",
                "--profile",
                "profiles/rt-push-ipi.toml",
                "--out",
                out.to_str().unwrap(),
            ]),
            &m,
        ) {
            Ok(_) => panic!("a 4-CPU rig prepared on 2 CPUs"),
            Err(e) => e,
        };
        assert!(e.contains("needs CPUs {1-3}"), "{e}");
        assert!(e.contains("uses CPU {3}"), "{e}");
        assert!(e.contains("--kernel"), "{e}");
        assert!(e.contains("Nothing was changed"), "{e}");
        assert!(!out.exists(), "no results directory for a refused run");
        assert!(!d.join("journal.json").exists());
        assert!(io.writes.lock().unwrap().is_empty());
        // The same machine with 4 CPUs takes it.
        let m = Machine {
            online_cpus: vec![0, 1, 2, 3],
            ..m
        };
        assert!(
            prepare_on(
                &options(&[
                    "run",
                    "rigs/pi-boost-affinity.toml",
                    "--profile",
                    "profiles/rt-push-ipi.toml",
                    "--out",
                    out.to_str().unwrap()
                ]),
                &m
            )
            .is_ok()
        );
        assert!(
            io.writes.lock().unwrap().is_empty(),
            "prepare writes no knob"
        );
    }

    /// Issue 25, item 4: the lockdown refusal tests/engine.rs could only make where the
    /// sched features cannot be read, on a stand-in machine whose features file answers
    /// EPERM as under lockdown: refused saying why and what to do; with
    /// --settings-as-is prepared with no knob and the note that the profile was not in
    /// force.
    #[test]
    fn locked_down_features_stop_the_run_unless_settings_as_is() {
        let d = crate::testkit::private_dir("prepare-lockdown");
        let out = d.join("res");
        let mut io = FakeIo::machine();
        io.denied = vec![FEAT.into()];
        let m = Machine {
            io: &io,
            online_cpus: vec![0, 1, 2, 3],
            root: true,
            state: StateDir::open(&d, false).unwrap(),
        };
        let args = [
            "run",
            "rigs/pi-inversion.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--trials",
            "1",
            "--variant",
            "inherit",
            "--out",
            out.to_str().unwrap(),
        ];
        let e = match prepare_on(&options(&args), &m) {
            Ok(_) => panic!("prepared with the features locked down"),
            Err(e) => e,
        };
        assert!(e.contains("nothing was changed"), "{e}");
        assert!(e.contains(FEAT), "{e}");
        assert!(e.contains("--settings-as-is"), "{e}");
        assert!(!out.exists());
        let mut with = args.to_vec();
        with.push("--settings-as-is");
        let p = prepare_on(&options(&with), &m).unwrap();
        assert!(p.knobs.is_empty());
        assert_eq!(p.settings.len(), 1);
        assert_eq!(p.settings[0].name, "as-is");
        assert!(p.settings_note.as_deref().unwrap().contains("NOT in force"));
        assert!(io.writes.lock().unwrap().is_empty());
    }
}
