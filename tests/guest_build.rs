//! Guest kernels built from source (`--kernel debian-src:6.12`, `--patch`): a patch
//! that does not apply is refused before anything is built or booted; a second run
//! finds the build in the cache and builds nothing; run.json and combined.json say
//! where each kernel came from; and the seed's A/B, the unpatched and the patched
//! build of the same tree in one command, has the seed's shape.
//!
//! Needs what `.ci/setup` installs for these (build-essential flex bison bc libelf-dev
//! libssl-dev patch, linux-source-6.12 through apt) and QEMU. The first build of
//! 6.12 takes long on a small machine (see docs/measured.md); later runs use the build cache
//! (/var/cache/xrunrig/kbuild as root). XRUNRIG_SKIP_GUEST=1 skips them, visibly.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use support::guest::wait_row;
use support::run::{json, text as show};

/// One build or guest at a time: a kernel build or a TCG guest takes both CPUs, and
/// the build cache is locked while a build runs.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const PATCH: &str = "patches/6.12/0001-sched-rt-push-boosted-task.patch";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn one() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn xrunrig(tag: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrunrig"));
    c.current_dir(repo()).env(
        "XRUNRIG_STATE_DIR",
        xrunrig::testkit::private_dir(&format!("guest-build-state-{tag}")),
    );
    c
}

#[track_caller]
fn enabled() -> bool {
    support::guest::enabled(
        "guest kernels built from source",
        &[
            "qemu-system-x86_64",
            "make",
            "gcc",
            "flex",
            "bison",
            "bc",
            "patch",
        ],
        "run .ci/setup (it installs build-essential flex bison bc libelf-dev libssl-dev \
         patch qemu-system-x86)",
    )
}

fn sha256_file(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(std::fs::read(p).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An emulator fault is retried once (support::guest::attempt).
fn run(tag: &str, args: &[&str], out: &Path) -> Output {
    let o = support::guest::attempt(out, 0, || {
        xrunrig(tag)
            .arg("run")
            .args(args)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    });
    eprintln!("{}", show(&o));
    o
}

/// A copy of our patch whose context no longer matches 6.12's prio_changed_rt().
fn broken_patch(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(repo().join(PATCH)).unwrap();
    let bad = text.replacen(
        " \t\tif (p->prio < rq->curr->prio)",
        " \t\tif (p->prio < rq->donor->prio)",
        1,
    );
    assert_ne!(bad, text, "the context line to break is in the patch");
    let p = dir.join("0001-does-not-apply.patch");
    std::fs::write(&p, bad).unwrap();
    p
}

#[test]
fn a_patch_that_does_not_apply_is_refused_before_anything_boots() {
    if !enabled() {
        return;
    }
    let _one = one();
    let dir = xrunrig::testkit::private_dir("guest-build-bad-patch");
    let bad = broken_patch(&dir);
    let out = dir.join("out");
    let o = run(
        "bad",
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian-src:6.12",
            "--patch",
            bad.to_str().unwrap(),
            "--trials",
            "1",
        ],
        &out,
    );
    let text = show(&o);
    assert_eq!(o.status.code(), Some(2), "refused: {text}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("0001-does-not-apply.patch does not apply to debian-src:6.12"),
        "{text}"
    );
    assert!(err.contains("nothing was built or booted"), "{text}");
    // The failing hunk is shown, with the line that does not match.
    assert!(err.contains("kernel/sched/rt.c: hunk #1 FAILED"), "{text}");
    assert!(err.contains("rq->donor->prio"), "{text}");
    assert!(err.contains("+\t\t\trt_queue_push_tasks(rq);"), "{text}");
    // Nothing booted: no results directory, no QEMU line.
    assert!(!out.exists(), "{}", out.display());
    assert!(!err.contains("qemu"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run twice: the second run finds the build in the cache (its run.json says so, the
/// build log gets a "cache hit" line and no make run), and run.json carries the
/// kernel's provenance.
#[test]
fn the_second_run_hits_the_cache_and_run_json_says_where_the_kernel_came_from() {
    if !enabled() {
        return;
    }
    let _one = one();
    let dir = xrunrig::testkit::private_dir("guest-build-cache");
    let args = [
        "rigs/pi-boost-affinity.toml",
        "--profile",
        "profiles/rt-push-ipi.toml",
        "--kernel",
        "debian-src:6.12",
        "--trials",
        "1",
        "--variant",
        "pi",
        "--setting",
        "RT_PUSH_IPI",
    ];
    let first = run("cache1", &args, &dir.join("first"));
    assert_eq!(first.status.code(), Some(0), "{}", show(&first));
    let b1 = json(&dir.join("first/run.json"))["guest"]["kernel_build"].clone();
    let log = PathBuf::from(b1["log"].as_str().unwrap());
    let makes = |t: &str| t.matches("make exit:").count();
    let before = std::fs::read_to_string(&log).unwrap();

    let t0 = std::time::Instant::now();
    let second = run("cache2", &args, &dir.join("second"));
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(second.status.code(), Some(0), "{}", show(&second));
    let after = std::fs::read_to_string(&log).unwrap();
    assert_eq!(makes(&after), makes(&before), "no make ran:\n{after}");
    assert_eq!(
        after.matches("cache hit").count(),
        before.matches("cache hit").count() + 1,
        "{after}"
    );
    let run_json = json(&dir.join("second/run.json"));
    let g = &run_json["guest"];
    let b = &g["kernel_build"];
    assert_eq!(b["cached"], true, "{b}");
    assert_eq!(b["build_s"], 0.0, "{b}");
    // A cache hit is a boot and one trial, not a build (a build takes minutes).
    assert!(wall < 300.0, "second run took {wall:.0} s");

    // Provenance: source, version, no patches, the config's hash, the same key.
    assert_eq!(b["source"], "debian-src:6.12", "{b}");
    assert!(
        b["source_detail"]
            .as_str()
            .unwrap()
            .contains("linux-source-6.12"),
        "{b}"
    );
    assert_eq!(b["source_sha256"].as_str().unwrap().len(), 64, "{b}");
    assert!(b["version"].as_str().unwrap().starts_with("6.12."), "{b}");
    assert_eq!(b["patches"].as_array().unwrap().len(), 0, "{b}");
    assert_eq!(b["key"], b1["key"], "{b}");
    let tree = PathBuf::from(b["build_dir"].as_str().unwrap());
    assert_eq!(
        b["config_sha256"].as_str().unwrap(),
        sha256_file(&tree.join(".config")),
        "{b}"
    );
    let release = g["kernel_release"].as_str().unwrap();
    assert!(release.starts_with("6.12."), "{g}");
    // The guest ran the kernel that was built.
    assert_eq!(run_json["kernel"]["release"], release, "{run_json}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The seed's before/after: the same tree unpatched and with patches/6.12's push, one
/// command, one combined table. Shape: NO_RT_PUSH_IPI pi ≤ 2/8 timely unpatched and
/// ≥ 7/8 patched; the no-PI control 0/8 in both; RT_PUSH_IPI pi ≥ 7/8 in both.
#[test]
fn the_seed_fix_turns_no_rt_push_ipi_around_and_the_table_says_which_row_is_patched() {
    if !enabled() {
        return;
    }
    let _one = one();
    let dir = xrunrig::testkit::private_dir("guest-build-ab");
    let out = dir.join("ab");
    let o = run(
        "ab",
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian-src:6.12",
            "--kernel",
            "debian-src:6.12",
            "--patch",
            PATCH,
            "--trials",
            "8",
            "--variant",
            "pi",
            "--variant",
            "no-pi",
        ],
        &out,
    );
    let text = show(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let combined = json(&out.join("combined.json"));
    let kernels = combined["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{combined}");
    assert_eq!(kernels[0]["build"]["patches"].as_array().unwrap().len(), 0);
    let p = &kernels[1]["build"]["patches"][0];
    assert_eq!(
        p["sha256"].as_str().unwrap(),
        sha256_file(&repo().join(PATCH)),
        "{p}"
    );
    assert_eq!(
        p["subject"],
        "sched/rt: queue a push when a queued RT task is boosted"
    );
    assert_ne!(kernels[0]["build"]["key"], kernels[1]["build"]["key"]);
    // Rows name their kernel: the patched one by its patch.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("-src+0001-sched-rt-push-boosted-task  NO_RT_PUSH_IPI"),
        "{stdout}"
    );
    let rows = combined["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["kernel"].as_str().unwrap().ends_with("-src"))
    );
    assert!(rows.iter().any(|r| {
        r["kernel"]
            .as_str()
            .unwrap()
            .ends_with("+0001-sched-rt-push-boosted-task")
    }));
    // run.json of the patched run carries the patch.
    let pj = json(&PathBuf::from(kernels[1]["dir"].as_str().unwrap()).join("run.json"));
    assert_eq!(
        pj["guest"]["kernel_build"]["patches"][0]["sha256"],
        p["sha256"]
    );

    let sum = |k: &Value| json(&PathBuf::from(k["dir"].as_str().unwrap()).join("summary.json"));
    let (before, after) = (sum(&kernels[0]), sum(&kernels[1]));
    let (b, a) = (
        wait_row(&before, "NO_RT_PUSH_IPI", "pi"),
        wait_row(&after, "NO_RT_PUSH_IPI", "pi"),
    );
    assert!(
        b.0 <= 2 && b.1 == 8,
        "unpatched NO_RT_PUSH_IPI pi {b:?}\n{text}"
    );
    assert!(
        a.0 >= 7 && a.1 == 8,
        "patched NO_RT_PUSH_IPI pi {a:?}\n{text}"
    );
    for s in [&before, &after] {
        for setting in ["RT_PUSH_IPI", "NO_RT_PUSH_IPI"] {
            let c = wait_row(s, setting, "no-pi");
            assert_eq!(c, (0, 8), "{setting} no-pi control\n{text}");
        }
        let on = wait_row(s, "RT_PUSH_IPI", "pi");
        assert!(on.0 >= 7 && on.1 == 8, "RT_PUSH_IPI pi {on:?}\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--kernel X --patch P --kernel Y`: the patch goes to X, the kernel written just
/// before it, and each run's run.json says so (before, a patch went to the last kernel
/// built from source: here Y, with X run unpatched). Patched first so that the old
/// rule and the new one give different provenance; both builds are the A/B test's, so
/// a warm cache boots twice and builds nothing.
#[test]
fn each_patch_goes_to_the_kernel_before_it_as_run_json_records() {
    if !enabled() {
        return;
    }
    let _one = one();
    let dir = xrunrig::testkit::private_dir("guest-build-bind");
    let out = dir.join("bind");
    let o = run(
        "bind",
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--kernel",
            "debian-src:6.12",
            "--patch",
            PATCH,
            "--kernel",
            "debian-src:6.12",
            "--trials",
            "1",
            "--variant",
            "pi",
            "--setting",
            "RT_PUSH_IPI",
        ],
        &out,
    );
    let text = show(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let combined = json(&out.join("combined.json"));
    let kernels = combined["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 2, "{combined}");
    let build = |k: &Value| {
        json(&PathBuf::from(k["dir"].as_str().unwrap()).join("run.json"))["guest"]["kernel_build"]
            .clone()
    };
    let (first, second) = (build(&kernels[0]), build(&kernels[1]));
    let patches = |b: &Value| -> Vec<String> {
        b["patches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["sha256"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        patches(&first),
        vec![sha256_file(&repo().join(PATCH))],
        "the first kernel is the patched one: {first}"
    );
    assert!(
        patches(&second).is_empty(),
        "the second runs unpatched: {second}"
    );
    assert_ne!(first["key"], second["key"], "two builds, not one");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--until-decided --boots`: the boot is the unit, and the host decides across boots.
/// The seed's fix against the tarball's 6.12 under NO_RT_PUSH_IPI (pi) is called better
/// at the first look that can (after 2 boots of each: 10/10 within the bound against
/// 0/10 here), the boots it made unneeded are not run and leave no directory; the same
/// kernel twice is never called worse (every trial of both fails the bound: nothing
/// tells them apart).
#[test]
fn until_decided_across_boots_calls_the_fix_better_and_the_same_kernel_twice_never_worse() {
    if !enabled() {
        return;
    }
    let _one = one();
    let base = [
        "rigs/pi-boost-affinity.toml",
        "--profile",
        "profiles/rt-push-ipi.toml",
        "--setting",
        "NO_RT_PUSH_IPI",
        "--variant",
        "pi",
        "--trials",
        "5",
        "--boots",
        "4",
        "--until-decided",
    ];
    let decided = |out: &Path| -> Value {
        let c: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("combined.json")).unwrap())
                .unwrap();
        c["boots_decided"].clone()
    };
    let fix = xrunrig::testkit::private_dir("guest-build-boots-fix").join("r");
    let mut args = base.to_vec();
    args.extend([
        "--kernel",
        "debian-src:6.12",
        "--kernel",
        "debian-src:6.12",
        "--patch",
        PATCH,
    ]);
    let o = run("boots-fix", &args, &fix);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let d = decided(&fix);
    assert_eq!(d["answer"], "better", "{d}");
    assert_eq!(d["looks_max"], 3, "{d}");
    let looks = d["looks"].as_array().unwrap();
    let last = looks.last().unwrap();
    assert_eq!(last["answer"], "better", "{d}");
    // Only the last look decided, and it was the one the run stopped at.
    assert!(
        looks[..looks.len() - 1]
            .iter()
            .all(|l| l["answer"] == "inconclusive"),
        "{d}"
    );
    let rounds = last["round"].as_u64().unwrap();
    assert!((2..=4).contains(&rounds), "{d}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(fix.join("combined.json")).unwrap()).unwrap();
    let ran = c["kernels"].as_array().unwrap();
    assert_eq!(ran.len() as u64, 2 * rounds, "only the boots run: {c}");
    let kernel_dir = Path::new(ran[0]["dir"].as_str().unwrap()).parent().unwrap();
    for n in rounds + 1..=4 {
        assert!(
            !kernel_dir.join(format!("boot-{n}")).exists(),
            "boot {n} was not needed"
        );
    }
    let cmp: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(last["comparison"].as_str().unwrap()).join("compare.json"),
        )
        .unwrap(),
    )
    .unwrap();
    // The look's level: 2.5 % shared by the 3 looks, the interval said at it.
    assert!(
        (cmp["confidence"].as_f64().unwrap() - (1.0 - 0.05 / 3.0)).abs() < 1e-9,
        "{cmp}"
    );
    assert!(
        show(&o).contains("until decided across boots: better"),
        "{}",
        show(&o)
    );

    let same = xrunrig::testkit::private_dir("guest-build-boots-same").join("r");
    let mut args = base.to_vec();
    args.extend(["--kernel", "debian-src:6.12", "--kernel", "debian-src:6.12"]);
    let o = run("boots-same", &args, &same);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let d = decided(&same);
    assert!(d["looks"].as_array().is_some_and(|l| !l.is_empty()), "{d}");
    assert_ne!(d["answer"], "worse", "{d}");
    assert_ne!(d["answer"], "better", "{d}");
}
