//! A private dummy jackd for tests: started under a unique name, waited for with
//! `jack_wait`, and stopped (SIGTERM, then SIGKILL) and reaped when dropped.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xrunrig::audio::jack::server as jack_server;

pub struct PrivateJackd {
    pub name: String,
    child: Option<Child>,
}

/// Whether jackd and jack_wait are installed (CI installs jackd2).
pub fn available() -> bool {
    ["jackd", "jack_wait"].iter().all(|b| {
        Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Servers killed outright (the server-death test does that) leave their slot in
/// /dev/shm/jack-shm-registry; jackd2 keeps at most 8 and reclaims a dead one only under
/// the same name, so after 8 such kills every start fails with "Too many servers already
/// active". With no jackd running at all, every JACK file in /dev/shm is stale.
pub fn clear_stale_shm() {
    let running = Command::new("pgrep")
        .args(["-x", "jackd"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if running {
        return;
    }
    if let Ok(rd) = std::fs::read_dir("/dev/shm") {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("jack") {
                let p = e.path();
                let _ = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
            }
        }
    }
}

impl PrivateJackd {
    /// `jackd -n NAME -R -P 70 -d dummy -r 48000 -p PERIOD`, ready when this returns.
    /// Fails the test, saying what to install, when jackd2 is missing.
    pub fn start(tag: &str, period: u32) -> PrivateJackd {
        assert!(
            available(),
            "jackd2 is not installed (apt-get install jackd2)"
        );
        clear_stale_shm();
        let name = format!("xrr-{tag}-{}", std::process::id());
        let log = std::fs::File::create(std::env::temp_dir().join(format!("{name}.log")))
            .expect("jackd log file");
        // The same command line builder the guest's jackd launcher uses.
        let args = jack_server::Command {
            name: Some(name.clone()),
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
            name,
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
            panic!("jackd '{}' did not come up within 5 s", j.name);
        }
        j
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    /// SIGTERM, wait up to 5 s for the exit (jackd takes 1-2 s), then SIGKILL.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
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
