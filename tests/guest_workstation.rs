//! Issue 25, item 4: the tests that once needed a capability to be ABSENT (fewer than 4
//! CPUs, sched features unreadable, no sound card) pass on a machine that has them all,
//! the studio workstation xrunrig is for. That machine is a 4-vCPU Debian 6.12 guest
//! under QEMU (TCG here) with snd-dummy loaded (so /dev/snd exists) and debugfs mounted
//! (sched features readable and writable), booted with the project's own guest
//! machinery (`xrunrig::guest`: kernel, modules, initramfs, QEMU). Its /init runs this
//! build's test binaries, filtered to those tests, with XRUNRIG_REQUIRE_ALL=1 (a skip
//! fails), and prints what the guest has, each test's result and each binary's exit
//! code on the console, which this test reads.
//!
//! The test binaries are the ones `cargo test` built beside this one (target/*/deps),
//! the newest that lists the test. Run it with the rest of the suite (or after `cargo
//! test --no-run`), so they are this build's. XRUNRIG_WS_DEPS=DIR and
//! XRUNRIG_WS_TESTS="name:prefix:test,test;…" take other binaries and tests (how the
//! old tests were shown to fail there); XRUNRIG_WS_REPO / XRUNRIG_WS_XRUNRIG give the
//! repository and xrunrig binary those binaries were built for.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use xrunrig::guest::{initramfs, kernel, modules, qemu};

/// (name, file name prefix in deps/, tests).
const JOBS: &[(&str, &str, &[&str])] = &[
    (
        "lib",
        "xrunrig-",
        &[
            "audio::alsa::probe::tests::probe_without_a_card_says_so",
            "sweep::prepare::tests::a_rig_the_machine_cannot_fit_is_refused_and_nothing_changes",
            "sweep::prepare::tests::locked_down_features_stop_the_run_unless_settings_as_is",
        ],
    ),
    (
        "engine",
        "engine-",
        &[
            "a_rig_past_the_machines_cpus_is_refused_and_changes_nothing",
            "settings_as_is_applies_nothing_and_records_the_features_as_found",
        ],
    ),
    (
        "livefx",
        "livefx-",
        &["auto_without_a_server_or_card_picks_the_clock_and_says_why"],
    ),
];

struct Job {
    name: String,
    bin: PathBuf,
    tests: Vec<String>,
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// The newest executable `prefix*` in `deps` that lists `test`.
fn find(deps: &Path, prefix: &str, test: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let mut found: Vec<PathBuf> = std::fs::read_dir(deps)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(prefix)
                && !n.contains('.')
                && p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .filter(|p| {
            std::process::Command::new(p)
                .args(["--list", "--exact", test])
                .output()
                .is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout).contains(&format!("{test}: test"))
                })
        })
        .collect();
    found.sort_by_key(|p| mtime(p));
    found.pop().unwrap_or_else(|| {
        panic!(
            "no test binary {prefix}* in {} lists {test}: build the suite first (cargo test --no-run)",
            deps.display()
        )
    })
}

fn jobs(deps: &Path) -> Vec<Job> {
    if let Ok(spec) = std::env::var("XRUNRIG_WS_TESTS") {
        return spec
            .split(';')
            .filter(|s| !s.trim().is_empty())
            .map(|j| {
                let mut it = j.trim().splitn(3, ':');
                let (name, prefix, tests) =
                    (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
                let tests: Vec<String> = tests.split(',').map(str::to_string).collect();
                Job {
                    name: name.into(),
                    bin: find(deps, prefix, &tests[0]),
                    tests,
                }
            })
            .collect();
    }
    JOBS.iter()
        .map(|(name, prefix, tests)| Job {
            name: name.to_string(),
            bin: find(deps, prefix, tests[0]),
            tests: tests.iter().map(|t| t.to_string()).collect(),
        })
        .collect()
}

/// A copy without debug info (loads faster in the guest), else the file itself.
fn stripped(bin: &Path, dir: &Path) -> Vec<u8> {
    let out = dir.join(bin.file_name().unwrap());
    let ok = std::process::Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&out)
        .arg(bin)
        .status()
        .is_ok_and(|s| s.success());
    std::fs::read(if ok { &out } else { bin }).unwrap()
}

/// Every file under `dir`, as (path, contents).
fn tree(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            tree(&p, out);
        } else {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
}

#[test]
fn capability_tests_pass_on_a_workstation_shaped_guest() {
    support::guest::prerequisites();
    if !support::guest::enabled(
        "guest kernel",
        &["qemu-system-x86_64"],
        "apt-get install qemu-system-x86",
    ) {
        return;
    }
    let env_path =
        |k: &str, d: &str| std::env::var_os(k).map_or_else(|| PathBuf::from(d), PathBuf::from);
    let exe = std::env::current_exe().unwrap();
    let deps = env_path("XRUNRIG_WS_DEPS", exe.parent().unwrap().to_str().unwrap());
    let repo = env_path("XRUNRIG_WS_REPO", env!("CARGO_MANIFEST_DIR"));
    let xrunrig = env_path("XRUNRIG_WS_XRUNRIG", env!("CARGO_BIN_EXE_xrunrig"));
    let jobs = jobs(&deps);
    let scratch = xrunrig::testkit::private_dir("guest-ws");
    let mut files: Vec<(String, Vec<u8>)> = vec![];
    // What the tests read from the repository (rigs, profiles, fixtures, patches), at
    // the path they were built with.
    for sub in ["rigs", "profiles", "tests/fixtures", "patches"] {
        tree(&repo.join(sub), &mut files);
    }
    let mut script = String::from(
        r#"exec >/dev/console 2>&1
echo "WS-FACT online CPUs: $(cat /sys/devices/system/cpu/online)"
echo "WS-FACT /dev/snd: $(ls /dev/snd | tr '\n' ' ')"
F=/sys/kernel/debug/sched/features
if f=$(cat $F); then
  echo "WS-FACT sched features readable: $f"
  # Written back as it is (no feature flips, so no kernel text is patched).
  case " $f " in *" NO_RT_PUSH_IPI "*) w=NO_RT_PUSH_IPI;; *) w=RT_PUSH_IPI;; esac
  echo $w >$F && echo "WS-FACT sched features writable: $w written"
fi
"#,
    );
    script.push_str(&format!(
        "mkdir -p {dir} && ln -sf /bin/xrunrig {bin}\ncd {repo}\nexport XRUNRIG_REQUIRE_ALL=1 XRUNRIG_SKIP_LOG=/tmp/skips.log\n",
        dir = xrunrig.parent().unwrap().display(),
        bin = xrunrig.display(),
        repo = repo.display(),
    ));
    for j in &jobs {
        let g = format!("/ws/{}", j.name);
        files.push((g.clone(), stripped(&j.bin, &scratch)));
        script.push_str(&format!(
            "chmod +x {g}; {g} --exact --test-threads=1 {}; echo \"WS-RC {} $?\"\n",
            initramfs::shell_line(&j.tests),
            j.name
        ));
        eprintln!(
            "guest_workstation: {} = {} ({:?})",
            j.name,
            j.bin.display(),
            mtime(&j.bin)
        );
    }
    script.push_str("cat /tmp/skips.log 2>/dev/null | sed 's/^/WS-SKIP /'\n");
    let k = kernel::resolve(
        &xrunrig::options::KernelSpec::parse("debian:6.12").unwrap(),
        None,
    )
    .unwrap();
    let mut wanted = modules::RESULTS_DISK.to_vec();
    wanted.extend_from_slice(modules::SOUND);
    let (mods, notes) = modules::collect(k.modules.as_ref().expect("6.12's modules"), &wanted);
    for n in notes {
        eprintln!("guest_workstation: {n}");
    }
    let spec = initramfs::Spec {
        xrunrig: xrunrig.clone(),
        files,
        parts: vec![vec!["/bin/sh".into(), "-c".into(), script]],
        inject: initramfs::Inject::None,
        ship_cpus: vec![],
        modules: mods,
        audio: true,
    };
    let initrd = scratch.join("initramfs.cpio");
    initramfs::build(&spec, &initrd).unwrap();
    let console = scratch.join("console.log");
    let launch = qemu::Launch {
        qemu: qemu::qemu_binary().unwrap(),
        kernel: k.boot.clone(),
        initrd,
        cpus: 4,
        memory: "2G".into(),
        // no_timer_check: the IO-APIC timer check panicked this guest once ("IO-APIC +
        // timer doesn't work!") on the 2-CPU host under a load of 13.
        cmdline: format!("{} no_timer_check", xrunrig::guest::BASE_CMDLINE),
        accel: if qemu::kvm_usable().is_ok() {
            qemu::Accel::Kvm
        } else {
            qemu::Accel::Tcg
        },
        console: console.clone(),
        channel: scratch.join("channel.bin"),
        disk: Some(scratch.join("results.img")),
        stderr: scratch.join("qemu-stderr.log"),
    };
    let bounds = qemu::Bounds {
        boot: Duration::from_secs(120),
        run: Duration::from_secs(600),
        // The capability tests print as they go; 10 minutes of silence is a hang.
        quiet: Duration::from_secs(600),
    };
    // An emulator fault boots once more, as for every guest test.
    let (o, out) = support::guest::boot_once_more(|| {
        let _ = std::fs::remove_file(&console);
        xrunrig::guest::channel::create_disk(launch.disk.as_ref().unwrap()).unwrap();
        let mut g = qemu::spawn(&launch).unwrap();
        let mut out = String::new();
        let o = qemu::watch(
            &mut g,
            &console,
            bounds,
            &AtomicBool::new(false),
            &mut |l: &str| {
                eprintln!("guest: {l}");
                out.push_str(l);
                out.push('\n');
            },
        );
        drop(g);
        let full = std::fs::read_to_string(&console).unwrap_or_default();
        let err = std::fs::read_to_string(&launch.stderr).unwrap_or_default();
        let fault = xrunrig::guest::crash::judge(&o, &full, &err, bounds.quiet);
        ((o, out), fault)
    });
    let full = std::fs::read_to_string(&console).unwrap_or_default();
    let ctx = format!(
        "{:?} after {:.0} s; the guest's output:\n{out}\nconsole tail:\n{}",
        o.end,
        o.wall_s,
        full.lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The machine is workstation-shaped...
    assert!(out.contains("WS-FACT online CPUs: 0-3"), "{ctx}");
    assert!(
        out.contains("WS-FACT /dev/snd: ") && out.contains("pcmC"),
        "{ctx}"
    );
    assert!(out.contains("WS-FACT sched features writable"), "{ctx}");
    // ...and every test ran (none skipped) and passed.
    for j in &jobs {
        assert!(
            out.contains(&format!("WS-RC {} 0", j.name)),
            "{}: {}\n{ctx}",
            j.name,
            j.bin.display()
        );
        for t in &j.tests {
            assert!(out.contains(&format!("test {t} ... ok")), "{t}\n{ctx}");
        }
    }
    assert!(!out.contains("WS-SKIP"), "{ctx}");
}
