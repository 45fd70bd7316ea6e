//! The trace journal is read back as untrusted input (issue 25, item 1), end to end with
//! the real binary as root: a forged journal whose instance's control files are links
//! to a stand-in for /etc/shadow, under a root that is not a tracefs mount, writes
//! nothing through them (it is retired: nothing of it can remain); one naming an
//! instance outside tracefs is refused and kept; a
//! journal from another boot (or one that cannot name its boot) never unmounts the
//! tracefs; `xrunrig restore --discard` drops a refused journal, naming it; a journal
//! that passes every check of its text reaches the descriptor layer, which refuses an
//! instance (or a control file of one) that another file system is mounted over. Needs
//! root (tracefs, root's restore path, mount namespaces).

mod support;

use std::path::{Path, PathBuf};
use support::run::{assert_root, serial, text, xrunrig_in as xrunrig};

const ROOT: &str = "these tests mount tracefs and run root's restore path";
const TRACEFS: &str = "/sys/kernel/tracing";

fn tmp(tag: &str) -> PathBuf {
    xrunrig::testkit::private_dir(&format!("tjournal-{tag}"))
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 2 && f[1] == TRACEFS && f[2] == "tracefs"
        })
}

fn ensure_tracefs() {
    if !tracefs_mounted() {
        let ok = std::process::Command::new("mount")
            .args(["-t", "tracefs", "none", TRACEFS])
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot mount tracefs at {TRACEFS}");
    }
}

/// Written under the name version 1 used, so the same test runs against any xrunrig.
fn journal(state: &Path, body: serde_json::Value) -> PathBuf {
    let p = state.join("trace-journal.json");
    std::fs::write(&p, body.to_string()).unwrap();
    p
}

#[test]
fn a_forged_trace_journal_writes_nothing_through_its_links() {
    assert_root(ROOT);
    let _g = serial();
    let d = tmp("forged");
    let victim = d.join("shadow");
    std::fs::write(&victim, "root:secret\n").unwrap();
    // A directory shaped like a tracefs instance, its control files links to the victim.
    let forge = d.join("forge");
    let inst = forge.join("instances/xrunrig-999999999");
    std::fs::create_dir_all(inst.join("events")).unwrap();
    std::os::unix::fs::symlink(&victim, inst.join("tracing_on")).unwrap();
    std::os::unix::fs::symlink(&victim, inst.join("events/enable")).unwrap();
    let j = journal(
        &d,
        serde_json::json!({"version": 1, "pid": 999999999u32, "started": "s",
            "root": forge, "mounted_by_us": false, "instance": inst}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "root:secret\n",
        "written through the link: {}",
        text(&o)
    );
    assert!(
        inst.is_dir(),
        "the forged directory was removed: {}",
        text(&o)
    );
    // Its root is not a tracefs mount: nothing of it can remain in a tracefs, so it is
    // retired (issue 35, item 3), touching nothing.
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not mounted now"),
        "{}",
        text(&o)
    );
    assert!(!j.exists(), "a journal whose tracefs is gone is retired");
    // The same instance named under the real tracefs mount is refused too: a journal
    // may only name instances xrunrig makes, and only where tracefs really is.
    let j2 = journal(
        &d,
        serde_json::json!({"version": 1, "pid": 999999999u32, "started": "s",
            "root": TRACEFS, "mounted_by_us": false, "instance": "/etc/xrunrig-1"}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not under"), "{err}");
    assert!(err.contains("xrunrig restore --discard"), "{err}");
    assert!(j2.exists(), "a refused journal is kept for --discard");
    // --discard drops it, saying what it named, and undoes nothing.
    let o = xrunrig(&["restore", "--discard"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("/etc/xrunrig-1"),
        "{}",
        text(&o)
    );
    assert!(!j2.exists());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
    let o = xrunrig(&["restore"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
}

/// A journal that says "this run mounted tracefs" from before a reboot (or from a
/// version that recorded no boot) must not unmount the tracefs mounted now: that one is
/// systemd's (or another tool's), not ours.
#[test]
fn a_stale_trace_journal_never_unmounts_tracefs() {
    assert_root(ROOT);
    let _g = serial();
    ensure_tracefs();
    let d = tmp("stale");
    for (tag, boot) in [("other boot", Some("not-this-boot")), ("no boot id", None)] {
        let mut body = serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s",
            "root": TRACEFS, "mounted_by_us": true,
            "instance": format!("{TRACEFS}/instances/xrunrig-999999999")});
        match boot {
            Some(b) => body["boot_id"] = b.into(),
            None => body["version"] = 1.into(),
        }
        journal(&d, body);
        let o = xrunrig(&["restore"], &d, &d);
        let still = tracefs_mounted();
        ensure_tracefs(); // for whatever runs next, if the old code unmounted it
        assert!(still, "{tag}: tracefs was unmounted: {}", text(&o));
        assert!(o.status.success(), "{tag}: {}", text(&o));
        assert!(!d.join("trace-journal.json").exists(), "{tag}");
    }
    // This boot's journal naming an instance that is gone: nothing to remove, and the
    // journal is cleared (it mounted nothing now mounted by it: mounted_by_us false).
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999999u32, "started": "s",
            "boot_id": boot_id(), "root": TRACEFS, "mounted_by_us": false,
            "instance": format!("{TRACEFS}/instances/xrunrig-999999999")}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(tracefs_mounted());
    assert!(!d.join("trace-journal.json").exists());
}

/// A real instance left by a process that died (this boot, journal and all) is removed
/// by `xrunrig restore` through the checked path.
#[test]
fn a_dead_runs_instance_is_removed() {
    assert_root(ROOT);
    let _g = serial();
    ensure_tracefs();
    let d = tmp("dead");
    let inst = Path::new(TRACEFS).join("instances/xrunrig-999999998");
    let _ = std::fs::remove_dir(&inst);
    std::fs::create_dir(&inst).unwrap();
    std::fs::write(inst.join("tracing_on"), "1").unwrap();
    journal(
        &d,
        serde_json::json!({"version": 2, "pid": 999999998u32, "started": "s",
            "boot_id": boot_id(), "root": TRACEFS, "mounted_by_us": false,
            "instance": inst}),
    );
    let o = xrunrig(&["restore"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!inst.exists(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("xrunrig-999999998 removed"),
        "{}",
        text(&o)
    );
}

/// A journal of a dead pid naming a live run's instance is refused: the instance a
/// journal may remove is its own process's (`xrunrig-PID` with the journal's pid). The
/// live run here is a stand-in whose command line says xrunrig, as a run's does.
#[test]
fn a_dead_pids_journal_never_takes_a_live_runs_instance() {
    assert_root(ROOT);
    let _g = serial();
    ensure_tracefs();
    let d = tmp("tie");
    let mut live = std::process::Command::new("sh")
        .args(["-c", "sleep 60", "xrunrig-stand-in"])
        .spawn()
        .unwrap();
    let inst = Path::new(TRACEFS).join(format!("instances/xrunrig-{}", live.id()));
    let _ = std::fs::remove_dir(&inst);
    std::fs::create_dir(&inst).unwrap();
    let dead = 999999997u32;
    std::fs::write(
        d.join(format!("trace-journal-{dead}.json")),
        serde_json::json!({"version": 2, "pid": dead, "started": "s",
            "boot_id": boot_id(), "root": TRACEFS, "mounted_by_us": false,
            "instance": inst})
        .to_string(),
    )
    .unwrap();
    let o = xrunrig(&["restore"], &d, &d);
    let kept = inst.exists();
    let _ = live.kill();
    let _ = live.wait();
    let _ = std::fs::remove_dir(&inst);
    assert!(kept, "the live run's instance was removed: {}", text(&o));
    assert!(
        text(&o).contains("not its own process's"),
        "says why: {}",
        text(&o)
    );
}

/// `xrunrig restore` in a mount namespace of its own, after `setup` (sh, `set -e`) made
/// its mounts there: the bind mounts a forgery needs are seen by this restore alone,
/// never by the machine's other processes (whose own restores would trip on them).
fn restore_in_own_mounts(state: &Path, setup: &str) -> std::process::Output {
    std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-ec"])
        .arg(format!("{setup}\nexec \"$0\" restore"))
        .arg(support::run::BIN)
        .env("XRUNRIG_STATE_DIR", state)
        .current_dir(state)
        .output()
        .expect("run unshare (util-linux)")
}

/// A real tracefs instance of a dead pid, removed however the test ends.
struct Instance(PathBuf);

impl Instance {
    fn new(pid: u32) -> Instance {
        let p = Path::new(TRACEFS).join(format!("instances/xrunrig-{pid}"));
        let _ = std::fs::remove_dir(&p);
        std::fs::create_dir(&p).unwrap();
        Instance(p)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

fn this_boots_journal(d: &Path, pid: u32, inst: &Path) -> PathBuf {
    let p = d.join(format!("trace-journal-{pid}.json"));
    std::fs::write(
        &p,
        serde_json::json!({"version": 2, "pid": pid, "started": "s",
            "boot_id": boot_id(), "root": TRACEFS, "mounted_by_us": false,
            "instance": inst})
        .to_string(),
    )
    .unwrap();
    p
}

/// Past the mount-point check, at the descriptor layer (`tracefs::undo_instance`): a
/// journal of this boot that passes every check of its text (a dead pid, its own
/// instance, directly under the tracefs mounted now) while what is at that path is not
/// what xrunrig made. First another file system mounted over the instance, holding a
/// `tracing_on` file and an `events` link to a directory elsewhere; then a file
/// bind-mounted over a real instance's `tracing_on`. Neither stand-in may be written,
/// the instance stays, and the journal is refused and kept, saying the place is not
/// tracefs. The second wrote "0" into its stand-in on the code before (O_NOFOLLOW does
/// not stop at a mount); the first is held by both the mount check (openat2
/// RESOLVE_NO_XDEV) and the file system check (fstatfs), and written through when both
/// are taken out.
#[test]
fn the_descriptor_layer_refuses_what_is_not_tracefs() {
    assert_root(ROOT);
    let _g = serial();
    ensure_tracefs();
    let d = tmp("descriptors");
    // 1. Another file system over the whole instance.
    let pid = 999999995u32;
    let inst = Instance::new(pid);
    let forge = d.join("forge");
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(&forge).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(forge.join("tracing_on"), "1\n").unwrap();
    std::fs::write(elsewhere.join("enable"), "1\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, forge.join("events")).unwrap();
    let j = this_boots_journal(&d, pid, &inst.0);
    let o = restore_in_own_mounts(
        &d,
        &format!("mount --bind '{}' '{}'", forge.display(), inst.0.display()),
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&forge.join("tracing_on")), "1\n", "{}", text(&o));
    assert_eq!(read(&elsewhere.join("enable")), "1\n", "{}", text(&o));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("xrunrig-{pid} is not on a tracefs")),
        "says why: {}",
        text(&o)
    );
    assert!(err.contains("refused"), "{}", text(&o));
    assert!(inst.0.is_dir(), "the instance went: {}", text(&o));
    assert!(j.exists(), "a refused journal is kept: {}", text(&o));
    std::fs::remove_file(&j).unwrap();
    drop(inst);

    // 2. A real instance, with a file of another file system over its `tracing_on`.
    let pid = 999999994u32;
    let inst = Instance::new(pid);
    let standin = d.join("tracing_on-standin");
    std::fs::write(&standin, "1\n").unwrap();
    let j = this_boots_journal(&d, pid, &inst.0);
    let o = restore_in_own_mounts(
        &d,
        &format!(
            "mount --bind '{}' '{}/tracing_on'",
            standin.display(),
            inst.0.display()
        ),
    );
    assert_eq!(
        read(&standin),
        "1\n",
        "written across the mount: {}",
        text(&o)
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("xrunrig-{pid}/tracing_on is not on a tracefs")),
        "says why: {}",
        text(&o)
    );
    assert!(
        err.contains(&format!("xrunrig-{pid} was left as it is")),
        "{}",
        text(&o)
    );
    assert!(inst.0.is_dir(), "the instance went: {}", text(&o));
    assert!(j.exists(), "a refused journal is kept: {}", text(&o));
    // Without the mount (the namespace is gone), the same journal is undone.
    let o = xrunrig(&["restore"], &d, &d);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!inst.0.exists(), "{}", text(&o));
    assert!(!j.exists(), "{}", text(&o));
}
