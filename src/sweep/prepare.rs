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
/// the knobs can be written. Changes nothing except that restore.
pub fn prepare(args: &RunOptions) -> Result<Prepared, String> {
    let io = RealIo;
    let state = knobs::state_dir();
    // Tracing state a killed run left (its trace instance, a tracefs it mounted).
    for l in crate::instruments::recover()? {
        eprintln!("xrunrig: a previous run left tracing state behind; restored: {l}");
    }
    if let Some((j, lines)) = knobs::recover(&io, &state)? {
        eprintln!(
            "xrunrig: a previous run (pid {}, started {}) ended without restoring its settings; restored now:",
            j.pid, j.started
        );
        for l in lines {
            eprintln!("  {l}");
        }
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
    rig.check_machine(&crate::sys::online_cpus())?;
    let trials = args.trials.unwrap_or(rig.trials);
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
    let dir = output::results_dir(&rig.name, args.out.as_deref());
    output::create_results_dir(&dir)?;
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
    })
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    it.cloned().collect::<Vec<_>>().join(", ")
}
