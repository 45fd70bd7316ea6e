//! The LAVA job as tests/lava.rs and tests/lava_faults.rs run it with Debian's
//! `lava-run`: the job rendered from lava/xrunrig-job.yaml.jinja2 with timeouts that fit
//! the run, the Debian 6.12 kernel unpacked for libguestfs (once, kept in cargo's
//! target tmp directory), the ramdisk, the device (with a QEMU stand-in as its command
//! when a test injects a fault), lava-run's log read, and the job's end judged:
//!
//! - passed;
//! - failed for the emulator's reason (its console shows QEMU's own assertion or the
//!   RCU stall of stopped timers: `xrunrig::guest::crash`, the guest runner's own
//!   recognition) or for LAVA's infrastructure (`error_type: Infrastructure`, nothing of
//!   the kernel's on the console): run once more;
//! - failed otherwise (a kernel crash, a wrong number, a timeout): a failure, never
//!   retried.
//!
//! LAVA's own retry of a failed boot (the job's `failure_retry`) is judged the same way
//! from the console of the boot it retried. Beyond the faults a test makes on purpose,
//! one retry in a test, whichever did it, is allowed: said as `RETRY …` and logged with
//! the guest tests' retries (`xrunrig::testkit::emulator_retry`); a second fails the
//! test. A job LAVA passed whose run case failed with such a fault on the console is
//! one of them (LAVA passes a job whatever its cases say).

#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use xrunrig::guest::crash::{self, Cause};

/// Debian's python (lava-common and lava-dispatcher are Debian packages for it).
pub const PY: &str = "/usr/bin/python3";

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn have_lava_common() -> bool {
    Command::new(PY)
        .args(["-c", "import lava_common.schemas, jinja2, yaml"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `cmd`; its output, or a panic naming `what`.
pub fn run(cmd: &mut Command, what: &str) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{what} failed:\n{text}");
    text
}

/// Renders lava/xrunrig-job.yaml.jinja2 with `values` (JSON) into `out`.
pub fn render_job(values: &Value, out: &Path) {
    const RENDER: &str = r#"
import sys, json, jinja2
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]), trim_blocks=True,
                         undefined=jinja2.StrictUndefined)
text = env.get_template("xrunrig-job.yaml.jinja2").render(**json.loads(sys.argv[2]))
open(sys.argv[3], "w").write(text)
"#;
    let o = Command::new(PY)
        .args(["-c", RENDER])
        .arg(repo().join("lava"))
        .arg(values.to_string())
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "rendering the job template: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The trial length of the tests' run: one 1 s clock-backend livefx trial, variant pi.
pub const RUN_ARGS: &str = "--backend clock --duration 1s --variant pi";

/// That run's own bound, as xrunrig's plan of it says (its watchdog: the estimate of a
/// 1 s trial with its stream's opening and closing and rigs/livefx.toml's gap, × 2 +
/// 60 s): the job's `max_time_seconds`, rounded up.
pub fn max_time_seconds() -> u64 {
    let rig = xrunrig::rig::load(&repo().join("rigs/livefx.toml")).unwrap();
    let mut choices = xrunrig::options::Choices {
        trials: Some(1),
        variants: vec!["pi".into()],
        ..Default::default()
    };
    choices.audio.duration_ns = Some(1_000_000_000);
    let plan = xrunrig::sweep::Plan::build(rig, None, choices, xrunrig::kinds::of).unwrap();
    plan.bound_ns().unwrap().div_ceil(1_000_000_000)
}

/// What the job gives the test definition beyond the run (the template's default).
pub const REPORT_SECONDS: u64 = 60;

/// The test action's timeout the rendered job has.
pub fn test_seconds() -> u64 {
    max_time_seconds() + REPORT_SECONDS
}

/// Every variable the template reads, as a lab would give them.
pub fn job_values(kernel: &str, ramdisk: &str, run_args: &str) -> Value {
    serde_json::json!({
        "device_type": "qemu",
        "kernel_url": format!("file://{kernel}"),
        "kernel_name": "debian:6.12",
        "kernel_args": "nowatchdog",
        "ramdisk_url": format!("file://{ramdisk}"),
        "ramdisk_compression": "",
        "os": "oe",
        "prompt": "/ #",
        "repo_url": repo().display().to_string(),
        "repo_branch": "",
        "rig": "rigs/livefx.toml",
        "profile": "",
        "trials": 1,
        "run_args": run_args,
        "xrunrig_url": "",
        "upload_url": "",
        "max_time_seconds": max_time_seconds(),
        "report_seconds": REPORT_SECONDS,
        // Measured here: 12–16 s from QEMU's start to the shell.
        "boot_minutes": 3,
        "boot_attempts": 2,
    })
}

/// The guest tests' Debian 6.12 package, as .ci/fetch-kernel caches it.
pub fn kernel_deb() -> Option<PathBuf> {
    let cache = std::env::var_os("XRUNRIG_CACHE_DIR")
        .map(|c| PathBuf::from(c).join("kernels"))
        .unwrap_or_else(|| PathBuf::from("/var/cache/xrunrig/kernels"));
    let mut debs: Vec<PathBuf> = std::fs::read_dir(&cache)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-image-6.12.") && n.ends_with(".deb"))
        })
        .collect();
    debs.sort();
    debs.pop()
}

/// The kernel image and its whole module tree, decompressed: libguestfs boots them to
/// build LAVA's overlay disk, as this machine has no kernel in /boot (tests/lava.rs).
pub struct Kernel {
    /// The unpacked package (what lava/qemu-ramdisk.sh takes).
    pub root: PathBuf,
    pub vmlinuz: PathBuf,
    pub modules: PathBuf,
}

/// `deb` unpacked, once per package: kept in cargo's target tmp directory (about
/// 500 MB; unpacking and decompressing the modules takes ~40 s here), made under a
/// lock and marked whole last.
pub fn kernel(deb: &Path) -> Kernel {
    use std::os::unix::io::AsRawFd;
    let name = deb.file_stem().unwrap().to_string_lossy().into_owned();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lava-kernel");
    std::fs::create_dir_all(&base).unwrap();
    let lock = std::fs::File::create(base.join(".lock")).unwrap();
    // SAFETY: flock on a file we hold open; released when it closes.
    unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) };
    let k = base.join(&name);
    let whole = base.join(format!("{name}.whole"));
    if !whole.exists() {
        let _ = std::fs::remove_dir_all(&k);
        run(
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(&k),
            "unpacking the kernel package",
        );
        let rel = release(&k);
        let modules = k.join("lib/modules").join(&rel);
        run(
            Command::new("sh").arg("-c").arg(format!(
                "find {} -name '*.ko.xz' | xargs -r -n 500 xz -d && depmod -b {} {rel}",
                modules.display(),
                k.display()
            )),
            "decompressing the modules for libguestfs",
        );
        std::fs::write(&whole, b"").unwrap();
    }
    let rel = release(&k);
    Kernel {
        vmlinuz: k.join(format!("boot/vmlinuz-{rel}")),
        modules: k.join("lib/modules").join(&rel),
        root: k,
    }
}

fn release(k: &Path) -> String {
    std::fs::read_dir(k.join("lib/modules"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned()
}

/// The ramdisk of this build's xrunrig for `k`'s device, in `dir`.
pub fn ramdisk(k: &Kernel, dir: &Path) -> PathBuf {
    let ramdisk = dir.join("ramdisk.cpio.gz");
    run(
        Command::new("sh")
            .arg(repo().join("lava/qemu-ramdisk.sh"))
            .arg(env!("CARGO_BIN_EXE_xrunrig"))
            .arg(&k.root)
            .arg(&ramdisk),
        "building the ramdisk",
    );
    ramdisk
}

/// The QEMU device's configuration; with `qemu`, a copy of it whose QEMU is that
/// stand-in (`support::guest::QemuStandIn`).
pub fn device(qemu: Option<&Path>, dir: &Path) -> PathBuf {
    let d = repo().join("lava/devices/qemu-xrunrig.yaml");
    let Some(q) = qemu else {
        return d;
    };
    let text = std::fs::read_to_string(&d).unwrap();
    let stock = "          command:\n            qemu-system-x86_64\n";
    assert!(text.contains(stock), "the device's QEMU command moved");
    let p = dir.join("qemu-standin-device.yaml");
    std::fs::write(
        &p,
        text.replace(
            stock,
            &format!("          command:\n            {}\n", q.display()),
        ),
    )
    .unwrap();
    p
}

/// A job rendered for `k` and the ramdisk into `dir`.
pub fn job(k: &Kernel, ramdisk: &Path, dir: &Path) -> PathBuf {
    let job = dir.join("job.yaml");
    render_job(
        &job_values(
            &k.vmlinuz.display().to_string(),
            &ramdisk.display().to_string(),
            RUN_ARGS,
        ),
        &job,
    );
    job
}

/// One `lava-run`: its log (lava-run logs to stderr, one YAML flow mapping a line),
/// whether it exited 0 and the job passed, and how long it took.
pub struct Job {
    pub log: String,
    pub passed: bool,
    pub secs: f64,
    /// Where its log was kept.
    pub log_path: PathBuf,
}

impl Job {
    pub fn tail(&self, n: usize) -> String {
        let lines: Vec<&str> = self.log.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The last `n` lines the device printed (its console, as LAVA logged it): what a
    /// failed case said of itself.
    pub fn console_tail(&self, n: usize) -> String {
        let lines: Vec<String> = self
            .log
            .lines()
            .filter_map(line)
            .filter(|v| v["lvl"] == "target")
            .filter_map(|v| v["msg"].as_str().map(str::to_string))
            .collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// `lava-run` of `job` on `device`, its output in `dir/out-N` and its log in
/// `dir/lava-run-N.log` (N: the attempt).
pub fn lava_run(job: &Path, device: &Path, k: &Kernel, dir: &Path, n: usize) -> Job {
    let out = dir.join(format!("out-{n}"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let t0 = Instant::now();
    let o = Command::new("lava-run")
        .args(["--job-id", &(n + 1).to_string(), "--output-dir"])
        .arg(&out)
        .arg("--device")
        .arg(device)
        .arg(job)
        .env("SUPERMIN_KERNEL", &k.vmlinuz)
        .env("SUPERMIN_MODULES", &k.modules)
        .env("LIBGUESTFS_BACKEND_SETTINGS", "force_tcg")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("lava-run: exit {:?} in {secs:.0} s", o.status.code());
    let log_path = dir.join(format!("lava-run-{n}.log"));
    std::fs::write(&log_path, &log).unwrap();
    let passed = o.status.success() && end(&log).is_some_and(|e| e["result"] == "pass");
    Job {
        log,
        passed,
        secs,
        log_path,
    }
}

/// A line of lava-run's log as JSON: its lines are YAML flow mappings, which are JSON
/// but for the non-specific tag on a case's line numbers (`"endtc": ! "634"`) and
/// YAML's own escapes in strings (`\x..`, `\e`, `\_` …).
pub fn line(l: &str) -> Option<Value> {
    let l = l.replace(": ! \"", ": \"");
    if let Ok(v) = serde_json::from_str(&l) {
        return Some(v);
    }
    let mut s = String::with_capacity(l.len());
    let mut it = l.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            s.push(c);
            continue;
        }
        match it.next() {
            Some(e @ ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u')) => {
                s.push('\\');
                s.push(e);
            }
            Some('x') => s.push_str("\\u00"),
            Some('e') => s.push_str("\\u001b"),
            Some('0') => s.push_str("\\u0000"),
            Some('a') => s.push_str("\\u0007"),
            Some('v') => s.push_str("\\u000b"),
            Some('_') => s.push_str("\\u00a0"),
            Some('N') => s.push_str("\\u0085"),
            Some(other) => s.push(other),
            None => {}
        }
    }
    serde_json::from_str(&s).ok()
}

/// The first of the xrunrig definition's test cases that failed.
fn failed_case(log: &str) -> Option<String> {
    lava_cases(log)
        .into_iter()
        .find(|c| c.1 == "fail")
        .map(|c| c.0)
}

/// The job's own result (`case: job`, definition `lava`).
pub fn end(log: &str) -> Option<Value> {
    log.lines().filter_map(line).find_map(|v| {
        (v["lvl"] == "results" && v["msg"]["case"] == "job" && v["msg"]["definition"] == "lava")
            .then(|| v["msg"].clone())
    })
}

/// The test cases of the xrunrig definition: name -> (result, measurement, units).
pub fn lava_cases(log: &str) -> Vec<(String, String, Option<f64>, Option<String>)> {
    let mut out = Vec::new();
    for v in log.lines().filter_map(line) {
        if v["lvl"] != "results" || v["msg"]["definition"] != "0_xrunrig" {
            continue;
        }
        let m = &v["msg"];
        out.push((
            m["case"].as_str().unwrap_or("").to_string(),
            m["result"].as_str().unwrap_or("").to_string(),
            m["measurement"]
                .as_f64()
                .or_else(|| m["measurement"].as_str().and_then(|s| s.parse().ok())),
            m["units"].as_str().map(String::from),
        ));
    }
    out
}

/// A console line of the base64 dump without a kernel message the console put into it
/// ("…vH[   12.36] clocksource: …": the line's rest comes on the next line). base64
/// has no '[', so everything from the first one is the kernel's.
pub fn base64_part(msg: &str) -> &str {
    msg.split('[').next().unwrap_or("")
}

/// The results tarball the job put into its log, between the markers, base64.
pub fn attached_results(log: &str, into: &Path) -> PathBuf {
    let mut b64 = String::new();
    let mut inside = false;
    for v in log.lines().filter_map(line) {
        if v["lvl"] != "target" {
            continue;
        }
        let msg = v["msg"].as_str().unwrap_or("").trim();
        if msg.starts_with("XRUNRIG-RESULTS-BEGIN") {
            inside = true;
        } else if msg.starts_with("XRUNRIG-RESULTS-END") {
            inside = false;
        } else if inside {
            b64.push_str(base64_part(msg));
        }
    }
    assert!(!b64.is_empty(), "no results attached in the job log");
    let tgz = into.join("results.tar.gz");
    let b64f = into.join("results.b64");
    std::fs::write(&b64f, b64).unwrap();
    run(
        Command::new("sh").arg("-c").arg(format!(
            "base64 -d {} > {} && tar -C {} -xzf {}",
            b64f.display(),
            tgz.display(),
            into.display(),
            tgz.display()
        )),
        "unpacking the attached results",
    );
    into.join("xrunrig-lava-results")
}

/// Why a failure may be retried: the line that shows it and what it was.
#[derive(Debug, Clone, PartialEq)]
pub struct Why {
    pub line: String,
    pub what: String,
}

/// How a job ended, judged.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    Passed,
    /// Not the project's: the emulator's fault or LAVA's infrastructure.
    Retryable(Why),
    /// The project's, or nobody's to retry: a kernel crash, a wrong number, a timeout.
    Failed(String),
}

/// A job's log judged: LAVA's own boot retries (why each), and its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub boot_retries: Vec<Why>,
    pub end: End,
}

/// What a console shows of a fault, through the guest runner's recognition: a crash
/// report or timer stall (`crash::classify`), or QEMU's own assertion (its stderr is
/// on the console LAVA reads).
fn console_fault(console: &str) -> Option<crash::Fault> {
    crash::classify(console).or_else(|| crash::qemu_abort(console, None))
}

/// A failure with `console` and LAVA's `error`: retryable, or why not.
fn failure(console: &str, error: &str, infrastructure: bool) -> Result<Why, String> {
    match console_fault(console) {
        Some(f) if f.cause == Cause::Kernel => Err(format!(
            "the guest kernel crashed ({}): {}; a kernel crash is never retried",
            f.line, f.reason
        )),
        Some(f) => Ok(Why {
            line: f.line,
            what: f.reason,
        }),
        None if infrastructure => Ok(Why {
            line: error.to_string(),
            what: "LAVA's infrastructure error, nothing of the kernel's on the console".into(),
        }),
        None => Err(format!(
            "{error} (no emulator fault on the console, not LAVA's infrastructure: not retried)"
        )),
    }
}

/// Judges lava-run's `log`.
pub fn judge(log: &str) -> Judged {
    let mut console = String::new();
    let mut boot_retries = vec![];
    // The job's own actions ("start: 2 boot-image-retry …"): a failure_retry given to
    // one reaches its sub-actions too, whose retries ("auto-login-action failed: 1 of
    // 2 attempts" on a closed connection) are part of the same failure.
    let mut top: Vec<String> = vec![];
    for v in log.lines().filter_map(line) {
        let msg = v["msg"].as_str().unwrap_or("");
        if v["lvl"] == "target" {
            console.push_str(msg);
            console.push('\n');
            continue;
        }
        if v["lvl"] == "info"
            && let Some(rest) = msg.strip_prefix("start: ")
            && let Some((level, name)) = rest.split_once(' ')
            && level.parse::<u32>().is_ok()
        {
            top.push(name.split_whitespace().next().unwrap_or("").to_string());
        }
        // LAVA's RetryAction, which the boot's failure_retry makes of it, before it
        // tries again: "boot-image-retry failed: 1 of 2 attempts. 'Connection closed'".
        if v["lvl"] == "error"
            && let Some((name, tail)) = msg.split_once(" failed: ")
            && top.iter().any(|t| t == name)
            && let Some((n, rest)) = tail.split_once(" of ")
            && let Some((m, error)) = rest.split_once(" attempts. ")
            && n.parse::<u32>().is_ok()
            && n != m
        {
            // A timeout is LAVA's JobError, a closed connection its InfrastructureError.
            let infra = !error.contains("timed out");
            match failure(&console, error.trim_matches('\''), infra) {
                Ok(w) => boot_retries.push(w),
                Err(e) => {
                    return Judged {
                        boot_retries,
                        end: End::Failed(format!("LAVA retried a boot that failed so: {e}")),
                    };
                }
            }
            console.clear();
        }
    }
    let end = match end(log) {
        // LAVA passes a job whose test cases failed: the run's own case failing under
        // an emulator fault on the console (a guest whose timers stopped mid-run, as in
        // CI on 2026-12-02: the run's 1 s trial never ended, its 73 s bound did) is
        // the emulator's, retried; one failing with nothing of the emulator's is the
        // test's to judge (`check_results`).
        Some(e) if e["result"] == "pass" => match failed_case(log) {
            Some(case) => match console_fault(&console) {
                Some(f) if f.cause != Cause::Kernel => End::Retryable(Why {
                    line: f.line,
                    what: format!("the test case '{case}' failed: {}", f.reason),
                }),
                Some(f) => End::Failed(format!(
                    "the test case '{case}' failed and the guest kernel crashed ({}): {}",
                    f.line, f.reason
                )),
                None => End::Passed,
            },
            None => End::Passed,
        },
        Some(e) => {
            let error = e["error_msg"].as_str().unwrap_or("no error message");
            let infra = e["error_type"] == "Infrastructure";
            match failure(&console, error, infra) {
                Ok(w) => End::Retryable(w),
                Err(e) => End::Failed(e),
            }
        }
        None => End::Failed("lava-run recorded no job result".into()),
    };
    Judged { boot_retries, end }
}

/// Whose retries a test's jobs may take, and where each is said.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Faults the test makes on purpose (what it tests): retried, logged to `made_log`.
    pub made: usize,
    pub made_log: Option<PathBuf>,
    /// Where the one fault the emulator may make on its own beyond those is logged:
    /// CI's retries log (`xrunrig::testkit::retry_log`), or a test's own when its
    /// faults stand for the emulator's (a test of the rule itself).
    pub genuine_log: Option<PathBuf>,
}

impl Budget {
    /// No fault made on purpose: one of the emulator's, logged to `log`.
    pub fn genuine_only(log: Option<PathBuf>) -> Budget {
        Budget {
            made: 0,
            made_log: None,
            genuine_log: log,
        }
    }

    /// `made` faults made on purpose, logged to `log`; one of the emulator's beyond
    /// them, logged to CI's retries log.
    pub fn made(made: usize, log: &Path) -> Budget {
        Budget {
            made,
            made_log: Some(log.to_path_buf()),
            genuine_log: xrunrig::testkit::retry_log(),
        }
    }
}

/// Runs `attempt` (attempt N's job) under the rule: LAVA's boot retries and a job that
/// failed for a reason not the project's count as retries; the test's `made` faults and
/// one more are allowed (each said and logged), the job run a second time when it
/// failed so; one more fails the test, as does any other failure. Returns the passed
/// job and its retries, the made ones first.
#[track_caller]
pub fn run_retrying(b: Budget, mut attempt: impl FnMut(usize) -> Job) -> (Job, Vec<Why>) {
    let mut retries: Vec<Why> = vec![];
    for n in 0.. {
        let job = attempt(n);
        let j = judge(&job.log);
        let said = |w: &Why, how: &str, retries: &mut Vec<Why>| {
            retries.push(w.clone());
            let made = retries.len() <= b.made;
            if retries.len() > b.made + 1 {
                let all: Vec<&str> = retries.iter().map(|w| w.line.as_str()).collect();
                panic!(
                    "a second fault not the project's in the same test ({all:?}, {} of them \
                     made by the test); one is retried, two are not (log: {}):\n{}",
                    b.made,
                    job.log_path.display(),
                    job.tail(40)
                );
            }
            let (log, whose) = if made {
                (&b.made_log, "made by the test")
            } else {
                (&b.genuine_log, "the emulator's own")
            };
            xrunrig::testkit::emulator_retry(
                log.as_deref(),
                &format!("{}; {how} ({}; {whose})", w.line, w.what),
            );
        };
        for w in &j.boot_retries {
            said(w, "LAVA booted once more (failure_retry)", &mut retries);
        }
        match j.end {
            End::Passed => return (job, retries),
            End::Failed(why) => panic!(
                "lava-run failed: {why}\n(whole log: {}):\n{}",
                job.log_path.display(),
                job.tail(40)
            ),
            End::Retryable(w) => said(&w, "the job is run a second time", &mut retries),
        }
    }
    unreachable!()
}
