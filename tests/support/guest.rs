//! What a guest test needs before it boots: root, QEMU and a Debian 6.12 kernel package
//! in the cache (`.ci/fetch-kernel`). A missing one FAILS the test (no skip: these
//! tests are the only proof of the guest paths). And what every guest test's run goes
//! through: the emulator's faults recognised, one retried, a second failing the test
//! (`attempt`, `boot_once_more`), and the QEMU stand-in that makes them on purpose
//! (`QemuStandIn`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

pub fn prerequisites() {
    super::run::assert_root("the guest tests run the rig's FIFO threads in the guest's xrunrig");
    let qemu = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").is_file()))
        .unwrap_or(false);
    assert!(
        qemu,
        "qemu-system-x86_64 is not installed: apt-get install qemu-system-x86"
    );
    let cache = Path::new("/var/cache/xrunrig/kernels");
    let has = std::fs::read_dir(cache)
        .map(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("linux-image-6.12.") && n.ends_with(".deb")
            })
        })
        .unwrap_or(false);
    assert!(
        has,
        "no Debian 6.12 kernel package in {}: run .ci/fetch-kernel (or apt-get download linux-image-6.12.117+deb12-amd64-unsigned into it)",
        cache.display()
    );
}

/// False (a visible skip through `xrunrig::testkit`, a failure under
/// XRUNRIG_REQUIRE_ALL=1) only when XRUNRIG_SKIP_GUEST=1; a missing tool fails the test
/// with `install` said.
#[track_caller]
pub fn enabled(what: &str, tools: &[&str], install: &str) -> bool {
    if std::env::var("XRUNRIG_SKIP_GUEST").as_deref() == Ok("1") {
        xrunrig::testkit::skip(&format!("{what} (XRUNRIG_SKIP_GUEST=1 was set)"));
        return false;
    }
    for tool in tools {
        assert!(
            xrunrig::testkit::on_path(tool),
            "{tool} is not installed, so the {what} tests cannot run: {install}, or set \
             XRUNRIG_SKIP_GUEST=1 to skip them"
        );
    }
    true
}

/// The pi-boost rigs' `wait` row in a summary: (within bound, n).
pub fn wait_row(sum: &serde_json::Value, setting: &str, variant: &str) -> (u64, u64) {
    let r = sum["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["setting"] == setting && r["variant"] == variant && r["metric"] == "wait")
        .unwrap_or_else(|| panic!("no row {setting}/{variant}/wait in {sum}"));
    (
        r["within_bound"].as_u64().unwrap(),
        r["n"].as_u64().unwrap(),
    )
}

// ---- The emulator's faults: recognised, retried once, logged --------------------------
//
// Every test that boots a guest goes through this: what the guest runner met (run.json's
// `guest.resumed`, and `guest.crash` with cause "emulator") or what a test that boots QEMU
// itself judges with `xrunrig::guest::crash::judge` is an emulator fault: QEMU aborting
// on its own assertion, a guest whose timers stopped, TCG's stale int3. One such fault in
// a test is retried (the test's guest run done again from the start, so its assertions
// see the run whole), said as `RETRY <test>: …` in the test's output and appended to the
// retries log (`xrunrig::testkit::retry_log`, which `.ci/test` counts); a second fault in
// the same test fails it. A kernel crash, a wrong number or a timeout is not a fault of
// the emulator and is never retried.

/// An emulator fault a guest run met, as its run.json says it.
#[derive(Debug, Clone)]
pub struct Fault {
    /// The line that names it (QEMU's assertion, the stall report's first line …).
    pub line: String,
    pub reason: String,
    /// "resumed in a fresh boot" or "not resumed".
    pub handled: &'static str,
}

/// The run.json files of a guest run: `out`'s, or one per kernel below it.
fn run_jsons(out: &Path) -> Vec<PathBuf> {
    let top = out.join("run.json");
    if top.is_file() {
        return vec![top];
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path().join("run.json"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The emulator faults a guest run into `out` met, in order, read through the results
/// types.
pub fn emulator_faults(out: &Path) -> Vec<Fault> {
    let mut v = vec![];
    for p in run_jsons(out) {
        let Some(g) = std::fs::read_to_string(&p)
            .ok()
            .and_then(|t| results::run::RunDoc::from_json(&t).ok())
            .and_then(|d| d.guest)
        else {
            continue;
        };
        let stops = g
            .resumed
            .iter()
            .map(|s| (s, "resumed in a fresh boot"))
            .chain(g.crash.iter().map(|s| (s, "not resumed")));
        for (s, handled) in stops {
            if s.cause.as_deref() != Some("emulator") {
                continue;
            }
            v.push(Fault {
                line: s
                    .line
                    .clone()
                    .or_else(|| s.console_excerpt.first().cloned())
                    .unwrap_or_default(),
                reason: s.reason.clone().unwrap_or_default(),
                handled,
            });
        }
    }
    v
}

/// A guest run of a test under the rule above: `run` runs it into `out` (called again,
/// `out` removed first, for the one retry); `injected` is how many emulator faults the
/// test makes on purpose (they are what it tests, not retried). Returns the run whose
/// faults were all the test's own.
#[track_caller]
pub fn attempt(out: &Path, injected: usize, run: impl FnMut() -> Output) -> Output {
    attempt_logged(xrunrig::testkit::retry_log().as_deref(), out, injected, run)
}

/// `attempt` with its retries logged to `log` (a test of the rule keeps its own).
#[track_caller]
pub fn attempt_logged(
    log: Option<&Path>,
    out: &Path,
    injected: usize,
    mut run: impl FnMut() -> Output,
) -> Output {
    let mut seen: Vec<Fault> = vec![];
    loop {
        let o = run();
        let faults = emulator_faults(out);
        if faults.len() <= injected {
            return o;
        }
        // Which of them the test made is not marked: all are said.
        let extra = faults.len() - injected;
        let mine = if injected > 0 {
            format!(" ({injected} of the {} made by the test)", faults.len())
        } else {
            String::new()
        };
        for f in &faults {
            eprintln!(
                "emulator fault{mine}: {} ({}): {}",
                f.line, f.handled, f.reason
            );
        }
        seen.extend(faults.into_iter().skip(injected));
        if seen.len() > 1 {
            let all: Vec<String> = seen.iter().map(|f| f.line.clone()).collect();
            panic!(
                "a second emulator fault in the same test ({extra} in this run, {} in all): \
                 {all:?}; one is retried, two are not: the emulator is not fit to run this test \
                 (run output:\n{})",
                seen.len(),
                super::run::text(&o)
            );
        }
        xrunrig::testkit::emulator_retry(
            log,
            &format!(
                "emulator fault: {} ({}); the test's guest run is done again",
                seen[0].line, seen[0].handled
            ),
        );
        let _ = std::fs::remove_dir_all(out);
    }
}

/// The rule for a test that boots QEMU itself: `boot` returns what it got and the
/// fault `xrunrig::guest::crash::judge` found; an emulator fault boots once more.
#[track_caller]
pub fn boot_once_more<T>(mut boot: impl FnMut() -> (T, Option<xrunrig::guest::crash::Fault>)) -> T {
    use xrunrig::guest::crash::Cause;
    let mut retried: Option<String> = None;
    loop {
        let (got, fault) = boot();
        match fault {
            Some(f) if f.cause == Cause::Emulator => {
                eprintln!("emulator fault: {}: {}", f.line, f.reason);
                if let Some(first) = retried {
                    panic!(
                        "a second emulator fault in the same test: {first:?}, then {:?}",
                        f.line
                    );
                }
                xrunrig::testkit::emulator_retry(
                    xrunrig::testkit::retry_log().as_deref(),
                    &format!("emulator fault: {}; booted once more", f.line),
                );
                retried = Some(f.line);
            }
            _ => return got,
        }
    }
}

/// A stand-in for qemu-system-x86_64 (tests only: `XRUNRIG_QEMU` for the guest runner,
/// the `command` of a LAVA device), a script whose Nth start does what the Nth step
/// says, and the real QEMU once the steps are done:
/// - `real`: the real QEMU;
/// - `abort-after SECS`: the real QEMU for SECS seconds, then QEMU's own assertion
///   (`crash::QEMU_ABORT_SAMPLE`) on stderr and death by SIGABRT, as QEMU aborts;
/// - `abort-on TEXT`: the same once the console file (`-serial file:…`) holds TEXT;
/// - `stall-on TEXT`: the real QEMU with its output passed through until it holds TEXT,
///   then the RCU stall of stopped timers (`crash::RCU_STALL_SAMPLE`) and nothing more,
///   the guest gone and the console left open (for a LAVA device: its console is stdio).
pub struct QemuStandIn {
    pub dir: PathBuf,
    pub path: PathBuf,
}

impl QemuStandIn {
    pub fn new(dir: &Path, steps: &[&str]) -> QemuStandIn {
        use std::os::unix::fs::PermissionsExt;
        let real = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("qemu-system-x86_64"))
            .find(|p| p.is_file())
            .expect("qemu-system-x86_64 on PATH");
        std::fs::create_dir_all(dir).unwrap();
        let c = xrunrig::guest::crash::QEMU_ABORT_SAMPLE;
        std::fs::write(dir.join("abort.txt"), format!("{c}\n")).unwrap();
        std::fs::write(
            dir.join("stall.txt"),
            xrunrig::guest::crash::RCU_STALL_SAMPLE.replace('\n', "\r\n"),
        )
        .unwrap();
        std::fs::write(dir.join("plan"), steps.join("\n") + "\n").unwrap();
        let script = format!(
            r#"#!/bin/sh
# A test's stand-in for qemu-system-x86_64 (tests/support/guest.rs QemuStandIn).
real='{real}' dir='{dir}'
for a; do case $a in --version|-version|--help|-help) exec "$real" "$@";; esac; done
ulimit -c 0
n=$(( $(cat "$dir/starts" 2>/dev/null || echo 0) + 1 )); echo $n >"$dir/starts"
step=$(sed -n "${{n}}p" "$dir/plan"); mode=${{step%% *}}; arg=${{step#* }}
console= prev=
for a; do
  [ "$prev" = -serial ] && [ -z "$console" ] && case $a in file:*) console=${{a#file:}};; esac
  prev=$a
done
# A background command's stdin would be /dev/null: keep the caller's (LAVA types there).
exec 3<&0
case $mode in
abort-after|abort-on)
  "$real" "$@" <&3 3<&- & q=$!
  if [ "$mode" = abort-after ]; then
    sleep "$arg"
  else
    while kill -0 $q 2>/dev/null && ! grep -qF "$arg" "$console" 2>/dev/null; do sleep 0.2; done
  fi
  if ! kill -0 $q 2>/dev/null; then wait $q; exit $?; fi
  kill -9 $q; wait $q
  cat "$dir/abort.txt" >&2
  kill -ABRT $$ ;;
stall-on)
  rm -f "$dir/out$n"; mkfifo "$dir/out$n"
  "$real" "$@" <&3 3<&- >"$dir/out$n" 2>&1 & q=$!
  tee "$dir/console$n" <"$dir/out$n" & t=$!
  while kill -0 $q 2>/dev/null && ! grep -qF "$arg" "$dir/console$n"; do sleep 0.2; done
  if ! kill -0 $q 2>/dev/null; then wait $t; wait $q; exit $?; fi
  kill -9 $q; wait $q; wait $t
  cat "$dir/stall.txt"
  exec sleep 3600 ;;
*) exec "$real" "$@" <&3 3<&- ;;
esac
"#,
            real = real.display(),
            dir = dir.display(),
        );
        let path = dir.join("qemu-system-x86_64");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        QemuStandIn {
            dir: dir.to_path_buf(),
            path,
        }
    }

    /// How many times it was started (not counting --version).
    pub fn starts(&self) -> usize {
        std::fs::read_to_string(self.dir.join("starts"))
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }
}
