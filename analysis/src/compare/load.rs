//! The sides compared: each a list of runs (results directories) of one configuration
//! (one rig, settings, variants, kernel), labelled A, B, C..., checked to be runs of one
//! experiment (else refused), and each metric of the baseline found in the others.

use super::sample::{Key, Sample};
use crate::kind;
use crate::load::{Results, first_seen};
use crate::redact::Redactor;
use std::path::PathBuf;

/// One side: its label ("A" for the baseline) and its runs.
pub struct Side {
    pub label: String,
    pub runs: Vec<Results>,
}

pub struct Sides {
    pub sides: Vec<Side>,
    pub red: Redactor,
}

impl Sides {
    pub fn labels(&self) -> Vec<String> {
        self.sides.iter().map(|s| s.label.clone()).collect()
    }
    /// The baseline's first run.
    pub fn base(&self) -> &Results {
        &self.sides[0].runs[0]
    }
}

/// One metric of the baseline and what each side's runs have for it.
pub struct Metric {
    pub key: Key,
    /// Per side, the samples of the runs that have the metric.
    pub per_side: Vec<Vec<Sample>>,
}

/// Reads every side's runs and refuses what is not one experiment.
pub fn load(sides: &[Vec<PathBuf>], redact: bool) -> Result<Sides, String> {
    if sides.len() < 2 || sides.iter().any(|s| s.is_empty()) {
        return Err(
            "compare needs two sides: `xrunrig compare A B` (one run a side), `xrunrig compare \
             A1 A2 A3 -- B1 B2 B3` (several runs a side: the runs are the units), or a run over \
             several kernels (`xrunrig compare results/RIG-TIME-kernels`); the first side is \
             the baseline"
                .into(),
        );
    }
    let all: Vec<PathBuf> = sides.iter().flatten().cloned().collect();
    same_directory(&all)?;
    let mut out = Vec::new();
    for (i, paths) in sides.iter().enumerate() {
        let runs: Vec<Results> = paths
            .iter()
            .map(|d| kind::load(d))
            .collect::<Result<_, _>>()?;
        // A watch (no rig ran) or a bisection (its steps are compared already) says why not.
        if let Some(why) = runs.iter().find_map(|r| kind::of(r).not_compared(&r.dir)) {
            return Err(why);
        }
        out.push(Side {
            label: ((b'A' + (i % 26) as u8) as char).to_string(),
            runs,
        });
    }
    for s in &out {
        for (j, r) in s.runs.iter().enumerate().skip(1) {
            one_side(&s.runs[0], r, &s.label, j + 1)?;
        }
    }
    for s in out.iter().skip(1) {
        same_experiment(&out[0].runs[0], &s.runs[0], &s.label)?;
    }
    copies(&out)?;
    let red = if redact {
        let hosts: Vec<String> = out
            .iter()
            .flat_map(|s| s.runs.iter())
            .flat_map(|r| crate::report::run_hosts(&r.run))
            .collect();
        Redactor::for_this_machine(&hosts)
    } else {
        Redactor::none()
    };
    Ok(Sides { sides: out, red })
}

/// The sides of one directory of a run over several kernels (its combined.json): each
/// kernel a side, the first the baseline, its boots (`--boots N`) the side's runs, in
/// the order the run listed them. Anything else is returned as given.
pub fn expand(sides: &[Vec<PathBuf>]) -> Result<Vec<Vec<PathBuf>>, String> {
    let [one] = sides else {
        return Ok(sides.to_vec());
    };
    let [base] = one.as_slice() else {
        return Ok(sides.to_vec());
    };
    let p = base.join(results::combined::COMBINED_JSON);
    if !p.is_file() {
        return Ok(sides.to_vec());
    }
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    let c: results::combined::Combined = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a run over several kernels as xrunrig writes it ({e})",
            p.display()
        )
    })?;
    // Each boot's directory relative to the base (its last one or two components), so
    // that a base moved or copied elsewhere still reads.
    let mut groups: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for e in &c.kernels {
        let parts: Vec<String> = std::path::Path::new(&e.dir)
            .components()
            .filter_map(|x| match x {
                std::path::Component::Normal(n) => n.to_str().map(str::to_string),
                _ => None,
            })
            .collect();
        let take = if e.boot.is_some() { 2 } else { 1 };
        let climbs = std::path::Path::new(&e.dir)
            .components()
            .any(|x| x == std::path::Component::ParentDir);
        if climbs || parts.len() < take || parts.iter().any(|x| x.starts_with('.')) {
            return Err(format!(
                "{}: kernel {}'s directory {:?} is not one of this run's",
                p.display(),
                e.kernel,
                e.dir
            ));
        }
        let rel = &parts[parts.len() - take..];
        let dir = rel.iter().fold(base.clone(), |d, x| d.join(x));
        match groups.iter_mut().find(|g| g.0 == rel[0]) {
            Some(g) => g.1.push(dir),
            None => groups.push((rel[0].clone(), vec![dir])),
        }
    }
    if groups.len() < 2 {
        return Err(format!(
            "{} holds one kernel's runs: compare it with another run (`xrunrig compare A1 A2 \
             -- B1 B2`)",
            base.display()
        ));
    }
    Ok(groups.into_iter().map(|g| g.1).collect())
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

/// The kernel a run measured, as compare tells kernels apart: the release, and for a
/// kernel built from source its build (source, config and patches: the build cache's
/// key), so two builds of one release are two kernels.
pub fn kernel_of(r: &Results) -> String {
    let release = r
        .run
        .kernel
        .as_ref()
        .and_then(|k| k.release.clone())
        .unwrap_or_else(|| "?".into());
    let build = r.run.guest.as_ref().and_then(|g| g.kernel_build.as_ref());
    match build {
        Some(b) => {
            let patches: Vec<&str> = b
                .patches
                .iter()
                .map(|p| p.subject.as_deref().unwrap_or(p.file.as_str()))
                .collect();
            let what = if patches.is_empty() {
                "unpatched".to_string()
            } else {
                format!("patched: {}", patches.join(", "))
            };
            format!(
                "{release} ({what}; build {})",
                b.key.as_deref().unwrap_or("?")
            )
        }
        None => release,
    }
}

/// Refuses a run of a side that is not the same configuration as the side's first run:
/// the same experiment and the same kernel. A side is one configuration measured
/// several times; what differs between sides is what a comparison is for.
fn one_side(first: &Results, r: &Results, label: &str, n: usize) -> Result<(), String> {
    same_experiment(first, r, &format!("{label}{n}")).map_err(|e| {
        format!("side {label} mixes runs: {e}; every run of a side must be the same rig, settings, variants and kernel")
    })?;
    let (ka, kb) = (kernel_of(first), kernel_of(r));
    if ka != kb {
        return Err(format!(
            "side {label} mixes kernels: {} ran {ka}, {} ran {kb}; every run of a side must be \
             the same kernel (put each kernel's runs on a side of its own)",
            first.dir.display(),
            r.dir.display()
        ));
    }
    Ok(())
}

/// Refuses two directories that are not runs of one experiment: another rig, other
/// settings or variants, other audio parameters. What may differ is what a comparison
/// is for: the kernel, a patch, the machine, the day.
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
    Ok(())
}

/// Refuses one run in two places (a copy): run.json and summary.json the same, byte for
/// byte (two runs never share run.json: it holds when each started).
fn copies(sides: &[Side]) -> Result<(), String> {
    let runs: Vec<&Results> = sides.iter().flat_map(|s| s.runs.iter()).collect();
    let read = |r: &Results, f: &str| std::fs::read(r.dir.join(f)).ok();
    for i in 0..runs.len() {
        for j in 0..i {
            let (a, b) = (runs[j], runs[i]);
            let same = |f: &str| read(a, f).is_some() && read(a, f) == read(b, f);
            if same(results::RUN_JSON) && same(results::SUMMARY_JSON) {
                return Err(format!(
                    "{} and {} hold the same run (their run.json and summary.json are \
                     identical: a copy): a run compared with itself says nothing; compare two runs",
                    a.dir.display(),
                    b.dir.display(),
                ));
            }
        }
    }
    Ok(())
}

/// Each metric of the baseline's first run with what every side's runs have under the
/// same (setting, variant, metric).
pub fn metrics(s: &Sides) -> Vec<Metric> {
    // A watch has none: `load()` refuses it.
    let per: Vec<Vec<Vec<(Key, Sample)>>> = s
        .sides
        .iter()
        .map(|side| side.runs.iter().map(|r| kind::of(r).samples()).collect())
        .collect();
    per[0][0]
        .iter()
        .map(|(k, _)| Metric {
            key: k.clone(),
            per_side: per
                .iter()
                .map(|runs| {
                    runs.iter()
                        .filter_map(|p| p.iter().find(|(k2, _)| k2 == k).map(|x| x.1.clone()))
                        .collect()
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::combined::{Combined, KernelEntry};

    fn base_with(kernels: &[(&str, Option<u32>)], tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xrunrig-expand-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let c = Combined {
            rig: "livefx".into(),
            kernels: kernels
                .iter()
                .map(|(dir, boot)| KernelEntry {
                    kernel: "debian:6.12".into(),
                    // Recorded where the run was; the base has moved since.
                    dir: format!("results/elsewhere/{dir}"),
                    boot: *boot,
                    ..Default::default()
                })
                .collect(),
            rows: vec![],
            livefx_rows: vec![],
            boots_per_kernel: kernels.iter().find_map(|k| k.1).map(|_| 2),
            boots_decided: None,
        };
        std::fs::write(
            d.join(results::combined::COMBINED_JSON),
            serde_json::to_string(&c).unwrap(),
        )
        .unwrap();
        d
    }

    /// One directory of a run over kernels: a side per kernel, its boots the side's
    /// runs, found under the base as given (not where the run was).
    #[test]
    fn a_kernels_directory_is_a_side_per_kernel_its_boots_the_runs() {
        let b = base_with(
            &[
                ("6.12/boot-1", Some(1)),
                ("6.1/boot-1", Some(1)),
                ("6.1/boot-2", Some(2)),
                ("6.12/boot-2", Some(2)),
            ],
            "boots",
        );
        let got = expand(&[vec![b.clone()]]).unwrap();
        assert_eq!(
            got,
            vec![
                vec![b.join("6.12/boot-1"), b.join("6.12/boot-2")],
                vec![b.join("6.1/boot-1"), b.join("6.1/boot-2")],
            ]
        );
        let one = base_with(&[("6.12", None), ("6.12-2", None)], "one");
        assert_eq!(
            expand(&[vec![one.clone()]]).unwrap(),
            vec![vec![one.join("6.12")], vec![one.join("6.12-2")]]
        );
        // Anything else as given; one kernel, or a directory leaving the base, refused.
        let plain = vec![vec![PathBuf::from("a")], vec![PathBuf::from("b")]];
        assert_eq!(expand(&plain).unwrap(), plain);
        let single = base_with(
            &[("6.12/boot-1", Some(1)), ("6.12/boot-2", Some(2))],
            "single",
        );
        assert!(expand(&[vec![single]]).unwrap_err().contains("one kernel"));
        let bad = base_with(&[("6.12", None), ("..", None)], "bad");
        assert!(expand(&[vec![bad]]).is_err());
    }
}
