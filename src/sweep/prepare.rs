//! Everything checked and decided before the first knob is touched.

use super::Prepared;
use crate::knobs::knob::RealIo;
use crate::knobs::profile::{Profile, Setting};
use crate::knobs::{self};
use crate::options::RunOptions;
use crate::output::{self};
use crate::rig::{self};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Loads and checks the rig and profile, restores a killed run's leftovers, and checks
/// the knobs can be written. Changes nothing except that restore. The caller holds the
/// run lock (`knobs::lock`).
pub fn prepare(args: &RunOptions) -> Result<Prepared, String> {
    let io = RealIo;
    let state = knobs::checked_state_dir()?;
    // Tracing state a killed run left (its trace instance, a tracefs it mounted).
    for l in crate::instruments::recover()? {
        eprintln!("xrunrig: a previous run left tracing state behind; restored: {l}");
    }
    // The run lock is held (run.rs): a journal here is from a run that is gone.
    let changes_knobs = args.profile.is_some() && !args.settings_as_is;
    match knobs::recover(&io, &state) {
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
    rig.check_machine(&crate::sys::online_cpus())?;
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
        (knobs::preflight(&io, &p, crate::sys::is_root())?, None)
    };
    let dir = output::new_results_dir(
        &output::results_dir(&rig.name, args.out.as_deref()),
        args.out.is_some(),
    )?;
    Ok(Prepared {
        rig,
        profile,
        settings,
        variants,
        trials,
        dir,
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
