//! `xrunrig bisect` on a synthetic history of Debian's linux-source-6.12: a git
//! repository in the build cache whose first commit is the tarball's tree, then the
//! seed's fix (patches/6.12), then 16 small real changes to kernel/sched/ and
//! elsewhere, one of which (at a position drawn from a seed the test prints) breaks
//! the push path the fix added, and one of which does not compile (fixed by the next).
//! The bisection must name the breaking commit, confirm it by reverting it on the bad
//! end, skip the commit that does not build, and print its wall time. The same on
//! the audio rig (a smaller range), and ends that do not differ stop before any
//! commit between them is built.
//!
//! Needs what tests/guest_build.rs needs (it builds debian-src:6.12 with and without
//! the fix first, through the same cache, so a CI run compiles the kernel once).

mod support;

use results::bisect::{BisectDoc, Outcome, Verdict};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use support::run::text as show;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const PATCH: &str = "patches/6.12/0001-sched-rt-push-boosted-task.patch";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn one() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

#[track_caller]
fn enabled() -> bool {
    support::guest::enabled(
        "kernel bisection",
        &[
            "qemu-system-x86_64",
            "make",
            "gcc",
            "flex",
            "bison",
            "bc",
            "patch",
            "git",
        ],
        "run .ci/setup (it installs git, build-essential flex bison bc libelf-dev libssl-dev \
         patch qemu-system-x86)",
    )
}

fn xrunrig(tag: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrunrig"));
    c.current_dir(repo()).env(
        "XRUNRIG_STATE_DIR",
        xrunrig::testkit::private_dir(&format!("guest-bisect-state-{tag}")),
    );
    c
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=xrunrig test",
            "-c",
            "user.email=test@xrunrig.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn git_stdin(dir: &Path, args: &[&str], input: &[u8]) -> String {
    use std::io::Write;
    let mut c = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Both 6.12 builds in the cache (the tarball's tree, and with the fix), as
/// tests/guest_build.rs makes them: a bisection's tree starts from one of them.
fn base_builds() {
    let out = xrunrig::testkit::private_dir("guest-bisect-base");
    let o = support::guest::attempt(&out.join("ab"), 0, || {
        xrunrig("base")
            .args([
                "run",
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
                "1",
                "--setting",
                "NO_RT_PUSH_IPI",
                "--variant",
                "pi",
                "--out",
            ])
            .arg(out.join("ab"))
            .output()
            .unwrap()
    });
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let _ = std::fs::remove_dir_all(&out);
}

/// The cached build of the tarball's tree (no patch).
fn tarball_tree() -> PathBuf {
    let trees = xrunrig::guest::build::cache_root().join("trees");
    for e in std::fs::read_dir(&trees).unwrap().flatten() {
        let Ok(t) = std::fs::read_to_string(e.path().join(".xrunrig-build.json")) else {
            continue;
        };
        let b: results::kbuild::KernelBuild = serde_json::from_str(&t).unwrap();
        if b.source == "debian-src:6.12" && b.patches.is_empty() {
            return e.path();
        }
    }
    panic!("no cached debian-src:6.12 build in {}", trees.display());
}

/// A bare repository holding the tarball's tree as its one commit, made once per
/// build cache (hashing 1.4 GB of sources takes a minute).
fn base_repo() -> PathBuf {
    let dir = xrunrig::guest::build::cache_root().join("test-history/base.git");
    if dir.join("xrunrig-done").exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "--bare"]);
    let release =
        std::fs::read_to_string(tarball_tree().join("include/config/kernel.release")).unwrap();
    // The tarball unpacked on its own: its .gitignore (Debian's) ignores everything at
    // the top, so every file is added by force; the build's products are not there.
    let tarball = std::fs::read_dir(xrunrig::guest::build::cache_root().join("src"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.xz"))
        .expect("linux-source-6.12's tarball in the build cache");
    let tree = dir.with_extension("unpacked");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&tree).unwrap();
    let t0 = std::time::Instant::now();
    let st = Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&tree)
        .arg("--strip-components=1")
        .status()
        .unwrap();
    assert!(st.success());
    let st = Command::new("git")
        .arg("--git-dir")
        .arg(&dir)
        .arg("--work-tree")
        .arg(&tree)
        .args(["-c", "core.bare=false", "add", "-A", "-f", "."])
        .current_dir(&tree)
        .status()
        .unwrap();
    assert!(st.success());
    let msg = format!("Linux {} (Debian linux-source-6.12)", release.trim());
    let st = Command::new("git")
        .arg("--git-dir")
        .arg(&dir)
        .arg("--work-tree")
        .arg(&tree)
        .args([
            "-c",
            "core.bare=false",
            "-c",
            "user.name=xrunrig test",
            "-c",
            "user.email=test@xrunrig.invalid",
            "commit",
            "-q",
            "-m",
            &msg,
        ])
        .status()
        .unwrap();
    assert!(st.success());
    eprintln!(
        "test: the tarball's tree committed in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::write(dir.join("xrunrig-done"), b"").unwrap();
    dir
}

/// One change of the history: the file, what is done to it, the subject.
struct Change {
    path: &'static str,
    subject: &'static str,
    edit: fn(String) -> String,
}

fn append(text: &str) -> impl Fn(String) -> String + '_ {
    move |s: String| format!("{s}{text}")
}

/// Small real changes: comments and documentation in kernel/sched/ and elsewhere,
/// each compiled into the kernel (or not) as such a change would be.
fn harmless() -> Vec<Change> {
    macro_rules! c {
        ($p:expr, $s:expr, $t:expr) => {
            Change {
                path: $p,
                subject: $s,
                edit: |s| append($t)(s),
            }
        };
    }
    vec![
        c!(
            "kernel/sched/rt.c",
            "sched/rt: say why push_rt_task() retries once",
            "\n/*\n * push_rt_task() retries once: the first pick may have migrated while\n * the lock was dropped.\n */\n"
        ),
        c!(
            "Documentation/scheduler/sched-rt-group.rst",
            "docs: sched-rt-group: mention that RT_PUSH_IPI changes pulling",
            "\nWith the RT_PUSH_IPI scheduler feature, a CPU lowering its priority asks an\noverloaded CPU to push instead of pulling from it.\n"
        ),
        c!(
            "kernel/sched/cpupri.c",
            "sched/cpupri: note what cpupri_find() returns for a boosted task",
            "\n/* cpupri_find() sees a boosted task at its boosted priority. */\n"
        ),
        c!(
            "kernel/locking/rtmutex.c",
            "locking/rtmutex: note where the owner is boosted",
            "\n/* The owner is boosted in rt_mutex_adjust_prio_chain(). */\n"
        ),
        c!(
            "kernel/sched/deadline.c",
            "sched/deadline: comment on the push path shared with rt",
            "\n/* The push and pull of deadline tasks mirror kernel/sched/rt.c's. */\n"
        ),
        c!(
            "kernel/sched/stats.c",
            "sched/stats: comment on schedstat's RT fields",
            "\n/* RT tasks' wait times are counted as the fair class's are. */\n"
        ),
        c!(
            "kernel/sched/topology.c",
            "sched/topology: comment on root domains and RT overload",
            "\n/* rd->rto_mask: the CPUs of this root domain with more than one RT task. */\n"
        ),
        c!(
            "lib/sort.c",
            "lib/sort: say the sort is not stable",
            "\n/* sort() is a heapsort: not stable. */\n"
        ),
        c!(
            "Documentation/locking/rt-mutex.rst",
            "docs: rt-mutex: say the boost follows the waiter's priority",
            "\nThe owner's priority follows its highest-priority waiter's.\n"
        ),
        c!(
            "kernel/sched/wait.c",
            "sched/wait: comment on exclusive waiters",
            "\n/* Exclusive waiters are woken one at a time. */\n"
        ),
        c!(
            "kernel/time/hrtimer.c",
            "hrtimer: comment on the soft expiry",
            "\n/* Soft hrtimers expire in the HRTIMER_SOFTIRQ. */\n"
        ),
        c!(
            "kernel/sched/idle.c",
            "sched/idle: comment on the idle pull",
            "\n/* An idle CPU pulls RT tasks through the balance callbacks. */\n"
        ),
        c!(
            "kernel/futex/pi.c",
            "futex/pi: comment on the PI state's owner",
            "\n/* pi_state->owner is the task the rt_mutex boosts. */\n"
        ),
    ]
}

/// The breaking change: the push the fix queues is kept for tasks that may run on
/// more than two CPUs — which the rig's owner (two CPUs) is not.
fn breaking(s: String) -> String {
    let from = "if (p->nr_cpus_allowed > 1 && p->prio < oldprio &&";
    assert!(s.contains(from), "the fix is in rt.c");
    s.replacen(
        from,
        "if (p->nr_cpus_allowed > 2 && p->prio < oldprio &&",
        1,
    )
}

fn does_not_build(s: String) -> String {
    format!("{s}\nstatic int xrunrig_test_broken = ;\n")
}

fn builds_again(s: String) -> String {
    s.replace("\nstatic int xrunrig_test_broken = ;\n", "")
}

/// Commits a change on top of HEAD without a work tree: the blob, the index, a commit.
fn commit(dir: &Path, path: &str, subject: &str, edit: &dyn Fn(String) -> String) -> String {
    let old = git(dir, &["show", &format!("HEAD:{path}")]) + "\n";
    let new = edit(old.clone());
    assert_ne!(new, old, "{subject} changes {path}");
    let blob = git_stdin(dir, &["hash-object", "-w", "--stdin"], new.as_bytes());
    git(
        dir,
        &[
            "update-index",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ],
    );
    git(dir, &["commit", "-q", "-m", subject]);
    git(dir, &["rev-parse", "HEAD"])
}

/// The history: [0] the tarball, [1] the fix, then 16 changes. Returns the commits,
/// the breaking one's index and the one that does not build.
struct History {
    /// A user's repository, as under sudo: `nobody`'s, with hooks and an fsmonitor
    /// that leave a line in `marks/ran` when anything runs them.
    dir: PathBuf,
    marks: PathBuf,
    shas: Vec<String>,
    breaks: usize,
    unbuildable: usize,
}

fn seed() -> u64 {
    std::env::var("XRUNRIG_BISECT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

fn history() -> &'static History {
    static H: OnceLock<History> = OnceLock::new();
    H.get_or_init(|| {
        base_builds();
        let base = base_repo();
        let dir = xrunrig::guest::build::cache_root().join("test-history/linux");
        let _ = std::fs::remove_dir_all(&dir);
        let st = Command::new("git")
            .args(["clone", "-q", "--shared", "--no-checkout"])
            .arg(&base)
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
        git(&dir, &["read-tree", "HEAD"]);
        let mut shas = vec![git(&dir, &["rev-parse", "HEAD"])];
        let fix = std::fs::read(repo().join(PATCH)).unwrap();
        git_stdin(&dir, &["apply", "--cached", "-"], &fix);
        git(&dir, &["commit", "-q", "-m", "sched/rt: queue a push when a queued RT task is boosted"]);
        shas.push(git(&dir, &["rev-parse", "HEAD"]));
        // 16 changes after the fix (XRUNRIG_BISECT_COMMITS=32 makes the benchmark's
        // longer line): git bisect's first pick in a line of n after the good end is
        // the (n/2)th; the one that does not build goes there so the bisection meets
        // it; the break anywhere else but next to it.
        let s = seed();
        let n: usize = std::env::var("XRUNRIG_BISECT_COMMITS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(16)
            .max(8);
        let unbuildable = 1 + n / 2;
        let mut breaks = unbuildable;
        let mut x = s;
        while breaks == unbuildable || breaks == unbuildable + 1 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            breaks = 2 + (x >> 33) as usize % n;
        }
        eprintln!(
            "test: seed {s} (XRUNRIG_BISECT_SEED={s} repeats it): the break is commit {breaks} of {}, the unbuildable one {unbuildable}",
            n + 1
        );
        // More changes than the pool holds: the pool again, each a further comment.
        let pool = harmless();
        let mut next = 0usize;
        for i in 2..2 + n {
            let sha = if i == breaks {
                commit(
                    &dir,
                    "kernel/sched/rt.c",
                    "sched/rt: push a boosted task only when it may run on more than two CPUs",
                    &breaking,
                )
            } else if i == unbuildable {
                commit(
                    &dir,
                    "kernel/sched/wait.c",
                    "sched/wait: add a counter (does not build)",
                    &does_not_build,
                )
            } else if i == unbuildable + 1 {
                commit(&dir, "kernel/sched/wait.c", "sched/wait: fix the build", &builds_again)
            } else {
                let c = &pool[next % pool.len()];
                let round = next / pool.len();
                next += 1;
                if round == 0 {
                    commit(&dir, c.path, c.subject, &c.edit)
                } else {
                    let more = if c.path.ends_with(".c") {
                        format!("\n/* xrunrig test history: note {round}. */\n")
                    } else {
                        format!("\nxrunrig test history: note {round}.\n")
                    };
                    commit(
                        &dir,
                        c.path,
                        &format!("{} ({})", c.subject, round + 1),
                        &|s: String| (c.edit)(s) + &more,
                    )
                }
            };
            shas.push(sha);
        }
        let marks = give_to_a_user(&dir);
        History {
            dir,
            shas,
            breaks,
            unbuildable,
            marks,
        }
    })
}

/// `dir` given to `nobody` with recording hooks and fsmonitor, as a user's tree is under
/// sudo: the bisection must build it, and write nothing into it, as that user. Returns
/// the marks directory (`ran`: what ran a hook; `before`: the hand-over's time).
fn give_to_a_user(dir: &Path) -> PathBuf {
    let marks = dir.with_file_name("marks");
    support::git::hand_to_nobody(dir, &marks);
    marks
}

/// Nothing under the user's `.git` newer than the hand-over, no hook ran, and every
/// file of theirs is still theirs.
fn untouched(h: &History) {
    support::git::untouched(&h.dir, &h.marks);
}

fn bisect(tag: &str, args: &[&str], out: &Path) -> (Output, f64) {
    let t0 = std::time::Instant::now();
    let o = xrunrig(tag)
        .arg("bisect")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    eprintln!("{}", show(&o));
    eprintln!("test: the bisection took {wall:.0} s");
    (o, wall)
}

fn doc(out: &Path) -> BisectDoc {
    serde_json::from_str(&std::fs::read_to_string(out.join("bisect.json")).unwrap()).unwrap()
}

#[test]
fn bisect_names_the_breaking_commit_skips_the_unbuildable_one_and_confirms_by_revert() {
    if !enabled() {
        return;
    }
    let _one = one();
    let h = history();
    let out = xrunrig::testkit::private_dir("guest-bisect-pi").join("b");
    let tree = h.dir.display().to_string();
    let good = h.shas[1].clone();
    let bad = h.shas[h.shas.len() - 1].clone();
    let args = [
        "rigs/pi-boost-affinity.toml",
        "--profile",
        "profiles/rt-push-ipi.toml",
        "--setting",
        "NO_RT_PUSH_IPI",
        "--variant",
        "pi",
        "--tree",
        &tree,
        "--good",
        &good,
        "--bad",
        &bad,
        "--accel",
        "tcg",
    ];
    // Killed (SIGKILL) once two steps are on record, then the same command: it resumes.
    let t0 = std::time::Instant::now();
    let mut child = xrunrig("pi")
        .arg("bisect")
        .args(args)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let before_kill = loop {
        std::thread::sleep(std::time::Duration::from_secs(2));
        if let Some(st) = child.try_wait().unwrap() {
            panic!("the bisection ended ({st}) before two steps were on record");
        }
        let Ok(t) = std::fs::read_to_string(out.join("bisect.json")) else {
            continue;
        };
        let Ok(d) = serde_json::from_str::<BisectDoc>(&t) else {
            continue;
        };
        if d.steps.len() >= 2 {
            child.kill().unwrap();
            child.wait().unwrap();
            break d;
        }
    };
    let killed_after = t0.elapsed().as_secs_f64();
    let (o, resumed) = bisect("pi", &args, &out);
    let wall = killed_after + resumed;
    let text = show(&o);
    let d = doc(&out);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(d.range as usize, h.shas.len() - 2, "{text}");
    assert!(text.contains("resuming the bisection"), "{text}");
    assert_eq!(
        d.steps[..2],
        before_kill.steps[..2],
        "the steps before the kill are kept as they were"
    );
    let first = d.first_bad.clone().expect("a first bad commit");
    assert_eq!(first.sha, h.shas[h.breaks], "{text}");
    assert_eq!(
        d.outcome,
        Outcome::Found {
            confirmed: Some(true)
        },
        "{text}"
    );
    let conf = d.confirmation.clone().unwrap();
    assert_eq!(conf.verdict, Verdict::Good, "{text}");
    // The commit that does not build was met, skipped and said; the bisection went on.
    let broken = d
        .steps
        .iter()
        .find(|s| s.commit.sha == h.shas[h.unbuildable])
        .expect("the first step is the unbuildable commit");
    assert_eq!(broken.verdict, Verdict::BuildFailed, "{text}");
    assert!(
        broken
            .note
            .as_deref()
            .unwrap_or("")
            .contains("xrunrig_test_broken"),
        "{:?}",
        broken.note
    );
    assert!(text.contains("skip (build failed)"), "{text}");
    // Every decided step agrees with where the break is.
    for s in &d.steps {
        let i = h.shas.iter().position(|x| x == &s.commit.sha).unwrap();
        match s.verdict {
            Verdict::Good => assert!(i < h.breaks, "{i} called good: {text}"),
            Verdict::Bad => assert!(i >= h.breaks, "{i} called bad: {text}"),
            _ => {}
        }
    }
    // One build tree, checked out in place: every build names the same directory.
    let dirs: std::collections::BTreeSet<String> = d
        .ends
        .iter()
        .chain(&d.steps)
        .filter_map(|s| s.build.as_ref()?.build_dir.clone())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    // The record replays in git: bisect.log names the first bad commit.
    let log = std::fs::read_to_string(out.join("bisect.log")).unwrap();
    assert!(
        log.contains(&format!("# first bad commit: [{}]", h.shas[h.breaks])),
        "{log}"
    );
    assert!(text.contains("first bad commit:"), "{text}");
    // A whole bisection, its confirmation included, on a user's tree: nothing of
    // theirs written or run, and the kernel built as them (its tree is theirs).
    untouched(h);
    // Whatever the steps' builds wrote in the build tree was written as the user: no
    // file there newer than the hand-over is root's but the configuration fragment
    // root writes for make to read.
    let tree_dir = dirs.iter().next().unwrap();
    let by_root = Command::new("find")
        .arg(tree_dir)
        .arg("-newer")
        .arg(h.marks.join("before"))
        .args(["-uid", "0", "!", "-name", ".xrunrig-guest.config"])
        .output()
        .unwrap();
    let by_root = String::from_utf8_lossy(&by_root.stdout).trim().to_string();
    assert!(
        by_root.is_empty(),
        "the build tree written as root: {by_root}"
    );
    eprintln!(
        "test: {} commits bisected in {wall:.0} s ({} steps, builds {:.0} s, runs {:.0} s)",
        d.range,
        d.steps.len(),
        d.ends
            .iter()
            .chain(&d.steps)
            .chain(d.confirmation.as_ref())
            .map(|s| s.build_s)
            .sum::<f64>(),
        d.ends
            .iter()
            .chain(&d.steps)
            .chain(d.confirmation.as_ref())
            .map(|s| s.run_s)
            .sum::<f64>()
    );
}

#[test]
fn ends_that_do_not_differ_stop_before_anything_between_them_is_built() {
    if !enabled() {
        return;
    }
    let _one = one();
    let h = history();
    let out = xrunrig::testkit::private_dir("guest-bisect-same").join("b");
    let tree = h.dir.display().to_string();
    // Both ends after the break (both without the push), or both before it when the
    // break is the last commit; the ends are kernels the other tests build too.
    let last = h.shas.len() - 1;
    let (good, bad) = if h.breaks < last {
        (h.breaks, last)
    } else {
        (1, h.unbuildable - 1)
    };
    let before = build_logs();
    let (o, _) = bisect(
        "same",
        &[
            "rigs/pi-boost-affinity.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--setting",
            "NO_RT_PUSH_IPI",
            "--variant",
            "pi",
            "--tree",
            &tree,
            "--good",
            &h.shas[good],
            "--bad",
            &h.shas[bad],
            "--accel",
            "tcg",
        ],
        &out,
    );
    let text = show(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let d = doc(&out);
    assert!(
        matches!(&d.outcome, Outcome::EndsDoNotDiffer { why } if why.contains("the ends do not differ")),
        "{:?}\n{text}",
        d.outcome
    );
    assert!(d.steps.is_empty() && d.first_bad.is_none(), "{text}");
    assert!(text.contains("nothing between them was built"), "{text}");
    // Only the ends were built (or found kept): no commit between them.
    let after = build_logs();
    let new = &after[before.len().min(after.len())..];
    for c in &h.shas[good + 1..bad] {
        assert!(
            !new.contains(&format!("building {}", &c[..12])),
            "{c} was built:\n{new}\n{text}"
        );
    }
}

/// Every bisection build log, in one text (a test's own builds are what it appends).
fn build_logs() -> String {
    let dir = xrunrig::guest::build::worktree::bisect_root().join("logs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// The audio rig: a dropout is a deadline miss (its `[livefx] pass`), the range a few
/// commits around the break. Named to sort last: the tests take the one lock in name
/// order, so the first test's kept kernels save this one builds.
#[test]
fn the_audio_rig_is_bisected_too() {
    if !enabled() {
        return;
    }
    let _one = one();
    let h = history();
    let out = xrunrig::testkit::private_dir("guest-bisect-livefx").join("b");
    let tree = h.dir.display().to_string();
    let good = h.breaks - 1;
    let mut bad = (h.breaks + 1).min(h.shas.len() - 1);
    if bad == h.unbuildable {
        bad += 2;
    }
    let (o, wall) = bisect(
        "livefx",
        &[
            "rigs/livefx-push-ipi.toml",
            "--profile",
            "profiles/rt-push-ipi.toml",
            "--setting",
            "NO_RT_PUSH_IPI",
            "--variant",
            "pi",
            "--duration",
            "3 s",
            "--tree",
            &tree,
            "--good",
            &h.shas[good],
            "--bad",
            &h.shas[bad],
            "--accel",
            "tcg",
        ],
        &out,
    );
    let text = show(&o);
    let d = doc(&out);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert_eq!(
        d.first_bad.as_ref().map(|c| c.sha.as_str()),
        Some(h.shas[h.breaks].as_str()),
        "{text}"
    );
    assert_eq!(
        d.outcome,
        Outcome::Found {
            confirmed: Some(true)
        },
        "{text}"
    );
    assert!(d.rule.criterion.contains("deadline misses"), "{:?}", d.rule);
    eprintln!(
        "test: the audio rig's bisection of {} commits took {wall:.0} s",
        d.range
    );
}
