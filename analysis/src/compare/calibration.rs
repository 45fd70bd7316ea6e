//! Calibrations kept in the cache (`calibrations/*.json`, `results::calibration`): what
//! run a calibration holds for (its key, from a run's run.json), measuring one from
//! runs of one configuration, saving it, and finding the one a comparison's baseline
//! matches.

use super::load::kernel_of;
use super::sample::Key;
use crate::judge::{RunData, Scale, model, scale};
use crate::kind;
use crate::load::Results;
use results::calibration::{
    CALIBRATION_VERSION, CALIBRATIONS_DIR, Calibration, CalibrationKey, MetricSpread,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The folder calibrations are kept in.
pub fn dir() -> PathBuf {
    crate::cache::root().join(CALIBRATIONS_DIR)
}

/// What a run's calibration must match: its rig (name and sha256), profile, backend and
/// its audio parameters, trial length, kernel and machine.
pub fn key_of(r: &Results) -> CalibrationKey {
    let backend = match r.data::<crate::load::LivefxData>() {
        Some(d) => {
            let mut b: Vec<String> = d.rows.iter().map(|x| x.backend.clone()).collect();
            b.sort();
            b.dedup();
            b.join("+")
        }
        None => "threads".into(),
    };
    let host = match &r.run.guest {
        Some(g) => format!(
            "{} guest on {}",
            g.accel.as_deref().unwrap_or("?"),
            g.host
                .as_ref()
                .and_then(|h| h.hostname.clone())
                .unwrap_or_else(|| "?".into())
        ),
        None => r.run.host.clone().unwrap_or_else(|| "?".into()),
    };
    let livefx = r.run.livefx.as_ref();
    let mut audio: Vec<String> = livefx
        .map(|l| {
            l.backends
                .iter()
                .map(|b| {
                    let n = |x: Option<u32>| x.map_or("?".to_string(), |v| v.to_string());
                    format!(
                        "{} {} frames at {} Hz x {}{}{}{}",
                        b.backend,
                        n(b.period),
                        n(b.rate),
                        n(b.nperiods),
                        b.device
                            .as_ref()
                            .map_or(String::new(), |d| format!(", device {d}")),
                        match b.inject_every {
                            Some(k) if k > 0 =>
                                format!(", {}x overrun every {k}", b.inject_factor.unwrap_or(0.0)),
                            _ => String::new(),
                        },
                        if b.loopback { ", loopback" } else { "" }
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    audio.sort();
    audio.dedup();
    CalibrationKey {
        audio: audio.join("; "),
        // Whole milliseconds: a key is compared exactly.
        trial_ms: livefx
            .and_then(|l| l.duration_s)
            .map(|s| (s * 1000.0).round() as u64),
        rig: r.rig.clone(),
        rig_sha256: r
            .run
            .rig
            .as_ref()
            .and_then(|x| x.sha256.clone())
            .unwrap_or_default(),
        profile_sha256: r.run.profile.as_ref().and_then(|p| p.sha256.clone()),
        backend,
        kernel: kernel_of(r),
        host,
    }
}

/// Each judged metric of a run: its full name, scale and data (what `measure` and a
/// comparison read the same way).
pub fn items(r: &Results) -> Vec<(Key, Scale, RunData, bool)> {
    kind::of(r)
        .samples()
        .into_iter()
        .flat_map(|(k, s)| {
            s.items().into_iter().map(move |it| {
                (
                    (k.0.clone(), k.1.clone(), format!("{}{}", k.2, it.suffix)),
                    it.scale,
                    it.data,
                    it.lower_is_worse,
                )
            })
        })
        .collect()
}

/// A calibration from `runs`, all of one configuration (checked: one key), measured by
/// `command`. Each metric's between-run variance by moments over the runs
/// (`judge::model::between_by_moments`), its trial-to-trial spread pooled over them.
pub fn measure(runs: &[Results], command: &[String], created: &str) -> Result<Calibration, String> {
    let Some(first) = runs.first() else {
        return Err("a calibration needs runs".into());
    };
    if runs.len() < 2 {
        return Err("a calibration needs two runs or more (it measures how runs differ)".into());
    }
    let key = key_of(first);
    for r in runs.iter().skip(1) {
        let k = key_of(r);
        if k != key {
            return Err(format!(
                "{} is not a run of the same configuration as {}: {} against {}",
                r.dir.display(),
                first.dir.display(),
                k.describe(),
                key.describe()
            ));
        }
    }
    let mut by: BTreeMap<(Key, u8), (Scale, Vec<RunData>)> = BTreeMap::new();
    let order = |s: Scale| s as u8;
    for r in runs {
        for (k, s, d, _) in items(r) {
            by.entry((k, order(s)))
                .or_insert_with(|| (s, Vec::new()))
                .1
                .push(d);
        }
    }
    let metrics = by
        .into_iter()
        .filter_map(|((k, _), (s, data))| spread(k, s, &data))
        .collect();
    let trials = runs
        .iter()
        .map(|r| r.run.trials.unwrap_or(0) as u32)
        .max()
        .unwrap_or(0);
    Ok(Calibration {
        format: CALIBRATION_VERSION,
        key,
        created: created.to_string(),
        xrunrig_version: first.run.xrunrig_version.clone(),
        runs: runs.iter().map(|r| r.dir.display().to_string()).collect(),
        trials_per_run: trials,
        duration_ms_per_trial: None,
        command: command.to_vec(),
        metrics,
        pairs: None,
    })
}

/// One metric's spread over `data`, a run each (None with fewer than two): the
/// between-run variance by moments, the trial-to-trial spread pooled over the runs.
/// Public for the coverage benchmark, which calibrates synthetic runs the same way.
pub fn spread(k: Key, s: Scale, data: &[RunData]) -> Option<MetricSpread> {
    let log1p = data.iter().any(|d| match d {
        RunData::Values(v) => v.iter().any(|x| *x <= 0.0),
        _ => false,
    });
    let w = scale::within_of(s, data, log1p);
    let side = scale::side_runs(
        s,
        data,
        w.unwrap_or(scale::Within {
            var: if s == Scale::LogRate { 1.0 } else { 0.0 },
            df: f64::INFINITY,
        }),
        log1p,
        None,
    );
    let (between, total, within, df) = model::between_by_moments(&side.runs)?;
    Some(MetricSpread {
        setting: k.0,
        variant: k.1,
        metric: k.2,
        scale: s,
        between,
        df,
        total,
        within,
        trial_var: w.map(|w| w.var),
        trial_df: w.map(|w| w.df),
        runs: side.runs.iter().map(|r| r.y).collect(),
        run_v: side.runs.iter().map(|r| r.v).collect(),
    })
}

/// `new` measured again on top of `old` (one key): each metric's runs of both, its
/// spread estimated again from all of them, so that calibrating on another day (another
/// boot, another load) widens it to what the machine does between sessions, not only
/// within one. Metrics only one of them has are kept as they are.
pub fn merge(old: &Calibration, new: Calibration) -> Calibration {
    let mut out = new;
    for o in &old.metrics {
        let Some(m) = out.metrics.iter_mut().find(|m| {
            m.setting == o.setting
                && m.variant == o.variant
                && m.metric == o.metric
                && m.scale == o.scale
        }) else {
            out.metrics.push(o.clone());
            continue;
        };
        // Files from before `run_v`: their runs' mean within-run variance stands in.
        let ov: Vec<f64> = if o.run_v.len() == o.runs.len() {
            o.run_v.clone()
        } else {
            vec![o.within; o.runs.len()]
        };
        let mut runs: Vec<model::RunEst> = o
            .runs
            .iter()
            .zip(&ov)
            .map(|(&y, &v)| model::RunEst { y, v })
            .collect();
        runs.extend(
            m.runs
                .iter()
                .zip(&m.run_v)
                .map(|(&y, &v)| model::RunEst { y, v }),
        );
        if let Some((between, total, within, df)) = model::between_by_moments(&runs) {
            (m.between, m.total, m.within, m.df) = (between, total, within, df);
        }
        m.runs = runs.iter().map(|r| r.y).collect();
        m.run_v = runs.iter().map(|r| r.v).collect();
        // The trial-to-trial spread pooled over both, by degrees of freedom.
        if let (Some(a), Some(da), Some(b), Some(db)) =
            (o.trial_var, o.trial_df, m.trial_var, m.trial_df)
        {
            m.trial_var = Some((a * da + b * db) / (da + db));
            m.trial_df = Some(da + db);
        } else if m.trial_var.is_none() {
            (m.trial_var, m.trial_df) = (o.trial_var, o.trial_df);
        }
    }
    let mut dirs = old.runs.clone();
    dirs.extend(out.runs);
    out.runs = dirs;
    out
}

/// The file a calibration of `key` is saved as: one per key, a newer one replacing it.
pub fn file_for(key: &CalibrationKey) -> PathBuf {
    // A stable name: the key's fields hashed (FNV-1a; std's hasher is not stable).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let text = serde_json::to_string(key).unwrap_or_default();
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    dir().join(format!("{}-{h:016x}.json", results::file_part(&key.rig)))
}

/// Writes `c` into the cache (whole or not at all); returns its path.
pub fn save(c: &Calibration) -> Result<PathBuf, String> {
    let p = file_for(&c.key);
    let d = dir();
    std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    let text = serde_json::to_string_pretty(c).map_err(|e| e.to_string())? + "\n";
    let tmp = d.join(format!(".{}.tmp-{}", file_name(&p), std::process::id()));
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, &p).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    Ok(p)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Every calibration in the cache that reads, with its file; those that do not read
/// are named in `problems`.
pub fn list(problems: &mut Vec<String>) -> Vec<(Calibration, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir()) else {
        return vec![];
    };
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        // Calibrations are small; a large file is not one.
        match std::fs::metadata(&p) {
            Ok(m) if m.len() > 4 << 20 => {
                problems.push(format!("{}: larger than 4 MiB, not read", p.display()));
                continue;
            }
            Err(e) => {
                problems.push(format!("{}: {e}", p.display()));
                continue;
            }
            _ => {}
        }
        match std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| Calibration::from_json(&t, &p.display().to_string()))
        {
            Ok(c) => out.push((c, p)),
            Err(e) => problems.push(e),
        }
    }
    out
}

/// The calibration for `base`: the file given (refused when its key is another run's),
/// else the newest in the cache whose key is `base`'s.
pub fn find(
    base: &Results,
    given: Option<&Path>,
    problems: &mut Vec<String>,
) -> Result<Option<(Calibration, PathBuf)>, String> {
    let key = key_of(base);
    if let Some(p) = given {
        let text = std::fs::read_to_string(p)
            .map_err(|e| format!("--calibration {}: {e}", p.display()))?;
        let c = Calibration::from_json(&text, &p.display().to_string())?;
        if c.key != key {
            return Err(format!(
                "--calibration {} was measured for {}, not for the baseline's {}: calibrate this \
                 rig on this machine (`xrunrig calibrate`), or compare without it",
                p.display(),
                c.key.describe(),
                key.describe()
            ));
        }
        return Ok(Some((c, p.to_path_buf())));
    }
    let mut found: Vec<(Calibration, PathBuf)> = list(problems)
        .into_iter()
        .filter(|(c, _)| c.key == key)
        .collect();
    found.sort_by(|a, b| a.0.created.cmp(&b.0.created));
    Ok(found.pop())
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::calibration::Scale;

    fn cal(ys: &[f64], dirs: &[&str]) -> Calibration {
        Calibration {
            format: CALIBRATION_VERSION,
            key: CalibrationKey::default(),
            created: String::new(),
            xrunrig_version: None,
            runs: dirs.iter().map(|d| d.to_string()).collect(),
            trials_per_run: 3,
            duration_ms_per_trial: None,
            command: vec![],
            metrics: vec![MetricSpread {
                setting: "s".into(),
                variant: "v".into(),
                metric: "m".into(),
                scale: Scale::LogP99,
                between: 0.0,
                df: ys.len() as u32 - 1,
                total: 0.0,
                within: 0.1,
                trial_var: Some(0.3),
                trial_df: Some(4.0),
                runs: ys.to_vec(),
                run_v: vec![0.1; ys.len()],
            }],
            pairs: None,
        }
    }

    /// A calibration at 128 frames is another key than a run at 256, or with longer
    /// trials: compare never takes one configuration's spread for another's.
    #[test]
    fn the_key_holds_the_period_rate_and_trial_length() {
        use results::livefx::{BackendUsed, LivefxSection};
        let dir = std::env::temp_dir().join(format!("analysis-calkey-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        crate::synth::livefx::generate(&dir, &crate::synth::livefx::Spec::ab(2000, 1)).unwrap();
        let mut r = kind::load(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let with = |r: &mut Results, period: u32, rate: u32, trial_s: f64| {
            r.run.livefx = Some(LivefxSection {
                duration_s: Some(trial_s),
                backends: vec![BackendUsed {
                    setting: "as-is".into(),
                    backend: "clock".into(),
                    period: Some(period),
                    rate: Some(rate),
                    nperiods: Some(2),
                    ..Default::default()
                }],
                ..Default::default()
            });
            key_of(r)
        };
        let k128 = with(&mut r, 128, 48000, 2.0);
        assert!(k128.audio.contains("128 frames at 48000 Hz"), "{k128:?}");
        assert_eq!(k128.trial_ms, Some(2000));
        assert_eq!(k128, with(&mut r, 128, 48000, 2.0));
        assert_ne!(k128, with(&mut r, 256, 48000, 2.0));
        assert_ne!(k128, with(&mut r, 128, 44100, 2.0));
        assert_ne!(k128, with(&mut r, 128, 48000, 5.0));
    }

    /// Two sessions each steady in itself but apart from the other: each alone shows no
    /// spread between runs, together they show the spread between sessions.
    #[test]
    fn calibrating_again_adds_runs_and_widens_to_the_spread_between_sessions() {
        let (a, b) = (
            cal(&[0.0, 0.0], &["r1", "r2"]),
            cal(&[2.0, 2.0], &["r3", "r4"]),
        );
        let m = merge(&a, b);
        let s = &m.metrics[0];
        assert_eq!(s.runs, vec![0.0, 0.0, 2.0, 2.0]);
        assert_eq!(s.df, 3);
        // Sample variance of 0 0 2 2 is 4/3; less the within-run 0.1.
        assert!((s.between - (4.0 / 3.0 - 0.1)).abs() < 1e-12, "{s:?}");
        assert_eq!(s.trial_df, Some(8.0));
        assert_eq!(m.runs, vec!["r1", "r2", "r3", "r4"]);
    }
}
