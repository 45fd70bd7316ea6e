//! `xrunrig watch` beside a JACK session it did not make (issue 24, done-when on a host
//! with tracefs and no snapshot buffer): a private `jackd -d dummy`, a small JACK client
//! that is not xrunrig's rig (`watch-culprits client`: fixed work per cycle), and causes
//! watch is not told about, each logging its own windows as ground truth: (a) a FIFO 99
//! spinner on the client's CPU, (b) the client's own overrun, (c) a PI chain across
//! processes (the client waits on a process-shared PI mutex whose FIFO 10 holder, in
//! another process, is kept off its CPU by a FIFO 90 hog). At least 90 % of the xruns in
//! a cause's own windows must name the right culprit (the few the VM itself makes, outside
//! them, are said), every xrun jackd logged must be counted (jackd's log is the
//! independent count), and a quiet control run invents none. Also: kill -9 of watch
//! leaves its trace instance, and the next start removes it. Period 1024 frames
//! (21.3 ms): this VM's own stalls (up to ~10 ms, measured with cyclictest) cannot make
//! an xrun at that period, the culprits' 40 ms bursts and 30 ms overruns always do.

mod support;

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::jackd::PrivateJackd;
use support::run::{BIN, assert_root, serial};

const CULPRITS: &str = env!("CARGO_BIN_EXE_watch-culprits");
/// The client's own 30 ms overrun every 30 cycles (the "self" culprit).
const OWN_OVERRUN: &[&str] = &[
    "--work-us",
    "2000",
    "--overrun-every",
    "30",
    "--overrun-us",
    "30000",
];
const ROOT: &str = "watch's flight recorder needs tracefs, the culprits SCHED_FIFO";

fn tmp(tag: &str) -> PathBuf {
    xrunrig::testkit::private_dir(&format!("watch-{tag}"))
}

fn instances() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `xrunrig watch` on server `server` into `out`, started and attached (its trace
/// instance exists) when this returns.
fn start_watch(server: &str, out: &Path, state: &Path, extra: &[&str]) -> Child {
    let child = Command::new(BIN)
        .args(["watch", "--server", server, "--out"])
        .arg(out)
        .args(["--before", "300 ms", "--duration", "120"])
        .args(extra)
        .env("XRUNRIG_STATE_DIR", state)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(out.with_extension("stderr")).unwrap())
        .spawn()
        .expect("xrunrig watch");
    let inst = format!("xrunrig-{}", child.id());
    let t0 = Instant::now();
    while !instances().contains(&inst) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "watch did not start its flight recorder: {}",
            std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The passive client is attached before the recorder starts.
    std::thread::sleep(Duration::from_millis(300));
    child
}

/// SIGINT, then the summary and the events.
fn stop_watch(child: Child, out: &Path) -> (Value, Vec<Value>) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    assert!(
        o.status.success(),
        "watch: {:?}\n{}\n{err}",
        o.status,
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!out.join("INCOMPLETE").exists());
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let ev: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(s["xruns"].as_u64(), Some(ev.len() as u64));
    (s, ev)
}

fn culprit(args: &[&str], log: &Path) -> Child {
    Command::new(CULPRITS)
        .args(args)
        .arg("--log")
        .arg(log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("watch-culprits")
}

/// Ground truth lines: (kind, start, end, tid, other tid).
fn truth(log: &Path) -> Vec<(String, u64, u64, i64, i64)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["kind"].as_str().unwrap().to_string(),
                v["start_ns"].as_u64().unwrap(),
                v["end_ns"].as_u64().unwrap(),
                v["tid"].as_i64().unwrap(),
                v["other_tid"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The xrun's late cycle overlaps a ground-truth window (with a cycle's slack either
/// side: a window ends inside the cycle it made late).
fn overlaps(e: &Value, w: &(String, u64, u64, i64, i64)) -> bool {
    let (Some(s), Some(d)) = (e["cycle_start_ns"].as_u64(), e["deadline_ns"].as_u64()) else {
        return false;
    };
    let slack = d - s;
    s <= w.2 + slack && d + slack >= w.1
}

/// jackd's own count of the xruns it told its clients of: (all, the driver's). A client
/// not finished is "JackEngine::XRun"; the dummy driver's timer woken past a cycle is
/// "JackTimedDriver::Process XRun" (this VM's stalls), also sent to every client
/// (jack2's common/JackTimedDriver.cpp `ProcessWait()`, read at commit 07fad27e, calls
/// NotifyXRun, then logs that line). Measured: watch counted 14 where the engine's lines
/// were 13 and the driver's 1.
fn xruns_logged(j: &PrivateJackd) -> (usize, usize) {
    let log = j.log();
    let driver = log.matches("JackTimedDriver::Process XRun").count();
    (log.matches("JackEngine::XRun").count() + driver, driver)
}

/// One scenario: the client (and `others`) for `secs` under watch; the watch result,
/// the ground truth of each, and jackd's count of xruns.
struct Scenario {
    summary: Value,
    events: Vec<Value>,
    client_truth: Vec<(String, u64, u64, i64, i64)>,
    other_truth: Vec<(String, u64, u64, i64, i64)>,
    jackd_xruns: usize,
    /// Of those, the driver's own (its timer late: no client behind).
    driver_xruns: usize,
}

fn scenario(tag: &str, client_args: &[&str], others: &[&[&str]], secs: u32) -> Option<Scenario> {
    scenario_with(tag, &[], client_args, others, secs)
}

/// `scenario` with more flags for watch.
fn scenario_with(
    tag: &str,
    watch_args: &[&str],
    client_args: &[&str],
    others: &[&[&str]],
    secs: u32,
) -> Option<Scenario> {
    let jack = PrivateJackd::start(&format!("w{tag}"), 1024)?;
    let d = tmp(tag);
    let out = d.join("watch");
    let w = start_watch(&jack.name, &out, &d, watch_args);
    let dur = secs.to_string();
    let clog = d.join("client.log");
    let olog = d.join("other.log");
    let mut cargs = vec![
        "client",
        "--server",
        &jack.name,
        "--cpu",
        "1",
        "--duration",
        &dur,
    ];
    cargs.extend_from_slice(client_args);
    let mut procs = Vec::new();
    // Others first: the holder makes the shared lock the client opens.
    for o in others {
        let mut a: Vec<&str> = o.to_vec();
        a.extend_from_slice(&["--duration", &dur]);
        procs.push(culprit(&a, &olog));
    }
    std::thread::sleep(Duration::from_millis(300));
    procs.push(culprit(&cargs, &clog));
    for p in procs {
        let o = p.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "watch-culprits failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Time for the last reports to arrive and be explained.
    std::thread::sleep(Duration::from_millis(1500));
    let (summary, events) = stop_watch(w, &out);
    Some(Scenario {
        summary,
        events,
        client_truth: truth(&clog),
        other_truth: truth(&olog),
        jackd_xruns: xruns_logged(&jack).0,
        driver_xruns: xruns_logged(&jack).1,
    })
}

fn share(hits: usize, all: usize) -> f64 {
    hits as f64 / all.max(1) as f64
}

/// One xrun in a line: what a failure prints (the excerpt CI keeps is short).
fn brief(e: &Value) -> String {
    format!(
        "{} cause {} late {}/{} culprit {}/{} cycle {}..{}",
        e["window"].as_str().unwrap_or("-"),
        e["cause"],
        e["late"]["comm"].as_str().unwrap_or("-"),
        e["late"]["tid"],
        e["culprit"]["comm"].as_str().unwrap_or("-"),
        e["culprit"]["tid"],
        e["cycle_start_ns"],
        e["deadline_ns"]
    )
}

/// Counted as jackd counted; of the xruns whose late cycle overlaps one of the cause's
/// own ground-truth `windows`, at least a few and 90 % or more attributed right: the
/// culprit's, or "unexplained" for as many as jackd's driver logged of its own (a late
/// timer has no thread behind it, and watch says so). An xrun outside every window is
/// not the cause's: the VM stalled the client past a period (seen in CI: more xruns
/// than the culprit's bursts). Those are said, and must stay a minority, or the run
/// measured the host rather than the attribution.
fn check(
    tag: &str,
    s: &Scenario,
    windows: &[&(String, u64, u64, i64, i64)],
    right: impl Fn(&Value) -> bool,
) {
    let n = s.events.len();
    eprintln!(
        "{tag}: watch {n} xruns, jackd logged {} ({} the driver's); summary by cause {}",
        s.jackd_xruns, s.driver_xruns, s.summary["by_cause"]
    );
    assert_eq!(
        n, s.jackd_xruns,
        "{tag}: watch counted {n} xruns, jackd logged {}",
        s.jackd_xruns
    );
    let (inside, outside): (Vec<&Value>, Vec<&Value>) = s
        .events
        .iter()
        .partition(|e| windows.iter().any(|w| overlaps(e, w)));
    for e in &outside {
        eprintln!("{tag}: outside the cause's windows: {}", brief(e));
    }
    let m = inside.len();
    assert!(
        m >= 5,
        "{tag}: only {m} xruns in the cause's windows ({n} in all): the culprit did not bite"
    );
    assert!(
        outside.len() * 3 <= m,
        "{tag}: {} of {n} xruns outside the cause's windows: the host, not the culprit, \
         made most of this run's xruns; e.g. {:?}",
        outside.len(),
        outside.iter().take(3).map(|e| brief(e)).collect::<Vec<_>>()
    );
    let unexplained = inside
        .iter()
        .filter(|e| !right(e) && e["cause"] == "unexplained")
        .count();
    let hits = inside.iter().filter(|e| right(e)).count() + unexplained.min(s.driver_xruns);
    let wrong: Vec<String> = inside
        .iter()
        .filter(|e| !right(e))
        .take(4)
        .map(|e| brief(e))
        .collect();
    assert!(
        share(hits, m) >= 0.9,
        "{tag}: {hits} of the {m} xruns in the cause's windows attributed right; e.g. {wrong:?}"
    );
}

#[test]
fn a_fifo_spinner_on_the_clients_cpu_is_named() {
    assert_root(ROOT);
    let _g = serial();
    let Some(s) = scenario(
        "spin",
        &["--work-us", "2000"],
        &[&[
            "spinner",
            "--cpu",
            "1",
            "--prio",
            "99",
            "--every-ms",
            "600",
            "--burst-ms",
            "40",
        ]],
        8,
    ) else {
        return;
    };
    let spins: Vec<_> = s.other_truth.iter().filter(|w| w.0 == "spin").collect();
    assert!(!spins.is_empty());
    check("spinner", &s, &spins, |e| {
        e["cause"] == "preempted"
            && spins
                .iter()
                .any(|w| e["culprit"]["tid"].as_i64() == Some(w.3) && overlaps(e, w))
    });
}

#[test]
fn the_clients_own_overrun_is_self() {
    assert_root(ROOT);
    let _g = serial();
    let Some(s) = scenario("self", OWN_OVERRUN, &[], 8) else {
        return;
    };
    assert!(!s.client_truth.is_empty());
    let own: Vec<_> = s.client_truth.iter().collect();
    check("self", &s, &own, |e| {
        e["cause"] == "self"
            && s.client_truth
                .iter()
                .any(|w| e["late"]["tid"].as_i64() == Some(w.3) && overlaps(e, w))
    });
}

/// `--no-snapshot`: the recorder stops tracing to read each window (what a kernel with
/// neither a snapshot buffer nor pause-on-trace gets), says so and how long it was
/// blind; an xrun in a blind stretch is counted and called no-trace, the rest named.
#[test]
fn a_recorder_that_stops_to_read_says_how_long_it_was_blind() {
    assert_root(ROOT);
    let _g = serial();
    let Some(s) = scenario_with("stop", &["--no-snapshot"], OWN_OVERRUN, &[], 8) else {
        return;
    };
    let r = &s.summary["recorder"];
    assert_eq!(r["mode"], "stop-read-rearm", "{r}");
    let (blind, max) = (
        r["blind_ns"].as_u64().unwrap(),
        r["blind_max_ns"].as_u64().unwrap(),
    );
    assert!(
        s.summary["windows_kept"].as_u64().unwrap() > 0,
        "{}",
        s.summary
    );
    assert!(blind > 0 && max > 0 && max <= blind, "{r}");
    let own: Vec<_> = s.client_truth.iter().collect();
    let named = |e: &Value| {
        e["cause"] == "self"
            && s.client_truth
                .iter()
                .any(|w| e["late"]["tid"].as_i64() == Some(w.3) && overlaps(e, w))
    };
    check("stop", &s, &own, |e| e["cause"] == "no-trace" || named(e));
    // no-trace is right only in a blind stretch: a recorder blind at every xrun (or one
    // that calls everything no-trace) would pass the check above. The blind stretches
    // are a few ms after each report, the overruns 640 ms apart: most must be named.
    let inside: Vec<&Value> = s
        .events
        .iter()
        .filter(|e| own.iter().any(|w| overlaps(e, w)))
        .collect();
    let n_named = inside.iter().filter(|e| named(e)).count();
    assert!(
        2 * n_named > inside.len(),
        "stop: only {n_named} of {} xruns in the overruns' windows named 'self' (the rest \
         no-trace or wrong); blind {blind} ns in all, longest {max} ns",
        inside.len()
    );
}

/// A flood of scheduler events (a pipe between two processes, thousands of wake-ups a
/// second on both CPUs) through a small ring (`--buffer-kb 64`) overwrites the events of
/// most late cycles before watch looks: those xruns are `no-trace`, saying the ring
/// overwrote events and how many, never "unexplained" or a wrong name; each xrun is
/// still counted.
#[test]
fn a_flooded_ring_says_no_trace_never_unexplained() {
    assert_root(ROOT);
    let _g = serial();
    let mut flood = Command::new("nice")
        .args(["-n", "19", "sh", "-c", "yes | cat > /dev/null"])
        .process_group(0)
        .spawn()
        .unwrap();
    let s = scenario_with("flood", &["--buffer-kb", "64"], OWN_OVERRUN, &[], 8);
    // The pipeline's group: sh, yes and cat.
    // SAFETY: kill(2) on a process group this test made.
    unsafe { libc::kill(-(flood.id() as i32), libc::SIGKILL) };
    let _ = flood.wait();
    let Some(s) = s else {
        return;
    };
    let own: Vec<_> = s.client_truth.iter().collect();
    let named = |e: &Value| {
        e["cause"] == "self"
            && s.client_truth
                .iter()
                .any(|w| e["late"]["tid"].as_i64() == Some(w.3) && overlaps(e, w))
    };
    let lost = |e: &Value| {
        e["cause"] == "no-trace"
            && e["why"].as_str().is_some_and(|w| {
                w.contains("the ring overwrote") || w.contains("does not reach back")
            })
    };
    check("flood", &s, &own, |e| named(e) || lost(e));
    let n_lost = s.events.iter().filter(|e| lost(e)).count();
    assert!(
        n_lost > 0,
        "flood: no xrun lost its window to the flood; by cause {}",
        s.summary["by_cause"]
    );
    assert_eq!(
        s.events
            .iter()
            .filter(|e| e["cause"] == "unexplained")
            .count(),
        0,
        "flood: an xrun whose window was overwritten called unexplained; by cause {}",
        s.summary["by_cause"]
    );
}

#[test]
fn a_pi_chain_across_processes_names_holder_boost_and_hog() {
    assert_root(ROOT);
    let _g = serial();
    let lock = format!("/dev/shm/xrunrig-watch-test-{}", std::process::id());
    let Some(s) = scenario(
        "pi",
        &["--work-us", "2000", "--lock", &lock],
        &[&[
            "holder",
            "--cpu",
            "0",
            "--prio",
            "10",
            "--lock",
            &lock,
            "--every-ms",
            "600",
            "--hog-prio",
            "90",
            "--hog-ms",
            "40",
        ]],
        8,
    ) else {
        return;
    };
    let hogs: Vec<_> = s.other_truth.iter().filter(|w| w.0 == "hog").collect();
    assert!(!hogs.is_empty());
    check("pi-chain", &s, &hogs, |e| {
        e["cause"] == "pi-chain"
            && e["boost"].as_str().is_some_and(|b| b.starts_with("FIFO "))
            && e["holder"]["policy"] == "FIFO 10"
            && hogs.iter().any(|w| {
                e["holder"]["tid"].as_i64() == Some(w.3)
                    && e["culprit"]["tid"].as_i64() == Some(w.4)
                    && overlaps(e, w)
            })
    });
}

#[test]
fn a_quiet_session_has_no_xruns_invented() {
    assert_root(ROOT);
    let _g = serial();
    let Some(s) = scenario("quiet", &["--work-us", "2000"], &[], 8) else {
        return;
    };
    assert_eq!(
        s.events.len(),
        s.jackd_xruns,
        "watch reported {} xruns, jackd {}",
        s.events.len(),
        s.jackd_xruns
    );
    assert!(s.summary["cycles"].as_u64().unwrap() > 300, "{}", s.summary);
    // With no report, nothing is explained or kept.
    if s.jackd_xruns == 0 {
        assert_eq!(s.summary["windows_kept"], 0);
        assert_eq!(s.summary["by_culprit"], Value::Array(vec![]));
    }
}

/// kill -9 leaves the trace instance (nothing can run at SIGKILL); the next start of
/// watch (or any xrunrig run, or `xrunrig restore`) removes it through the journal.
#[test]
fn a_killed_watch_is_cleaned_up_by_the_next_start() {
    assert_root(ROOT);
    let _g = serial();
    let Some(jack) = PrivateJackd::start("wkill", 1024) else {
        return;
    };
    let d = tmp("kill");
    let w = start_watch(&jack.name, &d.join("w1"), &d, &[]);
    let inst = format!("xrunrig-{}", w.id());
    let journal = d.join(format!("trace-journal-{}.json", w.id()));
    assert!(journal.exists());
    let mut w = w;
    w.kill().unwrap();
    w.wait().unwrap();
    assert!(instances().contains(&inst), "SIGKILL cannot remove it");
    let w2 = start_watch(&jack.name, &d.join("w2"), &d, &[]);
    assert!(!instances().contains(&inst), "the next start removed it");
    assert!(!journal.exists());
    let err = std::fs::read_to_string(d.join("w2").with_extension("stderr")).unwrap();
    assert!(err.contains(&inst), "it says so: {err}");
    let inst2 = format!("xrunrig-{}", w2.id());
    stop_watch(w2, &d.join("w2"));
    assert!(
        !instances().contains(&inst2),
        "a normal end removes its own"
    );
    // The killed watch's directory stays marked as not finished, its events kept.
    assert!(d.join("w1/INCOMPLETE").exists());
    assert!(d.join("w1/events.jsonl").exists());
}

/// A second Ctrl-C ends watch at once when its end is stuck: here the server stops
/// answering (SIGSTOP, as a jackd starved by FIFO 99 spinners on every CPU does) just
/// before the first Ctrl-C. The tracing instance is already gone and the summary written
/// by then: only the client's goodbye to its server is left, and it is abandoned.
#[test]
fn a_second_ctrl_c_ends_a_stuck_end_at_once() {
    assert_root(ROOT);
    let _g = serial();
    let Some(mut jack) = PrivateJackd::start("wstuck", 1024) else {
        return;
    };
    let d = tmp("stuck");
    let out = d.join("w");
    let mut w = start_watch(&jack.name, &out, &d, &[]);
    let inst = format!("xrunrig-{}", w.id());
    let jpid = jack.pid() as i32;
    // SAFETY: signalling our own children.
    unsafe { libc::kill(jpid, libc::SIGSTOP) };
    unsafe { libc::kill(w.id() as i32, libc::SIGINT) };
    // watch's own end: the last reports' window (at most 200 ms), the summary.
    let t0 = Instant::now();
    let mut first = None;
    while t0.elapsed() < Duration::from_secs(5) {
        if let Some(st) = w.try_wait().unwrap() {
            first = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let t1 = Instant::now();
    let status = match first {
        Some(st) => st,
        None => {
            unsafe { libc::kill(w.id() as i32, libc::SIGINT) };
            loop {
                if let Some(st) = w.try_wait().unwrap() {
                    break st;
                }
                if t1.elapsed() > Duration::from_secs(10) {
                    unsafe { libc::kill(jpid, libc::SIGCONT) };
                    let _ = w.kill();
                    panic!("a second Ctrl-C did not end watch in 10 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let after_second = t1.elapsed();
    unsafe { libc::kill(jpid, libc::SIGCONT) };
    jack.stop();
    let err = std::fs::read_to_string(out.with_extension("stderr")).unwrap_or_default();
    eprintln!(
        "first Ctrl-C: {}; ended {:?} after the second\n{err}",
        if first.is_some() {
            "ended"
        } else {
            "stuck 5 s"
        },
        after_second
    );
    if first.is_none() {
        assert_eq!(status.code(), Some(130), "{status:?}\n{err}");
        assert!(
            after_second < Duration::from_secs(2),
            "{after_second:?}: not at once"
        );
    }
    assert!(!instances().contains(&inst), "tracing instance left\n{err}");
    assert!(out.join("summary.json").exists(), "{err}");
    assert!(!out.join("INCOMPLETE").exists(), "{err}");
    assert!(err.contains("Ctrl-C again ends at once"), "{err}");
}
