//! The livefx rig as a rig kind (`kind = "livefx"`): what it does that other kinds do not.

use super::config::Config;
use crate::knobs::profile::{AudioSetting, Setting};
use crate::options::AudioOptions;
use crate::rig::Rig;
use crate::rig::livefx::Asked;
use crate::sweep::decide::Criterion;
use crate::sweep::kind::summary_of;
use crate::sweep::{Brought, Prepared, Rebuild, RigKind};
use crate::sys::format_cpu_set;
use results::livefx::Summary;
use std::path::Path;

/// Registered in `src/kinds.rs`.
pub struct Livefx;

/// A livefx rig's `[livefx]` table (validation makes sure it has one).
fn config(rig: &Rig) -> Result<&Config, String> {
    rig.livefx
        .as_ref()
        .ok_or_else(|| format!("rig '{}' has no [livefx] table", rig.name))
}

impl RigKind for Livefx {
    fn name(&self) -> &'static str {
        results::KIND_LIVEFX
    }

    /// The audio's length (--duration or the rig's), opening and closing the stream.
    fn per_trial_ns(&self, rig: &Rig, audio: &AudioOptions) -> [u64; 3] {
        [
            audio
                .duration_ns
                .or(rig.livefx.as_ref().map(|l| l.duration_ns))
                .unwrap_or(0),
            crate::rig::livefx::OPEN_CLOSE_NS,
            rig.trial_gap_ns,
        ]
    }

    /// The rig's `pass`: without one an audio trial has no pass or fail (how many
    /// misses are too many is the rig's to say).
    fn trial_verdict(&self, rig: &Rig) -> Result<Criterion, String> {
        config(rig)?.pass.map(Criterion::Misses).ok_or_else(|| {
            format!(
                "livefx rig '{}' states no pass or fail for its trials: add \
                 pass = {{ misses = 0 }} (a trial passes with no deadline miss) or \
                 pass = {{ misses_per_minute = 2.0 }} to its [livefx] table",
                rig.name
            )
        })
    }

    fn plays_audio(&self) -> bool {
        true
    }

    fn audio(
        &self,
        rig: &Rig,
        audio: &AudioOptions,
        setting: &Setting,
    ) -> Result<Option<Asked>, String> {
        asked(config(rig)?, audio, setting.audio.as_ref()).map(Some)
    }

    /// The `[livefx]` table in a line, then where each of its threads may run.
    fn check_lines(&self, rig: &Rig, path: &str) -> Vec<String> {
        let Ok(c) = config(rig) else { return vec![] };
        let mut out = vec![format!(
            "{path}: [livefx] ok — {} worker(s), period {}, {} Hz, backend {}, CPUs {}",
            c.workers.len(),
            c.period,
            c.rate,
            c.backend,
            format_cpu_set(&c.cpus_used())
        )];
        out.push(format!(
            "  callback: FIFO {}, CPUs {}",
            c.callback_priority,
            cpus_or_any(&c.callback_cpus)
        ));
        for w in &c.workers {
            out.push(format!(
                "  worker {}: FIFO {}, CPUs {}{}",
                w.name,
                w.priority,
                cpus_or_any(&w.cpus),
                if w.waited { "" } else { ", not waited for" }
            ));
        }
        // Whether --until-decided can run it, said before anything runs.
        out.push(match self.trial_verdict(rig) {
            Ok(cr) => format!("  --until-decided: a trial passes with {}", cr.describe()),
            Err(_) => "  --until-decided: not for this rig, which states no pass \
                       (add pass = { misses = 0 } to [livefx])"
                .into(),
        });
        out
    }

    fn check_cpus(&self, rig: &Rig, online: &[usize]) -> Result<(), String> {
        super::missing_cpus(&rig.name, config(rig)?, online)
    }

    /// Each setting's audio parameters resolve, and every backend named answers.
    fn check_settings(&self, rig: &Rig, settings: &[Setting]) -> Vec<String> {
        let c = match config(rig) {
            Ok(c) => c,
            Err(e) => return vec![e],
        };
        let mut problems = vec![];
        let mut cache = Vec::new();
        let mut params = Vec::new();
        let none = AudioOptions::default();
        for s in settings {
            match asked(c, &none, s.audio.as_ref())
                .and_then(|x| super::resolve(c, &none, &x, &mut cache))
            {
                Ok(x) => params.push(x),
                Err(e) => problems.push(format!("setting '{}': {e}", s.name)),
            }
        }
        if params.len() == settings.len()
            && let Err(e) = super::probe_backends(settings, &params)
        {
            problems.push(e);
        }
        problems
    }

    fn run(&self, p: Prepared) -> i32 {
        super::run_main(p)
    }

    /// summary.json and histograms.json from the merged records and run.json's
    /// `[livefx]` section.
    fn rebuild(&self, r: &Rebuild) -> Result<(), String> {
        super::stored::rebuild(
            r.dir,
            r.rig,
            r.settings,
            r.variants,
            r.records,
            r.doc.livefx.as_ref(),
            r.until,
        )
    }

    fn brought(&self, dir: &Path) -> Option<Brought> {
        let sm: Summary = summary_of(dir, self.name())?;
        let mut table = table(&sm);
        if let Some(d) = &sm.until_decided {
            table.push_str(&crate::sweep::decide::render(d));
        }
        Some(Brought {
            table,
            livefx_rows: sm.rows,
            decided: sm.until_decided,
            ..Brought::default()
        })
    }
}

/// One setting's audio as asked: the command line over the setting's `audio` over the
/// rig's `[livefx]`, each in its range.
fn asked(cfg: &Config, a: &AudioOptions, audio: Option<&AudioSetting>) -> Result<Asked, String> {
    let def = AudioSetting::default();
    let au = audio.unwrap_or(&def);
    let x = Asked {
        backend: a.backend.or(au.backend).unwrap_or(cfg.backend),
        device: a
            .device
            .clone()
            .or_else(|| au.device.clone())
            .or_else(|| cfg.device.clone()),
        period_explicit: a.period.is_some() || au.period.is_some(),
        period: a.period.or(au.period).unwrap_or(cfg.period),
        rate: a.rate.or(au.rate).unwrap_or(cfg.rate),
        nperiods: au.nperiods.unwrap_or(cfg.nperiods),
    };
    use crate::rig::limits::{MAX_NPERIODS, MAX_PERIOD, MAX_RATE};
    for (what, v, max) in [
        ("period", x.period, MAX_PERIOD),
        ("rate", x.rate, MAX_RATE),
        ("nperiods", x.nperiods, MAX_NPERIODS),
    ] {
        if !(1..=max).contains(&v) {
            return Err(format!("{what} {v}: use 1..={max}"));
        }
    }
    Ok(x)
}

fn cpus_or_any(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "any".into()
    } else {
        format_cpu_set(cpus)
    }
}

/// A guest kernel's rows, one line each (the full table is the guest's; its
/// summary.json has every figure).
fn table(sum: &Summary) -> String {
    let mut out = String::from(
        "setting / variant: backend, period, cycles, xruns, deadline misses, clicks (unexplained), round trip frames\n",
    );
    fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
        v.map_or("-".into(), |x| x.to_string())
    }
    for r in &sum.rows {
        let c = &r.counts;
        out.push_str(&format!(
            "{} / {}: {}, {}, {}, {}, {}, {} ({}), {}\n",
            r.setting,
            r.variant,
            r.backend,
            opt(r.period),
            c.cycles,
            c.xruns,
            c.deadline_misses,
            opt(c.discontinuities),
            opt(c.discontinuities_unexplained),
            opt(c.roundtrip_frames),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_kernels_rows_print_one_line_each() {
        let sum: Summary = serde_json::from_str(
            r#"{"kind": "livefx", "rows": [
                {"setting": "A", "variant": "v", "backend": "jack", "period": 512, "cycles": 467,
                 "xruns": 2, "deadline_misses": 0, "discontinuities": 2,
                 "discontinuities_unexplained": 0, "roundtrip_frames": 1536},
                {"setting": "B", "variant": "v", "backend": "clock", "period": 128, "cycles": 9,
                 "xruns": 0, "deadline_misses": 0, "discontinuities": null,
                 "discontinuities_unexplained": null, "roundtrip_frames": null}
            ]}"#,
        )
        .unwrap();
        let t = table(&sum);
        assert!(
            t.contains("A / v: jack, 512, 467, 2, 0, 2 (0), 1536\n"),
            "{t}"
        );
        assert!(t.contains("B / v: clock, 128, 9, 0, 0, - (-), -\n"), "{t}");
    }

    /// A guest run merged from several boots: summary.json's comparisons are replayed
    /// from the merged records under the guest's rule, and come home with the table.
    #[test]
    fn a_merged_runs_decisions_are_replayed_into_its_summary() {
        use crate::sweep::decide;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let rig = crate::rig::load(&root.join("rigs/livefx-push-ipi.toml")).unwrap();
        let settings = vec!["RT_PUSH_IPI".to_string(), "NO_RT_PUSH_IPI".to_string()];
        let variants = vec!["pi".to_string()];
        let rule = decide::rule(Livefx.trial_verdict(&rig), &settings, &variants, 8).unwrap();
        // No miss under RT_PUSH_IPI, 12 under NO_RT_PUSH_IPI: decided after 6 rounds.
        let mut records = vec![];
        for t in 0..6 {
            for (s, misses) in [("RT_PUSH_IPI", 0.0), ("NO_RT_PUSH_IPI", 12.0)] {
                let mut r = decide::tests::rec(s, "pi", t, None);
                r.duration_ms = 30_000.0;
                for (k, v) in [
                    ("cycles", 703.0),
                    ("xruns", misses),
                    ("misses_not_injected", misses),
                ] {
                    r.metrics.insert(k.into(), vec![v]);
                }
                records.push(r);
            }
        }
        let d = std::env::temp_dir().join(format!("xrunrig-lfx-merge-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let doc = results::run::RunDoc::default();
        let rebuild = |until| {
            Livefx.rebuild(&Rebuild {
                dir: &d,
                rig: &rig,
                settings: &settings,
                variants: &variants,
                records: &records,
                until,
                doc: &doc,
            })
        };
        rebuild(Some(&rule)).unwrap();
        let b = Livefx.brought(&d).unwrap();
        let dec = b.decided.unwrap();
        let p = &dec.pairs[0];
        // The rule's first look (5: 5/5 against 0/5) decides it.
        assert_eq!((p.trials, p.first_within, p.second_within), (5, 5, 0));
        assert_eq!(p.worse.as_deref(), Some("NO_RT_PUSH_IPI"));
        assert!(
            b.table
                .contains("pi: RT_PUSH_IPI 5/5 vs NO_RT_PUSH_IPI 0/5 within bound"),
            "{}",
            b.table
        );
        // Without the rule (a fixed number of trials) there is none.
        rebuild(None).unwrap();
        assert!(Livefx.brought(&d).unwrap().decided.is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// summary.json is read only as the kind that wrote it: a thread rig's is not a
    /// livefx rig's, though lenient reading would take it.
    #[test]
    fn a_summary_is_brought_only_as_its_own_kind() {
        let d = std::env::temp_dir().join(format!("xrunrig-brought-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let s = d.join(results::SUMMARY_JSON);
        std::fs::write(&s, r#"{"kind": "trials", "rig": "x", "rows": []}"#).unwrap();
        assert!(Livefx.brought(&d).is_none());
        assert!(crate::trials::Threads.brought(&d).is_some());
        std::fs::write(&s, r#"{"kind": "livefx", "rows": []}"#).unwrap();
        assert!(Livefx.brought(&d).is_some());
        assert!(crate::trials::Threads.brought(&d).is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
