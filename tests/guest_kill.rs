//! Issue 13, item 5 inside a guest: the kill -9 matrix with a profile that flips sched
//! features, which only a guest kernel lets us write (on this host they are behind
//! lockdown). In one TCG boot of a Debian 6.12 kernel, the guest's /init
//! (XRUNRIG_GUEST_TEST_INJECT=kill:SEED, `initramfs::Inject::Kill`) starts
//! `xrunrig run rigs/pi-inversion.toml --profile profiles/rt-push-ipi.toml` three times
//! and SIGKILLs it at seeded moments: inside the apply (after both writes of
//! RT_PUSH_IPI's setting), mid-trial, and inside the restore, each widened by
//! XRUNRIG_TEST_STALL_MS; after each, `xrunrig restore` in the same boot must put
//! /sys/kernel/debug/sched/features back to what it was before. Then the run itself
//! runs and ships as usual. The seed is printed; XRUNRIG_KILL_SEED replays it.
//!
//! Needs root, qemu-system-x86_64 and a Debian 6.12 kernel package (`.ci/fetch-kernel`).

mod support;

use std::time::Instant;

#[test]
fn kill_9_in_a_guest_and_restore_puts_sched_features_back() {
    support::guest::prerequisites();
    let seed = support::run::kill_seed();
    let d = xrunrig::testkit::private_dir("guest-kill");
    let out = d.join("res");
    let t0 = Instant::now();
    // The matrix runs in the first boot only: an emulator fault redoes it all
    // (support::guest::attempt), once.
    let o = support::guest::attempt(&out, 0, || {
        support::run::command(&d)
            .env("XRUNRIG_GUEST_TEST_INJECT", format!("kill:{seed}"))
            .args(["run", "rigs/pi-inversion.toml"])
            .args(["--profile", "profiles/rt-push-ipi.toml"])
            .args(["--kernel", "debian:6.12", "--trials", "1", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    });
    let text = support::run::text(&o);
    eprintln!("{text}\ntook {:?}", t0.elapsed());
    assert_eq!(o.status.code(), Some(0), "{text}");
    let log = std::fs::read_to_string(out.join("kill.log"))
        .unwrap_or_else(|e| panic!("no kill.log from the guest ({e}): {text}"));
    eprintln!("kill.log:\n{log}");
    let before = log
        .lines()
        .find_map(|l| l.strip_prefix("before: "))
        .unwrap_or_else(|| panic!("no features before: {log}"));
    // Stock 6.12 boots without RT_PUSH_IPI; the profile's first setting turns it on.
    assert!(before.contains("NO_RT_PUSH_IPI"), "{log}");
    let kills: Vec<&str> = log.lines().filter(|l| l.starts_with("kill ")).collect();
    assert_eq!(kills.len(), 3, "{log}");
    for k in &kills {
        assert!(
            k.ends_with("restore rc 0; features back"),
            "the next start left sched features changed: {k}\n{log}"
        );
    }
    // The kill inside the apply (after both of RT_PUSH_IPI's writes) caught the features
    // changed: the restore had something to put back. (Mid-trial and mid-restore kills
    // may land where a feature write already put them back: not asserted.)
    assert!(kills[0].contains("changed-at-kill yes"), "{log}");
    // The run after the matrix started from the features the boot had.
    let run = support::run::json(&out.join("run.json"));
    let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        run["sched_features_before"].as_str().map(words),
        Some(words(before)),
        "{run}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
