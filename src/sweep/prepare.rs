//! Everything checked and decided before the first knob is touched.

use super::Prepared;
use super::kind::Kinds;
use super::plan::Plan;
use crate::knobs::StateDir;
use crate::knobs::knob::{KnobIo, RealIo};
use crate::knobs::profile::Profile;
use crate::knobs::{self};
use crate::options::RunOptions;
use crate::output::{self};
use std::path::Path;
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

/// Loads and checks the rig and profile (`Plan::new`), restores a killed run's
/// leftovers, and checks the knobs can be written. Changes nothing except that restore,
/// and creates no directory (`Prepared::create_dir` does, after the rig kind's checks).
/// The caller holds the run lock (`knobs::lock`).
pub fn prepare(args: &RunOptions, kinds: Kinds) -> Result<Prepared, String> {
    prepare_live(|| Plan::new(args, kinds), args.out.as_deref())
}

/// `prepare` of the plan a plan file holds (a guest kernel's run), into `out`.
pub fn prepare_file(plan: &Path, out: &Path, kinds: Kinds) -> Result<Prepared, String> {
    prepare_live(|| Plan::from_file(plan, kinds), Some(out))
}

fn prepare_live(
    plan: impl FnOnce() -> Result<Plan, String>,
    out: Option<&Path>,
) -> Result<Prepared, String> {
    let state = knobs::state()?;
    // Tracing state a killed run left (its trace instance, a tracefs it mounted).
    crate::instruments::tracefs::warn_recovered(crate::instruments::recover());
    let m = Machine {
        io: &RealIo,
        online_cpus: crate::sys::online_cpus(),
        root: crate::sys::is_root(),
        state,
    };
    prepare_on(plan, out, &m)
}

/// `prepare` on `m`, after the tracing state is recovered: a killed run's settings are
/// restored first, whatever `plan` then says of the inputs.
pub fn prepare_on(
    plan: impl FnOnce() -> Result<Plan, String>,
    out: Option<&Path>,
    m: &Machine,
) -> Result<Prepared, String> {
    let (io, state) = (m.io, &m.state);
    let recovered = knobs::recover(io, state);
    if let Ok(r) = &recovered {
        say_recovered(r.as_ref());
    }
    // Checks [livefx] and [instruments] too: a bad rig is refused before anything runs.
    let plan = plan()?;
    if let Err(e) = recovered {
        // A run that changes nothing may measure beside a journal it cannot restore,
        // but says so; one that would change knobs must not add to it.
        if plan.changes_knobs() {
            return Err(e);
        }
        eprintln!(
            "xrunrig: warning: {e}\nxrunrig: this run changes no kernel settings, so it goes ahead; \
             the machine may still hold that run's settings. Runs with a profile are refused until \
             `xrunrig restore` (or `xrunrig restore --discard`) clears the journal."
        );
    }
    plan.rig.check_machine(&m.online_cpus)?;
    let knobs = if plan.changes_knobs() {
        let p = Profile {
            settings: plan.settings.clone(),
            ..plan.profile.clone()
        };
        knobs::preflight(io, &p, m.root)?
    } else {
        vec![]
    };
    // The directory is only named here: the rig kind creates it (`create_dir`) after
    // its own checks, so a refusal leaves nothing behind.
    let dir = output::results_dir(&plan.rig.name, out);
    if out.is_some() {
        output::check_results_dir(&dir)?;
    }
    let estimate_ns = plan
        .estimate_ns()
        .map_err(|e| format!("{e}. Nothing was changed."))?;
    Ok(Prepared {
        plan,
        dir,
        dir_named: out.is_some(),
        dir_created: false,
        knobs,
        stop: Arc::new(AtomicBool::new(false)),
        estimate_ns,
    })
}

/// Says what a killed run's journal held and what became of it.
fn say_recovered(r: Option<&knobs::Recovered>) {
    match r {
        None => {}
        Some(r) if r.other_boot => {
            eprintln!(
                "xrunrig: a settings journal from before the last reboot (run pid {}, started {}) was found; \
                 the reboot already reset those settings, so it was discarded, not replayed:",
                r.journal.pid, r.journal.started
            );
            for l in &r.lines {
                eprintln!("  {l}");
            }
        }
        Some(r) => {
            eprintln!(
                "xrunrig: a previous run (pid {}, started {}) ended without restoring its settings; restored now:",
                r.journal.pid, r.journal.started
            );
            for l in &r.lines {
                eprintln!("  {l}");
            }
        }
    }
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
        let o = options(&[
            "run",
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--out",
            out.to_str().unwrap(),
        ]);
        let e = match prepare_on(|| Plan::new(&o, crate::kinds::of), o.out.as_deref(), &m) {
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
        assert!(prepare_on(|| Plan::new(&o, crate::kinds::of), o.out.as_deref(), &m).is_ok());
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
        let o = options(&args);
        let e = match prepare_on(|| Plan::new(&o, crate::kinds::of), o.out.as_deref(), &m) {
            Ok(_) => panic!("prepared with the features locked down"),
            Err(e) => e,
        };
        assert!(e.contains("nothing was changed"), "{e}");
        assert!(e.contains(FEAT), "{e}");
        assert!(e.contains("--settings-as-is"), "{e}");
        assert!(!out.exists());
        let mut with = args.to_vec();
        with.push("--settings-as-is");
        let o = options(&with);
        let p = prepare_on(|| Plan::new(&o, crate::kinds::of), o.out.as_deref(), &m).unwrap();
        assert!(p.knobs.is_empty());
        assert_eq!(p.plan.settings.len(), 1);
        assert_eq!(p.plan.settings[0].name, "as-is");
        assert!(
            p.plan
                .settings_note
                .as_deref()
                .unwrap()
                .contains("NOT in force")
        );
        assert!(io.writes.lock().unwrap().is_empty());
    }
}
