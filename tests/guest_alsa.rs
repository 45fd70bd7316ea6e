//! The ALSA backend (cpal) on real ALSA drivers: a Debian 6.12 guest under QEMU loads
//! snd-aloop and snd-dummy (src/guest/modules.rs `SOUND`), and `xrunrig run --backend
//! alsa --device hw:...` plays on each card: cycles counted at the card's pace, every
//! injected overrun a deadline miss on its own cycle (the deadline from cpal's callback
//! timestamps: src/audio/alsa/stream.rs `window`), the period ALSA granted, the server
//! and what cpal does not report in run.json; on snd-aloop with `--loopback` the signal
//! comes back through the card's capture side (round trip measured, each injected
//! overrun's dropout found). One boot per card.
//!
//! Needs qemu-system-x86_64 and the Debian kernel package, as tests/guest.rs (which says
//! how they are fetched); XRUNRIG_SKIP_GUEST=1 skips. One guest at a time. Period 512 on
//! snd-dummy; under TCG snd-aloop's jiffies timer (HZ 250) keeps 512 frames in real time
//! (see tests/guest.rs) but wakes its clients 4-9 ms late, so a 10.7 ms period has xruns
//! of its own every few cycles (52-118 in 5 s measured with the loopback on): the
//! loopback run takes period 768 (1024 would put the round trip past the 4096 frames
//! the loopback ramp can measure: 128 frames measured, i.e. 4224 wrapped).

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

static ONE_GUEST_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A light livefx rig: under TCG, rigs/livefx.toml's calibrated plugin work runs many
/// times slower than on the host (callbacks of 20-70 ms at a 10.7 ms period, measured),
/// which would test the emulator, not the backend.
const RIG: &str = r#"
name = "alsa-guest"
description = "one light worker: the ALSA backend's own timing in an emulated guest"
kind = "livefx"
trials = 1
trial_gap = "300 ms"

[livefx]
duration = "5 s"
backend = "alsa"
period = 512
rate = 48000
nperiods = 2
callback = { priority = 70 }

[[livefx.workers]]
name = "fx"
instances = 1
priority = 60
cpus = [1]
plugins = [{ run = "20 us" }]
"#;

#[track_caller]
fn guest_tests_enabled() -> bool {
    if std::env::var("XRUNRIG_SKIP_GUEST").as_deref() == Ok("1") {
        xrunrig::testkit::skip("guest kernels (XRUNRIG_SKIP_GUEST=1 was set)");
        return false;
    }
    assert!(
        xrunrig::testkit::on_path("qemu-system-x86_64"),
        "qemu-system-x86_64 is not installed, so the guest-kernel tests cannot run: \
         install it (apt-get install qemu-system-x86), or set XRUNRIG_SKIP_GUEST=1 to skip them"
    );
    true
}

fn json(p: &Path) -> Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap()
}

/// `xrunrig run RIG --kernel debian:6.12 --backend alsa --device DEVICE
/// ...` with the results in a directory of the test's own.
fn run_alsa(tag: &str, device: &str, period: u32, extra: &[&str]) -> PathBuf {
    let _one = ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let state = xrunrig::testkit::private_dir(&format!("guest-alsa-{tag}"));
    let out = state.join("res");
    let rig = state.join("alsa-guest.toml");
    std::fs::write(&rig, RIG).unwrap();
    let t0 = Instant::now();
    // An emulator fault is retried once (support::guest::attempt).
    let o = support::guest::attempt(&out, 0, || {
        Command::new(env!("CARGO_BIN_EXE_xrunrig"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("XRUNRIG_STATE_DIR", &state)
            .arg("run")
            .arg(&rig)
            .args(["--kernel", "debian:6.12", "--cpus", "4"])
            .args(["--backend", "alsa", "--device", device])
            .args(["--period", &period.to_string()])
            .args(["--duration", "5 s", "--trials", "1"])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    });
    let text = format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{text}\n{tag} took {:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(0), "{text}");
    out
}

/// (flags, start ns) of every cycle of the first trial.
fn cycles(dir: &Path, s: &Value) -> Vec<(u32, u64)> {
    let f = s["trials"][0]["cycles_file"].as_str().expect("cycles_file");
    let b = std::fs::read(dir.join(f)).expect("cycles file");
    b.chunks_exact(results::livefx::cycles::RECORD_BYTES)
        .map(|c| {
            let r = results::livefx::Record::decode(c);
            (r.flags, r.start_ns)
        })
        .collect()
}

/// One card: cycles at its pace, injected overruns each a miss on their own cycle, and
/// run.json's server record. Returns the cycles' flags.
fn check_card(out: &Path, device: &str, period: u64, every: u64) -> Vec<u32> {
    let s = json(&out.join("summary.json"));
    let row = &s["rows"][0];
    assert_eq!(row["backend"], "alsa", "{row}");
    let cyc = cycles(out, &s);
    let n = cyc.len() as u64;
    assert_eq!(row["cycles"].as_u64().unwrap(), n);
    // 5 s at 512 frames and 48 kHz is 469 cycles; a TCG guest on a busy host has many
    // xruns (374 cycles, 60 xruns on snd-aloop with the host at load 19), each losing
    // the time the card stood, and each restart refills two periods at once (one cycle
    // more: 497 cycles with 73 xruns measured at 512); with the loopback on, the stream
    // also runs up to 0.54 s past the 5 s before it stops (measured). So: one cycle per
    // period of the span the records cover plus one per xrun at most, and at least 2/5
    // of the nominal count (the card clearly ran).
    let xruns = row["xruns"].as_u64().unwrap();
    let nominal = 5 * 48_000 / period;
    let span = cyc.last().unwrap().1 - cyc[0].1;
    let paced = span * 48_000 / (period * 1_000_000_000);
    assert!(
        (nominal * 2 / 5..=paced + 2 + xruns).contains(&n),
        "{device}: {n} cycles in {span} ns (nominal {nominal}), {xruns} xruns"
    );
    assert_eq!(row["period"], period, "the period ALSA granted: {row}");
    use results::livefx::cycles::{F_INJECTED, F_MISS, F_XRUN};
    // Each cycle's deadline is when the frames cpal says are still queued have played:
    // with cpal's two-period buffer at most a period after the wake, so an injected
    // burn of 1.5 periods is a miss on its own cycle, every time, as on JACK.
    let (mut injected, mut other_misses, mut xrun_flags) = (0, 0, 0);
    for (i, &(f, _)) in cyc.iter().enumerate() {
        let inj = f & F_INJECTED != 0;
        assert_eq!(
            inj,
            (i as u64 + 1).is_multiple_of(every),
            "injection on cycle {i}"
        );
        xrun_flags += u64::from(f & F_XRUN != 0);
        if inj {
            injected += 1;
            assert!(
                f & F_MISS != 0,
                "{device}: injected overrun on cycle {i} not a deadline miss on its cycle"
            );
        } else if f & F_MISS != 0 {
            other_misses += 1;
        }
    }
    assert_eq!(injected, n / every);
    assert_eq!(row["injected"].as_u64().unwrap(), injected);
    assert_eq!(row["injected_undetected"].as_u64(), Some(0), "{row}");
    assert_eq!(
        row["deadline_misses"].as_u64().unwrap(),
        injected + other_misses,
        "misses = injected + the ones counted apart"
    );
    assert_eq!(row["misses_not_injected"].as_u64(), Some(other_misses));
    // 1.5 periods of work with two periods buffered runs the card dry: cpal reports
    // each as an xrun (after the fact, tied to the cycle before its report). So an
    // injection on one of the last two cycles may run dry after the stream stopped
    // (measured in CI: 475 cycles, the 19th injection on the last one, 18 xruns).
    let settled = cyc
        .iter()
        .enumerate()
        .filter(|&(i, &(f, _))| f & F_INJECTED != 0 && i as u64 + 2 < n)
        .count() as u64;
    assert!(
        row["xruns"].as_u64().unwrap() >= settled && xrun_flags > 0,
        "{device}: {settled} injections 2 cycles or more before the end: {row}"
    );
    eprintln!(
        "{device}: {n} cycles, {injected} injected, all misses on their own cycle; \
         {other_misses} other misses; xruns {} on {xrun_flags} cycles",
        row["xruns"]
    );
    let run = json(&out.join("run.json"));
    let sv = &run["livefx"]["notes"][0]["server"];
    assert_eq!(sv["kind"], "alsa", "{run}");
    assert_eq!(sv["library"], device, "{sv}");
    assert_eq!(sv["period"], period, "cpal's granted period: {sv}");
    assert!(sv["xruns"].as_str().unwrap_or("").contains("cpal"), "{sv}");
    // What cpal leaves out and how the deadline was found are on record.
    assert!(
        sv["deadline"].as_str().unwrap_or("").contains("queued"),
        "{sv}"
    );
    assert!(
        sv["unreported"]
            .as_str()
            .unwrap_or("")
            .contains("buffer size"),
        "{sv}"
    );
    // The guest block says which kernel ran it.
    assert!(run["guest"].is_object(), "{run}");
    cyc.iter().map(|c| c.0).collect()
}

/// snd-aloop, named in ALSA's short form, with the loopback check: what plays on
/// hw:Loopback,0 comes back on hw:Loopback,1 through a cpal capture stream.
#[test]
fn alsa_plays_on_snd_aloop_counts_injected_overruns_and_loops_back() {
    if !guest_tests_enabled() {
        return;
    }
    let device = "hw:Loopback,0";
    let (period, every) = (768, 25);
    let attempt = |tag: &str| {
        let out = run_alsa(
            tag,
            device,
            period as u32,
            &[
                "--inject-every",
                "25",
                "--inject-factor",
                "1.5",
                "--loopback",
            ],
        );
        let (found, injected) = check_aloop(&out, device, period, every);
        (out, found, injected)
    };
    // Checked: the overruns with the loop locked and quiet before them. A guest whose own
    // xruns leave fewer than a third of them so has not given the test its premise: run
    // once more, said as a RETRY line (CI saw 3 of 12 once, with xruns on 54 of 321
    // cycles of the emulated machine; the three checked were all found).
    let (mut out, mut found, mut injected) = attempt("aloop");
    if found * 3 < injected {
        xrunrig::testkit::host_retry(&format!(
            "only {found} of {injected} injected overruns had the loop locked and quiet before them"
        ));
        (out, found, injected) = attempt("aloop-again");
    }
    assert!(
        found * 3 >= injected,
        "only {found} of {injected} injected overruns had the loop locked and quiet before them"
    );
    let row = &json(&out.join("summary.json"))["rows"][0];
    let disc = row["discontinuities"].as_u64().expect("loopback figures");
    assert!(
        found > 0 && disc >= found,
        "{disc} discontinuities, {found} overruns"
    );
    eprintln!(
        "{device}: loopback round trip {} frames, {disc} discontinuities ({} unexplained) \
         for {found} injected overruns checked",
        row["roundtrip_frames"], row["discontinuities_unexplained"]
    );
}

/// The loopback run's checks; (overruns checked, overruns injected). Every overrun
/// checked must be found.
fn check_aloop(out: &Path, device: &str, period: u64, every: u64) -> (u64, u64) {
    let flags = check_card(out, device, period, every);
    let s = json(&out.join("summary.json"));
    let row = &s["rows"][0];
    let run = json(&out.join("run.json"));
    let sv = &run["livefx"]["notes"][0]["server"];
    assert_eq!(sv["capture"], "hw:CARD=Loopback,DEV=1", "{sv}");
    // The round trip: the playback buffer (two periods), the capture period and the
    // ring's cushion between the two callbacks (one to two periods): 2 periods at least
    // (3.0-3.4 periods measured at 512), under the ramp's 4096 codes.
    let rt = row["roundtrip_frames"]
        .as_u64()
        .unwrap_or_else(|| panic!("the loopback signal never came back: {row}"));
    assert!((2 * period..4096).contains(&rt), "round trip {rt} frames");
    // Every injected overrun runs the card dry: the signal breaks, and the checker
    // finds it within the round trip after the overrun's cycle (plus the refill). The
    // checker counts only while locked: it locks after the start's own xruns (first
    // discontinuity at cycles 24-43 measured at 512) and relocks once the signal is back
    // unbroken for 8 frames; a run of the guest's own xruns just before an overrun can
    // leave it unlocked (measured at 512: xruns on 5 of the 13 cycles before one). So
    // the overruns checked are those after the first discontinuity with 8 clean cycles
    // (no miss, xrun or discontinuity) before them.
    use results::livefx::cycles::{F_DISCONTINUITY, F_INJECTED, F_MISS, F_XRUN};
    let reach = (rt / period + 3) as usize;
    let first = flags
        .iter()
        .position(|&g| g & F_DISCONTINUITY != 0)
        .expect("no discontinuity at all: an injected overrun runs the card dry");
    let (mut found, mut injected) = (0, 0);
    for (i, &f) in flags.iter().enumerate() {
        if f & F_INJECTED == 0 {
            continue;
        }
        injected += 1;
        let noisy = |g: &u32| g & (F_MISS | F_XRUN | F_DISCONTINUITY) != 0;
        if i < first + 8 || i + reach >= flags.len() || flags[i - 8..i].iter().any(noisy) {
            continue;
        }
        assert!(
            flags[i..=i + reach]
                .iter()
                .any(|&g| g & F_DISCONTINUITY != 0),
            "injected overrun on cycle {i}: no discontinuity within {reach} cycles"
        );
        found += 1;
    }
    (found, injected)
}

/// snd-dummy, named by card only (`hw:CARD=Dummy`: device 0).
#[test]
fn alsa_plays_on_snd_dummy_and_counts_injected_overruns() {
    if !guest_tests_enabled() {
        return;
    }
    let out = run_alsa(
        "dummy",
        "hw:CARD=Dummy",
        512,
        &["--inject-every", "25", "--inject-factor", "1.5"],
    );
    check_card(&out, "hw:CARD=Dummy", 512, 25);
}
