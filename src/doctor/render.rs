//! Human output: every check once, grouped by area (a FAIL or WARN with its why and
//! fix under it), then what the given rig needs, then one summary line with the exit
//! status.

use super::needs::Need;
use super::{Check, Status};
use crate::rig::Rig;
use std::fmt::Write;

const AREAS: &[&str] = &["rights", "kernel", "sched", "cpus", "audio", "tracing"];

fn line(out: &mut String, c: &Check, width: usize) {
    let _ = writeln!(
        out,
        "{:<4}  {:<width$}  {}",
        c.status.label(),
        c.name,
        c.found
    );
    if matches!(c.status, Status::Fail | Status::Warn) {
        let _ = writeln!(out, "      {:<width$}  why: {}", "", c.why);
    }
    if c.status != Status::Pass
        && let Some(f) = &c.fix
    {
        let _ = writeln!(out, "      {:<width$}  fix: {f}", "");
    }
}

/// `extra` (the kept calibrations) goes after the findings and before the summary line,
/// which stays last: it is the verdict and names the exit status.
pub fn human(checks: &[Check], rig: Option<(&Rig, &[Need])>, code: i32, extra: &str) -> String {
    let mut out = String::new();
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(10);
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    for (i, area) in AREAS.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{area}");
        for c in checks.iter().filter(|c| c.area == *area) {
            line(&mut out, c, width);
        }
    }
    let counts = format!(
        "{} checks: {} fail, {} warn, {} pass, {} n/a",
        checks.len(),
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Pass),
        count(Status::Na)
    );
    let verdict = match rig {
        Some((r, needs)) => {
            let _ = writeln!(out, "\nrig '{}' ({}) needs:", r.name, r.path.display());
            if needs.is_empty() {
                out.push_str("  nothing this doctor checks\n");
            }
            for n in needs {
                let tag = match (n.met, n.advisory) {
                    (true, _) => "ok",
                    (false, true) => "WARN",
                    (false, false) => "FAIL",
                };
                let _ = write!(out, "{tag:<4}  {}: {}", n.what, n.found);
                if !n.met
                    && let Some(f) = &n.fix
                {
                    let _ = write!(out, "   -> fix: {f}");
                }
                out.push('\n');
            }
            let unmet: Vec<&str> = needs
                .iter()
                .filter(|n| !n.met && !n.advisory)
                .map(|n| n.what.as_str())
                .collect();
            if code == 0 {
                format!(
                    "exit status 0: this machine has what rig '{}' needs",
                    r.name
                )
            } else {
                format!(
                    "exit status {code}: rig '{}' needs what fails here: {}",
                    r.name,
                    unmet.join("; ")
                )
            }
        }
        None => {
            let fails: Vec<&str> = checks
                .iter()
                .filter(|c| c.status == Status::Fail)
                .map(|c| c.name.as_str())
                .collect();
            if fails.is_empty() {
                "exit status 0: no check fails".to_string()
            } else {
                format!("exit status {code}: FAIL: {}", fails.join(", "))
            }
        }
    };
    out.push_str(extra);
    let _ = writeln!(out, "\nxrunrig doctor: {counts}; {verdict}");
    out
}
