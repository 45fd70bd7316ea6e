//! End to end: the real binary's `xrunrig doctor` on this machine. Checks the JSON
//! structure, facts read here independently (CPUs, RT throttling, sound, lockdown),
//! the exit codes for rigs, and that the doctor changes nothing.

use serde_json::Value;

mod support;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xrunrig");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn doctor(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(BIN)
        .arg("doctor")
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("run xrunrig doctor");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The doctor's JSON; its exit code is 1 exactly when a check fails here.
fn json() -> Value {
    let (code, out, err) = doctor(&["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let fails = v["counts"]["fail"].as_u64().unwrap();
    assert_eq!(code, i32::from(fails > 0), "{fails} FAIL(s): {err}");
    assert_eq!(v["exit"], code);
    v
}

fn check<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn online() -> Vec<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    xrunrig::sys::parse_cpu_list(&s).unwrap()
}

#[test]
fn json_has_every_check_with_status_found_why() {
    let v = json();
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 27);
    let mut total = 0;
    for c in checks {
        for k in ["area", "id", "name", "found", "why"] {
            assert!(
                c[k].as_str().is_some_and(|s| !s.is_empty()),
                "{k} missing in {c}"
            );
        }
        let s = c["status"].as_str().unwrap();
        assert!(["pass", "warn", "fail", "n/a"].contains(&s), "{s}");
        if s == "fail" || s == "warn" {
            assert!(c["fix"].as_str().is_some_and(|f| !f.is_empty()), "{c}");
        }
        total += 1;
    }
    let counts = &v["counts"];
    let sum: u64 = ["pass", "warn", "fail", "n/a"]
        .iter()
        .map(|k| counts[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, total);
    assert_eq!(v["exit"], u64::from(counts["fail"].as_u64().unwrap() > 0));
}

#[test]
fn this_machines_facts() {
    let v = json();
    let cpus = check(&v, "cpus.online");
    let on = online();
    assert_eq!(cpus["data"]["count"].as_u64().unwrap() as usize, on.len());
    assert_eq!(
        cpus["found"].as_str().unwrap().split(' ').next().unwrap(),
        on.len().to_string()
    );
    let rt: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t = check(&v, "sched.rt_throttling");
    assert_eq!(t["data"]["sched_rt_runtime_us"].as_i64().unwrap(), rt);
    assert!(t["found"].as_str().unwrap().contains(&rt.to_string()) || rt < 0);

    // No sound here (CONFIG_SOUND off): n/a with the reason.
    if !std::path::Path::new("/proc/asound").exists() {
        for id in ["audio.alsa_cards", "audio.sound_irq", "audio.irq_thread"] {
            let c = check(&v, id);
            assert_eq!(c["status"], "n/a");
            assert!(
                c["found"].as_str().unwrap().contains("no sound cards"),
                "{c}"
            );
        }
    }

    // Features: where they cannot be read here, the reason is given; where the kernel
    // says it is locked down, the reason is lockdown.
    let f = check(&v, "sched.features");
    let readable = std::fs::read_to_string("/sys/kernel/debug/sched/features").is_ok();
    let log = Command::new("dmesg")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    let locked = String::from_utf8_lossy(&log).contains("Kernel is locked down")
        || std::fs::read_to_string("/sys/kernel/security/lockdown")
            .is_ok_and(|s| !s.contains("[none]"));
    if !readable {
        assert_ne!(f["status"], "pass");
        assert_eq!(f["data"]["writable"], false);
        if locked {
            assert_eq!(f["status"], "fail");
            assert!(
                f["found"].as_str().unwrap().contains("kernel lockdown"),
                "{f}"
            );
        }
    }

    // The preemption model agrees with uname -v where that names one.
    let p = check(&v, "kernel.preemption");
    let uname =
        String::from_utf8(Command::new("uname").arg("-v").output().unwrap().stdout).unwrap();
    if uname.contains("PREEMPT_RT") {
        assert_eq!(p["data"]["model"], "rt");
    } else if uname.contains("PREEMPT_DYNAMIC") {
        assert_eq!(p["data"]["dynamic"], true);
        assert!(!p["data"]["model"].as_str().unwrap().is_empty(), "{p}");
    }
}

#[test]
fn human_output_names_the_facts() {
    let (code, out, err) = doctor(&[]);
    let last = out.lines().last().unwrap_or_default();
    assert!(last.starts_with("xrunrig doctor: 27 checks:"), "{out}");
    // Non-zero exactly when a FAIL applies (no --rig: any check).
    assert_eq!(code, i32::from(!last.contains(" 0 fail,")), "{last}\n{err}");
    assert!(last.contains(&format!("exit status {code}")), "{last}");
    let cpus = out.lines().find(|l| l.starts_with("PASS  CPUs ")).unwrap();
    assert!(
        cpus.contains(&format!("{} online", online().len())),
        "{cpus}"
    );
    assert!(out.contains("\nsched\n") && out.contains("RT throttling"));
}

#[test]
fn exit_code_follows_what_the_rig_needs() {
    let on = online();
    let (code, out, err) = doctor(&["--rig", "rigs/pi-boost-affinity.toml"]);
    let has_all = [1, 2, 3].iter().all(|c| on.contains(c));
    if !has_all {
        assert_eq!(code, 1, "{out}{err}");
        assert!(out.contains("FAIL  CPUs {1-3}"), "{out}");
    } else {
        // The other branch asserts too: where the CPUs are there, they are not the failure.
        assert!(!out.contains("FAIL  CPUs"), "{out}");
    }
    // A rig this machine can run exits 0: needs root (FIFO) and CPU 1, else a visible skip.
    if xrunrig::testkit::root()
        && xrunrig::testkit::have(on.contains(&1), "CPU 1 online (pi-inversion pins to it)")
    {
        let (code, out, _) = doctor(&["--rig", "rigs/pi-inversion.toml", "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["rig"]["name"], "pi-inversion");
        assert!(v["rig"]["needs"].as_array().unwrap().len() >= 3);
        assert_eq!(code, 0, "{out}");
        assert_eq!(v["exit"], 0);
    }
    let (code, _, err) = doctor(&["--rig", "rigs/does-not-exist.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read the rig file"), "{err}");
}

fn mounts_of(kinds: &[&str]) -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            kinds
                .iter()
                .any(|k| l.split_whitespace().nth(2) == Some(*k))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn doctor_changes_nothing() {
    let kinds = ["securityfs", "debugfs"];
    let before = mounts_of(&kinds);
    let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    let (code, _, err) = doctor(&["--json"]);
    assert!(code == 0 || code == 1, "{err}");
    assert_eq!(
        mounts_of(&kinds),
        before,
        "doctor mounted or unmounted something"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap(),
        rt
    );
    // In-process (as run.json gets them): fast, and no probe thread outlives the call.
    let mut best = u128::MAX;
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let v = xrunrig::doctor::findings_for_run();
        best = best.min(t.elapsed().as_millis());
        assert_eq!(v.checks.len(), 27);
    }
    assert!(best < 200, "findings_for_run took {best} ms");
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("xr-doctor")),
        "{names:?}"
    );
    // SAFETY: 0 is the calling thread.
    assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    assert_eq!(mounts_of(&kinds), before);
}

/// Needs jackd2 (installed by .ci/setup) and root for -R: a visible skip without them.
#[test]
fn a_running_jack_server_is_found_and_answers() {
    if !xrunrig::testkit::root() {
        return;
    }
    // Our own private server (-P 70, 48000 Hz, period 256), stopped when dropped.
    let Some(j) = support::jackd::PrivateJackd::start("doctor", 256) else {
        return;
    };
    let name = j.name.clone();
    let o = Command::new(BIN)
        .args(["doctor", "--json"])
        .env("JACK_DEFAULT_SERVER", &name)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let j = check(&v, "audio.jack");
    assert_eq!(j["status"], "pass", "{j}");
    assert_eq!(j["data"]["rate"], 48000);
    assert_eq!(j["data"]["period"], 256);
    let found = j["found"].as_str().unwrap();
    assert!(found.contains(&format!("jackd '{name}'")), "{found}");
    assert!(found.contains("-P 70"), "{found}");
    // The quick findings for run.json see the process without connecting.
    // As run.json holds them.
    let q = serde_json::to_value(xrunrig::doctor::findings_for_run()).unwrap();
    let qj = check(&q, "audio.jack");
    assert!(
        qj["found"]
            .as_str()
            .unwrap()
            .contains(&format!("jackd '{name}'")),
        "{qj}"
    );
}
