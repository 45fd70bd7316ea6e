//! The tests' one skip mechanism, shared by the unit tests (`#[cfg(test)]` in `src/`)
//! and the integration tests (`tests/*.rs`, which link this library as any user does).
//!
//! A test whose prerequisite is missing (root, jackd, qemu, a kernel event) calls
//! [`skip`] (or [`root`] / [`have`]) and returns. A skip is never silent:
//! - a `SKIP` line goes straight to file descriptor 2, past libtest's capture (which
//!   only catches `print!`/`eprint!`), so the CI log shows it beside `... ok`;
//! - the same line is appended to the skip log (`$XRUNRIG_SKIP_LOG`, else
//!   `target/<profile>/xrunrig-skips.log`), which `.ci/test` prints with a count;
//! - with `XRUNRIG_REQUIRE_ALL=1` (set by `.ci/test`) the skip is a failure: it panics
//!   naming what is missing, so CI on a machine without root, jackd or qemu goes red.
//!
//! The emulator's faults a test met and retried (QEMU aborting, a stalled TCG guest, a
//! stale int3: `guest::crash`) are logged the same way, in the retries log beside the
//! skip log (`$XRUNRIG_RETRY_LOG`, else `target/<profile>/xrunrig-retries.log`), which
//! `.ci/test` prints with its count: [`emulator_retry`].
//!
//! It lives in the library (not in `tests/support/`) because the unit tests cannot see
//! `tests/` and the integration tests cannot see `#[cfg(test)]` code: this is the only
//! place both reach, so there is one copy. Hidden from the docs; nothing else uses it.

use std::io::Write;
use std::panic::Location;
use std::path::PathBuf;

/// Set to 1 to turn every skip into a failure.
pub const REQUIRE_ALL: &str = "XRUNRIG_REQUIRE_ALL";
/// Where skip lines are appended.
pub const SKIP_LOG: &str = "XRUNRIG_SKIP_LOG";

fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `$XRUNRIG_SKIP_LOG`, else beside the test binary: target/<profile>/deps/X ->
/// target/<profile>/xrunrig-skips.log.
pub fn skip_log() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(SKIP_LOG) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("xrunrig-skips.log"))
}

/// Where retries (an emulator fault, a host stall) are appended.
pub const RETRY_LOG: &str = "XRUNRIG_RETRY_LOG";

/// `$XRUNRIG_RETRY_LOG`, else beside the test binary: target/<profile>/xrunrig-retries.log.
pub fn retry_log() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(RETRY_LOG) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("xrunrig-retries.log"))
}

/// The name libtest gave the calling test's thread ("?" on "main").
fn test_name() -> String {
    let t = std::thread::current();
    t.name().filter(|n| *n != "main").unwrap_or("?").to_string()
}

/// Says that the calling test met an emulator fault and retried it: `RETRY <test>:
/// <what>` straight to file descriptor 2 (past libtest's capture) and appended to `log`
/// (the retries log, [`retry_log`]; a test of the mechanism gives its own).
pub fn emulator_retry(log: Option<&std::path::Path>, what: &str) {
    retry_line(log, what);
}

/// Says that the calling test's run was disturbed by the host, not by the project (a
/// stretch where the machine itself stalled, measured by the run), and is retried once:
/// the same `RETRY` line as an emulator fault, counted by `.ci/test` with them.
pub fn host_retry(what: &str) {
    retry_line(retry_log().as_deref(), &format!("host disturbance: {what}"));
}

fn retry_line(log: Option<&std::path::Path>, what: &str) {
    let line = format!("RETRY {}: {}\n", test_name(), what.replace('\n', " "));
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(p) = log
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// Records that the calling test did not run because `missing` is missing; panics under
/// `XRUNRIG_REQUIRE_ALL=1`. The caller returns afterwards.
#[track_caller]
pub fn skip(missing: &str) {
    let at = Location::caller();
    // libtest names the test's thread after the test (unless it runs on "main").
    let name = test_name();
    let line = format!(
        "SKIP {name} ({}:{}): missing {missing}\n",
        at.file(),
        at.line()
    );
    // One write each, O_APPEND: lines from parallel test binaries do not interleave.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(p) = skip_log()
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
    {
        let _ = f.write_all(line.as_bytes());
    }
    if require_all() {
        panic!(
            "{name} ({}:{}) cannot run: missing {missing}; {REQUIRE_ALL}=1 makes a skip a failure \
             (run as root on a machine set up by .ci/setup)",
            at.file(),
            at.line()
        );
    }
}

/// True when `ok`; otherwise skips, naming `missing`, and returns false.
#[track_caller]
pub fn have(ok: bool, missing: &str) -> bool {
    if !ok {
        skip(missing);
    }
    ok
}

/// True as root; otherwise skips ("root (SCHED_FIFO, sysctls, tracefs)").
#[track_caller]
pub fn root() -> bool {
    have(crate::sys::is_root(), "root (SCHED_FIFO, sysctls, tracefs)")
}

/// True when `prog` is on PATH (e.g. jackd, qemu-system-x86_64).
pub fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// A fresh directory of the test's own, mode 0700 (a root-owned state directory that
/// xrunrig accepts for `XRUNRIG_STATE_DIR`, and no other user can write).
pub fn private_dir(tag: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let d = std::env::temp_dir().join(format!("xrunrig-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&d)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
    // The mode above is masked by the umask; set it outright.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))
        .unwrap_or_else(|e| panic!("cannot chmod {}: {e}", d.display()));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mechanism itself: a skip writes its line to the log, and under REQUIRE_ALL
    /// it panics naming what is missing. Run in a child process so the variables do not
    /// leak into other tests.
    #[test]
    fn a_skip_is_logged_and_fails_under_require_all() {
        if let Ok(what) = std::env::var("XRUNRIG_TESTKIT_CHILD") {
            skip(&what);
            return;
        }
        let d = private_dir("testkit");
        let log = d.join("skips.log");
        let exe = std::env::current_exe().unwrap();
        let child = |require: &str| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "testkit::tests::a_skip_is_logged_and_fails_under_require_all",
                    "--nocapture",
                ])
                .env("XRUNRIG_TESTKIT_CHILD", "a unicorn")
                .env(SKIP_LOG, &log)
                .env(REQUIRE_ALL, require)
                .output()
                .unwrap()
        };
        let o = child("0");
        assert!(o.status.success(), "{o:?}");
        let o2 = child("1");
        assert!(!o2.status.success(), "REQUIRE_ALL=1 must fail the test");
        let err =
            String::from_utf8_lossy(&o2.stdout).into_owned() + &String::from_utf8_lossy(&o2.stderr);
        assert!(err.contains("missing a unicorn"), "{err}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.lines()
                .all(|l| l.starts_with("SKIP ") && l.ends_with("missing a unicorn")),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_emulator_retry_is_one_line_in_the_retries_log() {
        let d = private_dir("testkit-retry");
        let log = d.join("retries.log");
        emulator_retry(
            Some(&log),
            "emulator fault: qemu-system-x86_64: x.c:1: f: Assertion 'a' failed.\n(resumed)",
        );
        emulator_retry(Some(&log), "second");
        let text = std::fs::read_to_string(&log).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("RETRY testkit::tests::an_emulator_retry_is_one_line_in_the_retries_log: emulator fault: qemu-system-x86_64")
                && lines[0].ends_with("failed. (resumed)"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
