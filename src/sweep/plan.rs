//! The run decided from the rig, the profile and the user's choices before any machine
//! is looked at: the settings and variants in sweep order, the trials, the stopping
//! rule, the time estimate. The host's sweep runs it (`prepare` adds the machine's
//! checks); a guest kernel is given it whole, as a plan file (`PlanFile`: the rig's and
//! profile's text and the choices), and builds the same plan through the same code; a
//! resumed guest run is given the plan narrowed to what is left.

use super::decide;
use super::kind::{Kinds, RigKind};
use crate::knobs::profile::{self, Profile, Setting};
use crate::options::{Choices, RunOptions};
use crate::rig::{self, Rig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything decided about a run from its inputs alone.
pub struct Plan {
    pub rig: Rig,
    /// What the rig's kind does (`crate::kinds::of`): runs it, estimates its trials.
    pub kind: &'static dyn RigKind,
    /// The profile given, or `Profile::as_is()`.
    pub profile: Profile,
    /// Whether a profile file was given (`profile` is then its text).
    profile_given: bool,
    /// The settings to sweep, in the profile's order, after --setting; one "as-is"
    /// setting under --settings-as-is when the profile changes anything.
    pub settings: Vec<Setting>,
    /// Each setting's audio as asked, in the order of `settings` (None: the kind plays
    /// none); which backend `auto` is, is the machine's to say when the run starts.
    pub audio: Vec<Option<rig::livefx::Asked>>,
    /// Why the profile's settings were not applied, when they were not.
    pub settings_note: Option<String>,
    /// Indices into rig.variants, in the rig's order, after --variant.
    pub variants: Vec<usize>,
    pub trials: u32,
    /// `--until-decided`: the stopping rule; `trials` is then each setting's maximum.
    pub until: Option<decide::Rule>,
    /// What it was built from beyond the rig and profile.
    pub choices: Choices,
}

/// A plan as a guest kernel is given it: what `Plan::build` needs, in one JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    pub rig: Source,
    pub profile: Option<Source>,
    pub choices: Choices,
}

/// A rig or profile: where it is (named in messages and records) and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub path: PathBuf,
    pub text: String,
}

impl Plan {
    /// The plan of `xrunrig run`'s options: the rig and profile read from their files.
    pub fn new(a: &RunOptions, kinds: Kinds) -> Result<Plan, String> {
        let rig = rig::load(&a.rig).map_err(|e| e.to_string())?;
        let profile = a.profile.as_deref().map(profile::load).transpose()?;
        Plan::build(rig, profile, a.choices.clone(), kinds)
    }

    /// The plan a plan file holds (a guest kernel's run).
    pub fn from_file(path: &Path, kinds: Kinds) -> Result<Plan, String> {
        let text = rig::limits::read_capped(path, "plan")?;
        let f: PlanFile = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a plan file: {e}", path.display()))?;
        let rig = rig::parse(&f.rig.path, &f.rig.text).map_err(|e| e.to_string())?;
        let profile = f
            .profile
            .map(|p| profile::parse(&p.path, &p.text))
            .transpose()?;
        Plan::build(rig, profile, f.choices, kinds)
    }

    /// Decides the run: the filters, the settings-as-is rule, the stopping rule.
    pub fn build(
        rig: Rig,
        profile: Option<Profile>,
        choices: Choices,
        kinds: Kinds,
    ) -> Result<Plan, String> {
        let kind = kinds(rig.kind);
        let profile_given = profile.is_some();
        let profile = profile.unwrap_or_else(Profile::as_is);
        let mut settings = profile.settings.clone();
        if !choices.settings.is_empty() {
            for s in &choices.settings {
                if !settings.iter().any(|x| &x.name == s) {
                    return Err(format!(
                        "no setting '{s}' in profile '{}'; it has: {}",
                        profile.name,
                        names(settings.iter().map(|x| &x.name))
                    ));
                }
            }
            settings.retain(|x| choices.settings.contains(&x.name));
        }
        let mut variants: Vec<usize> = (0..rig.variants.len()).collect();
        if !choices.variants.is_empty() {
            for v in &choices.variants {
                if !rig.variants.iter().any(|x| &x.name == v) {
                    return Err(format!(
                        "no variant '{v}' in rig '{}'; it has: {}",
                        rig.name,
                        names(rig.variants.iter().map(|x| &x.name))
                    ));
                }
            }
            variants.retain(|&i| choices.variants.contains(&rig.variants[i].name));
        }
        let trials = choices.trials.unwrap_or(rig.trials);
        let until = if choices.until_decided {
            if choices.settings_as_is {
                return Err("--until-decided compares two settings the run applies; \
                            --settings-as-is applies none: leave one of them out"
                    .into());
            }
            let s: Vec<String> = settings.iter().map(|s| s.name.clone()).collect();
            let v: Vec<String> = variants
                .iter()
                .map(|&i| rig.variants[i].name.clone())
                .collect();
            Some(decide::rule(kind.trial_verdict(&rig), &s, &v, trials)?)
        } else {
            None
        };
        let changes = settings.iter().any(|s| !s.changes.is_empty());
        let mut settings_note = None;
        if changes && choices.settings_as_is {
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
            settings_note = Some(note);
        }
        let audio = settings
            .iter()
            .map(|s| {
                kind.audio(&rig, &choices.audio, s)
                    .map_err(|e| format!("setting '{}': {e}", s.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Plan {
            rig,
            kind,
            audio,
            profile,
            profile_given,
            settings,
            settings_note,
            variants,
            trials,
            until,
            choices,
        })
    }

    /// The profile, when a profile file was given.
    pub fn profile_file(&self) -> Option<&Profile> {
        self.profile_given.then_some(&self.profile)
    }

    /// The settings' names, in sweep order.
    pub fn setting_names(&self) -> Vec<String> {
        self.settings.iter().map(|s| s.name.clone()).collect()
    }

    /// The variants' names, in sweep order.
    pub fn variant_names(&self) -> Vec<String> {
        self.variants
            .iter()
            .map(|&i| self.rig.variants[i].name.clone())
            .collect()
    }

    /// Whether running it changes kernel settings (a profile applied).
    pub fn changes_knobs(&self) -> bool {
        self.settings.iter().any(|s| !s.changes.is_empty())
    }

    /// One trial's share of the estimate: a thread rig's trial at its bound, an audio
    /// rig's length plus opening and closing its stream; and the gap after it.
    pub fn per_trial_ns(&self) -> [u64; 3] {
        self.kind.per_trial_ns(&self.rig, &self.choices.audio)
    }

    /// The whole run's time estimate, checked (an overflow is an error, never a
    /// wrapped, tiny watchdog bound).
    pub fn estimate_ns(&self) -> Result<u64, String> {
        rig::limits::run_estimate_ns(
            &self.per_trial_ns(),
            &[
                u64::from(self.trials),
                self.settings.len() as u64,
                self.variants.len() as u64,
            ],
        )
    }

    /// The run's hard bound: --max-time, else the estimate × 2 + 60 s (the watchdog's).
    pub fn bound_ns(&self) -> Result<u64, String> {
        rig::limits::watchdog_bound_ns(self.choices.max_time_ns, self.estimate_ns()?)
    }

    /// One trial's own bound, as if it were the whole run: a run that says nothing for
    /// longer is not running.
    pub fn one_trial_bound_ns(&self) -> Result<u64, String> {
        let one = rig::limits::run_estimate_ns(&self.per_trial_ns(), &[1])?;
        rig::limits::watchdog_bound_ns(None, one)
    }

    /// The plan file of this plan with other `choices` (a part of it), the rig and
    /// profile at `rig_path` and `profile_path` where it runs.
    pub fn file(&self, rig_path: &Path, profile_path: &Path, choices: Choices) -> PlanFile {
        PlanFile {
            rig: Source {
                path: rig_path.to_path_buf(),
                text: self.rig.text.clone(),
            },
            profile: self.profile_given.then(|| Source {
                path: profile_path.to_path_buf(),
                text: self.profile.text.clone(),
            }),
            choices,
        }
    }
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    it.cloned().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(p: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
    }

    fn options(rig: &str, profile: Option<&str>, choices: Choices) -> RunOptions {
        RunOptions {
            rig: repo(rig),
            profile: profile.map(repo),
            out: None,
            choices,
            guest: None,
        }
    }

    /// Each setting's audio is decided with the plan: the command line over the
    /// setting's `audio` over the rig; a thread rig has none.
    #[test]
    fn the_plan_holds_each_settings_audio_as_asked() {
        let mut choices = Choices::default();
        choices.audio.device = Some("hw:Loop,0".into());
        let o = options(
            "rigs/livefx.toml",
            Some("profiles/audio-periods.toml"),
            choices,
        );
        let p = Plan::new(&o, crate::kinds::of).unwrap();
        let asked: Vec<(u32, u32, bool, Option<&str>)> = p
            .audio
            .iter()
            .map(|a| {
                let a = a.as_ref().unwrap();
                (a.period, a.rate, a.period_explicit, a.device.as_deref())
            })
            .collect();
        let d = Some("hw:Loop,0");
        assert_eq!(
            asked,
            [
                (128, 48000, true, d),
                (256, 48000, true, d),
                (1024, 48000, true, d)
            ]
        );
        // --period over every setting's; the rig's nperiods where nothing else says.
        let mut choices = Choices::default();
        choices.audio.period = Some(64);
        let o = options(
            "rigs/livefx.toml",
            Some("profiles/audio-periods.toml"),
            choices,
        );
        let p = Plan::new(&o, crate::kinds::of).unwrap();
        let lf = p.rig.livefx.as_ref().unwrap();
        for a in p.audio.iter().flatten() {
            assert_eq!(
                (a.period, a.nperiods, a.backend),
                (64, lf.nperiods, lf.backend)
            );
        }
        // Without a profile: the rig's own period, not asked for.
        let p = Plan::new(
            &options("rigs/livefx.toml", None, Choices::default()),
            crate::kinds::of,
        )
        .unwrap();
        let a = p.audio[0].as_ref().unwrap();
        assert_eq!((a.period, a.period_explicit), (lf.period, false));
        let p = Plan::new(
            &options("rigs/pi-inversion.toml", None, Choices::default()),
            crate::kinds::of,
        )
        .unwrap();
        assert_eq!(p.audio, [None]);
        // Out of range: refused as the plan is made, the setting named.
        let mut choices = Choices::default();
        choices.audio.period = Some(100_000);
        let o = options(
            "rigs/livefx.toml",
            Some("profiles/audio-periods.toml"),
            choices,
        );
        let e = Plan::new(&o, crate::kinds::of).err().unwrap();
        assert_eq!(e, "setting 'p128': period 100000: use 1..=16384");
    }
}
