//! Human output: failing and warning checks first with why and fix, then every check
//! grouped by area, one line each, then what the given rig needs.

use super::needs::Need;
use super::{Check, Status};
use crate::rig::Rig;
use std::fmt::Write;

const AREAS: &[&str] = &["rights", "kernel", "sched", "cpus", "audio", "tracing"];

fn line(out: &mut String, c: &Check, width: usize) {
    let _ = write!(
        out,
        "{:<4}  {:<width$}  {}",
        c.status.label(),
        c.name,
        c.found
    );
    if c.status != Status::Pass
        && let Some(f) = &c.fix
    {
        let _ = write!(out, "   -> fix: {f}");
    }
    out.push('\n');
}

pub fn human(checks: &[Check], rig: Option<(&Rig, &[Need])>, code: i32) -> String {
    let mut out = String::new();
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(10);
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let _ = writeln!(
        out,
        "xrunrig doctor: {} checks: {} fail, {} warn, {} pass, {} n/a",
        checks.len(),
        count(Status::Fail),
        count(Status::Warn),
        count(Status::Pass),
        count(Status::Na)
    );
    let mut bad: Vec<&Check> = checks
        .iter()
        .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
        .collect();
    bad.sort_by_key(|c| c.status);
    if !bad.is_empty() {
        out.push_str("\nNeeds attention:\n");
        for c in bad {
            let _ = writeln!(
                out,
                "{:<4}  {:<width$}  {}",
                c.status.label(),
                c.name,
                c.found
            );
            let _ = writeln!(out, "      {:<width$}  why: {}", "", c.why);
            if let Some(f) = &c.fix {
                let _ = writeln!(out, "      {:<width$}  fix: {f}", "");
            }
        }
    }
    for area in AREAS {
        let _ = writeln!(out, "\n{area}");
        for c in checks.iter().filter(|c| c.area == *area) {
            line(&mut out, c, width);
        }
    }
    match rig {
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
            let _ = writeln!(
                out,
                "\nexit status {code}: {}",
                if code == 0 {
                    "this machine has what the rig needs"
                } else {
                    "a check this rig needs fails"
                }
            );
        }
        None => {
            out.push_str(
                "\nexit status 0 (pass --rig RIG to exit 1 when a check that rig needs fails)\n",
            );
        }
    }
    out
}
