//! Every check on recorded inputs: this machine (tests/fixtures/doctor/host, and
//! host-mounted with securityfs and debugfs mounted), a Debian 6.12 guest (hand-written
//! from MEASURED.md), an empty machine, and garbage in every file read.

use super::source::{Recorded, Source};
use super::*;
use std::path::PathBuf;

const QUICK: Mode = Mode {
    connect_jack: false,
};
const FULL: Mode = Mode { connect_jack: true };

fn fixture(name: &str) -> Recorded {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/doctor")
        .join(name);
    assert!(p.is_dir(), "missing fixture {}", p.display());
    Recorded::dir(&p)
}

fn get<'a>(v: &'a [Check], id: &str) -> &'a Check {
    v.iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}"))
}

fn ids(v: &[Check]) -> Vec<String> {
    v.iter().map(|c| c.id.clone()).collect()
}

#[test]
fn host_names_lockdown_cpus_preemption_throttling_and_no_sound() {
    let v = collect(&fixture("host"), FULL);
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert!(
        f.found.contains("kernel lockdown (at least 'integrity')"),
        "{}",
        f.found
    );
    assert!(f.found.contains("debugfs is not mounted"), "{}", f.found);
    let cpus = get(&v, "cpus.online");
    assert_eq!(cpus.status, Status::Pass);
    assert_eq!(cpus.data["count"], 2);
    let online = data_as::<cpus::Online>(cpus).unwrap();
    assert_eq!((online.count, online.online), (2, vec![0, 1]));
    assert!(cpus.found.starts_with("2 online {0,1}"), "{}", cpus.found);
    let p = get(&v, "kernel.preemption");
    assert_eq!(p.data["model"], "none");
    assert_eq!(p.data["dynamic"], true);
    assert_eq!(p.status, Status::Fail);
    assert!(p.found.contains("CONFIG_PREEMPT_NONE=y"), "{}", p.found);
    let t = get(&v, "sched.rt_throttling");
    assert_eq!(t.status, Status::Pass);
    assert_eq!(t.data["sched_rt_runtime_us"], 950000);
    assert!(
        t.found.contains("950000") && t.found.contains("95%"),
        "{}",
        t.found
    );
    for id in ["audio.alsa_cards", "audio.sound_irq", "audio.irq_thread"] {
        let c = get(&v, id);
        assert_eq!(c.status, Status::Na, "{c:?}");
        assert!(c.found.contains("no sound cards"), "{}", c.found);
        assert!(c.found.contains("CONFIG_SOUND is not set"), "{}", c.found);
    }
    let l = get(&v, "kernel.lockdown");
    assert_eq!(l.status, Status::Warn);
    assert!(l.found.contains("securityfs is not mounted"), "{}", l.found);
    assert!(
        l.found.contains("CONFIG_LOCK_DOWN_KERNEL_FORCE_INTEGRITY"),
        "{}",
        l.found
    );
    assert_eq!(get(&v, "kernel.hz").data["hz"], 250);
    assert_eq!(get(&v, "kernel.hz").status, Status::Warn);
    assert_eq!(get(&v, "kernel.threadirqs").status, Status::Warn);
    assert_eq!(get(&v, "kernel.hrtimers").status, Status::Pass);
    assert_eq!(get(&v, "kernel.pi_futex").status, Status::Pass);
    assert_eq!(get(&v, "rights.sched_fifo").data["max_ok"], 99);
    // Root: the limits are 0 and 8 MiB but the capabilities override them.
    assert_eq!(get(&v, "rights.rtprio").status, Status::Pass);
    assert!(get(&v, "rights.rtprio").found.contains("CAP_SYS_NICE"));
    assert!(get(&v, "rights.memlock").found.contains("8 MiB"));
    assert_eq!(get(&v, "cpus.governor").status, Status::Na);
    assert_eq!(get(&v, "cpus.smt").status, Status::Pass);
    assert_eq!(get(&v, "tracing.tracefs").status, Status::Pass);
    let ev = get(&v, "tracing.sched_events");
    assert_eq!(ev.status, Status::Pass, "{ev:?}");
    assert_eq!(get(&v, "audio.jack").status, Status::Na);
    for id in ["sched.rt_push_ipi", "sched.hrtick", "sched.fair_server"] {
        let c = get(&v, id);
        assert_eq!(c.status, Status::Na);
        assert!(c.found.contains("lockdown"), "{id}: {}", c.found);
    }
}

#[test]
fn host_with_securityfs_and_debugfs_mounted_reads_the_exact_mode() {
    let v = collect(&fixture("host-mounted"), QUICK);
    let l = get(&v, "kernel.lockdown");
    assert_eq!(l.data["mode"], "integrity");
    assert!(
        l.found
            .contains("'integrity' (from /sys/kernel/security/lockdown)"),
        "{}",
        l.found
    );
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Fail);
    assert!(
        f.found.contains("/sys/kernel/debug/sched/features: kernel lockdown 'integrity' forbids debugfs even to root"),
        "{}",
        f.found
    );
    let fs = get(&v, "sched.fair_server");
    assert_eq!(fs.status, Status::Na);
    assert!(
        fs.found
            .contains("fair_server/cpu0/runtime: kernel lockdown 'integrity'"),
        "{}",
        fs.found
    );
    let p = get(&v, "kernel.preemption");
    assert_eq!(p.data["model"], "none");
    assert!(p.found.contains("EPERM"), "{}", p.found);
    // The fix no longer suggests writing debugfs: lockdown forbids it.
    assert!(!p.fix.clone().unwrap_or_default().contains("echo full"));
}

#[test]
fn guest_shows_writable_features_and_the_dummy_and_loopback_cards() {
    let v = collect(&fixture("guest"), FULL);
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Pass, "{f:?}");
    assert!(f.found.starts_with("readable and writable"));
    let push = get(&v, "sched.rt_push_ipi");
    assert_eq!(push.status, Status::Warn);
    assert_eq!(push.data["on"], false);
    assert!(push.found.contains("NO_RT_PUSH_IPI"));
    assert!(
        push.fix
            .clone()
            .unwrap()
            .contains("echo RT_PUSH_IPI > /sys/kernel/debug/sched/features")
    );
    let hr = get(&v, "sched.hrtick");
    assert_eq!(
        (hr.status, &hr.data["on"]),
        (Status::Pass, &serde_json::Value::Bool(false))
    );
    let fs = get(&v, "sched.fair_server");
    assert_eq!(fs.status, Status::Pass);
    assert_eq!(fs.found, "runtime 50 ms per 1000 ms on all 4 CPUs");
    let cards = get(&v, "audio.alsa_cards");
    assert_eq!(cards.status, Status::Pass);
    assert_eq!(cards.found, "0 Dummy (Dummy), 1 Loopback (Loopback)");
    let irq = get(&v, "audio.sound_irq");
    assert_eq!(irq.status, Status::Na);
    assert!(irq.found.contains("only virtual cards"), "{}", irq.found);
    assert_eq!(get(&v, "cpus.online").data["count"], 4);
    let p = get(&v, "kernel.preemption");
    assert_eq!(p.data["model"], "voluntary");
    assert_eq!(p.status, Status::Warn);
    assert!(p.found.contains("/sys/kernel/debug/sched/preempt"));
    assert_eq!(get(&v, "kernel.lockdown").status, Status::Pass);
    // No /proc/config.gz and no /boot/config-*: n/a with the reason.
    let hz = get(&v, "kernel.hz");
    assert_eq!(hz.status, Status::Na);
    assert!(
        hz.found
            .contains("/boot/config-6.12.57+deb12-amd64: does not exist"),
        "{}",
        hz.found
    );
    // Root by capabilities, though the limits are 0.
    assert_eq!(get(&v, "rights.rtprio").status, Status::Pass);
    let tfs = get(&v, "tracing.tracefs");
    assert_eq!(tfs.status, Status::Warn);
    assert!(
        tfs.fix
            .clone()
            .unwrap()
            .starts_with("mount -t tracefs none /sys/kernel/tracing")
    );
    assert!(
        tfs.found
            .contains("/sys/kernel/debug/tracing would mount it"),
        "{}",
        tfs.found
    );
    // Not looked at through debugfs: that would mount tracefs.
    assert_eq!(get(&v, "tracing.sched_events").status, Status::Na);
}

#[test]
fn every_machine_gets_the_same_checks_in_the_same_order() {
    let a = ids(&collect(&fixture("host"), QUICK));
    let b = ids(&collect(&fixture("guest"), QUICK));
    let c = ids(&collect(&Recorded::empty(), QUICK));
    assert_eq!(a, b);
    assert_eq!(a, c);
    assert_eq!(a.len(), 27);
    let mut d = a.clone();
    d.sort();
    d.dedup();
    assert_eq!(d.len(), a.len(), "check ids are unique");
}

#[test]
fn an_empty_machine_gives_na_with_a_reason_everywhere() {
    let v = collect(&Recorded::empty(), FULL);
    for c in &v {
        assert!(!c.found.is_empty(), "{} has no reason", c.id);
        assert_ne!(
            c.status,
            Status::Pass,
            "{} passed on nothing: {}",
            c.id,
            c.found
        );
    }
    assert!(
        get(&v, "cpus.online")
            .found
            .contains("/sys/devices/system/cpu/online: does not exist")
    );
    assert!(get(&v, "rights.sched_fifo").found.contains("not recorded"));
}

/// Every file a real run reads, in turn, holds garbage or fails to read: no panic,
/// and every check still says something.
#[test]
fn garbage_or_unreadable_in_any_file_never_panics() {
    let base = fixture("guest");
    collect(&base, FULL);
    let mut paths: Vec<String> = base.log.borrow().clone();
    let host = fixture("host");
    collect(&host, FULL);
    paths.extend(host.log.borrow().iter().cloned());
    paths.sort();
    paths.dedup();
    assert!(paths.len() > 20, "{paths:?}");
    let junk: &[&[u8]] = &[
        b"",
        b"\xff\xfe(((]]] -1 NaN 99999999999999999999999\n:\n",
        b"0-\n[\n(",
        b" 0 [\n 1 []: \n CPU0\n 35: x y\n",
    ];
    for p in &paths {
        for j in junk {
            let mut s = fixture("guest");
            s.set(p, j);
            for c in collect(&s, FULL) {
                assert!(!c.found.is_empty(), "{} empty with garbage in {p}", c.id);
            }
        }
        for errno in [libc::EPERM, libc::EIO, libc::ENOENT] {
            let mut s = fixture("host");
            s.set_err(p, errno);
            for c in collect(&s, FULL) {
                assert!(!c.found.is_empty(), "{} empty with {p} failing", c.id);
            }
        }
    }
}

#[test]
fn a_card_with_an_irq_thread_at_the_default_priority_warns() {
    let interrupts = "            CPU0       CPU1\n  35:        100        200   IR-PCI-MSI 514048-edge      snd_hda_intel:card0\n  36:         10          0   IR-PCI-MSI 1-edge      ahci[0000:00:17.0]\n";
    // /proc/PID/stat up to policy (field 41); rt_priority is field 40.
    let stat = |comm: &str, rt: u32| {
        let mut f = vec!["S".to_string()];
        f.extend((4..=39).map(|_| "0".to_string()));
        f.push(rt.to_string());
        f.push("1".into());
        format!("123 ({comm}) {}", f.join(" "))
    };
    let make = |snd_prio: u32| {
        Recorded::empty()
            .file("/proc/asound/cards", " 0 [PCH            ]: HDA-Intel - HDA Intel PCH\n                      HDA Intel PCH at 0xf7f10000 irq 35\n")
            .file("/proc/interrupts", interrupts)
            .file("/proc/cmdline", "quiet threadirqs")
            .file("/proc/101/comm", "irq/35-snd_hda_\n")
            .file("/proc/101/stat", &stat("irq/35-snd_hda_", snd_prio))
            .file("/proc/102/comm", "irq/36-ahci[000\n")
            .file("/proc/102/stat", &stat("irq/36-ahci[000", 50))
    };
    let v = collect(&make(50), QUICK);
    let irq = get(&v, "audio.sound_irq");
    assert_eq!(irq.status, Status::Pass, "{irq:?}");
    assert_eq!(irq.found, "IRQ 35 (snd_hda_intel:card0, 300 interrupts)");
    let t = get(&v, "audio.irq_thread");
    assert_eq!(t.status, Status::Warn, "{t:?}");
    assert!(
        t.found
            .contains("irq/35-snd_hda_ (pid 101) FIFO 50 (other IRQ threads up to 50)"),
        "{}",
        t.found
    );
    assert!(t.fix.clone().unwrap().contains("chrt -f -p 90 PID"));
    assert_eq!(get(&v, "kernel.threadirqs").status, Status::Pass);
    let v = collect(&make(90), QUICK);
    assert_eq!(get(&v, "audio.irq_thread").status, Status::Pass);
}

#[test]
fn jack_and_pipewire_from_processes_and_the_probe() {
    let s = Recorded::empty()
        .file("/proc/700/comm", "jackd\n")
        .file(
            "/proc/700/cmdline",
            "jackd\x00-n\x00studio\x00-R\x00-P\x0070\x00-d\x00alsa\x00-r\x0048000\x00-p\x00128\x00",
        )
        .file("/proc/701/comm", "pipewire\n")
        .probes(r#"{"jack": {"server": "studio", "rate": 48000, "period": 128}}"#);
    let v = collect(&s, QUICK);
    let j = get(&v, "audio.jack");
    assert_eq!(j.status, Status::Pass);
    assert!(
        j.found
            .contains("jackd 'studio' (pid 700, -r 48000, -p 128, -P 70)"),
        "{}",
        j.found
    );
    assert!(j.found.contains("quick check"));
    let v = collect(&s, FULL);
    let j = get(&v, "audio.jack");
    assert!(
        j.found
            .starts_with("server 'studio' answers: 48000 Hz, 128 frames per period (2.67 ms)"),
        "{}",
        j.found
    );
    assert!(j.found.contains("; jackd 'studio' (pid 700"), "{}", j.found);
    assert_eq!(get(&v, "audio.pipewire").status, Status::Warn);
    // Only another, named server runs: say how to select it.
    let s = s.probes(r#"{"jack": {"error": "no JACK server 'default' answered"}}"#);
    let j = get(&collect(&s, FULL), "audio.jack").clone();
    assert_eq!(j.status, Status::Warn, "{j:?}");
    assert_eq!(
        j.fix.as_deref(),
        Some("select one with JACK_DEFAULT_SERVER=studio")
    );
    // The default server's jackd runs but does not answer: fail.
    let s = Recorded::empty()
        .file("/proc/700/comm", "jackd\n")
        .probes(r#"{"jack": {"error": "no JACK server 'default' answered"}}"#);
    assert_eq!(get(&collect(&s, FULL), "audio.jack").status, Status::Fail);
}

#[test]
fn parsers() {
    assert_eq!(
        audio::jackd_args(
            &[
                "jackd", "-r", "-P", "80", "-n", "x", "-d", "dummy", "-r", "44100", "-p", "64"
            ]
            .map(String::from)
        ),
        audio::Jackd {
            name: Some("x".into()),
            rate: Some("44100".into()),
            period: Some("64".into()),
            prio: Some("80".into()),
            realtime: false
        }
    );
    assert_eq!(
        ctx::parse_cmdline("ro quiet threadirqs -- --init-arg isolcpus=1"),
        vec!["ro", "quiet", "threadirqs"]
    );
    assert_eq!(
        ctx::bracketed("none [integrity] confidentiality").as_deref(),
        Some("integrity")
    );
    assert_eq!(ctx::bracketed("[]"), None);
    let c = ctx::Config::parse(
        "x",
        "CONFIG_HZ=1000\n# CONFIG_SOUND is not set\nCONFIG_X=\"a b\"\n",
    );
    assert_eq!(
        (c.get("CONFIG_HZ"), c.get("CONFIG_SOUND"), c.get("CONFIG_X")),
        (Some("1000"), Some("n"), Some("a b"))
    );
    assert_eq!(
        rights::limit(
            "Max realtime priority     95      99     \n",
            "Max realtime priority"
        ),
        Some(("95".into(), "99".into()))
    );
    assert_eq!(audio::stat_rt("1 (a) b) S 0"), None);
    let cards = audio::parse_cards("--- no soundcards ---\n");
    assert!(cards.is_empty());
}

#[test]
fn an_unprivileged_user_gets_warnings_with_fixes() {
    let s = Recorded::empty()
        .file("/proc/self/status", "Uid:\t1000\t1000\t1000\t1000\nGroups:\t24 27\nCapEff:\t0000000000000000\n")
        .file("/proc/self/limits", "Max locked memory         8388608              8388608              bytes\nMax realtime priority     0                    0\n")
        .file("/etc/group", "audio:x:29:\n")
        .file("/sys/kernel/debug/sched/features", "RT_PUSH_IPI NO_HRTICK\n")
        .file("/sys/kernel/security/lockdown", "[none] integrity confidentiality\n")
        .probes(r#"{"sched_fifo": {"error": "Operation not permitted (EPERM)"}}"#);
    let v = collect(&s, QUICK);
    assert_eq!(get(&v, "rights.rtprio").status, Status::Fail);
    assert!(
        get(&v, "rights.rtprio")
            .fix
            .clone()
            .unwrap()
            .contains("rtprio 95")
    );
    assert_eq!(get(&v, "rights.memlock").status, Status::Warn);
    assert_eq!(get(&v, "rights.audio_group").status, Status::Warn);
    assert_eq!(get(&v, "rights.sched_fifo").status, Status::Fail);
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Warn);
    assert!(f.found.contains("not root"), "{}", f.found);
    assert_eq!(get(&v, "sched.rt_push_ipi").status, Status::Pass);
}

/// The checks a rig needs that are not met (advisories left out).
fn unmet(n: &[needs::Need]) -> Vec<&'static str> {
    n.iter()
        .filter(|x| !x.met && !x.advisory)
        .map(|x| x.check)
        .collect()
}

fn rig(name: &str) -> crate::rig::Rig {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("rigs")
        .join(name);
    crate::rig::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rig_needs_decide_the_exit_code() {
    let r = rig("pi-boost-affinity.toml");
    let host = fixture("host");
    let n = needs::evaluate(&r, None, &collect(&host, QUICK), &host);
    let cpus = n.iter().find(|x| x.check == "cpus.online").unwrap();
    assert!(!cpus.met);
    assert!(cpus.found.contains("missing {2,3}"), "{}", cpus.found);
    assert!(cpus.fix.clone().unwrap().contains("--cpus 4"));
    assert!(
        n.iter()
            .any(|x| x.check == "rights.sched_fifo" && x.met && x.what.contains("99"))
    );
    assert!(n.iter().any(|x| x.check == "kernel.pi_futex" && x.met));
    // The 1500 ms FIFO hog runs into 950 ms of RT runtime: advisory only.
    assert!(
        n.iter()
            .any(|x| x.check == "sched.rt_throttling" && x.advisory && !x.met)
    );
    assert_eq!(needs::exit_code(&n), 1);

    // The rig's trace instrument needs tracefs, which this guest fixture has not
    // mounted; every other need is met there.
    let guest = fixture("guest");
    let n = needs::evaluate(&r, None, &collect(&guest, QUICK), &guest);
    assert_eq!(
        unmet(&n),
        ["tracing.tracefs", "tracing.sched_events"],
        "{n:?}"
    );

    // With the profile that writes RT_PUSH_IPI: sched features must be writable.
    let prof = crate::knobs::profile::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("profiles/rt-push-ipi.toml"),
    )
    .unwrap();
    let n = needs::evaluate(&r, Some(&prof), &collect(&guest, QUICK), &guest);
    assert!(n.iter().any(|x| x.check == "sched.features" && x.met));
    assert!(
        n.iter().any(|x| x.check == "sched.rt_throttling" && x.met),
        "{n:?}"
    );
    assert_eq!(
        unmet(&n),
        ["tracing.tracefs", "tracing.sched_events"],
        "{n:?}"
    );
    let n = needs::evaluate(&r, Some(&prof), &collect(&host, QUICK), &host);
    let f = n.iter().find(|x| x.check == "sched.features").unwrap();
    assert!(!f.met && f.found.contains("lockdown"), "{f:?}");

    // A livefx rig needs an audio backend; an [instruments] table with a trace, tracefs.
    let lf = rig("livefx-inversion.toml");
    assert_eq!(
        lf.livefx.as_ref().map(|c| c.backend),
        Some(crate::rig::backend::BackendChoice::Auto)
    );
    let n = needs::evaluate(&lf, None, &collect(&host, QUICK), &host);
    assert!(
        n.iter()
            .any(|x| x.what.contains("JACK server or an ALSA card") && !x.met)
    );
    assert_eq!(needs::exit_code(&n), 1);
    let n = needs::evaluate(&lf, None, &collect(&guest, QUICK), &guest);
    assert!(
        n.iter().any(|x| x.check == "audio.alsa_cards" && x.met),
        "{n:?}"
    );
    let mut tr = rig("pi-inversion.toml");
    tr.instruments = rig("hrtick-repick.toml").instruments;
    assert!(tr.instruments.as_ref().is_some_and(|i| i.trace.is_some()));
    let n = needs::evaluate(&tr, None, &collect(&guest, QUICK), &guest);
    assert!(n.iter().any(|x| x.check == "tracing.tracefs" && !x.met));
    let n = needs::evaluate(&tr, None, &collect(&host, QUICK), &host);
    assert!(n.iter().any(|x| x.check == "tracing.tracefs" && x.met));
}

/// Each finding once (it used to be printed twice: a "Needs attention" digest, then
/// again in its area), a FAIL with its why and fix under it, and one summary line at
/// the end that names the failures and the exit status.
#[test]
fn human_output_prints_each_finding_once_and_one_summary_line() {
    let v = collect(&fixture("host"), QUICK);
    let code = exit_code(&v, None);
    assert_eq!(
        code, 1,
        "the host fixture has FAILs: the doctor says so in its exit code"
    );
    let out = render::human(&v, None, code, "");
    for c in &v {
        let head = format!("{:<4}  {}", c.status.label(), c.name);
        let n = out.lines().filter(|l| l.starts_with(&head)).count();
        assert_eq!(n, 1, "{head:?} printed {n} times:\n{out}");
    }
    let fail = out.find("FAIL  sched features").unwrap();
    let mut after = out[fail..].lines().skip(1);
    assert!(after.next().unwrap().trim_start().starts_with("why:"));
    assert!(after.next().unwrap().trim_start().starts_with("fix:"));
    assert!(out.contains("n/a   ALSA cards"));
    for area in ["rights", "kernel", "sched", "cpus", "audio", "tracing"] {
        assert!(out.contains(&format!("{area}\n")), "{area}");
    }
    let summaries: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("xrunrig doctor:"))
        .collect();
    assert_eq!(summaries.len(), 1, "{out}");
    assert!(
        out.trim_end().ends_with(summaries[0]),
        "the summary ends it"
    );
    assert!(
        summaries[0].contains("exit status 1: FAIL: ") && summaries[0].contains("sched features"),
        "{}",
        summaries[0]
    );
}

/// `--rig` reads the rig's priorities: a livefx rig's callback at 70 needs SCHED_FIFO
/// up to 70 (it used to say 1), and its `[livefx]` CPUs count.
#[test]
fn rig_needs_read_the_livefx_priorities_and_cpus() {
    let host = fixture("host");
    let v = collect(&host, QUICK);
    let rig = crate::rig::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx.toml"))
        .unwrap();
    let n = needs::evaluate(&rig, None, &v, &host);
    assert!(
        n.iter().any(|x| x.what == "SCHED_FIFO up to priority 70"),
        "{n:?}"
    );
    assert!(n.iter().any(|x| x.what == "CPUs {0,1}"), "{n:?}");
}

/// The live probes act only on their own threads and leave none behind.
#[test]
fn live_probes_restore_and_leave_no_threads() {
    let live = source::Live::new();
    let before = sched_policy();
    // Without root the FIFO probe is skipped (visibly); the rest still runs.
    if crate::testkit::root() {
        assert_eq!(live.try_fifo(1), Ok(()));
    }
    assert!(live.pi_futex().is_ok(), "{:?}", live.pi_futex());
    assert!(live.clock_res_ns().unwrap() >= 1);
    assert_eq!(
        sched_policy(),
        before,
        "the calling thread's policy is unchanged"
    );
    let v = findings_for_run();
    assert!(v.checks.len() == 27);
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("xr-doctor")),
        "{names:?}"
    );
}

fn sched_policy() -> i32 {
    // SAFETY: 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// A real capture from a Debian 6.12 guest: read back through the recorded source, every
/// check agrees with what the live doctor printed inside that guest (doctor.json).
#[test]
fn recorded_guest_agrees_with_the_live_doctor_in_it() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/doctor/guest-recorded");
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("doctor.json")).unwrap()).unwrap();
    let v = collect(&Recorded::dir(&dir), FULL);
    let live = live["checks"].as_array().unwrap();
    assert_eq!(live.len(), v.len());
    for (l, r) in live.iter().zip(&v) {
        assert_eq!(l["id"], r.id);
        assert_eq!(
            l["status"],
            serde_json::to_value(r.status).unwrap(),
            "{}",
            r.id
        );
        // /proc/cpuinfo (the model name) was not captured.
        if r.id != "cpus.online" {
            assert_eq!(l["found"], r.found.as_str(), "{}", r.id);
        }
    }
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Pass);
    assert_eq!(get(&v, "sched.rt_push_ipi").data["on"], false);
    assert_eq!(
        get(&v, "audio.alsa_cards").found,
        "0 Dummy (Dummy), 1 Loopback (Loopback)"
    );
    assert_eq!(get(&v, "cpus.online").data["count"], 4);
}

#[test]
fn features_readable_but_write_refused_as_root_warns_with_the_error() {
    let s = Recorded::empty()
        .file(
            "/proc/self/status",
            "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n",
        )
        .file(
            "/sys/kernel/debug/sched/features",
            "NO_RT_PUSH_IPI HRTICK\n",
        )
        .file(
            "/sys/kernel/security/lockdown",
            "[none] integrity confidentiality\n",
        )
        .write_err("/sys/kernel/debug/sched/features", libc::EROFS);
    let v = collect(&s, QUICK);
    let f = get(&v, "sched.features");
    assert_eq!(f.status, Status::Warn, "{f:?}");
    assert!(
        f.found.starts_with("readable but not writable"),
        "{}",
        f.found
    );
    assert_eq!(f.data["writable"], false);
    assert_eq!(get(&v, "sched.hrtick").data["on"], true);
}

/// A probe that ran and failed is a finding even when the system's reason happens to
/// say "not recorded"; only a probe a recorded machine lacks makes its check n/a (the
/// checks once told the two apart by the message's text).
#[test]
fn a_failed_probe_is_told_from_one_not_recorded_by_its_type() {
    let s = Recorded::empty()
        .probes(r#"{"sched_fifo": {"error": "policy not recorded by the kernel"}, "pi_futex": {"error": "FUTEX_LOCK_PI: not recorded"}}"#);
    let v = collect(&s, FULL);
    let f = get(&v, "rights.sched_fifo");
    assert_eq!(f.status, Status::Fail, "{f:?}");
    assert_eq!(
        f.found,
        "cannot be set, even at priority 1: policy not recorded by the kernel"
    );
    assert_eq!(get(&v, "kernel.pi_futex").status, Status::Fail);
    // Not recorded at all: n/a, with the message it always had.
    let v = collect(&Recorded::empty(), FULL);
    for (id, found) in [
        (
            "rights.sched_fifo",
            "SCHED_FIFO: not recorded for this machine",
        ),
        ("kernel.pi_futex", "PI futex: not recorded for this machine"),
        (
            "kernel.hrtimers",
            "clock resolution: not recorded for this machine",
        ),
        ("audio.jack", "JACK: not recorded for this machine"),
    ] {
        let c = get(&v, id);
        assert_eq!((c.status, c.found.as_str()), (Status::Na, found), "{id}");
    }
}

/// The doctor builds run.json's doctor section as the results format's type: written
/// and read back through that type, every machine's findings are equal to themselves,
/// and the data the rig needs read back as the types that wrote them.
#[test]
fn the_doctor_section_reads_back_equal_to_itself() {
    for name in ["host", "host-mounted", "guest", "guest-recorded"] {
        let s = DoctorSection::new(collect(&fixture(name), FULL));
        assert_eq!(s.checks.len(), 27, "{name}");
        let back: DoctorSection =
            serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s, "{name}");
    }
    let v = collect(&fixture("host"), FULL);
    assert_eq!(
        data_as::<rights::FifoMax>(get(&v, "rights.sched_fifo")),
        Some(rights::FifoMax { max_ok: 99 })
    );
    assert_eq!(
        data_as::<sched::RtThrottling>(get(&v, "sched.rt_throttling")),
        Some(sched::RtThrottling {
            sched_rt_period_us: Some(1_000_000),
            sched_rt_runtime_us: 950_000
        })
    );
    // A check that could not be made has no data to read.
    let none = collect(&Recorded::empty(), QUICK);
    assert_eq!(data_as::<cpus::Online>(get(&none, "cpus.online")), None);
}
