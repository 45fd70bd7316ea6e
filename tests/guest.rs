//! End-to-end: rigs run inside Debian guest kernels under QEMU (`--kernel`).
//!
//! Needs qemu-system-x86_64 (CI installs qemu-system-x86 and runs as root) and the
//! Debian kernel packages, which the tests fetch through xrunrig's own code path
//! (`--kernel debian:6.12` → apt-cache + apt-get download into the cache;
//! `.ci/fetch-kernel` pre-fetches them). Without QEMU these tests FAIL, saying so,
//! unless XRUNRIG_SKIP_GUEST=1. They run one at a time: a TCG guest takes both CPUs.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::guest::wait_row;
use support::run::{json, text as show};

static ONE_GUEST_AT_A_TIME: Mutex<()> = Mutex::new(());

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn xrunrig() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrunrig"));
    // The run lock and journal are each run's own, not the machine's: tests that boot no
    // guest run beside the ones that do, and must not meet their run lock.
    c.current_dir(repo()).env("XRUNRIG_STATE_DIR", state_dir());
    c
}

fn state_dir() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    xrunrig::testkit::private_dir(&format!("guest-state-{n}"))
}

#[track_caller]
fn guest_tests_enabled() -> bool {
    support::guest::enabled(
        "guest kernels",
        &["qemu-system-x86_64"],
        "install it (apt-get install qemu-system-x86)",
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrunrig-test-guest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The guest lock: a test that does heavy host work between guest runs (reports,
/// plots) holds it throughout, so no other test's guest runs starved beside it.
fn one_guest() -> std::sync::MutexGuard<'static, ()> {
    ONE_GUEST_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The guest JACK tests need jackd on the host (copied into the guest).
fn assert_jackd() {
    assert!(
        Path::new("/usr/bin/jackd").is_file(),
        "jackd is not installed: apt-get install jackd2"
    );
}

/// `xrunrig run ARGS --out OUT`, one guest at a time; prints everything and
/// requires exit 0. Returns stdout and stderr as text.
fn run_in_guest(args: &[&str], out: &Path) -> (Output, String) {
    let _one = one_guest();
    run_in_guest_locked(args, out)
}

/// `run_in_guest` for a caller that holds `one_guest()`. An emulator fault is retried
/// once (`support::guest::attempt`).
fn run_in_guest_locked(args: &[&str], out: &Path) -> (Output, String) {
    let o = support::guest::attempt(out, 0, || {
        xrunrig()
            .arg("run")
            .args(args)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    });
    let text = show(&o);
    eprintln!("{text}");
    assert_eq!(o.status.code(), Some(0), "{text}");
    (o, text)
}

/// QEMU processes started by xrunrig process `pid` (their command lines name its
/// scratch directory).
fn qemus_of(pid: u32) -> Vec<String> {
    let tag = format!("xrunrig-guest-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains("qemu-system") && c.contains(&tag))
        .collect()
}

fn check_guest_block(run: &Value, release_prefix: &str, rig: &str) {
    let g = &run["guest"];
    let accel = g["accel"].as_str().unwrap();
    assert!(accel == "tcg" || accel == "kvm", "{g}");
    assert_eq!(g["emulated"].as_bool(), Some(accel == "tcg"), "{g}");
    assert_eq!(g["cpus"], 4);
    assert!(
        g["kernel_release"]
            .as_str()
            .unwrap()
            .starts_with(release_prefix),
        "{g}"
    );
    assert!(
        g["cmdline"].as_str().unwrap().contains("console=ttyS0"),
        "{g}"
    );
    assert!(g["boot_s"].as_f64().unwrap() > 0.0, "{g}");
    // Debian's kernels have virtio-blk (built in or as modules the guest loads).
    assert_eq!(g["results_channel"], "virtio-blk disk", "{g}");
    assert!(g["qemu"].as_str().is_some_and(|q| !q.is_empty()));
    // The guest's own kernel is recorded as the run's kernel.
    assert!(
        run["kernel"]["release"]
            .as_str()
            .unwrap()
            .starts_with(release_prefix)
    );
    assert_eq!(run["rig"]["path"], rig);
}

/// The done-when A/B: RT_PUSH_IPI ≥ 7/8 waits under 100 ms for PI, NO_RT_PUSH_IPI
/// ≤ 2/8, the no-PI control ≤ 1/8 either way — on Debian 6.12 and 6.1, two --kernel
/// options in one command, one combined table.
#[test]
fn pi_boost_ab_on_debian_6_12_and_6_1_in_one_table() {
    if !guest_tests_enabled() {
        return;
    }
    let out = tmp("ab");
    let (o, text) = run_in_guest(
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian:6.12",
            "--kernel",
            "debian:6.1",
            "--trials",
            "8",
            "--variant",
            "pi",
            "--variant",
            "no-pi",
        ],
        &out,
    );
    let combined = json(&out.join("combined.json"));
    let kernels = combined["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{combined}");
    for (k, prefix) in kernels.iter().zip(["6.12.", "6.1."]) {
        let release = k["release"].as_str().unwrap();
        assert!(release.starts_with(prefix), "{k}");
        let dir = PathBuf::from(k["dir"].as_str().unwrap());
        let sum = json(&dir.join("summary.json"));
        let run = json(&dir.join("run.json"));
        check_guest_block(&run, prefix, "rigs/pi-boost-affinity.toml");
        assert!(dir.join("samples.jsonl").is_file() && dir.join("guest-console.log").is_file());
        let on = wait_row(&sum, "RT_PUSH_IPI", "pi");
        let off = wait_row(&sum, "NO_RT_PUSH_IPI", "pi");
        let c_on = wait_row(&sum, "RT_PUSH_IPI", "no-pi");
        let c_off = wait_row(&sum, "NO_RT_PUSH_IPI", "no-pi");
        for r in [on, off, c_on, c_off] {
            assert_eq!(r.1, 8, "{release}: {sum}");
        }
        assert!(
            on.0 >= 7,
            "{release}: RT_PUSH_IPI pi {}/8 under 100 ms, want >= 7\n{text}",
            on.0
        );
        assert!(
            off.0 <= 2,
            "{release}: NO_RT_PUSH_IPI pi {}/8 under 100 ms, want <= 2\n{text}",
            off.0
        );
        assert!(
            c_on.0 <= 1 && c_off.0 <= 1,
            "{release}: no-pi control {c_on:?} {c_off:?}, want <= 1/8\n{text}"
        );
        // The trace's mechanism line in every PI trial: the boost, and where the
        // owner resumed (the seed's evidence), from the raw capture kept beside it; in
        // a trial that ended early at the bound (end_early), that it had not resumed.
        let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
        let mut pi_lines = 0;
        for l in samples.lines() {
            let rec: serde_json::Value = serde_json::from_str(l).unwrap();
            if rec["variant"] != "pi" {
                continue;
            }
            let ev = rec["evidence"].to_string();
            assert!(
                ev.contains("owner: boosted prio 89->9")
                    && (ev.contains("resumed on CPU")
                        || ev.contains("did not run again before the trial ended early")),
                "{release}: {rec}"
            );
            pi_lines += 1;
        }
        assert_eq!(pi_lines, 16, "{release}");
        assert!(dir.join("trace").is_dir(), "{release}: no raw trace kept");
        // Every row of this kernel's summary is in the combined table, naming the kernel.
        let rows = combined["rows"].as_array().unwrap();
        let own = sum["rows"].as_array().unwrap().len();
        assert!(own >= 4, "{sum}");
        assert_eq!(
            rows.iter().filter(|r| r["kernel"] == release).count(),
            own,
            "{combined}"
        );
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("all kernels"))
        .collect();
    let total = combined["rows"].as_array().unwrap().len();
    assert!(table.len() >= total + 2, "no combined table in\n{stdout}");
    assert!(
        table[1].starts_with("kernel") && table[1].contains("within bound"),
        "{stdout}"
    );
    for k in kernels {
        let r = k["release"].as_str().unwrap();
        let own = json(&PathBuf::from(k["dir"].as_str().unwrap()).join("summary.json"))["rows"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(
            table.iter().filter(|l| l.starts_with(r)).count(),
            own,
            "{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Seed 004's rig on a CFS kernel (Debian 6.1, profiles/hrtick-cfs.toml): with HRTICK
/// two CPU-bound tasks switch at their 3 ms slice end; with NO_HRTICK and the default
/// 18 ms latency they run 9 ms slices rounded up to 4 ms ticks (12 ms), so nearly every
/// runtime interval is above 8 ms. The counts come from the raw trace (about 6 MB for
/// the three trials), which comes home on the results disk.
#[test]
fn hrtick_cfs_counts_on_6_1_from_the_kept_trace() {
    if !guest_tests_enabled() {
        return;
    }
    let out = tmp("hrtick-cfs");
    let (_, text) = run_in_guest(
        &[
            "rigs/hrtick-repick.toml",
            "--profile",
            "profiles/hrtick-cfs.toml",
            "--kernel",
            "debian:6.1",
            "--cpus",
            "4",
            "--variant",
            "two",
            "--trials",
            "1",
        ],
        &out,
    );
    let run = json(&out.join("run.json"));
    check_guest_block(&run, "6.1.", "rigs/hrtick-repick.toml");
    let samples = std::fs::read_to_string(out.join("samples.jsonl")).unwrap();
    let mut long = std::collections::BTreeMap::new();
    let mut p50 = std::collections::BTreeMap::new();
    for l in samples.lines() {
        let rec: Value = serde_json::from_str(l).unwrap();
        let setting = rec["setting"].as_str().unwrap().to_string();
        long.insert(
            setting.clone(),
            rec["metrics"]["long_a"][0].as_f64().unwrap(),
        );
        p50.insert(setting, rec["metrics"]["p50_a"][0].as_f64().unwrap());
    }
    let long_of = |s: &str| *long.get(s).unwrap_or_else(|| panic!("no {s} in {long:?}"));
    let p50_of = |s: &str| *p50.get(s).unwrap_or_else(|| panic!("no {s} in {p50:?}"));
    let seen = format!("intervals > 8 ms {long:?}, median interval (ms) {p50:?}\n{text}");
    // The slice lengths, by the median interval: 3 ms slices ended on time by HRTICK,
    // 9 ms slices rounded up to the 4 ms tick (12 ms) without it, and 3 ms slices ended
    // at the next tick (4 ms) with the 6 ms latency.
    assert!(p50_of("HRTICK") < 4.5, "{seen}");
    assert!(p50_of("NO_HRTICK") >= 10.0, "{seen}");
    assert!(
        p50_of("NO_HRTICK-6ms") < 0.75 * p50_of("NO_HRTICK"),
        "{seen}"
    );
    // Nearly every interval above 8 ms without HRTICK; under half as many with either
    // fix. Not an absolute bound on the fixed settings: there the long intervals are the
    // guest's vCPU threads held off by the host (4 vCPUs on 2 host CPUs under TCG),
    // 0-4 on one machine, about 100 on another of the same kind (README).
    assert!(long_of("NO_HRTICK") >= 200.0, "{seen}");
    assert!(long_of("HRTICK") < 0.5 * long_of("NO_HRTICK"), "{seen}");
    assert!(
        long_of("NO_HRTICK-6ms") < 0.5 * long_of("NO_HRTICK"),
        "{seen}"
    );
    let trace_bytes: u64 = std::fs::read_dir(out.join("trace"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txt"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        trace_bytes > 3_000_000,
        "raw trace kept: {trace_bytes} bytes"
    );
}

/// With the soft-lockup watchdog and the fair server off (strict profile), nothing
/// rescues the stuck owner: NO_RT_PUSH_IPI 0/8.
/// Not in the default run: in one of nine runs the first trial escaped at 36 ms (1/8),
/// by a rescuer not yet identified. Run it with `cargo test --test guest -- --ignored`.
#[test]
#[ignore = "1/8 in one of nine runs (first trial escaped at 36 ms); cause not yet found"]
fn strict_profile_leaves_no_rescue_on_6_12() {
    if !guest_tests_enabled() {
        return;
    }
    let out = tmp("strict");
    // Only the "off" side: the claim is about it, and it halves the time.
    let (_, text) = run_in_guest(
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi-strict.toml",
            "--kernel",
            "debian:6.12",
            "--trials",
            "8",
            "--variant",
            "pi",
            "--setting",
            "NO_RT_PUSH_IPI",
        ],
        &out,
    );
    let sum = json(&out.join("summary.json"));
    let off = wait_row(&sum, "NO_RT_PUSH_IPI", "pi");
    assert_eq!(off.1, 8);
    assert_eq!(
        off.0, 0,
        "NO_RT_PUSH_IPI {}/8, want 0 with watchdog and fair server off\n{text}",
        off.0
    );
    let run = json(&out.join("run.json"));
    let applied = run["settings"].to_string();
    assert!(
        applied.contains("kernel.watchdog") && applied.contains("fair_server"),
        "{applied}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A kernel that cannot boot: a clear error within the bound, the console log saved,
/// no QEMU left behind.
#[test]
fn corrupt_kernel_fails_cleanly_and_leaves_nothing_running() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let base = tmp("corrupt");
    std::fs::create_dir_all(&base).unwrap();
    // 1: garbage. 2: a real Debian bzImage with its compressed payload damaged, so the
    // kernel's own decompressor fails inside the guest.
    let garbage = base.join("garbage-vmlinuz");
    std::fs::write(
        &garbage,
        (0..4_000_000u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let mut kernels = vec![garbage];
    // The real image comes through the same resolution (and fetch) as --kernel.
    let real = xrunrig::guest::kernel::resolve(
        &xrunrig::options::KernelSpec::parse("debian:6.12").unwrap(),
        None,
    )
    .unwrap_or_else(|e| panic!("cannot fetch debian:6.12: {e}"))
    .image;
    {
        let mut d = std::fs::read(&real).unwrap();
        let mid = d.len() / 2;
        for b in &mut d[mid..mid + 200_000] {
            *b ^= 0x5a;
        }
        let p = base.join("damaged-vmlinuz");
        std::fs::write(&p, d).unwrap();
        kernels.push(p);
    }
    for (i, k) in kernels.iter().enumerate() {
        let out = base.join(format!("out{i}"));
        let mut pid = 0;
        let mut took = Duration::ZERO;
        let o = support::guest::attempt(&out, 0, || {
            let t0 = Instant::now();
            let child = xrunrig()
                .args([
                    "run",
                    "rigs/pi-boost-affinity.toml",
                    "--trials",
                    "1",
                    "--variant",
                    "pi",
                    "--kernel",
                ])
                .arg(k)
                .arg("--out")
                .arg(&out)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            pid = child.id();
            let o = child.wait_with_output().unwrap();
            took = t0.elapsed();
            o
        });
        let text = show(&o);
        eprintln!("{}: {text}", k.display());
        assert_eq!(o.status.code(), Some(3), "{text}");
        assert!(took < Duration::from_secs(150), "took {took:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("console log") && err.contains("the guest was stopped"),
            "{text}"
        );
        assert!(
            !err.contains("booting it once more"),
            "a kernel that never starts is not retried: {text}"
        );
        assert!(
            out.join("guest-console.log").is_file(),
            "no console log in {}",
            out.display()
        );
        assert!(!out.join("summary.json").exists());
        assert!(
            qemus_of(pid).is_empty(),
            "QEMU left running: {:?}",
            qemus_of(pid)
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// A kernel that starts and then panics before /init (here: no init at the path given)
/// is booted once more, then the run fails with both consoles kept.
#[test]
fn kernel_crash_before_init_is_booted_once_more_then_fails() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let out = tmp("crash-before-init");
    let mut pid = 0;
    let o = support::guest::attempt(&out, 0, || {
        let child = xrunrig()
            .args([
                "run",
                "rigs/pi-boost-affinity.toml",
                "--trials",
                "1",
                "--variant",
                "pi",
                "--kernel",
                "debian:6.12",
                "--append",
                "rdinit=/no-such-init",
                "--out",
            ])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pid = child.id();
        child.wait_with_output().unwrap()
    });
    let text = show(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("booting it once more").count(), 1, "{text}");
    assert!(err.contains("the guest kernel failed"), "{text}");
    for f in ["guest-console.log", "guest-console-first-boot.log"] {
        let t = std::fs::read_to_string(out.join(f)).unwrap_or_default();
        assert!(t.contains("Linux version"), "{f}: {t}");
    }
    assert!(!out.join("summary.json").exists());
    assert!(qemus_of(pid).is_empty(), "QEMU left running");
    let _ = std::fs::remove_dir_all(&out);
}

/// Ctrl-C during the guest run: QEMU is killed, the exit code says interrupted.
#[test]
fn interrupt_kills_the_guest() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let out = tmp("int");
    let mut pid = 0;
    let mut stopped_in = Duration::ZERO;
    let o = support::guest::attempt(&out, 0, || {
        let child = xrunrig()
            .args([
                "run",
                "rigs/pi-boost-affinity.toml",
                "--profile",
                "profiles/rt-push-ipi.toml",
            ])
            .args([
                "--kernel",
                "debian:6.12",
                "--trials",
                "8",
                "--variant",
                "no-pi",
                "--out",
            ])
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pid = child.id();
        // Wait for QEMU to be up, then interrupt.
        let t0 = Instant::now();
        while qemus_of(pid).is_empty() && t0.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!qemus_of(pid).is_empty(), "QEMU never started");
        std::thread::sleep(Duration::from_secs(6));
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        let t1 = Instant::now();
        let o = child.wait_with_output().unwrap();
        stopped_in = t1.elapsed();
        o
    });
    let text = show(&o);
    assert!(stopped_in < Duration::from_secs(15), "{text}");
    assert_eq!(o.status.code(), Some(130), "{text}");
    assert!(qemus_of(pid).is_empty(), "QEMU left running");
    assert!(out.join("guest-console.log").is_file());
    let _ = std::fs::remove_dir_all(&out);
}

/// Bad input is refused before anything boots, with a message that says what to do.
/// `run --from DIR` of a guest run (issue 37): booted again in the recorded kernel, with
/// the recorded rig (its text), options and guest shape; the rerun names the run it
/// repeated.
#[test]
fn a_guest_run_is_run_again_from_its_run_json() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let first = tmp("rerun-first");
    run_in_guest_locked(
        &[
            "rigs/pi-inversion.toml",
            "--kernel",
            "debian:6.12",
            "--cpus",
            "4",
            "--variant",
            "inherit",
            "--trials",
            "2",
        ],
        &first,
    );
    let again = tmp("rerun-again");
    let o = support::guest::attempt(&again, 0, || {
        xrunrig()
            .args(["run", "--from"])
            .arg(&first)
            .arg("--out")
            .arg(&again)
            .output()
            .unwrap()
    });
    let text = show(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let (a, b) = (json(&first.join("run.json")), json(&again.join("run.json")));
    for k in ["sha256", "text", "name"] {
        assert_eq!(a["rig"][k], b["rig"][k], "rig {k}");
    }
    assert_eq!(a["trials"], b["trials"]);
    assert_eq!(a["variants"], b["variants"]);
    for k in ["kernel", "kernel_release", "cpus", "accel"] {
        assert_eq!(a["guest"][k], b["guest"][k], "guest {k}\n{text}");
    }
    check_guest_block(&b, "6.12.", b["rig"]["path"].as_str().unwrap());
    assert_eq!(b["rerun_of"]["dir"], first.display().to_string());
    assert_eq!(b["rerun_of"]["command"], a["command"]);
    let sum = json(&again.join("summary.json"));
    assert_eq!(wait_row(&sum, "as-is", "inherit").1, 2, "{text}");
    let _ = std::fs::remove_dir_all(&first);
    let _ = std::fs::remove_dir_all(&again);
}

#[test]
fn refuses_before_booting() {
    let o = xrunrig()
        .args([
            "run",
            "rigs/pi-boost-affinity.toml",
            "--kernel",
            "debian:6.12",
            "--cpus",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--cpus 4"),
        "{}",
        show(&o)
    );
    let o = xrunrig()
        .env("XRUNRIG_QEMU", "/nonexistent/qemu")
        .args([
            "run",
            "rigs/pi-boost-affinity.toml",
            "--kernel",
            "debian:6.12",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("XRUNRIG_QEMU"),
        "{}",
        show(&o)
    );
    let o = xrunrig()
        .args([
            "run",
            "rigs/pi-boost-affinity.toml",
            "--kernel",
            "/no/such/kernel",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("debian:6.12"),
        "{}",
        show(&o)
    );
}

/// Audio rigs' guest: the sound modules (6.12's .ko.xz, decompressed, in dependency
/// order) load, so ALSA sees the dummy and loopback cards; jackd and its libraries
/// are there. Built from the library pieces `--kernel` uses.
#[test]
fn sound_modules_and_jackd_in_the_guest() {
    use xrunrig::guest::{channel, initramfs, kernel, modules, qemu};
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let k = kernel::resolve(
        &xrunrig::options::KernelSpec::parse("debian:6.12").unwrap(),
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mdir = k.modules.clone().expect("the Debian package's modules");
    let (mods, notes) = modules::collect(&mdir, modules::SOUND);
    assert!(notes.is_empty(), "{notes:?}");
    let names: Vec<&str> = mods.iter().map(|m| m.name.as_str()).collect();
    let pos = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} not in {names:?}"))
    };
    assert!(
        pos("soundcore") < pos("snd")
            && pos("snd") < pos("snd-pcm")
            && pos("snd-pcm") < pos("snd-aloop")
    );
    let jackd = Path::new("/usr/bin/jackd").is_file();
    let script = "cat /proc/asound/cards > /results/x/cards.txt; \
                  if [ -x /usr/bin/jackd ]; then jackd --version > /results/x/jackd.txt 2>&1; fi";
    let dir = tmp("sound");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = initramfs::Spec {
        xrunrig: PathBuf::from(env!("CARGO_BIN_EXE_xrunrig")),
        files: vec![],
        parts: vec![vec!["/bin/sh".into(), "-c".into(), script.into()]],
        inject: Default::default(),
        ship_cpus: vec![],
        modules: mods,
        audio: true,
    };
    let initrd = dir.join("initramfs.cpio");
    initramfs::build(&spec, &initrd).unwrap();
    let l = qemu::Launch {
        qemu: qemu::qemu_binary().unwrap(),
        kernel: k.boot.clone(),
        initrd,
        cpus: 2,
        memory: "1G".into(),
        cmdline: xrunrig::guest::BASE_CMDLINE.into(),
        accel: qemu::Accel::Tcg,
        console: dir.join("console.log"),
        channel: dir.join("channel.bin"),
        // No results disk: this guest ships on the serial channel, the fallback.
        disk: None,
        stderr: dir.join("qemu-stderr.log"),
    };
    // An emulator fault boots once more (support::guest::boot_once_more).
    let bounds = qemu::Bounds {
        boot: Duration::from_secs(90),
        run: Duration::from_secs(150),
        quiet: Duration::from_secs(90),
    };
    let (o, console) = support::guest::boot_once_more(|| {
        let mut g = qemu::spawn(&l).unwrap();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let o = qemu::watch(&mut g, &l.console, bounds, &stop, &mut |l| {
            eprintln!("guest| {l}")
        });
        drop(g);
        let console = std::fs::read_to_string(&l.console).unwrap_or_default();
        let err = std::fs::read_to_string(&l.stderr).unwrap_or_default();
        let fault = xrunrig::guest::crash::judge(&o, &console, &err, bounds.quiet);
        ((o, console), fault)
    });
    assert_eq!(o.end, qemu::End::Shipped, "{console}");
    assert!(!console.contains("xrunrig-guest: insmod"), "{console}");
    let a = channel::parse(&std::fs::read(&l.channel).unwrap()).unwrap();
    assert_eq!(a.rc, 0);
    let files = channel::untar(&a.tar, &dir.join("got")).unwrap();
    assert!(files.contains(&"cards.txt".to_string()), "{files:?}");
    let cards = std::fs::read_to_string(dir.join("got/cards.txt")).unwrap();
    assert!(
        cards.contains("Dummy") && cards.contains("Loopback"),
        "{cards}"
    );
    if jackd {
        let v = std::fs::read_to_string(dir.join("got/jackd.txt")).unwrap();
        assert!(v.contains("jackdmp"), "jackd did not run in the guest: {v}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// livefx on the snd-aloop card through jackd (which the guest command starts on
/// hw:Loopback,0 → hw:Loopback,1) across the RT_PUSH_IPI profile with the loopback
/// check on: the round trip is measured and no click goes unexplained.
/// Period 512: under TCG snd-aloop's jiffies timer (HZ 250) keeps 512 frames in real
/// time (467 of 469 cycles in 5 s), while 128 ran at a third of the rate with every
/// cycle a deadline miss, and 256 never started ("Driver is not running").
#[test]
fn livefx_loopback_on_snd_aloop_in_a_guest() {
    if !guest_tests_enabled() {
        return;
    }
    assert_jackd();
    let _one = one_guest();
    let out = tmp("aloop");
    let t0 = Instant::now();
    let o = support::guest::attempt(&out, 0, || {
        xrunrig()
            .args(["run", "rigs/livefx-loopback.toml"])
            .args(["--profile", "profiles/rt-push-ipi.toml"])
            .args(["--kernel", "debian:6.12", "--cpus", "4"])
            .args(["--backend", "jack", "--period", "512", "--duration", "5 s"])
            .args(["--trials", "1"])
            .args(["--loopback", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    });
    let text = show(&o);
    eprintln!("{text}\ntook {:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("round trip frames"),
        "{text}"
    );
    let sum = json(&out.join("summary.json"));
    assert_eq!(sum["kind"], "livefx", "{sum}");
    let rows = sum["rows"].as_array().unwrap();
    for setting in ["RT_PUSH_IPI", "NO_RT_PUSH_IPI"] {
        let r = rows
            .iter()
            .find(|r| r["setting"] == setting)
            .unwrap_or_else(|| panic!("no {setting} row in {sum}"));
        assert_eq!(r["backend"], "jack", "{r}");
        assert!(r["cycles"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["period"], 512, "{r}");
        // The signal cannot come back sooner than one period.
        let rt = r["roundtrip_frames"].as_u64();
        assert!(rt.is_some_and(|f| f >= 512), "no round trip measured: {r}");
        let clicks = r["discontinuities"].as_u64().expect("clicks counted");
        // Recounted here from the cycles file: a click is explained by an xrun, a miss
        // or a skipped cycle (a start over 1.5 median spacings after the one before) at
        // most 4 cycles plus the round trip before it.
        let cycles = cycle_records(&out, &sum, setting);
        let mut gaps: Vec<u64> = cycles
            .windows(2)
            .map(|w| w[1].0.saturating_sub(w[0].0))
            .collect();
        gaps.sort_unstable();
        let spacing = gaps[gaps.len() / 2];
        let sign = |i: usize| {
            cycles[i].1 & (F_MISS | F_XRUN) != 0
                || (i > 0 && cycles[i].0.saturating_sub(cycles[i - 1].0) > spacing * 3 / 2)
        };
        let window = 4 + (rt.unwrap() as usize + 1) / 512;
        let mut unexplained = Vec::new();
        for (i, c) in cycles.iter().enumerate() {
            if c.1 & F_DISCONTINUITY != 0 && !(i.saturating_sub(window)..=i).any(sign) {
                let last = (0..i).rev().find(|&j| sign(j));
                unexplained.push((i, last.map(|l| i - l)));
            }
        }
        eprintln!(
            "{setting}: unexplained clicks (cycle, cycles since the last sign of a dropout): {unexplained:?}"
        );
        assert_eq!(
            r["discontinuities_unexplained"].as_u64(),
            Some(unexplained.len() as u64),
            "the summary's unexplained clicks are not the cycles file's: {r}"
        );
        // Under TCG jackd on snd-aloop does glitch. What must hold: a stream with no xrun
        // and no miss has no click. CI's run and 3 of 8 local runs (the machine loaded)
        // had clicks with no xrun or miss before them in the NO_RT_PUSH_IPI row. Of the
        // 5 local ones, 3 followed a skipped cycle (now a sign of a dropout: JACK's note
        // came 1-2 cycles after the click or went to an older miss) and 2 came 11-12
        // cycles after the last xrun with nothing between: counted, not hidden.
        if r["xruns"] == 0 && r["deadline_misses"] == 0 {
            assert_eq!(clicks, 0, "clicks with no xrun or miss at all: {r}");
        }
        assert!(unexplained.len() as u64 <= clicks, "{r}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

const F_MISS: u32 = results::livefx::cycles::F_MISS;
const F_XRUN: u32 = results::livefx::cycles::F_XRUN;
const F_DISCONTINUITY: u32 = results::livefx::cycles::F_DISCONTINUITY;

/// (start ns, flags) of every cycle of a setting's first trial, from its cycles file.
fn cycle_records(dir: &Path, sum: &Value, setting: &str) -> Vec<(u64, u32)> {
    let t = sum["trials"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["setting"] == setting))
        .unwrap_or_else(|| panic!("no {setting} trial in {sum}"));
    let f = t["cycles_file"].as_str().expect("cycles_file");
    let b = std::fs::read(dir.join(f)).expect("cycles file");
    b.chunks_exact(results::livefx::cycles::RECORD_BYTES)
        .map(|c| {
            let r = results::livefx::Record::decode(c);
            (r.start_ns, r.flags & 0xff)
        })
        .collect()
}

/// The dropouts themselves (issue 11): rigs/livefx-push-ipi.toml in a 6.12 guest across
/// RT_PUSH_IPI, on the clock backend and on JACK (jackd on snd-aloop). The shape the
/// seed predicts, from summary.json: with PI, NO_RT_PUSH_IPI loses cycles in most
/// bursts that catch the lock holder (>= 50 %), RT_PUSH_IPI in almost none (<= 10 %);
/// the no-PI control loses them in both. Every miss has a cause in report.txt's "Why
/// the misses" and a trace_marker line in the kept trace.
#[test]
fn livefx_push_ipi_dropouts_follow_the_setting_on_6_12() {
    if !guest_tests_enabled() {
        return;
    }
    assert_jackd();
    // Held across both runs and the reports: no other test's guest runs beside this
    // test's host work.
    let _one = one_guest();
    for backend in ["clock", "jack"] {
        let out = tmp(&format!("dropouts-{backend}"));
        let t0 = Instant::now();
        run_in_guest_locked(
            &[
                "rigs/livefx-push-ipi.toml",
                "--profile",
                "profiles/rt-push-ipi.toml",
                "--kernel",
                "debian:6.12",
                "--backend",
                backend,
            ],
            &out,
        );
        eprintln!("{backend}: took {:?}", t0.elapsed());
        let sum = json(&out.join("summary.json"));
        let row = |setting: &str, variant: &str| -> Value {
            sum["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["setting"] == setting && r["variant"] == variant)
                .unwrap_or_else(|| panic!("no row {setting}/{variant} in {sum}"))
                .clone()
        };
        let share = |r: &Value| -> (u64, u64) {
            let n = r["bursts_caught"].as_u64().unwrap();
            assert!(
                n >= 5,
                "{backend}: too few bursts caught the holder to judge: {r}"
            );
            (r["bursts_caught_missed"].as_u64().unwrap(), n)
        };
        let (no_m, no_n) = share(&row("NO_RT_PUSH_IPI", "pi"));
        let (rt_m, rt_n) = share(&row("RT_PUSH_IPI", "pi"));
        assert!(
            2 * no_m >= no_n,
            "{backend}: NO_RT_PUSH_IPI/pi lost cycles in {no_m} of {no_n} caught bursts (want >= 50 %)"
        );
        // The seed's mechanism, from each miss's trace: the holder boosted by a live
        // worker yet queued behind the hog (no push IPI to move it). RT_PUSH_IPI removes
        // that, not every miss: an emulated machine on a host too slow for it also misses
        // with the callback's own work late (measured: 45 misses under RT_PUSH_IPI/pi,
        // none of them this one, with three busy loops on the host; CI saw 38).
        let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
        let starved = |setting: &str| -> usize {
            events
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|e| {
                    e["kind"] == "deadline_miss" && e["setting"] == setting && e["variant"] == "pi"
                })
                .filter(|e| {
                    let why = e["why"].as_str().unwrap_or("");
                    why.contains(" boosted to ") && why.contains("behind 'irq-hog'")
                })
                .count()
        };
        let (rt_s, no_s) = (starved("RT_PUSH_IPI"), starved("NO_RT_PUSH_IPI"));
        eprintln!(
            "{backend}: caught bursts that cost cycles: RT_PUSH_IPI/pi {rt_m} of {rt_n}, NO_RT_PUSH_IPI/pi {no_m} of {no_n}; misses with the boosted holder queued behind the hog: {rt_s} against {no_s}"
        );
        assert!(
            no_s >= 5,
            "{backend}: NO_RT_PUSH_IPI/pi had {no_s} misses with the boosted holder behind the hog: the rig did not bite"
        );
        assert!(
            10 * rt_s <= no_s,
            "{backend}: RT_PUSH_IPI/pi had {rt_s} misses with the boosted holder behind the hog, NO_RT_PUSH_IPI/pi {no_s} (want at most a tenth)"
        );
        for setting in ["RT_PUSH_IPI", "NO_RT_PUSH_IPI"] {
            let r = row(setting, "no-pi");
            let (m, n) = share(&r);
            eprintln!("{backend}: {setting}/no-pi: {m} of {n} caught bursts cost cycles");
            assert_eq!(r["backend"], backend, "{r}");
        }
        // Every miss is explained, in summary.json and in the report.
        let o = xrunrig().arg("report").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
        let why_at = report
            .find("Why the misses")
            .unwrap_or_else(|| panic!("{backend}: no 'Why the misses' in report.txt:\n{report}"));
        // Long cause lines wrap in report.txt: compare with white space folded.
        let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let why = fold(&report[why_at..]);
        for r in sum["rows"].as_array().unwrap() {
            let misses = r["deadline_misses"].as_u64().unwrap();
            let causes = r["why"].as_array().unwrap();
            let explained: u64 = causes.iter().map(|c| c["count"].as_u64().unwrap()).sum();
            assert_eq!(explained, misses, "{backend}: misses without a cause: {r}");
            for c in causes {
                let cause = c["cause"].as_str().unwrap();
                assert!(!cause.is_empty(), "{r}");
                let line = fold(&format!("{} of {misses} misses: {cause}", c["count"]));
                assert!(
                    why.contains(&line),
                    "{backend}: report lacks '{line}':\n{why}"
                );
            }
        }
        // Every miss is a trace_marker line in its trial's kept trace, by cycle.
        let mut checked = 0;
        for l in events.lines() {
            let e: Value = serde_json::from_str(l).unwrap();
            if e["kind"] != "deadline_miss" {
                continue;
            }
            assert!(
                e["why"].is_string() && e["wall"].is_string() && e["mono_s"].is_f64(),
                "{e}"
            );
            let trace = out.join("trace").join(format!(
                "{}__{}__{}.txt",
                e["setting"].as_str().unwrap(),
                e["variant"].as_str().unwrap(),
                e["trial"]
            ));
            let t = std::fs::read_to_string(&trace)
                .unwrap_or_else(|err| panic!("{}: {err}", trace.display()));
            let marker = format!(
                "tracing_mark_write: xrunrig deadline_miss cycle={} ",
                e["cycle"]
            );
            assert!(
                t.contains(&marker),
                "{backend}: no '{marker}' in {}",
                trace.display()
            );
            checked += 1;
        }
        assert!(
            checked > 0,
            "{backend}: no misses at all: the rig did not bite"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// SIGKILL of xrunrig (no chance to clean up): QEMU dies with it (PDEATHSIG).
#[test]
fn sigkill_takes_qemu_along() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let out = tmp("kill");
    let mut pid = 0;
    support::guest::attempt(&out, 0, || {
        let mut child = xrunrig()
            .args([
                "run",
                "rigs/pi-boost-affinity.toml",
                "--kernel",
                "debian:6.12",
            ])
            .args(["--trials", "8", "--variant", "no-pi", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        pid = child.id();
        let t0 = Instant::now();
        while qemus_of(pid).is_empty() && t0.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!qemus_of(pid).is_empty(), "QEMU never started");
        child.kill().unwrap();
        child.wait_with_output().unwrap()
    });
    let t1 = Instant::now();
    while !qemus_of(pid).is_empty() && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        qemus_of(pid).is_empty(),
        "QEMU outlived its SIGKILLed parent"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `xrunrig watch` in the guest's JACK session beside rigs/livefx-push-ipi.toml
/// (NO_RT_PUSH_IPI, PI locks): two independent accounts of the same cycles. The rig
/// knows its own threads and names why a worker missed (`why` in events.jsonl, from
/// its own trace); watch knows nothing of the rig and explains JACK's xruns from the
/// kernel's trace alone. Where the rig says a miss happened because the 'bus' holder
/// was boosted but queued behind 'irq-hog', and JACK called that cycle an xrun, watch
/// must tell the same story: a PI chain, the holder 'fx-render', the culprit 'irq-hog'.
/// Both hear JACK's xruns: inside the rig's trial each side's has one of the other's
/// within four periods.
#[test]
fn watch_in_the_guest_tells_the_rigs_pi_chain_misses_from_the_trace_alone() {
    if !guest_tests_enabled() {
        return;
    }
    assert_jackd();
    let out = tmp("watch");
    let (_, text) = run_in_guest(
        &[
            "rigs/livefx-push-ipi.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian:6.12",
            "--backend",
            "jack",
            "--guest-watch",
            "--setting",
            "NO_RT_PUSH_IPI",
            "--variant",
            "pi",
            "--trials",
            "1",
            "--duration",
            "20 s",
        ],
        &out,
    );
    let lines = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p)
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.display()))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let sum = json(&out.join("summary.json"));
    let row = &sum["rows"][0];
    let wsum = json(&out.join("watch/summary.json"));
    assert_eq!(wsum["kind"], "watch", "{wsum}");
    // The guest's 6.12 has snapshot swap: the recorder was never blind.
    assert_eq!(wsum["recorder"]["mode"], "snapshot", "{wsum}");
    assert_eq!(wsum["recorder"]["blind_ns"], 0, "{wsum}");
    let rig = lines(&out.join("events.jsonl"));
    let watch = lines(&out.join("watch/events.jsonl"));
    assert_eq!(wsum["xruns"].as_u64(), Some(watch.len() as u64), "{wsum}");

    // The same xruns, seen twice. Both hear JACK's xrun notification: watch stamps the
    // notification, the rig the start of the cycle after it. The counts need not be
    // equal (the rig counts from its first cycle to its last; two notifications can
    // fall in one of its cycles), so each side's xruns inside the rig's trial, half a
    // second from its ends, must have one of the other side's within four periods (the
    // rig's next cycle can start late: it was an xrun).
    let period_s = row["period"].as_f64().unwrap() / row["rate"].as_f64().unwrap();
    let mono = |e: &Value| e["mono_s"].as_f64().unwrap();
    let rig_x: Vec<f64> = rig
        .iter()
        .filter(|e| e["kind"] == "xrun")
        .map(mono)
        .collect();
    let watch_x: Vec<f64> = watch
        .iter()
        .map(|e| e["mono_ns"].as_f64().unwrap() / 1e9)
        .collect();
    if let Some(t0) = rig
        .iter()
        .find(|e| e["kind"] == "xrun")
        .map(|e| mono(e) - e["t_s"].as_f64().unwrap())
    {
        let end = t0 + row["duration_s"].as_f64().unwrap();
        let inside = |t: &&f64| **t >= t0 + 0.5 && **t <= end - 0.5;
        let near = |t: f64, other: &[f64]| other.iter().any(|o| (o - t).abs() < 4.0 * period_s);
        let rig_alone: Vec<&f64> = rig_x
            .iter()
            .filter(inside)
            .filter(|t| !near(**t, &watch_x))
            .collect();
        let watch_alone: Vec<&f64> = watch_x
            .iter()
            .filter(inside)
            .filter(|t| !near(**t, &rig_x))
            .collect();
        assert!(
            rig_alone.is_empty() && watch_alone.is_empty(),
            "xruns one side saw and the other did not: rig {rig_alone:?}, watch {watch_alone:?} \
             (rig {} in all, watch {})",
            rig_x.len(),
            watch_x.len()
        );
    } else {
        assert_eq!(row["xruns"].as_u64(), Some(0), "{row}");
    }
    let period_ns = 1e9 * period_s;

    // A rig miss's mono_s is its deadline, the cycle's start + one period; watch
    // stamps each xrun with its late cycle's start (JACK's frame time).
    let hog = |why: &str| {
        why.contains("holder 'render' boosted to FIFO 60 but queued on CPU")
            && why.contains("behind 'irq-hog'")
    };
    let mut told = 0;
    let mut candidates = 0;
    for m in rig.iter().filter(|e| e["kind"] == "deadline_miss") {
        let why = m["why"].as_str().unwrap_or("");
        let start = m["mono_s"].as_f64().unwrap() * 1e9 - period_ns;
        // The rig's own client's xrun of that cycle (watch's passive client, or the
        // server, may have been late in the same cycle for reasons of their own).
        let Some(x) = watch.iter().find(|x| {
            x["client"] == "xrunrig" && (x["cycle_start_ns"].as_f64().unwrap() - start).abs() < 1e6
        }) else {
            continue;
        };
        let culprit = x["culprit"]["comm"].as_str().unwrap_or("");
        if hog(why) {
            candidates += 1;
            assert_eq!(x["cause"], "pi-chain", "rig: {why}\nwatch: {x}");
            assert_eq!(x["holder"]["comm"], "fx-render", "rig: {why}\nwatch: {x}");
            assert_eq!(culprit, "irq-hog", "rig: {why}\nwatch: {x}");
            // The callback waits for its workers in turn; both may have waited on
            // the lock, so the one it was waiting for need not be the rig's miss's.
            let waited = x["waited_for"]["comm"].as_str().unwrap_or("");
            assert!(waited.starts_with("fx-live."), "rig: {why}\nwatch: {x}");
            told += 1;
        }
        // The other way round: watch blames the hog only where the rig's miss was
        // a wait on the lock 'render' held.
        if culprit == "irq-hog" {
            assert_eq!(m["holder"], "render", "rig: {m}\nwatch: {x}");
        }
    }
    eprintln!(
        "watch: {} xruns ({} explained), by cause {}; {told} of the rig's \
         'queued behind irq-hog' misses fell on an xrun and watch told each the same way",
        wsum["xruns"], wsum["explained"], wsum["by_cause"]
    );
    assert!(
        candidates > 0,
        "no rig miss 'queued behind irq-hog' fell on an xrun watch saw: nothing to \
         compare (rig: {row}; watch: {wsum})"
    );
    // Watch explains its xruns: at most one in five without a story.
    let (x, e) = (
        wsum["xruns"].as_u64().unwrap(),
        wsum["explained"].as_u64().unwrap(),
    );
    assert!(5 * e >= 4 * x, "watch explained {e} of {x} xruns: {wsum}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `--boots 2` over two kernels: the boots interleaved A B B A, each a run of its own
/// in `<kernel>/boot-<n>/` with its place in run.json, combined.json listing them in
/// the order they ran, and `xrunrig compare OUT` judging each kernel's two boots as its
/// runs (interleaved, so from the runs' own spread).
#[test]
fn boots_interleave_and_compare_reads_each_kernels_boots_as_its_runs() {
    if !guest_tests_enabled() {
        return;
    }
    let _one = one_guest();
    let out = tmp("boots");
    let o = support::guest::attempt(&out, 0, || {
        xrunrig()
            .args(["run", "rigs/livefx.toml", "--backend", "clock"])
            .args(["--kernel", "debian:6.12", "--kernel", "debian:6.1"])
            .args(["--boots", "2", "--trials", "2", "--duration", "1", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    });
    let text = show(&o);
    eprintln!("{text}");
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "the run failed or was refused: {text}"
    );
    let combined = json(&out.join("combined.json"));
    assert_eq!(combined["boots_per_kernel"], 2, "{combined}");
    let kernels = combined["kernels"].as_array().unwrap();
    let order: Vec<(String, u64)> = kernels
        .iter()
        .map(|k| {
            let rel = k["release"].as_str().unwrap();
            let major = if rel.starts_with("6.12.") { "A" } else { "B" };
            (major.to_string(), k["boot"].as_u64().unwrap())
        })
        .collect();
    let want: Vec<(String, u64)> = [("A", 1), ("B", 1), ("B", 2), ("A", 2)]
        .iter()
        .map(|(k, b)| (k.to_string(), *b))
        .collect();
    assert_eq!(order, want, "{combined}");
    let mut last = String::new();
    for (i, k) in kernels.iter().enumerate() {
        let dir = PathBuf::from(k["dir"].as_str().unwrap());
        assert_eq!(
            dir.file_name().unwrap().to_str().unwrap(),
            format!("boot-{}", k["boot"]),
            "{k}"
        );
        let run = json(&dir.join("run.json"));
        let place = &run["guest"]["boot_place"];
        assert_eq!(place["place"], i as u64 + 1, "{run}");
        assert_eq!(place["of"], 4, "{place}");
        assert_eq!(place["boot"], k["boot"], "{place}");
        // Each boot started after the one before it: the order recorded is the order run.
        let started = run["started"].as_str().unwrap().to_string();
        assert!(started > last, "{started} after {last}");
        last = started;
    }
    let cmp = out.join("cmp");
    let c = xrunrig()
        .arg("compare")
        .arg(&out)
        .arg("--out")
        .arg(&cmp)
        .output()
        .unwrap();
    let ctext = show(&c);
    let cj = json(&cmp.join("compare.json"));
    assert_eq!(c.status.code(), support::run::compare_exit(&cj), "{ctext}");
    assert_eq!(cj["runs_per_side"], serde_json::json!([2, 2]), "{cj}");
    let between = cj["between"].to_string();
    assert!(between.contains("runs' own spread"), "{between}");
}
