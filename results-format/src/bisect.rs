//! `bisect.json`: an `xrunrig bisect` run whole — its inputs, the rule each step was
//! decided by, the two ends as measured, every step (commit, verdict, counts, p-values,
//! build and run seconds, where its kernel came from), the first bad commit and the
//! revert that confirms it. Written after every step, so a killed bisection resumes
//! from it; `bisect.log` beside it is the same steps in `git bisect log`'s form.

use crate::kbuild::KernelBuild;
use serde::{Deserialize, Serialize};

pub const BISECT_JSON: &str = "bisect.json";
/// `git bisect replay` reads it.
pub const BISECT_LOG: &str = "bisect.log";
pub const KIND_BISECT: &str = "bisect";

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Commit {
    /// Full object name.
    pub sha: String,
    /// The commit's subject line.
    #[serde(default)]
    pub subject: String,
}

impl Commit {
    /// A full object name as git prints it: 40 (SHA-1) or 64 (SHA-256) lowercase hex
    /// digits. Anything else read back from a record (an option such as `--output=…`,
    /// a short or non-ASCII name) must never reach git.
    pub fn is_object_name(&self) -> bool {
        matches!(self.sha.len(), 40 | 64)
            && self
                .sha
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }

    /// The first 12 characters (all of a shorter or odd name: records are read from
    /// directories others made, and a cut inside a character must not panic).
    pub fn short(&self) -> &str {
        self.sha.get(..12).unwrap_or(&self.sha)
    }
}

/// What a bisection is asked: a resumed one must be asked the same.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Inputs {
    pub rig: String,
    #[serde(default)]
    pub profile: Option<String>,
    /// The one setting and variant every step runs.
    pub setting: String,
    pub variant: String,
    /// The user's repository (absolute).
    pub tree: String,
    pub good: Commit,
    pub bad: Commit,
    /// Patches applied at every step, in order (file names and sha256).
    #[serde(default)]
    pub patches: Vec<crate::kbuild::PatchInfo>,
    /// Trials per step at most.
    pub max_trials: u32,
    pub cpus: u32,
}

/// How each step was decided.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Rule {
    /// In words: the test, the looks, the levels, the error rates.
    pub text: String,
    /// What makes a trial pass ("wait < 100 ms").
    pub criterion: String,
    pub test: String,
    /// Trials per boot: a look after each batch.
    pub batch: u32,
    /// A step's chance of being called bad when it is like the good end (or good when
    /// like the bad end), at most.
    pub alpha_step: f64,
    /// The level each look of a step is tested at.
    pub per_look: f64,
    /// Trials per step at which it looks.
    pub looks: Vec<u32>,
    /// The ends' comparison: its overall error rate.
    pub alpha_ends: f64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    GoodEnd,
    BadEnd,
    #[default]
    Step,
    /// The bad end with the first bad commit reverted.
    Revert,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Good,
    Bad,
    /// Undecided at its maximum of trials: skipped, as `git bisect skip`.
    #[default]
    Undecided,
    /// Did not build (or a --patch did not apply): skipped.
    BuildFailed,
    /// Built, but its guest run failed: skipped.
    RunFailed,
    /// An end: measured, compared with the other end (see `Outcome`).
    Measured,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            Verdict::Undecided => "skip (undecided)",
            Verdict::BuildFailed => "skip (build failed)",
            Verdict::RunFailed => "skip (run failed)",
            Verdict::Measured => "measured",
        }
    }

    pub fn skipped(self) -> bool {
        matches!(
            self,
            Verdict::Undecided | Verdict::BuildFailed | Verdict::RunFailed
        )
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Step {
    pub role: Role,
    pub commit: Commit,
    /// Where the commit is in history: commits after the good end (`git rev-list
    /// --count good..commit`: the good end 0, the bad end `range`), so a report lays the
    /// steps out in history's order rather than the order they were tested in. Absent in
    /// bisections recorded before it was.
    #[serde(default)]
    pub position: Option<u32>,
    pub verdict: Verdict,
    /// Trials that passed, of `trials`.
    pub passed: u32,
    pub trials: u32,
    /// Fisher's exact two-sided p against each end (steps and the revert).
    #[serde(default)]
    pub p_vs_good: Option<f64>,
    #[serde(default)]
    pub p_vs_bad: Option<f64>,
    pub build_s: f64,
    pub run_s: f64,
    /// Why it was skipped, or what else is worth knowing.
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub build: Option<KernelBuild>,
    /// Its results directories, one per batch (relative to bisect.json's directory).
    #[serde(default)]
    pub runs: Vec<String>,
}

impl Step {
    /// The share of its trials that passed; None before any ran.
    pub fn pass_fraction(&self) -> Option<f64> {
        (self.trials > 0).then(|| f64::from(self.passed) / f64::from(self.trials))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// Still running (or killed: resume it).
    #[default]
    Unfinished,
    /// The first bad commit, and whether its revert confirmed it.
    Found { confirmed: Option<bool> },
    /// Skipped steps leave several candidates.
    Candidates { commits: Vec<Commit> },
    /// The two ends did not differ (or the good end failed more): nothing was bisected.
    EndsDoNotDiffer { why: String },
    /// Stopped by the user or by an error.
    Stopped { why: String },
}

/// What bisect.json starts with, read before the rest: its format, so a newer one is
/// refused by its version rather than read as this one's fields, and its kind.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BisectHead {
    #[serde(default)]
    pub format_version: u32,
    #[serde(default, deserialize_with = "crate::lenient::text")]
    pub kind: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BisectDoc {
    pub format_version: u32,
    pub kind: String,
    /// xrunrig's version and commit.
    #[serde(default)]
    pub xrunrig: String,
    pub inputs: Inputs,
    pub rule: Rule,
    /// Commits between the ends (the bad end included, the good one not).
    pub range: u32,
    #[serde(default)]
    pub ends: Vec<Step>,
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub first_bad: Option<Commit>,
    #[serde(default)]
    pub confirmation: Option<Step>,
    pub outcome: Outcome,
    /// The bisection's error rate, at most: each decided step's and the ends'.
    #[serde(default)]
    pub overall_alpha: f64,
    pub started: String,
    #[serde(default)]
    pub wall_s: f64,
}

impl BisectDoc {
    /// Every commit the record names: the ends asked for, each step's, the first bad
    /// one and the candidates.
    pub fn commits(&self) -> Vec<&Commit> {
        let mut v = vec![&self.inputs.good, &self.inputs.bad];
        v.extend(self.ends.iter().map(|s| &s.commit));
        v.extend(self.steps.iter().map(|s| &s.commit));
        v.extend(self.confirmation.iter().map(|s| &s.commit));
        v.extend(self.first_bad.iter());
        if let Outcome::Candidates { commits } = &self.outcome {
            v.extend(commits.iter());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_are_full_lowercase_hex() {
        let c = |s: &str| Commit {
            sha: s.into(),
            subject: String::new(),
        };
        assert!(c(&"a".repeat(40)).is_object_name());
        assert!(c(&"0f".repeat(32)).is_object_name());
        for bad in [
            "--output=/tmp/x".to_string(),
            "a".repeat(39),
            "A".repeat(40),
            "g".repeat(40),
            "é".repeat(20),
            String::new(),
        ] {
            assert!(!c(&bad).is_object_name(), "{bad}");
        }
    }

    #[test]
    fn reads_back() {
        let d = BisectDoc {
            format_version: 1,
            kind: KIND_BISECT.into(),
            outcome: Outcome::Found {
                confirmed: Some(true),
            },
            steps: vec![Step {
                verdict: Verdict::BuildFailed,
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = serde_json::to_string(&d).unwrap();
        assert!(t.contains("\"outcome\":\"found\""), "{t}");
        assert!(t.contains("\"verdict\":\"build_failed\""), "{t}");
        let back: BisectDoc = serde_json::from_str(&t).unwrap();
        assert_eq!(back, d);
        let head: BisectHead = serde_json::from_str(&t).unwrap();
        assert_eq!(
            (head.format_version, head.kind.as_deref()),
            (1, Some(KIND_BISECT))
        );
    }

    #[test]
    fn a_short_name_never_cuts_inside_a_character() {
        let c = |s: &str| Commit {
            sha: s.into(),
            subject: String::new(),
        };
        assert_eq!(c(&"a".repeat(40)).short(), "a".repeat(12));
        assert_eq!(c("abc").short(), "abc");
        assert_eq!(c("ééééééé").short(), "éééééé");
        assert_eq!(c("aéééééé").short(), "aéééééé");
    }

    /// A step recorded before `position` was loads, without one.
    #[test]
    fn an_older_step_has_no_position() {
        let old = r#"{"role": "step", "commit": {"sha": "ab"}, "verdict": "good",
            "passed": 5, "trials": 5, "build_s": 1.0, "run_s": 2.0}"#;
        let s: Step = serde_json::from_str(old).unwrap();
        assert_eq!((s.position, s.verdict, s.passed), (None, Verdict::Good, 5));
        let new = Step {
            position: Some(7),
            ..s
        };
        let back: Step = serde_json::from_str(&serde_json::to_string(&new).unwrap()).unwrap();
        assert_eq!(back.position, Some(7));
    }
}
