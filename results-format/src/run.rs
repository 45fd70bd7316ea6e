//! run.json: what ran, where, under which settings, what the doctor found; the
//! instruments' and the guest's sections when there were any.
//!
//! Fields are declared in alphabetical order, as the untyped `json!` that wrote run.json
//! before put them, so a run.json reads the same as before. Reading is lenient: a field
//! absent, null or of the wrong shape reads as absent (results from other versions).

use crate::lenient;
use crate::livefx::LivefxSection;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunDoc {
    #[serde(default, deserialize_with = "lenient::texts")]
    pub command: Vec<String>,
    #[serde(default, deserialize_with = "section")]
    pub cpus: Option<Cpus>,
    #[serde(default, deserialize_with = "section")]
    pub doctor: Option<DoctorSection>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub ended: Option<String>,
    /// The machine around the run: virtualisation, the other processes' CPU share.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub environment: Option<Environment>,
    /// Why the run ended early, when it did.
    #[serde(default, deserialize_with = "lenient::text")]
    pub error: Option<String>,
    /// The results format (crate::FORMAT_VERSION); 0 when absent (written before it had one).
    #[serde(default)]
    pub format: u32,
    /// The git commit xrunrig was built from; absent in results written before it was
    /// recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub git: Option<GitInfo>,
    /// Set when the run was made in a guest kernel (`--kernel`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub guest: Option<GuestSection>,
    /// The command the guest ran (its run.json's `command`), beside the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_command: Option<Value>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub host: Option<String>,
    #[serde(default, deserialize_with = "section")]
    pub instruments: Option<InstrumentsSection>,
    #[serde(default, deserialize_with = "lenient::flag")]
    pub interrupted: bool,
    #[serde(default, deserialize_with = "section")]
    pub kernel: Option<KernelInfo>,
    /// The knobs' original values, restored at the end ("path = value").
    #[serde(default, deserialize_with = "lenient::texts")]
    pub knobs_original: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub livefx: Option<LivefxSection>,
    /// Whether the run's memory was locked (mlockall): absent in runs from before it was
    /// recorded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub mlockall: Option<Mlockall>,
    #[serde(default, deserialize_with = "section")]
    pub profile: Option<ProfileInfo>,
    /// Set when the run was `xrunrig run --from DIR`: the run it repeated.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub rerun_of: Option<RerunOf>,
    #[serde(default, deserialize_with = "section")]
    pub rig: Option<RigInfo>,
    #[serde(default, deserialize_with = "section")]
    pub sched_features_after: Option<SchedFeatures>,
    #[serde(default, deserialize_with = "section")]
    pub sched_features_before: Option<SchedFeatures>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub sched_rt_runtime_us: Option<String>,
    #[serde(default, deserialize_with = "list")]
    pub settings: Vec<SettingInfo>,
    /// False when `--settings-as-is` kept the profile's settings from being applied.
    #[serde(default, deserialize_with = "opt_bool")]
    pub settings_applied: Option<bool>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub settings_note: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub started: Option<String>,
    /// Trials per setting and variant.
    #[serde(default, deserialize_with = "lenient::count")]
    pub trials: Option<u64>,
    #[serde(default, deserialize_with = "list")]
    pub variants: Vec<VariantInfo>,
    /// `xrunrig watch`: what was watched (absent for rig runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<crate::watch::WatchSection>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub xrunrig_version: Option<String>,
}

/// Why a run.json could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// Written by a newer xrunrig: refused, not read as this format.
    NewerFormat(crate::NewerFormat),
    /// Not JSON, or not an object: the reason, said for a reader.
    Invalid(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NewerFormat(e) => std::fmt::Display::fmt(e, f),
            ReadError::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<crate::NewerFormat> for ReadError {
    fn from(e: crate::NewerFormat) -> ReadError {
        ReadError::NewerFormat(e)
    }
}

impl RunDoc {
    /// Reads run.json's text; refuses a newer format by name.
    pub fn from_json(text: &str) -> Result<RunDoc, ReadError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| ReadError::Invalid(format!("run.json is not valid JSON: {e}")))?;
        RunDoc::from_value(v)
    }

    pub fn from_value(v: Value) -> Result<RunDoc, ReadError> {
        // The version first: a newer format may have changed what the rest means.
        #[derive(Deserialize)]
        struct Head {
            #[serde(default)]
            format: Value,
        }
        let head: Head = serde_json::from_value(v.clone())
            .map_err(|e| ReadError::Invalid(format!("run.json is not an object: {e}")))?;
        if let Some(f) = head.format.as_u64() {
            crate::check_format(u32::try_from(f).unwrap_or(u32::MAX), crate::RUN_JSON)?;
        }
        serde_json::from_value(v).map_err(|e| ReadError::Invalid(format!("run.json: {e}")))
    }
}

/// The outcome of locking the run's memory: a failed lock means page faults may have
/// added to what the run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mlockall {
    #[serde(default, deserialize_with = "lenient::flag")]
    pub locked: bool,
    /// The system's error when it failed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub error: Option<String>,
}

impl Mlockall {
    pub fn from_result(r: Result<(), String>) -> Mlockall {
        Mlockall {
            locked: r.is_ok(),
            error: r.err(),
        }
    }
}

/// The code that measured: the commit and whether the work tree had changes to tracked
/// files at build time (None: not a git checkout, or git not there).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitInfo {
    #[serde(default, deserialize_with = "lenient::text")]
    pub commit: Option<String>,
    #[serde(default, deserialize_with = "opt_bool")]
    pub dirty: Option<bool>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KernelInfo {
    #[serde(default, deserialize_with = "lenient::text")]
    pub cmdline: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub machine: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub preemption: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub release: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cpus {
    #[serde(default, deserialize_with = "lenient::count")]
    pub count: Option<u64>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub model: Option<String>,
    /// "{0,1}".
    #[serde(default, deserialize_with = "lenient::text")]
    pub online: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RigInfo {
    #[serde(default, deserialize_with = "lenient::text")]
    pub description: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub path: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub sha256: Option<String>,
    /// The rig file as it was run.
    #[serde(default, deserialize_with = "lenient::text")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProfileInfo {
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// None for the built-in "as-is" profile.
    #[serde(default, deserialize_with = "lenient::text")]
    pub path: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub sha256: Option<String>,
    /// The profile file as it was run (absent in runs from before it was recorded).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub text: Option<String>,
}

/// What ran beside the run, as evidence for its reader: a virtual machine shares its
/// host, and other processes' CPU time can explain misses no kernel setting caused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The hypervisor this machine runs under (from DMI or the CPU's `hypervisor` flag);
    /// None on bare metal.
    #[serde(default, deserialize_with = "lenient::text")]
    pub virtualised: Option<String>,
    /// Percent of all CPUs' time used by other processes while the trials ran: /proc/stat's
    /// busy time less this process's own (its threads and children), sampled at the start
    /// and end of the sweep, outside the real-time path.
    #[serde(default, deserialize_with = "lenient::number")]
    pub others_cpu_percent: Option<f64>,
}

/// The run a `run --from DIR` repeated: its directory as given and its command, so that
/// a rerun of a rerun repeats the first run's options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RerunOf {
    #[serde(default, deserialize_with = "lenient::text")]
    pub dir: Option<String>,
    #[serde(default, deserialize_with = "lenient::texts")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VariantInfo {
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub description: String,
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub name: String,
}

/// One setting of the profile as swept.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SettingInfo {
    #[serde(default, deserialize_with = "lenient::text")]
    pub description: Option<String>,
    /// What the knobs read back once applied (None if it never was).
    #[serde(default, deserialize_with = "in_force")]
    pub in_force: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub name: Option<String>,
    /// The changes asked for, described; empty for "the machine as found".
    #[serde(default, deserialize_with = "opt_texts")]
    pub requested: Option<Vec<String>>,
}

/// /sys/kernel/debug/sched/features as read, or why it could not be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchedFeatures {
    Read(String),
    Unreadable { unreadable: String },
}

impl SchedFeatures {
    pub fn from_result(r: Result<String, String>) -> SchedFeatures {
        match r {
            Ok(s) => SchedFeatures::Read(s),
            Err(e) => SchedFeatures::Unreadable { unreadable: e },
        }
    }
}

/// The doctor's findings at the start of the run (`xrunrig doctor`'s checks). The doctor
/// builds this type, so run.json and `xrunrig doctor --json` hold what it found as is.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DoctorSection {
    pub checks: Vec<Finding>,
    /// How many checks have each status ("fail", "n/a", "pass", "warn").
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

impl DoctorSection {
    /// The version of the section the doctor writes.
    pub const VERSION: u64 = 1;

    /// The doctor's checks, counted by status.
    pub fn new(checks: Vec<Finding>) -> DoctorSection {
        let counts = [Status::Fail, Status::Na, Status::Pass, Status::Warn]
            .into_iter()
            .map(|s| {
                (
                    s.as_str().to_string(),
                    checks.iter().filter(|c| c.status == s).count() as u64,
                )
            })
            .collect();
        DoctorSection {
            checks,
            counts,
            elapsed_ms: None,
            version: Some(Self::VERSION),
        }
    }

    pub fn count(&self, s: Status) -> usize {
        self.checks.iter().filter(|c| c.status == s).count()
    }
}

/// A doctor check's outcome, written "fail", "warn", "pass" or "n/a" (its `as_str`).
/// Ordered worst first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Status {
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "warn")]
    Warn,
    #[serde(rename = "pass")]
    Pass,
    /// The check could not be made (the finding says why).
    #[default]
    #[serde(rename = "n/a")]
    Na,
}

impl Status {
    /// The name written to disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Fail => "fail",
            Status::Warn => "warn",
            Status::Pass => "pass",
            Status::Na => "n/a",
        }
    }

    /// The name shown to people: "FAIL", "WARN", "PASS", "n/a".
    pub fn label(self) -> &'static str {
        match self {
            Status::Fail => "FAIL",
            Status::Warn => "WARN",
            Status::Pass => "PASS",
            Status::Na => "n/a",
        }
    }

    /// A status as this or another version, or a hand-made file, spelt it ("WARN",
    /// "warning", "error", "ok"); None for a word that names none of them.
    pub fn parse(s: &str) -> Option<Status> {
        let s = s.trim().to_lowercase();
        Some(match s.as_str() {
            "error" => Status::Fail,
            "ok" => Status::Pass,
            "n/a" | "na" => Status::Na,
            _ if s.starts_with("fail") => Status::Fail,
            _ if s.starts_with("warn") => Status::Warn,
            _ if s.starts_with("pass") => Status::Pass,
            _ if s.starts_with("skip") => Status::Na,
            _ => return None,
        })
    }
}

/// A finding needs a status it knows; otherwise it is not read as one (the section
/// then leaves it out).
fn doctor_status<'de, D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
    let text = lenient::text(d)?;
    text.as_deref()
        .and_then(Status::parse)
        .ok_or_else(|| serde::de::Error::custom(format!("not a doctor status: {text:?}")))
}

/// One doctor check: the doctor builds it (`new`, then `pass`, `warn`, `fail` or `na`)
/// and run.json holds it. Fields are in alphabetical order, as they were written when
/// the doctor's JSON went through an untyped value. An empty text is an absent field.
/// Reading accepts the names other versions used for the same things (`level` for
/// `status`, `message` for `found`, `hint` for `fix`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "lenient::text_or_empty"
    )]
    pub area: String,
    /// Data behind the finding (limits, CPU lists), for tools: what each check records
    /// is its own (the doctor's typed data for it).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub data: Value,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "hint",
        alias = "remedy",
        deserialize_with = "lenient::text"
    )]
    pub fix: Option<String>,
    /// For n/a, the reason the check could not be made.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "value",
        alias = "detail",
        alias = "message",
        deserialize_with = "lenient::text_or_empty"
    )]
    pub found: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "lenient::text_or_empty"
    )]
    pub id: String,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "check",
        alias = "title",
        deserialize_with = "lenient::text_or_empty"
    )]
    pub name: String,
    #[serde(
        alias = "level",
        alias = "result",
        alias = "verdict",
        alias = "state",
        deserialize_with = "doctor_status"
    )]
    pub status: Status,
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "lenient::text_or_empty"
    )]
    pub why: String,
}

impl Finding {
    /// A check not made yet (n/a until it says what it found).
    pub fn new(area: &str, id: &str, name: &str, why: &str) -> Finding {
        Finding {
            area: area.into(),
            id: id.into(),
            name: name.into(),
            why: why.into(),
            ..Default::default()
        }
    }
    pub fn pass(mut self, found: impl Into<String>) -> Finding {
        self.status = Status::Pass;
        self.found = found.into();
        self
    }
    pub fn warn(mut self, found: impl Into<String>, fix: impl Into<String>) -> Finding {
        self.status = Status::Warn;
        self.found = found.into();
        self.fix = Some(fix.into());
        self
    }
    pub fn fail(mut self, found: impl Into<String>, fix: impl Into<String>) -> Finding {
        self.status = Status::Fail;
        self.found = found.into();
        self.fix = Some(fix.into());
        self
    }
    /// The check could not be made, and why.
    pub fn na(mut self, reason: impl Into<String>) -> Finding {
        self.status = Status::Na;
        self.found = reason.into();
        self
    }
    pub fn with_fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = Some(fix.into());
        self
    }
    pub fn with_data(mut self, data: Value) -> Finding {
        self.data = data;
        self
    }

    /// The name to show: `name`, else `id`.
    pub fn label(&self) -> Option<&str> {
        [&self.name, &self.id]
            .into_iter()
            .find(|s| !s.is_empty())
            .map(String::as_str)
    }
    /// What was found, else why it matters.
    pub fn text(&self) -> Option<&str> {
        [&self.found, &self.why]
            .into_iter()
            .find(|s| !s.is_empty())
            .map(String::as_str)
    }
}

/// The doctor section as written (`{"checks": [..], "counts": .., ...}`), or as older
/// or hand-made results hold it: a bare list of checks, `findings` for `checks`, checks
/// keyed by name, or lists of checks grouped by area.
impl<'de> Deserialize<'de> for DoctorSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let mut out = DoctorSection::default();
        let list = match &v {
            Value::Object(o) => {
                out.counts = o
                    .get("counts")
                    .and_then(|c| serde_json::from_value(c.clone()).ok())
                    .unwrap_or_default();
                out.elapsed_ms = o.get("elapsed_ms").and_then(Value::as_f64);
                out.version = o.get("version").and_then(Value::as_u64);
                o.get("checks").or(o.get("findings")).unwrap_or(&v)
            }
            _ => &v,
        };
        let finding = |name: Option<&str>, c: &Value| -> Option<Finding> {
            // Without a status it knows, a value is not a finding (see `doctor_status`).
            let mut f: Finding = serde_json::from_value(c.clone()).ok()?;
            if f.name.is_empty() && f.id.is_empty() {
                f.name = name.unwrap_or_default().to_string();
            }
            Some(f)
        };
        match list {
            Value::Array(a) => out.checks = a.iter().filter_map(|c| finding(None, c)).collect(),
            Value::Object(o) => {
                for (k, c) in o {
                    if let Some(f) = finding(Some(k), c) {
                        out.checks.push(f);
                    } else if let Value::Array(a) = c {
                        out.checks.extend(a.iter().filter_map(|c| finding(None, c)));
                    }
                }
            }
            _ => {}
        }
        Ok(out)
    }
}

/// What the rig's `[instruments]` asked for and what they left (src/instruments).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InstrumentsSection {
    /// Raw captures kept, relative to the results directory.
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub ipi: Option<IpiInfo>,
    /// The metrics the instruments added.
    #[serde(default)]
    pub metrics: Vec<MetricInfo>,
    #[serde(default)]
    pub problems: Vec<String>,
    /// Tracing state restored at the end.
    #[serde(default)]
    pub restored: Vec<String>,
    #[serde(default)]
    pub trace: Option<TraceInfo>,
    #[serde(default)]
    pub tracing: Option<TracingInfo>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IpiInfo {
    #[serde(default)]
    pub counters: Vec<String>,
    #[serde(default)]
    pub cpus: Vec<usize>,
    #[serde(default)]
    pub interval_ns: u64,
    #[serde(default)]
    pub senders: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TraceInfo {
    #[serde(default)]
    pub buffer_kb: u32,
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default)]
    pub lost_events: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TracingInfo {
    #[serde(default)]
    pub instance: String,
    #[serde(default)]
    pub mounted_by_us: bool,
    #[serde(default)]
    pub tracefs: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MetricInfo {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub unit: String,
}

/// A run in a guest kernel under QEMU (`xrunrig run --kernel`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GuestSection {
    /// "kvm" or "tcg".
    #[serde(default, deserialize_with = "lenient::text")]
    pub accel: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub accel_note: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub boot: Option<String>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub boot_s: Option<f64>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub cmdline: Option<String>,
    #[serde(default, deserialize_with = "lenient::texts")]
    pub command: Vec<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub console_log: Option<String>,
    #[serde(default, deserialize_with = "lenient::count")]
    pub cpus: Option<u64>,
    /// The guest stopped mid-run and was not resumed: its kernel crashed (a finding), or
    /// an emulator fault came back after the fresh boots allowed (`cause` says which);
    /// the trials that finished before it are kept, the console is saved.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub crash: Option<GuestStop>,
    /// Under TCG: the CPUs are emulated, so timings are not of real hardware.
    #[serde(default, deserialize_with = "lenient::flag")]
    pub emulated: bool,
    #[serde(default, deserialize_with = "lenient::number")]
    pub guest_uptime_at_start_s: Option<f64>,
    /// The host QEMU ran on.
    #[serde(default, deserialize_with = "section")]
    pub host: Option<GuestHost>,
    /// Older results' name for `kernel_image`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub image: Option<String>,
    /// The kernel as asked for ("debian:6.12").
    #[serde(default, deserialize_with = "lenient::text")]
    pub kernel: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub kernel_image: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub kernel_package: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub kernel_release: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub memory: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub note: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub qemu: Option<String>,
    /// Older results' name for `kernel_release`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub release: Option<String>,
    /// Fresh boots that carried on the run after an emulator fault (not the kernel's)
    /// stopped the guest; one per fault, in order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "list"
    )]
    pub resumed: Vec<GuestStop>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub results_channel: Option<String>,
    #[serde(default, deserialize_with = "lenient::number")]
    pub wall_s: Option<f64>,
    /// The kernel's provenance when xrunrig built it from source (`--kernel src:…`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub kernel_build: Option<crate::kbuild::KernelBuild>,
    /// With `--boots N`: this boot's place in the run's interleaved order of boots.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "section"
    )]
    pub boot_place: Option<BootPlace>,
}

/// A boot's place among a run's boots (`xrunrig run --kernel A --kernel B --boots N`):
/// the boots of all kernels run interleaved, A B B A A B ..., each a run of its own.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct BootPlace {
    /// Its place in the order, from 1.
    pub place: u32,
    /// Boots in the order, of all kernels.
    pub of: u32,
    /// Which boot of its kernel, from 1.
    pub boot: u32,
    /// Boots of each kernel.
    pub boots: u32,
}

/// Where and why a guest stopped before its run ended.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GuestStop {
    /// Trials (in the sweep's order) that had finished and reached the host.
    #[serde(default, deserialize_with = "lenient::count_or_zero")]
    pub after_trial: u64,
    /// Trials the run planned in all.
    #[serde(default, deserialize_with = "lenient::count")]
    pub of: Option<u64>,
    /// What stopped it, said for a reader.
    #[serde(default, deserialize_with = "lenient::text")]
    pub reason: Option<String>,
    /// The console lines that show it (the Oops or panic and what follows).
    #[serde(default, deserialize_with = "lenient::texts")]
    pub console_excerpt: Vec<String>,
    /// That boot's whole console, relative to the results directory.
    #[serde(default, deserialize_with = "lenient::text")]
    pub console_log: Option<String>,
    /// Whose fault it was: "emulator" (QEMU's: a stale int3, the guest's timers
    /// stopped, QEMU's own assertion) or "kernel" (a finding). Absent in older results.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub cause: Option<String>,
    /// The line that names it: the Oops' or stall report's first line, QEMU's
    /// assertion, or how long the console was silent. Absent in older results.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::text"
    )]
    pub line: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GuestHost {
    #[serde(default, deserialize_with = "section")]
    pub cpus: Option<Cpus>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub hostname: Option<String>,
    #[serde(default, deserialize_with = "section")]
    pub kernel: Option<KernelInfo>,
}

/// A section of the wrong shape reads as absent rather than failing the whole file.
fn section<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?
        .filter(|v| !v.is_null())
        .and_then(|v| serde_json::from_value(v).ok()))
}

/// A list whose elements of the wrong shape are dropped.
fn list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Array(a)) => a
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect(),
        _ => vec![],
    })
}

fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Option::<Value>::deserialize(d)?.and_then(|v| v.as_bool()))
}

fn opt_texts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Array(a)) => Some(
            a.into_iter()
                .filter_map(|x| match x {
                    Value::String(s) => Some(s),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    })
}

/// `{knob: value}`; values that are not strings are kept as their JSON text.
fn in_force<'de, D: Deserializer<'de>>(d: D) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::Object(o)) => Some(
            o.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (k, v)
                })
                .collect(),
        ),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_format_is_refused_naming_both_versions() {
        let e = RunDoc::from_json(r#"{"format": 99, "host": "h"}"#).unwrap_err();
        assert!(
            matches!(&e, ReadError::NewerFormat(n) if n.format == 99),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("format 99"), "{e}");
        assert!(e.contains("0..=1") && e.contains("update xrunrig"), "{e}");
        // Not JSON is another error, not a newer format.
        assert!(matches!(
            RunDoc::from_json("{"),
            Err(ReadError::Invalid(e)) if e.starts_with("run.json is not valid JSON")
        ));
        assert_eq!(RunDoc::from_json("{}").unwrap().format, 0);
    }

    #[test]
    fn mlockall_is_recorded_and_optional() {
        let mut d = RunDoc::default();
        assert!(!serde_json::to_string(&d).unwrap().contains("mlockall"));
        d.mlockall = Some(Mlockall::from_result(Err("Cannot allocate memory".into())));
        let back = RunDoc::from_json(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(
            back.mlockall,
            Some(Mlockall {
                locked: false,
                error: Some("Cannot allocate memory".into())
            })
        );
        let ok = RunDoc::from_json(r#"{"mlockall": {"locked": true}}"#).unwrap();
        assert_eq!(ok.mlockall, Some(Mlockall::from_result(Ok(()))));
        assert_eq!(RunDoc::from_json("{}").unwrap().mlockall, None);
    }

    #[test]
    fn git_commit_is_optional_and_read_back() {
        // Results from before the field: still read, without it.
        let old = RunDoc::from_json(r#"{"format": 1, "host": "h"}"#).unwrap();
        assert_eq!(old.git, None);
        let doc = RunDoc {
            git: Some(GitInfo {
                commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
                dirty: Some(true),
            }),
            ..Default::default()
        };
        let text = serde_json::to_string(&doc).unwrap();
        assert!(text.contains(r#""git":{"commit":"0123"#), "{text}");
        assert_eq!(RunDoc::from_json(&text).unwrap().git, doc.git);
        // A damaged one reads as unknown, not as an error.
        let bad = RunDoc::from_json(r#"{"git": {"commit": [], "dirty": "yes"}}"#).unwrap();
        assert_eq!(bad.git, Some(GitInfo::default()));
    }

    #[test]
    fn doctor_shapes() {
        let d: DoctorSection = serde_json::from_str(
            r#"{"checks":{"x":{"level":"WARN","message":"m"}},"counts":{"warn":1}}"#,
        )
        .unwrap();
        assert_eq!(d.checks.len(), 1);
        assert_eq!(d.checks[0].label(), Some("x"));
        assert_eq!(d.checks[0].status, Status::Warn);
        assert_eq!(d.checks[0].text(), Some("m"));
        let d: DoctorSection =
            serde_json::from_str(r#"{"kernel":[{"name":"hz","status":"pass"}],"n":3}"#).unwrap();
        assert_eq!(d.checks.len(), 1);
        // Other spellings of a status; a value without one it knows is no finding.
        let d: DoctorSection = serde_json::from_str(
            r#"[{"id":"a","result":"error"},{"id":"b","state":"OK"},{"id":"c","verdict":"skipped"},
                {"id":"d","status":"Warning"},{"id":"e","status":"later"},{"id":"f"}]"#,
        )
        .unwrap();
        let got: Vec<(&str, Status)> = d.checks.iter().map(|c| (c.id.as_str(), c.status)).collect();
        assert_eq!(
            got,
            [
                ("a", Status::Fail),
                ("b", Status::Pass),
                ("c", Status::Na),
                ("d", Status::Warn)
            ]
        );
    }

    /// What the doctor writes reads back through the same type as itself: no field lost
    /// or renamed between writing and reading.
    #[test]
    fn a_doctor_section_reads_back_equal_to_itself() {
        let checks = vec![
            Finding::new(
                "rights",
                "rights.sched_fifo",
                "SCHED_FIFO",
                "the audio threads",
            )
            .fail("cannot be set", "run as root")
            .with_data(serde_json::from_str(r#"{"max_ok": 0}"#).unwrap()),
            Finding::new("kernel", "kernel.hz", "timer frequency", "the tick").pass("1000 Hz"),
            Finding::new("audio", "audio.jack", "JACK server", "pro audio")
                .na("no jackd process")
                .with_fix("start one"),
            Finding::new("cpus", "cpus.smt", "SMT", "siblings").warn("active", "nosmt"),
        ];
        let mut d = DoctorSection::new(checks);
        d.elapsed_ms = Some(12.0);
        assert_eq!(d.count(Status::Fail), 1);
        assert_eq!(d.counts.get("n/a"), Some(&1));
        let text = serde_json::to_string(&d).unwrap();
        assert!(
            text.starts_with(r#"{"checks":[{"area":"rights","data":{"max_ok":0},"fix":"run as root","found":"cannot be set","id":"rights.sched_fifo","name":"SCHED_FIFO","status":"fail","why""#),
            "{text}"
        );
        assert!(
            text.ends_with(
                r#""counts":{"fail":1,"n/a":1,"pass":1,"warn":1},"elapsed_ms":12.0,"version":1}"#
            ),
            "{text}"
        );
        let back: DoctorSection = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        // And inside a run.json.
        let run = RunDoc {
            doctor: Some(d.clone()),
            ..Default::default()
        };
        let back = RunDoc::from_json(&serde_json::to_string(&run).unwrap()).unwrap();
        assert_eq!(back.doctor, Some(d));
    }

    #[test]
    fn sched_features_either_text_or_why_not() {
        let v = serde_json::to_value(SchedFeatures::from_result(Err("no".into()))).unwrap();
        assert_eq!(v, serde_json::json!({"unreadable": "no"}));
        let r: RunDoc =
            serde_json::from_str(r#"{"sched_features_before":"A B","kernel":"bad shape"}"#)
                .unwrap();
        assert_eq!(
            r.sched_features_before,
            Some(SchedFeatures::Read("A B".into()))
        );
        assert!(r.kernel.is_none());
    }

    #[test]
    fn guest_stops_are_optional_and_round_trip() {
        // A guest section from before resume and crash were recorded.
        let old = RunDoc::from_json(r#"{"guest": {"accel": "tcg", "emulated": true}}"#).unwrap();
        let g = old.guest.unwrap();
        assert!(g.crash.is_none() && g.resumed.is_empty());
        let v = serde_json::to_value(&g).unwrap();
        assert!(
            v.get("crash").is_none() && v.get("resumed").is_none(),
            "{v}"
        );
        let stop = GuestStop {
            after_trial: 3,
            of: Some(4),
            reason: Some("emulator".into()),
            console_excerpt: vec!["Oops: int3: 0000 [#1]".into()],
            console_log: Some("guest-console.log".into()),
            cause: Some("emulator".into()),
            line: Some("Oops: int3: 0000 [#1]".into()),
        };
        let g = GuestSection {
            resumed: vec![stop.clone()],
            crash: Some(stop.clone()),
            ..Default::default()
        };
        let back: GuestSection = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!((back.resumed, back.crash), (vec![stop.clone()], Some(stop)));
        // Wrong shapes read as absent rather than failing the file.
        let r = RunDoc::from_json(r#"{"guest": {"crash": 7, "resumed": [1, {"after_trial": 2}]}}"#)
            .unwrap();
        let g = r.guest.unwrap();
        assert!(g.crash.is_none());
        assert_eq!(g.resumed.len(), 1);
        assert_eq!(g.resumed[0].after_trial, 2);
    }
}
