//! `xrunrig doctor`: a read-only preflight of the machine's real-time setup. Every
//! check says what it found, why it matters for audio and the exact fix; the same
//! findings go into every run.json. Checks read through a `Source`, so each is tested
//! on recorded /proc and /sys files (tests/fixtures/doctor/).

pub mod audio;
pub mod cpus;
pub mod ctx;
pub mod kernel;
pub mod needs;
pub mod probe;
pub mod render;
pub mod rights;
pub mod sched;
pub mod source;
pub mod tracing;

use crate::cli::DoctorArgs;
use serde::Serialize;
use source::Source;

pub use ctx::Ctx;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Status {
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "warn")]
    Warn,
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "n/a")]
    Na,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Fail => "FAIL",
            Status::Warn => "WARN",
            Status::Pass => "PASS",
            Status::Na => "n/a",
        }
    }
}

/// One finding. For n/a, `found` holds the reason the check could not be made.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub area: &'static str,
    pub id: &'static str,
    pub name: &'static str,
    pub status: Status,
    pub found: String,
    pub why: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Parsed values for machines (e.g. the online CPU list).
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
}

impl Check {
    pub fn new(
        area: &'static str,
        id: &'static str,
        name: &'static str,
        why: &'static str,
    ) -> Check {
        Check {
            area,
            id,
            name,
            status: Status::Na,
            found: String::new(),
            why,
            fix: None,
            data: serde_json::Value::Null,
        }
    }
    pub fn pass(mut self, found: impl Into<String>) -> Check {
        self.status = Status::Pass;
        self.found = found.into();
        self
    }
    pub fn warn(mut self, found: impl Into<String>, fix: impl Into<String>) -> Check {
        self.status = Status::Warn;
        self.found = found.into();
        self.fix = Some(fix.into());
        self
    }
    pub fn fail(mut self, found: impl Into<String>, fix: impl Into<String>) -> Check {
        self.status = Status::Fail;
        self.found = found.into();
        self.fix = Some(fix.into());
        self
    }
    pub fn na(mut self, reason: impl Into<String>) -> Check {
        self.status = Status::Na;
        self.found = reason.into();
        self
    }
    pub fn with_fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }
    pub fn data(mut self, v: serde_json::Value) -> Check {
        self.data = v;
        self
    }
}

/// How much the doctor may do: `connect_jack` opens a JACK client (up to 2 s), which
/// `xrunrig doctor` does and the quick run.json findings do not.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub connect_jack: bool,
}

/// Every check, in area order.
pub fn collect(src: &dyn Source, mode: Mode) -> Vec<Check> {
    let ctx = Ctx::read(src);
    let mut v = Vec::new();
    v.extend(rights::checks(src, &ctx));
    v.extend(kernel::checks(src, &ctx));
    v.extend(sched::checks(src, &ctx));
    v.extend(cpus::checks(src, &ctx));
    v.extend(audio::checks(src, &ctx, mode));
    v.extend(tracing::checks(src, &ctx));
    v
}

/// The findings as JSON: `{"version","checks":[..],"counts":{..}}`.
pub fn to_json(checks: &[Check]) -> serde_json::Value {
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    serde_json::json!({
        "version": 1,
        "counts": {
            "fail": count(Status::Fail),
            "warn": count(Status::Warn),
            "pass": count(Status::Pass),
            "n/a": count(Status::Na),
        },
        "checks": checks,
    })
}

pub fn main(a: &DoctorArgs) -> i32 {
    let rig = match &a.rig {
        Some(p) => match crate::rig::load(p) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("xrunrig doctor: {e}");
                return 2;
            }
        },
        None => None,
    };
    let src = source::Live::new();
    let checks = collect(&src, Mode { connect_jack: true });
    let prof = match &a.profile {
        Some(p) => match crate::knobs::profile::load(p) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("xrunrig doctor: {e}");
                return 2;
            }
        },
        None => None,
    };
    let needs = rig
        .as_ref()
        .map(|r| needs::evaluate(r, prof.as_ref(), &checks, &src));
    let code = exit_code(&checks, needs.as_deref());
    if a.json {
        let mut v = to_json(&checks);
        if let (Some(r), Some(n)) = (&rig, &needs) {
            v["rig"] = needs::to_json(r, n);
        }
        v["exit"] = code.into();
        crate::output::console::document(&v);
    } else {
        crate::output::console::report(&render::human(
            &checks,
            rig.as_ref().zip(needs.as_deref()),
            code,
        ));
    }
    code
}

/// 1 when a FAIL applies to what was asked: with a rig, a check it needs fails;
/// without one, any check fails. Else 0.
pub fn exit_code(checks: &[Check], needs: Option<&[needs::Need]>) -> i32 {
    match needs {
        Some(n) => needs::exit_code(n),
        None => i32::from(checks.iter().any(|c| c.status == Status::Fail)),
    }
}

/// The doctor's findings as recorded in every run.json: the same checks, read only,
/// without connecting to JACK (its processes are still looked for), well under 200 ms.
pub fn findings_for_run() -> serde_json::Value {
    let t0 = std::time::Instant::now();
    let checks = collect(
        &source::Live::new(),
        Mode {
            connect_jack: false,
        },
    );
    let mut v = to_json(&checks);
    v["elapsed_ms"] = (t0.elapsed().as_secs_f64() * 1000.0).round().into();
    v
}

#[cfg(test)]
mod tests;
