//! The directories compared: loaded, labelled A, B, C..., one redactor for all, checked
//! to be runs of one experiment (else refused), and each metric of the baseline found
//! in the others.

use super::sample::{Key, Sample};
use crate::kind;
use crate::load::{Results, first_seen};
use crate::redact::Redactor;
use std::path::PathBuf;

pub struct Dirs {
    pub results: Vec<Results>,
    /// "A" for the baseline, then "B", "C", ...
    pub labels: Vec<String>,
    pub red: Redactor,
}

/// One metric of the baseline and what each directory has for it.
pub struct Metric {
    pub key: Key,
    /// The baseline's first; None where a directory lacks the metric.
    pub per_dir: Vec<Option<Sample>>,
}

pub fn load(dirs: &[PathBuf], redact: bool) -> Result<Dirs, String> {
    if dirs.len() < 2 {
        return Err(
            "compare needs two or more results directories; the first is the baseline".into(),
        );
    }
    same_directory(dirs)?;
    let results: Vec<Results> = dirs
        .iter()
        .map(|d| kind::load(d))
        .collect::<Result<_, _>>()?;
    // A watch (no rig ran) or a bisection (its steps are compared already) says why not.
    if let Some(why) = results
        .iter()
        .find_map(|r| kind::of(r).not_compared(&r.dir))
    {
        return Err(why);
    }
    let labels: Vec<String> = (0..results.len())
        .map(|i| ((b'A' + (i % 26) as u8) as char).to_string())
        .collect();
    for (i, r) in results.iter().enumerate().skip(1) {
        same_experiment(&results[0], r, &labels[i])?;
    }
    let red = if redact {
        let hosts: Vec<String> = results
            .iter()
            .flat_map(|r| crate::report::run_hosts(&r.run))
            .collect();
        Redactor::for_this_machine(&hosts)
    } else {
        Redactor::none()
    };
    Ok(Dirs {
        results,
        labels,
        red,
    })
}

/// Refuses a directory given twice (by any path to it).
fn same_directory(dirs: &[PathBuf]) -> Result<(), String> {
    let canon: Vec<Option<PathBuf>> = dirs.iter().map(|d| d.canonicalize().ok()).collect();
    for i in 0..dirs.len() {
        for j in 0..i {
            if canon[i].is_some() && canon[i] == canon[j] {
                return Err(format!(
                    "{} and {} are the same directory: a run compared with itself says nothing; \
                     compare two runs (e.g. two kernels, or two runs of one kernel to see the noise)",
                    dirs[j].display(),
                    dirs[i].display()
                ));
            }
        }
    }
    Ok(())
}

/// Settings in the order the run swept them.
fn settings(r: &Results) -> Vec<String> {
    first_seen(kind::of(r).keys().into_iter().map(|k| k.0))
}

fn variants(r: &Results) -> Vec<String> {
    first_seen(kind::of(r).keys().into_iter().map(|k| k.1))
}

fn list(v: &[String]) -> String {
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// Refuses two directories that are not runs of one experiment: another rig, other
/// settings or variants, other audio parameters, or the same run copied. What may
/// differ is what a comparison is for: the kernel, a patch, the machine, the day.
fn same_experiment(a: &Results, b: &Results, label: &str) -> Result<(), String> {
    let refuse = |what: String| {
        Err(format!(
            "A ({}) and {label} ({}) are not runs of one experiment: {what}. compare sets runs \
             of one rig with the same settings and variants side by side (different kernels, \
             patches or machines); refused, nothing was written",
            a.dir.display(),
            b.dir.display()
        ))
    };
    if a.kind != b.kind {
        return refuse(format!("A is a {} run, {label} a {} run", a.kind, b.kind));
    }
    if a.rig != b.rig {
        return refuse(format!("A is rig '{}', {label} is rig '{}'", a.rig, b.rig));
    }
    let (sa, sb) = (settings(a), settings(b));
    if sa != sb {
        return refuse(format!(
            "A has settings {}, {label} has {}",
            list(&sa),
            list(&sb)
        ));
    }
    let (va, vb) = (variants(a), variants(b));
    if va != vb {
        return refuse(format!(
            "A has variants {}, {label} has {}",
            list(&va),
            list(&vb)
        ));
    }
    // A setting of the same name that asked for other knob values.
    for s in &a.run.settings {
        let other = b.run.settings.iter().find(|x| x.name == s.name);
        if let Some(o) = other
            && s.requested.is_some()
            && o.requested.is_some()
            && s.requested != o.requested
        {
            return refuse(format!(
                "setting '{}' asked for {} in A and {} in {label}",
                s.name.as_deref().unwrap_or("?"),
                list(s.requested.as_deref().unwrap_or_default()),
                list(o.requested.as_deref().unwrap_or_default())
            ));
        }
    }
    if let (Some(x), Some(y)) = (a.run.settings_applied, b.run.settings_applied)
        && x != y
    {
        return refuse(format!(
            "the profile's settings were {} in A and {} in {label} (--settings-as-is)",
            if x { "applied" } else { "not applied" },
            if y { "applied" } else { "not applied" }
        ));
    }
    if let Some(what) = kind::of(a).differs(kind::of(b), label) {
        return refuse(what);
    }
    // One run in two places (a copy): run.json and summary.json the same, byte for byte
    // (two runs never share run.json: it holds when each started).
    let read = |r: &Results, f: &str| std::fs::read(r.dir.join(f)).ok();
    let same = |f: &str| read(a, f).is_some() && read(a, f) == read(b, f);
    if same(results::RUN_JSON) && same(results::SUMMARY_JSON) {
        return Err(format!(
            "{} and {} hold the same run (their run.json and summary.json are identical: a \
             copy): a run compared with itself says nothing; compare two runs",
            a.dir.display(),
            b.dir.display(),
        ));
    }
    Ok(())
}

/// Each metric of the baseline with what every directory has under the same
/// (setting, variant, metric).
pub fn metrics(results: &[Results]) -> Vec<Metric> {
    // A watch has none: `load()` refuses it.
    let per: Vec<Vec<(Key, Sample)>> = results.iter().map(|r| kind::of(r).samples()).collect();
    per[0]
        .iter()
        .map(|(k, s)| Metric {
            key: k.clone(),
            per_dir: std::iter::once(Some(s.clone()))
                .chain(
                    per.iter()
                        .skip(1)
                        .map(|p| p.iter().find(|(k2, _)| k2 == k).map(|x| x.1.clone())),
                )
                .collect(),
        })
        .collect()
}
