//! Where a command's words go, decided once from `--json` and `--quiet`:
//! - the summary document (`--json`): stdout, alone, so a script can parse it;
//! - the human report (tables, "results: DIR"): stdout, or stderr when `--json` holds
//!   stdout, or nowhere with `--quiet`;
//! - notes (what is being done, progress): stderr, above a progress bar when one is
//!   drawn, nowhere with `--quiet`;
//! - the run's one-line verdict: the one line `--quiet` keeps (`verdict()`);
//! - warnings and errors: stderr always (plain `eprintln!`).

use indicatif::ProgressBar;
use serde::Serialize;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static JSON: AtomicBool = AtomicBool::new(false);
static QUIET: AtomicBool = AtomicBool::new(false);

/// Set once by `main` from the command line.
pub fn set(json: bool, quiet: bool) {
    JSON.store(json, Ordering::Relaxed);
    QUIET.store(quiet, Ordering::Relaxed);
}

/// `--json`: stdout holds the summary document and nothing else.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// `--quiet`: only errors, warnings and `--json`'s document.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// The progress bar being drawn, if any (`progress` sets it): notes and live lines go
/// through it, above the bar.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

pub(super) fn bar() -> Option<ProgressBar> {
    BAR.lock().ok().and_then(|c| c.clone())
}

pub(super) fn set_bar(b: Option<ProgressBar>) {
    if let Ok(mut c) = BAR.lock() {
        *c = b;
    }
}

/// Prints a line on stderr, above the bar when one is drawn.
pub fn println(line: &str) {
    match bar() {
        Some(b) => b.println(line),
        None => eprintln!("{line}"),
    }
}

/// The human report of a command's results.
pub fn report(text: &str) {
    if quiet() {
        return;
    }
    if json() {
        println(text.trim_end_matches('\n'));
    } else {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }
}

/// The run's one-line verdict: what `--quiet` keeps (on stdout; not with `--json`,
/// whose document is the answer there). Without `--quiet` the full verdict is part of
/// the report.
pub fn verdict(line: &str) {
    if quiet() && !json() {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

/// A note on stderr (dropped by `--quiet`).
pub fn note(text: &str) {
    if !quiet() {
        println(text);
    }
}

/// `--json`'s document on stdout: the value given, as the results files write it.
/// Nothing when `--json` was not asked for.
pub fn document<T: Serialize + ?Sized>(v: &T) {
    if !json() {
        return;
    }
    match serde_json::to_string_pretty(v) {
        Ok(t) => {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{t}");
            let _ = o.flush();
        }
        Err(e) => eprintln!("xrunrig: cannot write the JSON document: {e}"),
    }
}

/// `eprintln!` for notes: formats only when they will be shown.
#[macro_export]
macro_rules! note {
    ($($t:tt)*) => {
        if !$crate::output::console::quiet() {
            $crate::output::console::note(&format!($($t)*))
        }
    };
}
