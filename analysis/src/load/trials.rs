//! Trial rigs: summary rows and samples.jsonl (results::trials), read line by line.

use results::trials::{Row, TrialRecord};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// One row of summary.json: the results format's row.
pub type TRow = Row;

/// One trial of samples.jsonl.
pub type TrialLine = TrialRecord;

#[derive(Debug, Clone)]
pub struct Evidence {
    pub setting: String,
    pub variant: String,
    pub trial: u32,
    pub line: String,
}

#[derive(Debug, Clone, Default)]
pub struct TrialsData {
    pub rows: Vec<TRow>,
    pub trials: Vec<TrialLine>,
    pub evidence: Vec<Evidence>,
    /// `--until-decided`: the rule and each variant's comparison, when the run had them
    /// (boxed: most runs have none).
    pub until_decided: Option<Box<results::trials::Decided>>,
}

impl TrialsData {
    /// (setting, variant) as the summary rows, then the trials, name them.
    pub fn keys(&self) -> Vec<(String, String)> {
        let rows = self.rows.iter().map(|r| (&r.setting, &r.variant));
        let trials = self.trials.iter().map(|t| (&t.setting, &t.variant));
        super::first_seen(rows.chain(trials).map(|(s, v)| (s.clone(), v.clone())))
    }

    pub fn metrics(&self) -> Vec<(String, String, Option<String>)> {
        let mut out: Vec<(String, String, Option<String>)> = Vec::new();
        for r in &self.rows {
            if !out.iter().any(|m| m.0 == r.metric) {
                out.push((r.metric.clone(), r.unit.clone(), r.bound.clone()));
            }
        }
        out
    }

    pub fn row(&self, setting: &str, variant: &str, metric: &str) -> Option<&TRow> {
        self.rows
            .iter()
            .find(|r| r.setting == setting && r.variant == variant && r.metric == metric)
    }

    /// Trial statuses per (setting, variant): status -> count.
    pub fn statuses(&self, setting: &str, variant: &str) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for t in &self.trials {
            if t.setting == setting && t.variant == variant {
                *m.entry(t.status.to_string()).or_insert(0) += 1;
            }
        }
        m
    }
}

/// The rows of a trial rig's summary.json; a row of the wrong shape reads as the
/// default row, the others still read.
#[derive(Deserialize, Default)]
struct TrialsSummary {
    #[serde(default, deserialize_with = "results::lenient::records")]
    rows: Vec<Row>,
}

pub fn load(dir: &Path, summary: &Value, warnings: &mut Vec<String>) -> Result<TrialsData, String> {
    let head = dir.join(results::SUMMARY_JSON);
    super::require(summary, &head, &["rows"])?;
    if !summary["rows"].is_array() {
        return Err(format!(
            "{}: its rows do not read (`rows` is not a list); run again",
            head.display()
        ));
    }
    // Rows that do not read are a damaged summary, not one without rows: believed, its
    // numbers would be made up from whatever samples.jsonl still holds.
    let rows = TrialsSummary::deserialize(summary)
        .map_err(|e| format!("{}: its rows do not read ({e}); run again", head.display()))?
        .rows;
    // Read apart from the rows: a damaged section costs itself, not the rows.
    let until_decided = summary
        .get("until_decided")
        .and_then(|v| results::trials::Decided::deserialize(v).ok())
        .map(Box::new);
    let mut data = TrialsData {
        rows,
        until_decided,
        ..Default::default()
    };
    let path = dir.join(results::SAMPLES_JSONL);
    let f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!(
                "samples.jsonl unreadable ({e}): per-trial detail missing"
            ));
            return Ok(data);
        }
    };
    let mut bad = 0usize;
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let t: TrialRecord = match serde_json::from_str(&line) {
            Ok(t) => t,
            Err(_) => {
                bad += 1;
                if bad == 1 {
                    warnings.push(format!("samples.jsonl line {} is not JSON; skipped", i + 1));
                }
                continue;
            }
        };
        for l in &t.evidence {
            data.evidence.push(Evidence {
                setting: t.setting.clone(),
                variant: t.variant.clone(),
                trial: t.trial,
                line: l.clone(),
            });
        }
        data.trials.push(t);
    }
    if bad > 1 {
        warnings.push(format!(
            "{bad} lines of samples.jsonl were not JSON and were skipped"
        ));
    }
    agrees_with_samples(&data, &head)?;
    let extra = rows_from_samples(&mut data);
    if !extra.is_empty() {
        warnings.push(format!(
            "summary.json has no rows for {}: summarised from samples.jsonl (no unit or bound known)",
            extra.join(", ")
        ));
    }
    Ok(data)
}

/// A summary that says nothing of a setting and variant whose trials samples.jsonl holds
/// was not written by the run that wrote those trials (or was cut short): refused, naming
/// the first such pair. Metrics missing from rows that are there are instrument metrics,
/// summarised below.
fn agrees_with_samples(data: &TrialsData, head: &Path) -> Result<(), String> {
    let unsummarised = data.trials.iter().find(|t| {
        !data
            .rows
            .iter()
            .any(|r| r.setting == t.setting && r.variant == t.variant)
    });
    match unsummarised {
        Some(t) => Err(format!(
            "{}: no row for setting {:?} variant {:?}, though samples.jsonl holds its trials \
             ({} trial records in all): the summary does not belong to these samples or is \
             damaged; run again",
            head.display(),
            t.setting,
            t.variant,
            data.trials.len()
        )),
        None => Ok(()),
    }
}

/// Rows for metrics that samples.jsonl holds but summary.json does not (instrument
/// metrics, or a summary written before the run ended). Returns their names.
fn rows_from_samples(data: &mut TrialsData) -> Vec<String> {
    let mut added: Vec<String> = Vec::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for t in &data.trials {
        for m in t.metrics.keys().chain(t.censored.keys()) {
            let k = (t.setting.clone(), t.variant.clone(), m.clone());
            if !keys.contains(&k) && data.row(&k.0, &k.1, &k.2).is_none() {
                keys.push(k);
            }
        }
    }
    for (s, v, m) in keys {
        let trials: Vec<&TrialLine> = data
            .trials
            .iter()
            .filter(|t| t.setting == s && t.variant == v)
            .collect();
        let mut values = Vec::new();
        let mut censored = Vec::new();
        let mut missing = 0;
        for t in &trials {
            match (t.metrics.get(&m), t.censored.get(&m)) {
                (Some(vs), _) if !vs.is_empty() => values.extend(vs.iter().copied()),
                (_, Some(c)) => censored.push(*c),
                _ => missing += 1,
            }
        }
        if !added.contains(&m) {
            added.push(m.clone());
        }
        let mut row = TRow {
            setting: s,
            variant: v,
            metric: m,
            n: trials.len(),
            missing,
            values,
            censored,
            ..TRow::default()
        };
        row.set_order_stats();
        data.rows.push(row);
    }
    added
}
