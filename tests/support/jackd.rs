//! A private dummy jackd for tests: started under a name of the test's own, waited for
//! with `jack_wait`, and stopped (SIGTERM, then SIGKILL) and reaped when dropped.
//!
//! Shared JACK state is left alone: nothing in /dev/shm is ever deleted here (a running
//! jackdbus or PipeWire-JACK server owns files there too). What a test server killed
//! outright leaves behind is reclaimed by jackd itself: jackd2 frees a dead server's slot
//! in /dev/shm/jack-shm-registry when a server of the SAME name starts (and the segments
//! of dead allocators), so the names are fixed per test (`xrr-t-<tag>`, no pid): a
//! killed test server's slot is taken back by that test's next run instead of leaking
//! one of the registry's 8 slots per run.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xrunrig::audio::jack::server as jack_server;

pub struct PrivateJackd {
    pub name: String,
    child: Option<Child>,
}

/// Whether jackd and jack_wait are installed (.ci/setup installs jackd2).
pub fn available() -> bool {
    xrunrig::testkit::on_path("jackd") && xrunrig::testkit::on_path("jack_wait")
}

/// True when jackd2 is installed; otherwise a visible skip (a failure in CI).
#[track_caller]
pub fn available_or_skip() -> bool {
    xrunrig::testkit::have(available(), "jackd2 (apt-get install jackd2)")
}

/// Pids of live processes whose command line names server `name` (`-n NAME`).
fn serving(name: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
        if args
            .windows(2)
            .any(|w| (w[0] == b"-n" || w[0] == b"--name") && w[1] == name.as_bytes())
        {
            v.push(pid);
        }
    }
    v
}

impl PrivateJackd {
    /// `jackd -n xrr-t-TAG -R -P 70 -d dummy -r 48000 -p PERIOD`, ready when this
    /// returns; None (after a visible skip, a failure in CI) when jackd2 is missing.
    #[track_caller]
    pub fn start(tag: &str, period: u32) -> Option<PrivateJackd> {
        if !available_or_skip() {
            return None;
        }
        let name = format!("xrr-t-{tag}");
        let others = serving(&name);
        assert!(
            others.is_empty(),
            "a jackd named '{name}' is already running (pids {others:?}): another test run? \
             Stop it first; tests never touch a server they did not start"
        );
        // jackd2 reclaims a killed server's registry slot on the first start under its
        // name but may still refuse that start ("already active"): one retry.
        for attempt in 0..2 {
            match Self::try_start(&name, period) {
                Ok(j) => return Some(j),
                Err(log) if attempt == 0 && log.contains("already active") => continue,
                Err(log) => {
                    let hint = if log.contains("Too many servers") {
                        "\nthe JACK shm registry has no free slot (8 servers, some of them \
                         dead): with no JACK server running, remove /dev/shm/jack-shm-registry \
                         (the tests never delete shared JACK files)"
                    } else {
                        ""
                    };
                    panic!("jackd '{name}' did not come up within 5 s; its log:\n{log}{hint}");
                }
            }
        }
        unreachable!()
    }

    fn try_start(name: &str, period: u32) -> Result<PrivateJackd, String> {
        let log_path = std::env::temp_dir().join(format!("{name}-{}.log", std::process::id()));
        let log = std::fs::File::create(&log_path).expect("jackd log file");
        // The same command line builder the guest's jackd launcher uses.
        let args = jack_server::Command {
            name: Some(name.to_string()),
            priority: Some(70),
            driver: jack_server::Driver::Dummy {
                playback_ports: None,
                capture_ports: None,
            },
            rate: Some(48000),
            period: Some(period),
            nperiods: None,
        }
        .args();
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("starting jackd");
        let mut j = PrivateJackd {
            name: name.to_string(),
            child: Some(child),
        };
        // jack_wait prints libjack's "cannot connect" lines while it polls.
        let wait = jack_server::wait_args(&j.name, 5);
        let ok = Command::new(&wait[0])
            .args(&wait[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            j.stop();
            return Err(std::fs::read_to_string(&log_path).unwrap_or_default());
        }
        Ok(j)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGTERM, wait up to 5 s for the exit (jackd takes 1-2 s), then SIGKILL.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child by pid. SIGCONT too: a test may have stopped it.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
            libc::kill(c.id() as i32, libc::SIGCONT);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for PrivateJackd {
    fn drop(&mut self) {
        self.stop();
    }
}
