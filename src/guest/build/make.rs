//! The guest config (virtme-ng's way: a base defconfig, the kernel's own
//! kvm_guest.config, then xrunrig's fragment) and `make bzImage`, niced, with its
//! output in the build log and a progress line; a failure comes back with the last
//! compiler lines.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// xrunrig's fragment: what the rigs need, what a guest never uses turned off.
pub const FRAGMENT: &str = include_str!("guest.config");
/// How the config is made, for provenance and the cache key.
pub const RECIPE: &str = "x86_64_defconfig + kernel/configs/kvm_guest.config + xrunrig guest.config (merge_config.sh, olddefconfig)";

/// A configuring step: its failure told as the machine's or the source's, as make's is.
fn run_logged(tree: &Path, args: &[&str], log: &mut std::fs::File) -> Result<(), Failure> {
    let _ = writeln!(log, "$ {}", args.join(" "));
    let mut c = Command::new(args[0]);
    c.args(&args[1..]).current_dir(tree);
    super::worktree::as_owner_of(&mut c, tree);
    let o = c
        .output()
        .map_err(|e| Failure::Transient(format!("cannot run {}: {e}", args[0])))?;
    let _ = log.write_all(&o.stdout);
    let _ = log.write_all(&o.stderr);
    if !o.status.success() {
        let said = format!(
            "`{}` failed in {}:\n{}",
            args.join(" "),
            tree.display(),
            last_lines(&String::from_utf8_lossy(&o.stderr), 15)
        );
        let all = [o.stdout, o.stderr].concat();
        use std::os::unix::process::ExitStatusExt;
        return Err(
            match transient(o.status.signal(), &String::from_utf8_lossy(&all)) {
                Some(why) => {
                    Failure::Transient(format!("{said}\n{why}; this says nothing of the commit"))
                }
                None => Failure::Content(said),
            },
        );
    }
    Ok(())
}

/// A file the build could not write or read: the machine's when the disk or memory
/// ran out, else the tree's.
fn io_failure(what: &Path, e: std::io::Error) -> Failure {
    let text = format!("{}: {e}", what.display());
    match e.raw_os_error() {
        Some(libc::ENOSPC | libc::EDQUOT | libc::ENOMEM) => Failure::Transient(text),
        _ => Failure::Content(text),
    }
}

/// Writes .config in `tree`; returns the fragment's settings the final config does
/// not have (the kernel's Kconfig refused them: a dependency is missing).
pub fn configure(tree: &Path, log: &mut std::fs::File) -> Result<Vec<String>, Failure> {
    let frag = tree.join(".xrunrig-guest.config");
    // Root writes into a tree that may be a user's: never through a link there.
    super::worktree::open_beneath(tree, ".xrunrig-guest.config", true)
        .and_then(|mut f| f.write_all(FRAGMENT.as_bytes()))
        .map_err(|e| io_failure(&frag, e))?;
    run_logged(tree, &["make", "x86_64_defconfig"], log)?;
    let mut merge = vec![
        "scripts/kconfig/merge_config.sh",
        "-m",
        ".config",
        ".xrunrig-guest.config",
    ];
    if tree.join("kernel/configs/kvm_guest.config").is_file() {
        merge.insert(3, "kernel/configs/kvm_guest.config");
    }
    run_logged(tree, &merge, log)?;
    run_logged(tree, &["make", "olddefconfig"], log)?;
    let cfg = std::fs::read_to_string(tree.join(".config"))
        .map_err(|e| io_failure(&tree.join(".config"), e))?;
    Ok(missing(FRAGMENT, &cfg))
}

/// The fragment's lines that the final .config does not repeat.
pub fn missing(fragment: &str, config: &str) -> Vec<String> {
    let have: std::collections::BTreeSet<&str> = config.lines().map(str::trim).collect();
    fragment
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("CONFIG_") || (l.starts_with("# CONFIG_") && l.ends_with(" is not set"))
        })
        .filter(|l| {
            if have.contains(l) {
                return false;
            }
            // "is not set" also holds when the symbol is absent (its menu is off).
            match l
                .strip_prefix("# ")
                .and_then(|x| x.strip_suffix(" is not set"))
            {
                Some(sym) => have.iter().any(|h| h.starts_with(&format!("{sym}="))),
                None => true,
            }
        })
        .map(str::to_string)
        .collect()
}

pub fn last_lines(s: &str, n: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(n)..].join("\n")
}

/// The compiler's complaint out of a failed build's log: the error lines with what
/// follows each, else the log's tail.
pub fn compiler_error(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let mut out: Vec<&str> = vec![];
    for (i, l) in lines.iter().enumerate() {
        if l.contains("error:") || l.contains("Error ") || l.contains("undefined reference") {
            let from = i.saturating_sub(if l.contains("error:") { 1 } else { 0 });
            for x in &lines[from..(i + 3).min(lines.len())] {
                if out.last() != Some(x) && !out.contains(x) {
                    out.push(x);
                }
            }
        }
        if out.len() > 40 {
            break;
        }
    }
    if out.is_empty() {
        return last_lines(log, 20);
    }
    out.join("\n")
}

/// Why a build failed: the commit's own content, or the machine (no space, memory,
/// make killed by a signal), which says nothing of the commit: a bisection stops on
/// that, to be resumed with the same command, and never skips the commit for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    Content(String),
    Transient(String),
}

impl Failure {
    pub fn text(self) -> String {
        match self {
            Failure::Content(s) | Failure::Transient(s) => s,
        }
    }
}

/// The machine's part in a failed build, from make's end (`signal`: the signal that
/// killed it, if one did) and this build's own part of the log: None when the failure
/// is the source's.
pub fn transient(signal: Option<i32>, log: &str) -> Option<String> {
    if let Some(sig) = signal {
        return Some(format!(
            "make was killed by signal {sig}{} (not by anything in the source)",
            if sig == libc::SIGKILL {
                ", as the kernel's out-of-memory killer does"
            } else {
                ""
            }
        ));
    }
    let said = |pats: &[&str]| log.lines().find(|l| pats.iter().any(|p| l.contains(p)));
    if let Some(l) = said(&["No space left on device", "Disk quota exceeded"]) {
        return Some(format!("the disk is full: {}", l.trim()));
    }
    if let Some(l) = said(&[
        "Cannot allocate memory",
        "virtual memory exhausted",
        "out of memory allocating",
        "Killed signal terminated program",
    ]) {
        return Some(format!("the machine ran out of memory: {}", l.trim()));
    }
    None
}

/// What a kbuild line says it is doing: "CC kernel/sched/rt.o".
fn step(line: &str) -> Option<String> {
    let t = line.trim_start();
    let (verb, rest) = t.split_once(char::is_whitespace)?;
    (verb.len() <= 8
        && verb
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
    .then(|| format!("{verb} {}", rest.trim()))
}

/// `nice -n 19 make -jN bzImage` in `tree`, every line into the log; `what` names
/// the kernel in the progress line.
/// A failure names the compiler's complaint from this build's own part of the log (the
/// log is appended across a tree's builds: an older build's error is not this one's).
pub fn make(tree: &Path, log_path: &Path, what: &str) -> Result<(), Failure> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log_path)
        .map_err(|e| Failure::Transient(format!("{}: {e}", log_path.display())))?;
    let from = log.metadata().map_or(0, |m| m.len()) as usize;
    let _ = writeln!(log, "$ nice -n 19 make -j{jobs} bzImage");
    // stderr joins stdout through the shell so the log keeps their order.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "exec nice -n 19 make -j\"$1\" bzImage 2>&1", "sh"])
        .arg(jobs.to_string())
        .current_dir(tree)
        .stdout(Stdio::piped())
        .stdin(Stdio::null());
    // A bisection's tree is the user's: make (and all the tree's Makefiles and scripts
    // run) as them, not as root.
    super::worktree::as_owner_of(&mut cmd, tree);
    // A killed xrunrig must not leave make writing into a tree the next run (a resumed
    // bisection) builds in: make gets SIGTERM when its parent dies.
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure::Transient(format!("cannot run make: {e}")))?;
    let out = child.stdout.take().expect("piped");
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("XRUNRIG_NO_PROGRESS").is_none();
    let t0 = Instant::now();
    let mut last = Instant::now();
    let mut n = 0u64;
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        let _ = writeln!(log, "{line}");
        if let Some(s) = step(&line) {
            n += 1;
            // A terminal gets a live line; a log or a pipe a line every 30 s.
            let every = if tty {
                Duration::from_millis(200)
            } else {
                Duration::from_secs(30)
            };
            if last.elapsed() >= every {
                last = Instant::now();
                let msg = format!(
                    "xrunrig: building {what}: {s} ({n} steps, {:.0} s)",
                    t0.elapsed().as_secs_f64()
                );
                if tty {
                    let w: String = msg.chars().take(110).collect();
                    eprint!("\r\x1b[K{w}");
                } else {
                    eprintln!("{msg}");
                }
            }
        }
    }
    if tty {
        eprint!("\r\x1b[K");
    }
    let st = child
        .wait()
        .map_err(|e| Failure::Transient(format!("make: {e}")))?;
    let _ = writeln!(log, "make exit: {st}, {:.1} s", t0.elapsed().as_secs_f64());
    if !st.success() {
        let text = std::fs::read(log_path).unwrap_or_default();
        let own = String::from_utf8_lossy(text.get(from..).unwrap_or_default());
        // make runs under sh -c ... exec: the shell is make, its signal make's.
        use std::os::unix::process::ExitStatusExt;
        if let Some(why) = transient(st.signal(), &own) {
            return Err(Failure::Transient(format!(
                "building {what} stopped: {why}; this says nothing of the commit (log: {})",
                log_path.display()
            )));
        }
        return Err(Failure::Content(format!(
            "building {what} failed (make: {st}); the compiler said:\n{}\nwhole log: {}",
            compiler_error(&own),
            log_path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kbuild_steps() {
        assert_eq!(
            step("  CC      kernel/sched/rt.o").as_deref(),
            Some("CC kernel/sched/rt.o")
        );
        assert_eq!(step("  LD [M]  x.ko").as_deref(), Some("LD [M]  x.ko"));
        assert_eq!(step("kernel/sched/rt.c:12: error: x"), None);
    }

    #[test]
    fn compiler_errors_come_first() {
        let log = "  CC a.o\n  CC kernel/sched/rt.o\nkernel/sched/rt.c: In function 'f':\n\
            kernel/sched/rt.c:2540:3: error: 'bogus' undeclared\n 2540 | bogus;\n\
            make[4]: *** [scripts/Makefile.build:229: kernel/sched/rt.o] Error 1\nmake: *** Error 2\n";
        let e = compiler_error(log);
        assert!(e.contains("rt.c:2540:3: error: 'bogus' undeclared"), "{e}");
        assert!(e.contains("In function 'f'"), "{e}");
        assert!(!e.contains("CC a.o"), "{e}");
    }

    #[test]
    fn the_machines_failures_are_told_from_the_sources() {
        assert!(
            transient(Some(libc::SIGKILL), "")
                .unwrap()
                .contains("out-of-memory")
        );
        let full = "  CC a.o\nfatal error: error writing to /tmp/ccX.s: No space left on device\n";
        assert!(
            transient(None, full)
                .unwrap()
                .starts_with("the disk is full")
        );
        let oom = "gcc: fatal error: Killed signal terminated program cc1\n";
        assert!(transient(None, oom).unwrap().contains("out of memory"));
        let src = "kernel/sched/rt.c:2540:3: error: 'bogus' undeclared\nmake: *** Error 2\n";
        assert_eq!(transient(None, src), None);
    }

    /// A tree whose Makefile runs `bzimage` for bzImage and `defconfig` for
    /// x86_64_defconfig (make's `$$` for the shell's `$`), with `files` in it; built by
    /// `make()` or configured by `configure()` as a bisection's step is. `at`: where the
    /// tree goes (a directory of the test's own when None).
    fn tree(
        tag: &str,
        at: Option<&Path>,
        bzimage: &str,
        defconfig: &str,
        files: &[(&str, &str)],
    ) -> std::path::PathBuf {
        let t = match at {
            Some(a) => a.join("tree"),
            None => crate::testkit::private_dir(&format!("make-{tag}")).join("tree"),
        };
        std::fs::create_dir_all(&t).unwrap();
        let mk = format!("bzImage:\n\t{bzimage}\nx86_64_defconfig:\n\t{defconfig}\n");
        std::fs::write(t.join("Makefile"), mk).unwrap();
        for (name, text) in files {
            std::fs::write(t.join(name), text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            if text.starts_with("#!") {
                std::fs::set_permissions(t.join(name), std::fs::Permissions::from_mode(0o755))
                    .unwrap();
            }
        }
        t
    }

    fn build(t: &Path) -> Result<(), Failure> {
        make(t, &t.with_file_name("build.log"), "the test's tree")
    }

    fn configured(t: &Path) -> Result<Vec<String>, Failure> {
        let mut log = std::fs::File::create(t.with_file_name("config.log")).unwrap();
        configure(t, &mut log)
    }

    fn transient_saying(r: Result<(), Failure>, what: &str) {
        match r {
            Err(Failure::Transient(s)) => assert!(s.contains(what), "{s}"),
            other => panic!("not the machine's ({what}): {other:?}"),
        }
    }

    /// make itself killed by SIGKILL, as the out-of-memory killer kills it; and the
    /// configuring make killed so.
    #[test]
    fn make_killed_by_sigkill_is_the_machines() {
        let t = tree(
            "sigkill",
            None,
            "kill -KILL $$PPID",
            "kill -KILL $$PPID",
            &[],
        );
        transient_saying(build(&t), "killed by signal 9");
        match configured(&t) {
            Err(Failure::Transient(s)) => assert!(s.contains("killed by signal 9"), "{s}"),
            other => panic!("{other:?}"),
        }
    }

    /// gcc's compiler proper killed by SIGKILL (the OOM killer's choice is usually the
    /// biggest process, cc1), and cc1 out of memory under a memory limit: gcc's own
    /// words for each. A real compile error beside them is the source's, with the
    /// compiler's complaint.
    #[test]
    fn a_compiler_out_of_memory_is_the_machines_a_compile_error_the_sources() {
        if !crate::testkit::have(crate::testkit::on_path("gcc"), "gcc") {
            return;
        }
        let big = format!(
            "int a[] = {{{}}};\n",
            (0..600_000)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        let kill = "#!/bin/sh\ncase \"$1\" in *cc1) kill -KILL $$;; esac\nexec \"$@\"\n";
        let limit = "#!/bin/sh\ncase \"$1\" in *cc1) ulimit -v 100000;; esac\nexec \"$@\"\n";
        let t = tree(
            "cc1-killed",
            None,
            "gcc -wrapper ./w.sh -c big.c -o big.o",
            "true",
            &[("big.c", &big), ("w.sh", kill)],
        );
        transient_saying(build(&t), "ran out of memory");
        let t = tree(
            "cc1-limit",
            None,
            "gcc -wrapper ./w.sh -c big.c -o big.o",
            "true",
            &[("big.c", &big), ("w.sh", limit)],
        );
        transient_saying(build(&t), "ran out of memory");
        let t = tree(
            "compile-error",
            None,
            "gcc -c bad.c -o bad.o",
            "true",
            &[("bad.c", "int f(void) { return bogus; }\n")],
        );
        match build(&t) {
            // gcc quotes with ' or ‘’ by the locale.
            Err(Failure::Content(s)) => {
                assert!(s.contains("bogus") && s.contains("undeclared"), "{s}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// A build tree on a file system that fills up (a 256 KiB tmpfs): building and
    /// configuring stop as the machine's, never as the commit's. Root (the mount).
    #[test]
    fn a_full_disk_is_the_machines() {
        if !crate::testkit::root() {
            return;
        }
        let d = crate::testkit::private_dir("make-enospc");
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=256k", "xrunrig-test"])
            .arg(&d)
            .status()
            .unwrap();
        assert!(st.success(), "cannot mount a tmpfs at {}", d.display());
        let fill = "head -c 1048576 /dev/zero > big";
        let t = tree("enospc", Some(&d), fill, fill, &[]);
        // The logs outside the full file system, as the build cache's are not the tree.
        let logs = crate::testkit::private_dir("make-enospc-logs");
        let r = make(&t, &logs.join("build.log"), "the test's tree");
        // Room again for the fragment configure writes first: the configuring make
        // is the one that fills the disk.
        let _ = std::fs::remove_file(t.join("big"));
        let mut log = std::fs::File::create(logs.join("config.log")).unwrap();
        let c = configure(&t, &mut log);
        let _ = std::process::Command::new("umount").arg(&d).status();
        transient_saying(r, "the disk is full");
        match c {
            Err(Failure::Transient(s)) => assert!(s.contains("the disk is full"), "{s}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_settings_are_found() {
        let frag = "CONFIG_A=y\n# CONFIG_B is not set\n# CONFIG_C is not set\nCONFIG_D=y\n";
        let cfg = "CONFIG_A=y\nCONFIG_B=y\n# CONFIG_D is not set\n";
        assert_eq!(missing(frag, cfg), ["# CONFIG_B is not set", "CONFIG_D=y"]);
    }

    #[test]
    fn fragment_has_what_the_rigs_need() {
        for s in [
            "CONFIG_PREEMPT_DYNAMIC=y",
            "CONFIG_RT_MUTEXES=y",
            "CONFIG_FUTEX_PI=y",
            "CONFIG_SCHED_DEBUG=y",
            "CONFIG_DEBUG_FS=y",
            "CONFIG_VIRTIO_BLK=y",
            "CONFIG_SERIAL_8250_CONSOLE=y",
            "CONFIG_SND_ALOOP=y",
            "CONFIG_SND_DUMMY=y",
        ] {
            assert!(FRAGMENT.lines().any(|l| l == s), "{s}");
        }
    }
}
