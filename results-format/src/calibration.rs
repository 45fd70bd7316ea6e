//! A calibration: how much one rig's figures move from run to run (boot to boot) on one
//! machine when nothing is changed, measured by `xrunrig calibrate` and kept in the
//! cache directory (`calibrations/*.json`), so that `xrunrig compare` with one run a
//! side can tell a change from the machine's own run-to-run variation.
//!
//! The model (the same one `compare` uses, `analysis::judge`): every run r of a metric
//! gives an estimate y_r on the metric's scale (the log of a latency p99, the log of a
//! dropout rate, the log-odds of a trial criterion, the log of a trial value) with a
//! within-run variance v_r (the noise of its trials); y_r = μ + b_r + e_r, the run
//! effect b_r of variance `between` and e_r of variance v_r. A calibration estimates
//! `between` from R runs by moments (Kalibera and Jones, "Rigorous benchmarking in
//! reasonable time"): the runs' sample variance minus their mean within-run variance,
//! at least 0, with R − 1 degrees of freedom.

use serde::{Deserialize, Serialize};

/// The calibration file's version; a newer one is refused, naming it. 2: the key holds
/// the audio parameters and the trial length (a version-1 file, keyed without them, is
/// not used: it may have been measured at another period).
pub const CALIBRATION_VERSION: u32 = 2;

/// The folder, in the cache directory, that calibrations are kept in.
pub const CALIBRATIONS_DIR: &str = "calibrations";

/// What a calibration holds for: one rig on one machine, kernel, profile and backend.
/// A comparison uses a calibration only when its baseline's key is the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationKey {
    pub rig: String,
    /// run.json's rig sha256, whole.
    pub rig_sha256: String,
    /// run.json's profile sha256; None without a profile.
    #[serde(default)]
    pub profile_sha256: Option<String>,
    /// The audio backends the rows ran on ("clock", "jack"); "threads" for a thread rig.
    #[serde(default)]
    pub backend: String,
    /// The kernel's release (uname -r, the guest's in a guest run).
    #[serde(default)]
    pub kernel: String,
    /// The machine the run's timing came from: its host name, and for a guest run the
    /// host QEMU ran on with the accelerator ("tcg on NAME").
    #[serde(default)]
    pub host: String,
    /// What a livefx run's audio ran with, per setting: period, rate, periods, device,
    /// injected overruns, loopback (the spread at 128 frames is not the spread at 256);
    /// empty for a thread rig.
    #[serde(default)]
    pub audio: String,
    /// One trial's length in milliseconds, where the run says (a dropout count's
    /// spread grows with it).
    #[serde(default)]
    pub trial_ms: Option<u64>,
}

impl CalibrationKey {
    /// The key in one line, for messages.
    pub fn describe(&self) -> String {
        format!(
            "rig {} (sha256 {}), {}, backend {}{}{}, kernel {}, host {}",
            self.rig,
            self.rig_sha256,
            self.profile_sha256
                .as_ref()
                .map_or("no profile".to_string(), |p| format!("profile sha256 {p}")),
            self.backend,
            if self.audio.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.audio)
            },
            self.trial_ms
                .map_or(String::new(), |t| format!(", trials of {t} ms")),
            self.kernel,
            self.host
        )
    }
}

/// The scale a metric is judged on (`analysis::judge::Scale`), named in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// ln of a latency p99 per trial, averaged over a run's trials.
    LogP99,
    /// ln of a run's dropouts per hour, (count + ½) over its hours.
    LogRate,
    /// ln of the odds that a trial passes its criterion, (pass + ½) / (fail + ½).
    LogOdds,
    /// ln of a trial value (its median when several), averaged over a run's trials.
    LogValue,
}

/// One metric's run-to-run variation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricSpread {
    pub setting: String,
    pub variant: String,
    pub metric: String,
    pub scale: Scale,
    /// The between-run variance on `scale` (σ²_b), at least 0.
    pub between: f64,
    /// Its degrees of freedom: runs − 1.
    pub df: u32,
    /// The runs' sample variance of y_r, and the mean within-run variance subtracted
    /// from it.
    pub total: f64,
    pub within: f64,
    /// The trial-to-trial spread inside a run: s²_w of a trial about its run's mean on
    /// `scale` (LogP99, LogValue), or the over-dispersion φ of trials' dropouts about
    /// their run's rate (LogRate); None for LogOdds (binomial) or one trial a run. A
    /// comparison whose runs have one trial each takes it from here.
    #[serde(default)]
    pub trial_var: Option<f64>,
    #[serde(default)]
    pub trial_df: Option<f64>,
    /// Each run's y_r, in the order the runs ran (what the estimate came from).
    pub runs: Vec<f64>,
    /// Each run's within-run variance v_r, beside `runs` (a calibration measured again
    /// later adds its runs to these and is estimated again from all).
    #[serde(default)]
    pub run_v: Vec<f64>,
}

/// One calibration file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub format: u32,
    pub key: CalibrationKey,
    /// When it was measured (UTC, RFC 3339), and by which xrunrig.
    pub created: String,
    #[serde(default)]
    pub xrunrig_version: Option<String>,
    /// The runs it was measured on (their results directories) and how each was run.
    pub runs: Vec<String>,
    pub trials_per_run: u32,
    #[serde(default)]
    pub duration_ms_per_trial: Option<f64>,
    /// The command that measured it.
    #[serde(default)]
    pub command: Vec<String>,
    pub metrics: Vec<MetricSpread>,
    /// A/A pairs judged while calibrating (consecutive runs, each against the next):
    /// how many a one-run-a-side compare with this calibration called each answer.
    #[serde(default)]
    pub pairs: Option<PairCalls>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PairCalls {
    pub pairs: u32,
    pub worse: u32,
    pub better: u32,
    pub same: u32,
    pub inconclusive: u32,
}

impl Calibration {
    /// The spread of (setting, variant, metric) on `scale`, if measured.
    pub fn spread(
        &self,
        setting: &str,
        variant: &str,
        metric: &str,
        scale: Scale,
    ) -> Option<&MetricSpread> {
        self.metrics.iter().find(|m| {
            m.setting == setting && m.variant == variant && m.metric == metric && m.scale == scale
        })
    }

    /// Reads a calibration file's text; a newer version is refused, naming it.
    pub fn from_json(text: &str, file: &str) -> Result<Calibration, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("{file}: not JSON: {e}"))?;
        let format = v.get("format").and_then(|f| f.as_u64()).unwrap_or(0);
        if format > CALIBRATION_VERSION as u64 {
            return Err(format!(
                "{file} was written by a newer xrunrig (calibration format {format}); this one \
                 reads format {CALIBRATION_VERSION}: update xrunrig, or calibrate again"
            ));
        }
        if format < CALIBRATION_VERSION as u64 {
            return Err(format!(
                "{file} is an older calibration (format {format}) whose key leaves out the \
                 period, rate and trial length, so it may hold another configuration's spread: \
                 not used; calibrate again (`xrunrig calibrate RIG ...`) and delete it"
            ));
        }
        serde_json::from_value(v).map_err(|e| format!("{file}: not a calibration: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        Calibration {
            format: CALIBRATION_VERSION,
            key: CalibrationKey::default(),
            created: "2026-12-04T00:00:00Z".into(),
            xrunrig_version: None,
            runs: vec![],
            trials_per_run: 3,
            duration_ms_per_trial: None,
            command: vec![],
            metrics: vec![MetricSpread {
                setting: "as-is".into(),
                variant: "pi".into(),
                metric: "dropouts".into(),
                scale: Scale::LogRate,
                between: 1.9,
                df: 19,
                total: 2.2,
                within: 0.3,
                trial_var: None,
                trial_df: None,
                runs: vec![1.0, 2.0],
                run_v: vec![0.3, 0.3],
            }],
            pairs: None,
        }
    }

    #[test]
    fn a_calibration_reads_back_and_finds_its_metric() {
        let t = serde_json::to_string(&cal()).unwrap();
        let c = Calibration::from_json(&t, "x.json").unwrap();
        assert!(
            c.spread("as-is", "pi", "dropouts", Scale::LogRate)
                .is_some()
        );
        assert!(c.spread("as-is", "pi", "dropouts", Scale::LogP99).is_none());
        assert!(
            c.spread("as-is", "no-pi", "dropouts", Scale::LogRate)
                .is_none()
        );
    }

    #[test]
    fn an_older_calibration_keyed_without_the_period_is_not_used() {
        let mut v = serde_json::to_value(cal()).unwrap();
        v["format"] = serde_json::json!(1);
        let e = Calibration::from_json(&v.to_string(), "x.json").unwrap_err();
        assert!(e.contains("older") && e.contains("period"), "{e}");
    }

    #[test]
    fn a_newer_calibration_is_refused_naming_its_version() {
        let mut v = serde_json::to_value(cal()).unwrap();
        v["format"] = serde_json::json!(CALIBRATION_VERSION + 1);
        let e = Calibration::from_json(&v.to_string(), "x.json").unwrap_err();
        assert!(e.contains("newer") && e.contains(&(CALIBRATION_VERSION + 1).to_string()));
    }
}
