//! The on-disk results format of xrunrig, in one place: the engine writes these types
//! and `analysis` reads them back through the same types, so a field renamed on one side
//! cannot silently break the other.

pub mod bisect;
pub mod calibration;
pub mod combined;
pub mod instruments;
pub mod kbuild;
pub mod lenient;
pub mod livefx;
pub mod run;
pub mod trials;
pub mod units;
pub mod watch;

use serde::Deserialize;

/// The results format version written into run.json and summary.json. Results without
/// a version field were written before the format had one (format 0) and still load.
pub const FORMAT_VERSION: u32 = 1;

// The files of a results directory.
pub const RUN_JSON: &str = "run.json";
pub const SUMMARY_JSON: &str = "summary.json";
pub const SAMPLES_JSONL: &str = "samples.jsonl";
pub const EVENTS_JSONL: &str = "events.jsonl";
pub const HISTOGRAMS_JSON: &str = "histograms.json";
/// Present while a run is writing its results directory, removed last: a directory that
/// still has it is from a run that did not finish (killed, or its files not written).
pub const INCOMPLETE: &str = "INCOMPLETE";
/// The folder of raw per-cycle records, one file per trial (`cycles_file`).
pub const CYCLES_DIR: &str = "cycles";

/// summary.json's `kind` for trial rigs and for livefx rigs.
pub const KIND_TRIALS: &str = "trials";
pub const KIND_LIVEFX: &str = "livefx";

/// A name safe in a file name: anything but ASCII letters, digits, `-`, `_` and `.`
/// becomes `_`.
pub fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The stem of one trial's files (`as-is__pi__0`): the raw cycle records, the
/// instruments' captures.
pub fn trial_stem(setting: &str, variant: &str, trial: u32) -> String {
    format!("{}__{}__{}", file_part(setting), file_part(variant), trial)
}

/// The file of one trial's raw cycle records, inside `CYCLES_DIR`.
pub fn cycles_file(setting: &str, variant: &str, trial: u32) -> String {
    format!("{}{CYCLES_EXT}", trial_stem(setting, variant, trial))
}

const CYCLES_EXT: &str = ".bin";

/// `cycles_file` as a trial row records it: relative to the results directory.
pub fn cycles_path(setting: &str, variant: &str, trial: u32) -> String {
    format!("{CYCLES_DIR}/{}", cycles_file(setting, variant, trial))
}

/// The (setting, variant) a cycles file is named for, split from the right (a setting's
/// name may itself hold `__`); None for a name `cycles_file` does not make.
pub fn cycles_file_key(name: &str) -> Option<(String, String)> {
    let stem = name.strip_suffix(CYCLES_EXT)?;
    let mut parts = stem.rsplitn(3, "__");
    let _trial = parts.next()?;
    let variant = parts.next()?;
    let setting = parts.next()?;
    Some((setting.to_string(), variant.to_string()))
}

/// The trial a cycles file is named for (`cycles_file`'s last part); None for a name it
/// does not make.
pub fn cycles_file_trial(name: &str) -> Option<u32> {
    cycles_file_key(name)?;
    name.strip_suffix(CYCLES_EXT)?
        .rsplit("__")
        .next()?
        .parse()
        .ok()
}

/// Results written in a newer format than this version reads: what they mean may have
/// changed, so they are refused rather than read as this format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewerFormat {
    /// The file, as the message names it.
    pub file: String,
    pub format: u32,
}

impl std::fmt::Display for NewerFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} was written by a newer xrunrig (format {}); this one reads formats 0..={FORMAT_VERSION}: update xrunrig",
            self.file, self.format
        )
    }
}

impl std::error::Error for NewerFormat {}

/// For callers whose errors are messages (`?` in a function returning `Result<_, String>`).
impl From<NewerFormat> for String {
    fn from(e: NewerFormat) -> String {
        e.to_string()
    }
}

/// Refuses results written in a newer format than this version reads. `file` names the
/// file for the message.
pub fn check_format(format: u32, file: &str) -> Result<(), NewerFormat> {
    if format > FORMAT_VERSION {
        return Err(NewerFormat {
            file: file.to_string(),
            format,
        });
    }
    Ok(())
}

/// What every summary.json starts with, read before its rows: the format, the rig and
/// which kind of rows follow.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SummaryHead {
    #[serde(default)]
    pub format: u32,
    #[serde(default, deserialize_with = "lenient::text")]
    pub rig: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub kind: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert_eq!(file_part("NO_RT PUSH/x"), "NO_RT_PUSH_x");
        assert_eq!(cycles_file("as is", "pi", 3), "as_is__pi__3.bin");
        assert_eq!(cycles_path("A", "pi", 0), "cycles/A__pi__0.bin");
        assert_eq!(
            cycles_file_key("RT__PUSH__pi__3.bin"),
            Some(("RT__PUSH".into(), "pi".into()))
        );
        assert_eq!(cycles_file_key("x.bin"), None);
        assert_eq!(cycles_file_key("a__b__0.txt"), None);
    }

    #[test]
    fn newer_formats_are_refused_by_name() {
        assert!(check_format(0, RUN_JSON).is_ok());
        assert!(check_format(FORMAT_VERSION, RUN_JSON).is_ok());
        let e = check_format(99, RUN_JSON).unwrap_err();
        assert_eq!(e.format, 99);
        assert_eq!(
            e.to_string(),
            "run.json was written by a newer xrunrig (format 99); this one reads formats 0..=1: update xrunrig"
        );
    }
}
