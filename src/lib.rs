//! xrunrig: does this kernel, with these scheduler settings, keep my audio running?
//!
//! One folder per concern: `rig` (workloads as data), `engine` (RT threads, PI mutexes,
//! trials, watchdog), `knobs` (profiles, kernel settings, the restore journal), `output`
//! (tables, results directory, provenance), `audio` and `livefx` (the DAW-like process),
//! `guest` (running a rig under another kernel in QEMU), `doctor` (preflight checks).

pub mod audio;
pub mod bisect;
pub mod calibrate;
pub mod check;
pub mod cli;
pub mod doctor;
pub mod engine;
pub mod exit;
pub mod guest;
pub mod instruments;
pub mod kinds;
pub mod knobs;
pub mod livefx;
pub mod options;
pub mod output;
pub mod rerun;
pub mod rig;
pub mod run;
pub mod shell;
pub mod sweep;
pub mod sys;
/// The tests' skip mechanism (shared by unit and integration tests); not an API.
#[doc(hidden)]
pub mod testkit;
pub mod trials;
pub mod watch;
