//! The directories compared: loaded, labelled A, B, C..., one redactor for all, and each
//! metric of the baseline found in the others.

use super::sample::{Key, Sample, samples};
use crate::load::{self, Results};
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
    let results: Vec<Results> = dirs
        .iter()
        .map(|d| load::load(d))
        .collect::<Result<_, _>>()?;
    let red = if redact {
        let hosts: Vec<String> = results
            .iter()
            .flat_map(|r| crate::report::run_hosts(&r.run))
            .collect();
        Redactor::for_this_machine(&hosts)
    } else {
        Redactor::none()
    };
    let labels: Vec<String> = (0..results.len())
        .map(|i| ((b'A' + (i % 26) as u8) as char).to_string())
        .collect();
    Ok(Dirs {
        results,
        labels,
        red,
    })
}

/// Keys from the baseline; a directory with one setting that matches none of the
/// baseline's is matched on (variant, metric): a kernel against a kernel.
pub fn metrics(results: &[Results]) -> Vec<Metric> {
    let per: Vec<Vec<(Key, Sample)>> = results.iter().map(samples).collect();
    let one_setting = |v: &Vec<(Key, Sample)>| v.iter().all(|x| x.0.0 == v[0].0.0);
    let mut metrics: Vec<Metric> = Vec::new();
    for (k, s) in &per[0] {
        let mut m = Metric {
            key: k.clone(),
            per_dir: vec![Some(s.clone())],
        };
        for p in per.iter().skip(1) {
            let exact = p.iter().find(|(k2, _)| k2 == k).map(|x| x.1.clone());
            let loose = || {
                (one_setting(&per[0]) && one_setting(p))
                    .then(|| {
                        p.iter()
                            .find(|(k2, _)| k2.1 == k.1 && k2.2 == k.2)
                            .map(|x| x.1.clone())
                    })
                    .flatten()
            };
            m.per_dir.push(exact.or_else(loose));
        }
        metrics.push(m);
    }
    metrics
}
