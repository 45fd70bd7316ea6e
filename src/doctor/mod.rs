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

use crate::options::DoctorOptions;
use results::run::DoctorSection;
use serde::Serialize;
use source::Source;

pub use ctx::Ctx;
/// A check is the results format's finding: the doctor builds what run.json holds.
pub use results::run::{Finding as Check, Status};

/// A check's data for machines (e.g. the online CPU list), from the check's own type:
/// its keys are that type's fields, and readers (`data_as`) use the same type.
pub fn data_of(d: impl Serialize) -> serde_json::Value {
    // Only a map with keys that are not strings fails to convert; no data type has one.
    serde_json::to_value(d).expect("doctor data is a struct or a list of structs")
}

/// A check's data read back as the type its check wrote; None when the check recorded
/// none (it could not be made).
pub fn data_as<T: serde::de::DeserializeOwned>(c: &Check) -> Option<T> {
    T::deserialize(&c.data).ok()
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

/// `xrunrig doctor --json`: the findings, what the rig needs (with --rig) and the exit
/// status. Fields in alphabetical order, as written when this went through an untyped
/// value.
#[derive(Serialize)]
struct Report<'a> {
    checks: &'a [Check],
    counts: &'a std::collections::BTreeMap<String, u64>,
    exit: i32,
    /// The calibrations kept in the cache (`xrunrig calibrate`).
    calibrations: Vec<CalibrationEntry>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rig: Option<needs::RigNeeds<'a>>,
    version: Option<u64>,
}

/// One kept calibration as the doctor lists it.
#[derive(Serialize)]
struct CalibrationEntry {
    file: String,
    key: results::calibration::CalibrationKey,
    created: String,
    runs: usize,
    trials_per_run: u32,
}

/// The calibrations kept in the cache, and the files that did not read.
fn calibrations() -> (Vec<CalibrationEntry>, Vec<String>) {
    let mut problems = Vec::new();
    let list = analysis::compare::calibration::list(&mut problems)
        .into_iter()
        .map(|(c, p)| CalibrationEntry {
            file: p.display().to_string(),
            created: c.created,
            runs: c.runs.len(),
            trials_per_run: c.trials_per_run,
            key: c.key,
        })
        .collect();
    (list, problems)
}

/// The calibrations in words, for the human report.
fn calibrations_text(list: &[CalibrationEntry], problems: &[String]) -> String {
    let dir = analysis::compare::calibration::dir();
    let mut s = format!(
        "\nCalibrations (xrunrig calibrate; what `xrunrig compare` with one run a side uses), in {}:\n",
        dir.display()
    );
    if list.is_empty() {
        s += "  none: compare with one run a side assumes the largest run-to-run spread \
              measured, and is mostly inconclusive; `xrunrig calibrate RIG` measures this \
              machine's spread\n";
    }
    for c in list {
        s += &format!(
            "  {}: {}; {} runs of {} trial(s), measured {}\n",
            c.file,
            c.key.describe(),
            c.runs,
            c.trials_per_run,
            c.created
        );
    }
    for p in problems {
        s += &format!("  not read: {p}\n");
    }
    s
}

pub fn main(a: &DoctorOptions) -> i32 {
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
    let found = DoctorSection::new(collect(&src, Mode { connect_jack: true }));
    let checks = &found.checks;
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
        .map(|r| needs::evaluate(r, prof.as_ref(), checks, &src));
    let code = exit_code(checks, needs.as_deref());
    let (cals, cal_problems) = calibrations();
    if a.json {
        crate::output::console::document(&Report {
            checks,
            counts: &found.counts,
            calibrations: cals,
            exit: code,
            rig: rig
                .as_ref()
                .zip(needs.as_deref())
                .map(|(r, n)| needs::rig_needs(r, n)),
            version: found.version,
        });
    } else {
        crate::output::console::report(&render::human(
            checks,
            rig.as_ref().zip(needs.as_deref()),
            code,
            &calibrations_text(&cals, &cal_problems),
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
pub fn findings_for_run() -> DoctorSection {
    let t0 = std::time::Instant::now();
    let mut s = DoctorSection::new(collect(
        &source::Live::new(),
        Mode {
            connect_jack: false,
        },
    ));
    s.elapsed_ms = Some((t0.elapsed().as_secs_f64() * 1000.0).round());
    s
}

#[cfg(test)]
mod tests;
