//! A guest run in parts: the sweep's order (trial round × setting × variant, as
//! `sweep::rounds` runs it), the `xrunrig run` commands that carry on after N finished
//! trials, and the host's merge of what each boot brought home into one results
//! directory, trials numbered as one run would have numbered them.

use crate::output::summary::TrialRecord;
use crate::rig::Rig;
use crate::sweep::{Plan, Rebuild};
use results::run::{RigInfo, RunDoc, SettingInfo, VariantInfo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What the whole run sweeps, in the order the guest's sweep runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub trials: u32,
    pub settings: Vec<String>,
    pub variants: Vec<String>,
}

impl Order {
    /// The plan's sweep: its trials, settings and variants, in its order.
    pub fn of(plan: &Plan) -> Order {
        Order {
            trials: plan.trials,
            settings: plan.setting_names(),
            variants: plan.variant_names(),
        }
    }

    pub fn total(&self) -> u64 {
        self.trials as u64 * self.settings.len() as u64 * self.variants.len() as u64
    }

    /// A trial's place in the sweep; None for one the order does not have.
    fn index(&self, r: &TrialRecord) -> Option<u64> {
        let s = self.settings.iter().position(|x| x == &r.setting)? as u64;
        let v = self.variants.iter().position(|x| x == &r.variant)? as u64;
        let per_round = (self.settings.len() * self.variants.len()) as u64;
        Some(r.trial as u64 * per_round + s * self.variants.len() as u64 + v)
    }
}

/// One `xrunrig run` in the guest: `trials` rounds from round `round0`, over these
/// settings and variants (in the order's order).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub round0: u32,
    pub trials: u32,
    pub settings: Vec<String>,
    pub variants: Vec<String>,
}

/// The parts that run what is left after the first `done` trials of the order: the
/// rest of the interrupted round (its setting's remaining variants, then its remaining
/// settings), then the remaining rounds whole. At most three; none when all are done.
pub fn parts_from(o: &Order, done: u64) -> Vec<Part> {
    let nv = o.variants.len() as u64;
    let per_round = o.settings.len() as u64 * nv;
    if per_round == 0 || done >= o.total() {
        return vec![];
    }
    let round = (done / per_round) as u32;
    let within = done % per_round;
    let mut parts = vec![];
    let mut next_round = round;
    if within > 0 {
        let (s, v) = ((within / nv) as usize, (within % nv) as usize);
        let mut first_setting = s;
        if v > 0 {
            parts.push(Part {
                round0: round,
                trials: 1,
                settings: vec![o.settings[s].clone()],
                variants: o.variants[v..].to_vec(),
            });
            first_setting = s + 1;
        }
        if first_setting < o.settings.len() {
            parts.push(Part {
                round0: round,
                trials: 1,
                settings: o.settings[first_setting..].to_vec(),
                variants: o.variants.clone(),
            });
        }
        next_round = round + 1;
    }
    if next_round < o.trials {
        parts.push(Part {
            round0: next_round,
            trials: o.trials - next_round,
            settings: o.settings.clone(),
            variants: o.variants.clone(),
        });
    }
    parts
}

/// A part's finished trials: the whole lines of its samples.jsonl (a line cut short by
/// the guest's death is not a trial), numbered as the whole run numbers them.
pub fn part_records(dir: &Path, part: &Part) -> Vec<TrialRecord> {
    let text = std::fs::read_to_string(dir.join(results::SAMPLES_JSONL)).unwrap_or_default();
    let whole = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    whole
        .lines()
        .filter_map(|l| serde_json::from_str::<TrialRecord>(l).ok())
        .map(|mut r| {
            r.trial += part.round0;
            r
        })
        .collect()
}

/// One boot's parts and where its frames were unpacked (`pN` per part).
pub struct Boot {
    pub dir: PathBuf,
    pub parts: Vec<Part>,
}

impl Boot {
    pub fn part_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("p{i}"))
    }

    /// Trials this boot finished and brought home.
    pub fn finished(&self) -> u64 {
        self.parts
            .iter()
            .enumerate()
            .map(|(i, p)| part_records(&self.part_dir(i), p).len() as u64)
            .sum()
    }
}

/// Files every part writes at its top: the merge writes its own (events.jsonl
/// renumbered; histograms.json, one part's aggregate, not at all). A part's INCOMPLETE
/// mark is its own boot's; the merged directory is whole once the merge has written it.
const RUN_FILES: [&str; 6] = [
    results::INCOMPLETE,
    results::RUN_JSON,
    results::SUMMARY_JSON,
    results::SAMPLES_JSONL,
    results::EVENTS_JSONL,
    results::HISTOGRAMS_JSON,
];

/// A part's events.jsonl lines of finished trials, renumbered; run-level lines (no
/// trial) kept as they are.
fn part_events(dir: &Path, part: &Part, recs: &[TrialRecord], out: &mut String) {
    let text = std::fs::read_to_string(dir.join(results::EVENTS_JSONL)).unwrap_or_default();
    for l in text.lines() {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue; // a line cut short by the guest's death
        };
        if let Some(t) = v.get("trial").and_then(|t| t.as_u64()) {
            let t_run = t + part.round0 as u64;
            let (s, var) = (v["setting"].as_str(), v["variant"].as_str());
            if !recs.iter().any(|r| {
                Some(r.setting.as_str()) == s
                    && Some(r.variant.as_str()) == var
                    && r.trial as u64 == t_run
            }) {
                continue;
            }
            v["trial"] = t_run.into();
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
}

/// `name` as one trial's file: the (setting, variant, trial-in-part) whose stem it
/// starts with.
fn trial_of(name: &str, part: &Part) -> Option<(String, String, u32)> {
    for s in &part.settings {
        for v in &part.variants {
            let pre = format!("{}__{}__", results::file_part(s), results::file_part(v));
            if let Some(rest) = name.strip_prefix(&pre) {
                let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(t) = digits.parse() {
                    return Some((s.clone(), v.clone(), t));
                }
            }
        }
    }
    None
}

fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir.join(rel)) else {
        return;
    };
    for e in rd.flatten() {
        let r = rel.join(e.file_name());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(dir, &r, out);
        } else {
            out.push(r);
        }
    }
}

/// What the merge found, for run.json and the message.
pub struct Merged {
    pub records: usize,
    /// Files of trials that did not finish, left out.
    pub dropped: Vec<String>,
}

/// Merges every boot's parts into `dest`: samples.jsonl in the sweep's order, each
/// finished trial's files renamed to the run's trial number (an unfinished trial's
/// files are left out), events.jsonl likewise, run.json from the parts' (or from the
/// host's plan when none arrived), and the rig kind's own files over the trials that
/// arrived (`RigKind::rebuild`: a thread rig's summary.json with the stopping rule's
/// decisions replayed; an audio rig's with its histograms.json, replayed from its
/// trials' records, cycles and events by `livefx::stored`), as a run that was never
/// interrupted writes them. The run is `plan`'s, swept in its order (`Order::of`).
pub fn merge(
    plan: &Plan,
    boots: &[Boot],
    kernel_release: &str,
    span: (&str, &str),
    dest: &Path,
) -> Result<Merged, String> {
    let order = &Order::of(plan);
    let rig = &plan.rig;
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
    let mut records: Vec<TrialRecord> = vec![];
    let mut docs: Vec<RunDoc> = vec![];
    let mut dropped = vec![];
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut events = String::new();
    // Every finished trial's instrument captures, as the merged directory names them.
    let mut trial_files: Vec<String> = vec![];
    for b in boots {
        for (i, part) in b.parts.iter().enumerate() {
            let pd = b.part_dir(i);
            let recs = part_records(&pd, part);
            let mut files = vec![];
            walk(&pd, Path::new(""), &mut files);
            for rel in files {
                let name = rel.to_string_lossy().into_owned();
                if RUN_FILES.contains(&name.as_str()) {
                    continue;
                }
                let file = rel
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let target = match trial_of(&file, part) {
                    Some((s, v, t)) => {
                        let t_run = t + part.round0;
                        if !recs
                            .iter()
                            .any(|r| r.setting == s && r.variant == v && r.trial == t_run)
                        {
                            dropped.push(name);
                            continue;
                        }
                        let old = results::trial_stem(&s, &v, t);
                        let new = results::trial_stem(&s, &v, t_run);
                        let f = format!("{new}{}", &file[old.len()..]);
                        let to = rel.with_file_name(f).to_string_lossy().into_owned();
                        renamed.insert(name.clone(), to.clone());
                        if [
                            results::instruments::TRACE_DIR,
                            results::instruments::IPI_DIR,
                        ]
                        .iter()
                        .any(|d| to.starts_with(&format!("{d}/")))
                        {
                            trial_files.push(to.clone());
                        }
                        to
                    }
                    None => name.clone(),
                };
                let to = dest.join(&target);
                if let Some(d) = to.parent() {
                    std::fs::create_dir_all(d).map_err(|e| io(d, e))?;
                }
                let from = pd.join(&rel);
                std::fs::copy(&from, &to).map_err(|e| io(&from, e))?;
            }
            if let Some(d) = std::fs::read_to_string(pd.join(results::RUN_JSON))
                .ok()
                .and_then(|t| RunDoc::from_json(&t).ok())
            {
                docs.push(d);
            }
            part_events(&pd, part, &recs, &mut events);
            records.extend(recs);
        }
    }
    if !events.is_empty() {
        let ep = dest.join(results::EVENTS_JSONL);
        std::fs::write(&ep, events).map_err(|e| io(&ep, e))?;
    }
    records.sort_by_key(|r| order.index(r).unwrap_or(u64::MAX));
    let mut samples = String::new();
    for r in &records {
        samples.push_str(&serde_json::to_string(r).map_err(|e| e.to_string())?);
        samples.push('\n');
    }
    let sp = dest.join(results::SAMPLES_JSONL);
    std::fs::write(&sp, samples).map_err(|e| io(&sp, e))?;
    let mut doc = merged_doc(
        order,
        docs,
        rig,
        plan.profile_file(),
        &renamed,
        &trial_files,
    );
    plan.kind.rebuild(&Rebuild {
        dir: dest,
        rig,
        settings: &order.settings,
        variants: &order.variants,
        records: &records,
        until: plan.until.as_ref(),
        doc: &doc,
    })?;
    // The boots' span on the host's clock: the first boot may have written no run.json.
    doc.started = Some(span.0.to_string());
    doc.ended = Some(span.1.to_string());
    // No part's run.json arrived: the guest's kernel is still known.
    doc.kernel.get_or_insert_with(|| results::run::KernelInfo {
        release: Some(kernel_release.into()),
        ..Default::default()
    });
    crate::output::write_json(&dest.join(results::RUN_JSON), &doc)?;
    Ok(Merged {
        records: records.len(),
        dropped,
    })
}

/// run.json over the parts': the last part's as the base, the whole run's trials,
/// settings and variants, first start and last end, every original value restored.
fn merged_doc(
    order: &Order,
    docs: Vec<RunDoc>,
    rig: &Rig,
    profile: Option<&crate::knobs::profile::Profile>,
    renamed: &BTreeMap<String, String>,
    trial_files: &[String],
) -> RunDoc {
    let mut doc = docs.last().cloned().unwrap_or_else(|| RunDoc {
        format: results::FORMAT_VERSION,
        xrunrig_version: Some(env!("CARGO_PKG_VERSION").into()),
        git: Some(crate::output::provenance::git()),
        rig: Some(RigInfo {
            name: Some(rig.name.clone()),
            path: Some(rig.path.display().to_string()),
            sha256: Some(crate::output::provenance::sha256_hex(&rig.text)),
            description: Some(rig.description.clone()),
            text: Some(rig.text.clone()),
        }),
        profile: profile.map(|p| results::run::ProfileInfo {
            name: Some(p.name.clone()),
            path: p.path.as_ref().map(|x| x.display().to_string()),
            sha256: p
                .path
                .as_ref()
                .map(|_| crate::output::provenance::sha256_hex(&p.text)),
            text: p.path.as_ref().map(|_| p.text.clone()),
        }),
        ..Default::default()
    });
    doc.trials = Some(order.trials.into());
    doc.started = docs.iter().find_map(|d| d.started.clone());
    doc.ended = docs.iter().rev().find_map(|d| d.ended.clone());
    doc.variants = order
        .variants
        .iter()
        .map(|v| {
            docs.iter()
                .flat_map(|d| d.variants.iter())
                .find(|x| &x.name == v)
                .cloned()
                .unwrap_or_else(|| VariantInfo {
                    name: v.clone(),
                    description: rig
                        .variants
                        .iter()
                        .find(|x| &x.name == v)
                        .map(|x| x.description.clone())
                        .unwrap_or_default(),
                })
        })
        .collect();
    doc.settings = order
        .settings
        .iter()
        .map(|s| {
            docs.iter()
                .rev()
                .flat_map(|d| d.settings.iter())
                .find(|x| x.name.as_deref() == Some(s.as_str()))
                .cloned()
                .unwrap_or_else(|| SettingInfo {
                    name: Some(s.clone()),
                    ..Default::default()
                })
        })
        .collect();
    let mut orig: Vec<String> = vec![];
    for d in &docs {
        for k in &d.knobs_original {
            if !orig.contains(k) {
                orig.push(k.clone());
            }
        }
    }
    doc.knobs_original = orig;
    if let Some(first) = docs.first() {
        doc.sched_features_before = first.sched_features_before.clone();
    }
    let mut files: Vec<String> = vec![];
    for d in &docs {
        for f in d.instruments.iter().flat_map(|i| i.files.iter()) {
            let f = renamed.get(f).cloned().unwrap_or_else(|| f.clone());
            if !files.contains(&f) {
                files.push(f);
            }
        }
    }
    // A boot that died wrote no run.json to list its captures: the files are the list.
    for f in trial_files {
        if !files.contains(f) {
            files.push(f.clone());
        }
    }
    files.sort();
    if let Some(i) = doc.instruments.as_mut() {
        i.files = files;
    }
    doc.interrupted = docs.iter().any(|d| d.interrupted);
    doc.error = docs.iter().find_map(|d| d.error.clone());
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order() -> Order {
        Order {
            trials: 3,
            settings: vec!["A".into(), "B".into()],
            variants: vec!["pi".into(), "nopi".into()],
        }
    }

    fn items(o: &Order, parts: &[Part]) -> Vec<(u32, String, String)> {
        let mut v = vec![];
        for p in parts {
            for t in 0..p.trials {
                for s in &p.settings {
                    for x in &p.variants {
                        v.push((p.round0 + t, s.clone(), x.clone()));
                    }
                }
            }
        }
        let _ = o;
        v
    }

    #[test]
    fn parts_cover_exactly_what_is_left_in_the_sweeps_order() {
        let o = order();
        let all = items(&o, &parts_from(&o, 0));
        assert_eq!(all.len(), 12);
        assert_eq!(parts_from(&o, 0).len(), 1);
        for done in 0..=12u64 {
            let parts = parts_from(&o, done);
            assert!(parts.len() <= 3, "{done}: {parts:?}");
            assert_eq!(items(&o, &parts), all[done as usize..], "after {done}");
        }
        // After 5 (round 1, A/pi done): A/nopi, then B, then round 2.
        let p = parts_from(&o, 5);
        assert_eq!(p[0].settings, ["A"]);
        assert_eq!(p[0].variants, ["nopi"]);
        assert_eq!((p[1].round0, p[1].trials), (1, 1));
        assert_eq!(p[1].settings, ["B"]);
        assert_eq!((p[2].round0, p[2].trials), (2, 1));
    }

    #[test]
    fn a_line_cut_short_is_not_a_trial_and_trials_are_renumbered() {
        let d = std::env::temp_dir().join(format!("xrunrig-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let rec = |t: u32| {
            format!(
                r#"{{"setting":"A","variant":"pi","trial":{t},"status":"ok","duration_ms":1.0,"metrics":{{}},"marks":{{}},"evidence":[]}}"#
            )
        };
        std::fs::write(
            d.join("samples.jsonl"),
            format!("{}\n{}\n{}", rec(0), rec(1), &rec(2)[..20]),
        )
        .unwrap();
        let part = Part {
            round0: 4,
            trials: 3,
            settings: vec!["A".into()],
            variants: vec!["pi".into()],
        };
        let r = part_records(&d, &part);
        assert_eq!(r.iter().map(|r| r.trial).collect::<Vec<_>>(), [4, 5]);
        assert_eq!(
            trial_of("A__pi__12.trace.json", &part),
            Some(("A".into(), "pi".into(), 12))
        );
        assert_eq!(trial_of("A__nopi__1.bin", &part), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn merge_renumbers_the_resumed_boots_trials_and_drops_an_unfinished_ones_files() {
        let base = std::env::temp_dir().join(format!("xrunrig-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let rig = crate::rig::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/rigs/pi-inversion.toml"
        )))
        .unwrap();
        let choices = crate::options::Choices {
            trials: Some(2),
            ..Default::default()
        };
        let plan = Plan::build(rig, None, choices, crate::kinds::of).unwrap();
        let o = Order::of(&plan);
        assert_eq!(
            o,
            Order {
                trials: 2,
                settings: vec!["as-is".into()],
                variants: vec!["inherit".into(), "none".into()],
            }
        );
        let rec = |v: &str, t: u32, wait: f64| {
            format!(
                r#"{{"setting":"as-is","variant":"{v}","trial":{t},"status":"ok","duration_ms":1.0,"metrics":{{"wait":[{wait}]}},"marks":{{}},"evidence":[]}}"#
            )
        };
        let write = |p: PathBuf, text: String| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // Boot 1 died in trial 3 (inherit, round 1): its line and file are partial.
        let b0 = base.join("b0/p0");
        write(
            b0.join("samples.jsonl"),
            format!(
                "{}\n{}\n{}",
                rec("inherit", 0, 90.0),
                rec("none", 0, 380.0),
                &rec("inherit", 1, 1.0)[..30]
            ),
        );
        write(b0.join("trace/as-is__inherit__0.csv"), "a".into());
        write(b0.join("trace/as-is__inherit__1.csv"), "partial".into());
        write(
            b0.join("events.jsonl"),
            "{\"setting\":\"as-is\",\"variant\":\"none\",\"trial\":0,\"kind\":\"x\"}\n{\"setting\":\"as-is\",\"variant\":\"inherit\",\"trial\":1,\"kind\":\"y\"}\n".into(),
        );
        // Boot 2 ran round 1 as its own trial 0.
        let b1 = base.join("b1/p0");
        write(
            b1.join("samples.jsonl"),
            format!("{}\n{}\n", rec("inherit", 0, 95.0), rec("none", 0, 385.0)),
        );
        write(b1.join("trace/as-is__inherit__0.csv"), "b".into());
        let boots = [
            Boot {
                dir: base.join("b0"),
                parts: parts_from(&o, 0),
            },
            Boot {
                dir: base.join("b1"),
                parts: parts_from(&o, 2),
            },
        ];
        assert_eq!(boots[0].finished() + boots[1].finished(), 4);
        let dest = base.join("out");
        let m = merge(&plan, &boots, "6.12.0", ("a", "b"), &dest).unwrap();
        assert_eq!(m.records, 4);
        assert_eq!(m.dropped, ["trace/as-is__inherit__1.csv"]);
        let got: Vec<(String, u32)> = part_records(
            &dest,
            &Part {
                round0: 0,
                ..parts_from(&o, 0)[0].clone()
            },
        )
        .into_iter()
        .map(|r| (r.variant, r.trial))
        .collect();
        assert_eq!(
            got,
            [
                ("inherit".into(), 0),
                ("none".into(), 0),
                ("inherit".into(), 1),
                ("none".into(), 1)
            ]
        );
        let read = |p: &str| std::fs::read_to_string(dest.join(p)).unwrap();
        assert_eq!(read("trace/as-is__inherit__0.csv"), "a");
        assert_eq!(read("trace/as-is__inherit__1.csv"), "b");
        assert_eq!(
            read("events.jsonl").lines().count(),
            1,
            "{}",
            read("events.jsonl")
        );
        let sum: serde_json::Value = serde_json::from_str(&read("summary.json")).unwrap();
        let n: Vec<u64> = sum["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["n"].as_u64().unwrap())
            .collect();
        assert_eq!(n, [2, 2], "{sum}");
        let run = RunDoc::from_json(&read("run.json")).unwrap();
        assert_eq!(run.trials, Some(2));
        assert_eq!(run.kernel.unwrap().release.as_deref(), Some("6.12.0"));
        assert_eq!(
            (run.started.as_deref(), run.ended.as_deref()),
            (Some("a"), Some("b"))
        );
        let _ = std::fs::remove_dir_all(&base);
    }
}
