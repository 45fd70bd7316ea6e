//! Starting QEMU, watching the guest's console for its markers, and making sure QEMU
//! never outlives us: its own process group (killed as a group on drop), and
//! PR_SET_PDEATHSIG so it dies even if xrunrig is SIGKILLed.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// The QEMU binary: $XRUNRIG_QEMU or qemu-system-x86_64 on PATH. The tests put a
/// stand-in there that aborts the way QEMU does, then runs the real one
/// (tests/support/guest.rs `QemuStandIn`).
pub fn qemu_binary() -> Result<PathBuf, String> {
    if let Some(q) = std::env::var_os("XRUNRIG_QEMU") {
        let p = PathBuf::from(q);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("XRUNRIG_QEMU={}: no such file", p.display()))
        };
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("qemu-system-x86_64"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "qemu-system-x86_64 not found: install it (apt-get install qemu-system-x86) to run rigs in a guest kernel"
                .into()
        })
}

pub fn version(qemu: &Path) -> String {
    Command::new(qemu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .map(|l| l.trim_start_matches("QEMU emulator version ").to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// Whether KVM is worth trying, and if not why. PVM's /dev/kvm (nested
/// virtualisation in some cloud VMs) cannot run stock kernels: measured, QEMU aborts
/// on MSR 0x10a with -cpu host.
pub fn kvm_usable() -> Result<(), String> {
    if Path::new("/sys/module/kvm_pvm").exists() {
        return Err(
            "/dev/kvm is PVM nested virtualisation (kvm_pvm), which cannot run stock kernels"
                .into(),
        );
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map(|_| ())
        .map_err(|e| format!("/dev/kvm: {e}"))
}

pub struct Launch {
    pub qemu: PathBuf,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    pub cpus: u32,
    pub memory: String,
    pub cmdline: String,
    pub accel: Accel,
    pub console: PathBuf,
    pub channel: PathBuf,
    /// The results disk, a sparse file (None: results come on the serial channel only).
    pub disk: Option<PathBuf>,
    pub stderr: PathBuf,
}

pub fn args(l: &Launch) -> Vec<String> {
    let mut a: Vec<String> = vec!["-nodefaults".into(), "-no-user-config".into()];
    match l.accel {
        Accel::Kvm => a.extend(["-accel".into(), "kvm".into(), "-cpu".into(), "host".into()]),
        Accel::Tcg => a.extend([
            "-accel".into(),
            "tcg,thread=multi".into(),
            "-cpu".into(),
            "max".into(),
        ]),
    }
    a.extend([
        "-smp".into(),
        l.cpus.to_string(),
        "-m".into(),
        l.memory.clone(),
        "-display".into(),
        "none".into(),
        "-vga".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-no-reboot".into(),
        "-kernel".into(),
        l.kernel.display().to_string(),
        "-initrd".into(),
        l.initrd.display().to_string(),
        "-append".into(),
        l.cmdline.clone(),
        // ttyS0: the console; ttyS1: the results channel, written only by /init.
        "-serial".into(),
        format!("file:{}", l.console.display()),
        "-serial".into(),
        format!("file:{}", l.channel.display()),
    ]);
    if let Some(d) = &l.disk {
        // The results disk (see channel.rs); cache=unsafe: the file is read only after
        // QEMU has exited.
        a.extend([
            "-drive".into(),
            format!(
                "file={},format=raw,if=none,id=results,cache=unsafe",
                d.display()
            ),
            "-device".into(),
            "virtio-blk-pci,drive=results".into(),
        ]);
    }
    a
}

/// A running QEMU; dropping it kills its whole process group and reaps it.
pub struct Guard {
    child: Child,
    done: bool,
}

impl Guard {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        match self.child.try_wait() {
            Ok(Some(s)) => {
                self.done = true;
                Some(s)
            }
            _ => None,
        }
    }

    pub fn kill(&mut self) {
        if self.done {
            return;
        }
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.done = true;
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn spawn(l: &Launch) -> Result<Guard, String> {
    for p in [&l.console, &l.channel] {
        std::fs::write(p, b"").map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if let Some(d) = &l.disk {
        super::channel::create_disk(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let err =
        std::fs::File::create(&l.stderr).map_err(|e| format!("{}: {e}", l.stderr.display()))?;
    let mut cmd = Command::new(&l.qemu);
    cmd.args(args(l))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", l.qemu.display()))?;
    Ok(Guard { child, done: false })
}

#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// The guest shipped its results and powered off.
    Shipped,
    /// Did not print the ready marker within the boot bound.
    BootTimeout,
    /// Ran past the whole-run bound.
    RunTimeout,
    /// The kernel panicked or halted; the console line.
    Crashed(String),
    /// The guest's timers stopped (`timer_stall_line`); the console line.
    Stalled(String),
    /// The guest printed nothing for this many seconds, past the quiet bound.
    Silent(f64),
    /// QEMU exited on its own before the guest shipped anything.
    Exited(String),
    Interrupted,
}

pub struct Outcome {
    pub end: End,
    /// Seconds from QEMU's start to the ready marker.
    pub ready_s: Option<f64>,
    /// The guest's own uptime at the ready marker (its kernel boot and /init).
    pub guest_uptime_s: Option<f64>,
    pub wall_s: f64,
    /// The signal QEMU died of, when it exited by itself (SIGABRT: its own assertion).
    pub signal: Option<i32>,
    /// Its exit code, when it exited by itself (0: the guest shut down or reset, which
    /// `-no-reboot` makes QEMU's exit).
    pub code: Option<i32>,
}

/// "[   12.345678] …": a kernel message, not the guest run's own output.
fn is_kernel_log(l: &str) -> bool {
    l.strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .is_some_and(|(t, _)| {
            t.contains('.') && t.trim().chars().all(|c| c.is_ascii_digit() || c == '.')
        })
}

/// Console lines that mean the guest will not get anywhere.
fn fatal_line(l: &str) -> bool {
    [
        "Kernel panic - not syncing",
        "-- System halted",
        "Attempted to kill init",
    ]
    .iter()
    .any(|p| l.contains(p))
}

/// How long a guest may take: to its ready marker, in all, and without printing
/// anything once ready (its timers stopped: see `guest::plan`).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub boot: Duration,
    pub run: Duration,
    pub quiet: Duration,
}

/// Watches the console until the guest ships, dies, stalls, or a bound passes; relays
/// the guest's own output (after the ready marker, not kernel messages) to `relay`.
pub fn watch(
    g: &mut Guard,
    console: &Path,
    bounds: Bounds,
    stop: &AtomicBool,
    relay: &mut dyn FnMut(&str),
) -> Outcome {
    let t0 = Instant::now();
    let mut f = std::fs::File::open(console).ok();
    let mut pos = 0u64;
    let mut partial = String::new();
    let mut ready: Option<f64> = None;
    let mut guest_uptime: Option<f64> = None;
    let mut shipped = false;
    let mut crashed: Option<String> = None;
    let mut stalled: Option<String> = None;
    let mut exited: Option<String> = None;
    let mut signal: Option<i32> = None;
    let mut code: Option<i32> = None;
    let mut heard = Instant::now();
    let end = loop {
        let status = g.try_wait();
        // Read what the console got (also after exit, so nothing is missed).
        if let Some(file) = f.as_mut() {
            let mut buf = Vec::new();
            if file.seek(SeekFrom::Start(pos)).is_ok() && file.read_to_end(&mut buf).is_ok() {
                if !buf.is_empty() {
                    heard = Instant::now();
                }
                pos += buf.len() as u64;
                partial.push_str(&String::from_utf8_lossy(&buf));
                while let Some(i) = partial.find('\n') {
                    let line: String = partial.drain(..=i).collect();
                    let line = line.trim_end_matches(['\n', '\r']);
                    if let Some(rest) = line.split("XRUNRIG-READY").nth(1) {
                        ready.get_or_insert(t0.elapsed().as_secs_f64());
                        guest_uptime = rest.split_whitespace().next().and_then(|x| x.parse().ok());
                    } else if line.contains("XRUNRIG-SHIPPED") {
                        shipped = true;
                    } else if fatal_line(line) {
                        crashed.get_or_insert(line.trim().to_string());
                    } else if timer_stall_line(line) {
                        stalled.get_or_insert(line.trim().to_string());
                    } else if ready.is_some()
                        && !is_kernel_log(line)
                        && !line.starts_with("XRUNRIG-")
                    {
                        relay(line);
                    }
                }
                // The boot decompressor halts without a final newline.
                if fatal_line(&partial) {
                    crashed.get_or_insert(partial.trim().to_string());
                }
            }
        } else {
            f = std::fs::File::open(console).ok();
        }
        if let Some(s) = status {
            exited = Some(s.to_string());
            signal = s.signal();
            code = s.code();
        }
        if shipped {
            // Give the power-off a moment, then stop it ourselves.
            let t = Instant::now();
            while g.try_wait().is_none() && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
            break End::Shipped;
        }
        if let Some(c) = &crashed {
            // The panic line can come before the Oops' trace is all out (and the
            // sysrq crash prints its trace after it): a moment for the rest, which
            // the classifier and the saved console want. panic=-1 reboots, and
            // -no-reboot makes that QEMU's exit.
            let t = Instant::now();
            while g.try_wait().is_none() && t.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(20));
            }
            break End::Crashed(c.clone());
        }
        if let Some(l) = &stalled {
            // The rest of the stall report, for the classifier; the guest will not get
            // anywhere (seen here: it hung until LAVA's 20-minute timeout).
            let t = Instant::now();
            while g.try_wait().is_none() && t.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(20));
            }
            break End::Stalled(l.clone());
        }
        if let Some(e) = &exited {
            break End::Exited(e.clone());
        }
        if stop.load(Ordering::SeqCst) {
            break End::Interrupted;
        }
        let el = t0.elapsed();
        if ready.is_none() && el > bounds.boot {
            break End::BootTimeout;
        }
        if ready.is_some() && heard.elapsed() > bounds.quiet {
            break End::Silent(heard.elapsed().as_secs_f64());
        }
        if el > bounds.run {
            break End::RunTimeout;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    g.kill();
    Outcome {
        end,
        ready_s: ready,
        guest_uptime_s: guest_uptime,
        wall_s: t0.elapsed().as_secs_f64(),
        signal,
        code,
    }
}

/// The line of an RCU stall report that says the grace-period kthread's timer never
/// fired: the guest's timers stopped, the emulator's fault. The console watcher stops
/// a guest on it (and `crash` tells the fault by it).
pub fn timer_stall_line(l: &str) -> bool {
    l.contains("rcu") && l.contains("timer wakeup didn't happen")
}

/// What a stand-in for QEMU did, watched as a guest is (`stand_in`).
#[cfg(test)]
pub struct StandIn {
    pub outcome: Outcome,
    pub console: String,
    pub stderr: String,
    pub relayed: String,
}

/// A stand-in "QEMU": `script` run by sh with the console file as `$1` and its stderr
/// kept as QEMU's is, watched by `watch` with `quiet` (boot bound 20 s, run 60 s). Its
/// exit, signal, console and stderr are a real process's, for the tests of what a
/// guest's end means.
#[cfg(test)]
pub fn stand_in(tag: &str, script: &str, quiet: Duration) -> StandIn {
    let dir = std::env::temp_dir().join(format!("xrunrig-qemu-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let console = dir.join("console");
    std::fs::write(&console, b"").unwrap();
    let err = dir.join("stderr");
    let child = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(&console)
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut g = Guard { child, done: false };
    let stop = AtomicBool::new(false);
    let mut relayed = String::new();
    let outcome = watch(
        &mut g,
        &console,
        Bounds {
            boot: Duration::from_secs(20),
            run: Duration::from_secs(60),
            quiet,
        },
        &stop,
        &mut |l| relayed.push_str(&format!("{l}\n")),
    );
    let r = StandIn {
        outcome,
        console: std::fs::read_to_string(&console).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        relayed,
    };
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_has_two_serials_and_accel() {
        let l = Launch {
            qemu: "q".into(),
            kernel: "/k".into(),
            initrd: "/i".into(),
            cpus: 4,
            memory: "1G".into(),
            cmdline: "console=ttyS0".into(),
            accel: Accel::Tcg,
            console: "/c".into(),
            channel: "/ch".into(),
            disk: Some("/d".into()),
            stderr: "/e".into(),
        };
        let a = args(&l).join(" ");
        assert!(
            a.contains("-accel tcg,thread=multi -cpu max -smp 4 -m 1G"),
            "{a}"
        );
        assert!(a.contains("-serial file:/c -serial file:/ch"), "{a}");
        assert!(
            a.contains("-drive file=/d,format=raw,if=none,id=results,cache=unsafe -device virtio-blk-pci,drive=results"),
            "{a}"
        );
        assert!(a.contains("-no-reboot"));
        assert!(fatal_line("[ 1.0] Kernel panic - not syncing: VFS"));
        assert!(!fatal_line("all fine"));
        assert!(is_kernel_log("[    9.823959] reboot: Power down"));
        assert!(!is_kernel_log("[   1/4] RT_PUSH_IPI / pi trial 1/2"));
    }

    #[test]
    fn guard_kills_the_group_and_watch_bounds_a_hang() {
        // A stand-in "QEMU" that never boots: the boot bound must end it.
        let dir = std::env::temp_dir().join(format!("xrunrig-qemu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let console = dir.join("console");
        std::fs::write(&console, b"").unwrap();
        let child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut g = Guard { child, done: false };
        let stop = AtomicBool::new(false);
        let o = watch(
            &mut g,
            &console,
            Bounds {
                boot: Duration::from_millis(300),
                run: Duration::from_secs(60),
                quiet: Duration::from_secs(60),
            },
            &stop,
            &mut |_| {},
        );
        assert_eq!(o.end, End::BootTimeout);
        assert!(o.wall_s < 5.0);
        // Nothing of the group still runs (orphans may linger as zombies until
        // their new parent reaps them).
        std::thread::sleep(Duration::from_millis(100));
        let alive: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|st| {
                let f: Vec<&str> = st
                    .rsplit_once(')')
                    .map_or("", |x| x.1)
                    .split_whitespace()
                    .collect();
                f.len() > 2 && f[2] == pid.to_string() && f[0] != "Z"
            })
            .collect();
        assert!(
            alive.is_empty(),
            "process group {pid} still runs: {alive:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stand-in "QEMU" (sh writing the console file) watched with `quiet`.
    fn watch_script(tag: &str, script: &str, quiet: Duration) -> (Outcome, String) {
        let r = stand_in(tag, script, quiet);
        (r.outcome, r.relayed)
    }

    #[test]
    fn a_guest_that_goes_quiet_is_stopped_at_its_quiet_bound() {
        // Lines every 0.3 s for 1.5 s (none of those gaps is silence), then nothing.
        let t0 = Instant::now();
        let (o, relayed) = watch_script(
            "quiet",
            "echo 'XRUNRIG-READY 1.0 1.0' >>$1; for i in 1 2 3 4 5; do sleep 0.3; echo \"[$i/9] t\" >>$1; done; sleep 30",
            Duration::from_millis(1200),
        );
        let End::Silent(q) = o.end else {
            panic!("{:?}", o.end)
        };
        assert!((1.2..3.0).contains(&q), "{q}");
        assert_eq!(relayed.lines().count(), 5, "{relayed}");
        // Caught within its bound: 1.5 s of output, then 1.2 s of silence.
        assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
        // Before the ready marker the boot bound rules, not the quiet one.
        let (o, _) = watch_script("quiet-boot", "sleep 30", Duration::from_millis(200));
        assert_eq!(o.end, End::BootTimeout);
        assert!(o.wall_s > 19.0, "{}", o.wall_s);
    }

    #[test]
    fn the_rcu_timer_stall_stops_the_guest_at_once() {
        let sample = super::super::crash::RCU_STALL_SAMPLE.replace('\'', "'\\''");
        let t0 = Instant::now();
        let (o, _) = watch_script(
            "stall",
            &format!("echo 'XRUNRIG-READY 1.0 1.0' >>$1; printf '%s' '{sample}' >>$1; sleep 30"),
            Duration::from_secs(60),
        );
        let End::Stalled(l) = &o.end else {
            panic!("{:?}", o.end)
        };
        assert!(
            l.contains("timer wakeup didn't happen for 5251 jiffies"),
            "{l}"
        );
        assert!(t0.elapsed() < Duration::from_secs(6), "{:?}", t0.elapsed());
    }

    #[test]
    fn qemus_abort_is_an_exit_by_sigabrt() {
        let (o, _) = watch_script(
            "abort",
            "echo 'Linux version 6.12' >>$1; ulimit -c 0; kill -ABRT $$",
            Duration::from_secs(60),
        );
        assert!(matches!(o.end, End::Exited(_)), "{:?}", o.end);
        assert_eq!(o.signal, Some(libc::SIGABRT));
    }
}
