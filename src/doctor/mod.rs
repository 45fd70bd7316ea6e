//! `xrunrig doctor`: preflight of the machine's real-time setup. (Being filled in.)

use crate::cli::DoctorArgs;

pub fn main(_a: &DoctorArgs) -> i32 {
    eprintln!("xrunrig doctor: not implemented yet");
    2
}

/// The doctor's findings as recorded in every run.json.
pub fn findings_for_run() -> serde_json::Value {
    serde_json::Value::Null
}
