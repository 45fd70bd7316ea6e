//! `xrunrig watch` under PipeWire's JACK (issue 24): a private headless PipeWire on its
//! Dummy-Driver (tests/support/pipewire.rs), a JACK client that is not xrunrig's
//! (`watch-culprits client`, through PipeWire's libjack) overrunning its cycle now and
//! then and logging each overrun as ground truth. PipeWire's libjack reports none of
//! these to its clients; watch counts what pw-top counts (the profiler's samples of a
//! follower not finished when its driver starts the next cycle), ties each to its cycle
//! and explains it. Checked: watch's count equals an independent pw-profiler's over the
//! same stretch, every overrun is found as a late cycle of that client named "self",
//! and no late cycle is reported where the client did not overrun. Needs root and
//! Debian's pipewire, pipewire-jack and pipewire-bin (CI installs them).

mod support;

use serde_json::Value;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::pipewire::{PrivatePipewire, Setup};
use support::run::{BIN, assert_root, serial};

const CULPRITS: &str = env!("CARGO_BIN_EXE_watch-culprits");

/// Errors per follower node id in a pw-profiler log (status column not 3).
fn profiler_errors(log: &str) -> std::collections::BTreeMap<u32, u64> {
    let mut m = std::collections::BTreeMap::new();
    for l in log.lines() {
        let c: Vec<&str> = l.split('\t').collect();
        if c.len() < 4 {
            continue;
        }
        for g in c[4..].chunks(8) {
            if g.len() < 7 || g[0].trim().is_empty() {
                continue;
            }
            if g[6].trim() != "3" {
                *m.entry(g[0].trim().parse().unwrap()).or_default() += 1;
            }
        }
    }
    m
}

#[test]
fn pipewire_overruns_are_counted_as_pw_top_counts_and_explained() {
    assert_root("watch's flight recorder needs tracefs, the client SCHED_FIFO");
    let _g = serial();
    let Some(pw) = PrivatePipewire::start("watch", &Setup::new(1024)) else {
        return;
    };
    let d = xrunrig::testkit::private_dir("pw-watch");
    let out = d.join("watch");
    // An independent profiler first, so it sees everything watch sees.
    let prof_log = d.join("profiler.log");
    let mut prof: Child = pw
        .command("pw-profiler")
        .env_remove("LD_LIBRARY_PATH")
        .arg("-o")
        .arg(&prof_log)
        .current_dir(&d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("pw-profiler");
    let mut w = pw
        .command(BIN)
        .args(["watch", "--out"])
        .arg(&out)
        .args(["--duration", "60"])
        .env("XRUNRIG_STATE_DIR", &d)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(d.join("watch.stderr")).unwrap())
        .spawn()
        .expect("xrunrig watch");
    let inst = format!("xrunrig-{}", w.id());
    let t0 = Instant::now();
    while !std::path::Path::new("/sys/kernel/tracing/instances")
        .join(&inst)
        .exists()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "watch did not start: {}",
            std::fs::read_to_string(d.join("watch.stderr")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Rows need the passive client's signature before the first overrun is placed.
    std::thread::sleep(Duration::from_secs(3));
    let truth_log = d.join("client.log");
    let o = pw
        .command(CULPRITS)
        .args([
            "client",
            "--cpu",
            "1",
            "--work-us",
            "2000",
            "--overrun-every",
            "40",
            "--overrun-us",
            "30000",
            "--duration",
            "9",
            "--log",
        ])
        .arg(&truth_log)
        .output()
        .expect("watch-culprits");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The profiler's rows arrive about a second late.
    std::thread::sleep(Duration::from_secs(4));
    // SAFETY: signalling our own children.
    unsafe { libc::kill(w.id() as i32, libc::SIGINT) };
    let status = w.wait().unwrap();
    let _ = prof.kill();
    let _ = prof.wait();
    let err = std::fs::read_to_string(d.join("watch.stderr")).unwrap_or_default();
    assert!(status.success(), "{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let events: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let truth: Vec<(u64, u64, i64)> = std::fs::read_to_string(&truth_log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["start_ns"].as_u64().unwrap(),
                v["end_ns"].as_u64().unwrap(),
                v["tid"].as_i64().unwrap(),
            )
        })
        .collect();
    let indep = profiler_errors(&std::fs::read_to_string(&prof_log).unwrap_or_default());
    eprintln!(
        "watch: {} late cycles, server_errors {}, by cause {}; independent pw-profiler errors by node {indep:?}; {} overruns logged",
        events.len(),
        summary["server_errors"],
        summary["by_cause"],
        truth.len()
    );
    assert_eq!(summary["server"], "pipewire");
    assert!(truth.len() >= 5, "too few overruns to judge");
    // Counted as pw-top counts: the same errors as the independent profiler, less those
    // of watch's own passive client, which watch leaves out by design. Its node is the one
    // in the first row: the graph runs only once it joins, and the culprit comes 3 s
    // later. (Measured: as the culprit leaves, the passive client's cycle can be
    // unfinished twice, 32 against 30.)
    let own = std::fs::read_to_string(&prof_log)
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            c.get(4).and_then(|id| id.trim().parse::<u32>().ok())
        });
    let indep_total: u64 = indep
        .iter()
        .filter(|(id, _)| Some(**id) != own)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        summary["server_errors"].as_u64(),
        Some(indep_total),
        "watch's profiler count against the independent one; {}",
        run_note(&out)
    );
    // Each overrun is a late cycle of the client, explained as its own work.
    let overlaps = |e: &Value, w: &(u64, u64, i64)| {
        let (s, dl) = (
            e["cycle_start_ns"].as_u64().unwrap_or(0),
            e["deadline_ns"].as_u64().unwrap_or(0),
        );
        s <= w.1 && dl >= w.0
    };
    // One that fell while the recorder was blind (tracing stopped while the ring was
    // read: a kernel with neither a snapshot buffer nor pause-on-trace, or --no-snapshot)
    // is counted but cannot be named; the share named self is checked below.
    for w in &truth {
        assert!(
            events.iter().any(|e| overlaps(e, w)
                && (e["cause"] == "no-trace"
                    || (e["cause"] == "self" && e["late"]["tid"].as_i64() == Some(w.2)))),
            "overrun {w:?} not found as a late cycle named self; {}",
            run_note(&out)
        );
    }
    // None invented: every late cycle reported overlaps an overrun (a cycle's slack).
    let away: Vec<&Value> = events
        .iter()
        .filter(|e| {
            !truth.iter().any(|w| {
                let slack = 25_000_000;
                let (s, dl) = (
                    e["cycle_start_ns"].as_u64().unwrap_or(0),
                    e["deadline_ns"].as_u64().unwrap_or(0),
                );
                s <= w.1 + slack && dl + slack >= w.0
            })
        })
        .collect();
    assert!(
        away.is_empty(),
        "late cycles away from any overrun: {away:?}; overruns {truth:?}"
    );
    // Of those the recorder saw, nine in ten or more are named self. A recorder that
    // never stops (snapshot swap, or live-read: this host) sees them all; one that stops
    // to read is blind up to ~50 ms a freeze, and an overrun every 0.85 s meets that now
    // and then (measured here in that mode, this host's before live-read: 0-3 of 19-20
    // late cycles "no-trace" in 8 runs), which must stay the exception.
    let selfs = events.iter().filter(|e| e["cause"] == "self").count();
    let unseen = events.iter().filter(|e| e["cause"] == "no-trace").count();
    assert!(
        selfs * 10 >= (events.len() - unseen) * 9,
        "{selfs} of {} seen late cycles named self",
        events.len() - unseen
    );
    let mode = summary["recorder"]["mode"].as_str().unwrap_or("");
    let allowed = if mode == "stop-read-rearm" {
        events.len() / 4
    } else {
        0
    };
    assert!(
        unseen <= allowed,
        "{unseen} of {} late cycles unseen by the recorder (mode {mode})",
        events.len()
    );
}

fn run_note(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("run.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|v| v["watch"]["options"]["pipewire"].to_string())
        .unwrap_or_default()
}
