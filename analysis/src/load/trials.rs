//! Trial rigs: summary rows and samples.jsonl, read line by line (marks are skipped).

use super::json::{f64_at, str_at, str_or, u64_at};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// One row of summary.json.
#[derive(Debug, Clone, Default)]
pub struct TRow {
    pub setting: String,
    pub variant: String,
    pub metric: String,
    pub unit: String,
    pub bound: Option<String>,
    pub n: usize,
    pub within_bound: Option<usize>,
    pub missing: usize,
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub values: Vec<f64>,
}

/// One trial of samples.jsonl, without its marks.
#[derive(Debug, Clone, Default)]
pub struct TrialLine {
    pub setting: String,
    pub variant: String,
    pub trial: u32,
    pub status: String,
    pub detail: Option<String>,
    pub duration_ms: Option<f64>,
    pub metrics: BTreeMap<String, Vec<f64>>,
}

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
}

impl TrialsData {
    pub fn keys(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for r in &self.rows {
            let k = (r.setting.clone(), r.variant.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        for t in &self.trials {
            let k = (t.setting.clone(), t.variant.clone());
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out
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
                *m.entry(t.status.clone()).or_insert(0) += 1;
            }
        }
        m
    }
}

pub fn parse_row(v: &Value) -> TRow {
    TRow {
        setting: str_or(v, "setting", "-"),
        variant: str_or(v, "variant", "default"),
        metric: str_or(v, "metric", "value"),
        unit: str_or(v, "unit", ""),
        bound: str_at(v, &["bound"]),
        n: u64_at(v, &["n"]).unwrap_or(0) as usize,
        within_bound: u64_at(v, &["within_bound"]).map(|x| x as usize),
        missing: u64_at(v, &["missing"]).unwrap_or(0) as usize,
        median: f64_at(v, &["median"]),
        min: f64_at(v, &["min"]),
        max: f64_at(v, &["max"]),
        values: v
            .get("values")
            .and_then(|x| x.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default(),
    }
}

pub fn load(dir: &Path, summary: &Value, warnings: &mut Vec<String>) -> Result<TrialsData, String> {
    let rows: Vec<TRow> = summary
        .get("rows")
        .and_then(|r| r.as_array())
        .map(|a| a.iter().map(parse_row).collect())
        .unwrap_or_default();
    let mut data = TrialsData {
        rows,
        ..Default::default()
    };
    let path = dir.join("samples.jsonl");
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
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                bad += 1;
                if bad == 1 {
                    warnings.push(format!("samples.jsonl line {} is not JSON; skipped", i + 1));
                }
                continue;
            }
        };
        let t = TrialLine {
            setting: str_or(&v, "setting", "-"),
            variant: str_or(&v, "variant", "default"),
            trial: u64_at(&v, &["trial"]).unwrap_or(i as u64) as u32,
            status: str_or(&v, "status", "unknown"),
            detail: str_at(&v, &["detail"]),
            duration_ms: f64_at(&v, &["duration_ms"]),
            metrics: v
                .get("metrics")
                .and_then(|m| m.as_object())
                .map(|o| {
                    o.iter()
                        .map(|(k, a)| {
                            let vals = a
                                .as_array()
                                .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
                                .unwrap_or_default();
                            (k.clone(), vals)
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        if let Some(ev) = v.get("evidence").and_then(|e| e.as_array()) {
            for l in ev.iter().filter_map(|x| x.as_str()) {
                data.evidence.push(Evidence {
                    setting: t.setting.clone(),
                    variant: t.variant.clone(),
                    trial: t.trial,
                    line: l.to_string(),
                });
            }
        }
        data.trials.push(t);
    }
    if bad > 1 {
        warnings.push(format!(
            "{bad} lines of samples.jsonl were not JSON and were skipped"
        ));
    }
    let extra = rows_from_samples(&mut data);
    if !extra.is_empty() {
        warnings.push(format!(
            "summary.json has no rows for {}: summarised from samples.jsonl (no unit or bound known)",
            extra.join(", ")
        ));
    }
    Ok(data)
}

/// Rows for metrics that samples.jsonl holds but summary.json does not (instrument
/// metrics, or a summary written before the run ended). Returns their names.
fn rows_from_samples(data: &mut TrialsData) -> Vec<String> {
    let mut added: Vec<String> = Vec::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for t in &data.trials {
        for m in t.metrics.keys() {
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
        let mut missing = 0;
        for t in &trials {
            match t.metrics.get(&m) {
                Some(vs) if !vs.is_empty() => values.extend(vs.iter().copied()),
                _ => missing += 1,
            }
        }
        let sorted = crate::stats::sorted(&values);
        if !added.contains(&m) {
            added.push(m.clone());
        }
        data.rows.push(TRow {
            setting: s,
            variant: v,
            metric: m,
            unit: String::new(),
            bound: None,
            n: trials.len(),
            within_bound: None,
            missing,
            median: crate::stats::median(&sorted),
            min: sorted.first().copied(),
            max: sorted.last().copied(),
            values,
        });
    }
    added
}
