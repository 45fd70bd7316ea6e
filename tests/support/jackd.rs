//! A private dummy jackd for tests: started under a name of the test's own, waited for
//! with `jack_wait`, and stopped (SIGTERM, then SIGKILL) and reaped when dropped.
//!
//! Shared JACK state is left alone (a running jackdbus or PipeWire-JACK server owns
//! files in /dev/shm too): the only files ever deleted are those of our own server after
//! it died without cleaning up (see `remove_own_leftovers`). Its slot in
//! /dev/shm/jack-shm-registry is not edited: jackd2 frees a dead server's slot when a
//! server of the SAME name starts, so the names are fixed per test (`xrr-t-<tag>`, no
//! pid): a killed test server's slot is taken back by that test's next run instead of
//! leaking one of the registry's 8 slots per run.

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

impl PrivateJackd {
    /// `jackd -n xrr-t-TAG -R -P 70 -d dummy -r 48000 -p PERIOD`, ready when this
    /// returns; None (after a visible skip, a failure in CI) when jackd2 is missing.
    #[track_caller]
    pub fn start(tag: &str, period: u32) -> Option<PrivateJackd> {
        if !available_or_skip() {
            return None;
        }
        let name = format!("xrr-t-{tag}");
        let others = xrunrig::audio::jack::server::serving(&name);
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

    /// The server's log (stdout and stderr): jackd2 writes a line per xrun there
    /// ("JackEngine::XRun: client = NAME was not finished"), an independent count.
    pub fn log(&self) -> String {
        let p = std::env::temp_dir().join(format!("{}-{}.log", self.name, std::process::id()));
        std::fs::read_to_string(p).unwrap_or_default()
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
            if let Ok(Some(st)) = c.try_wait() {
                if !st.success() {
                    remove_own_leftovers(&self.name, c.id());
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
        remove_own_leftovers(&self.name, c.id());
    }
}

/// What our server left in /dev/shm when it did not exit cleanly (a test killed it, or
/// SIGTERM timed out): only files that are provably its own, and only once it is gone
/// and no process serves its name. Its semaphores and socket carry its name
/// (`jack_sem.<uid>_<name>_*`, `jack_<name>_<uid>_*`); its shm segments are the
/// registry entries whose allocator is its (dead) pid. The registry itself is not
/// edited: jackd takes back the server slot when this name starts again.
fn remove_own_leftovers(name: &str, pid: u32) {
    // SAFETY: kill with signal 0 only checks whether the pid exists.
    let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
    if alive || !xrunrig::audio::jack::server::serving(name).is_empty() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let shm = std::path::Path::new("/dev/shm");
    let mut own: Vec<String> = Vec::new();
    for e in std::fs::read_dir(shm).into_iter().flatten().flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        if f.starts_with(&format!("jack_sem.{uid}_{name}_"))
            || f.starts_with(&format!("jack_{name}_{uid}_"))
        {
            own.push(f);
        }
    }
    own.extend(segments_of(pid));
    for f in own {
        let _ = std::fs::remove_file(shm.join(f));
    }
}

/// The shm segments jack-shm-registry lists as allocated by `pid`: jackd2's layout (shm.h)
/// is a header (magic "JACK", protocol, type, size, hdr_len, entry_len, 8 server slots),
/// then entries of (index, allocator pid, size, id[256]). Anything unexpected: none.
fn segments_of(pid: u32) -> Vec<String> {
    let Ok(b) = std::fs::read("/dev/shm/jack-shm-registry") else {
        return vec![];
    };
    let u32_at = |o: usize| {
        b.get(o..o + 4)
            .map(|x| u32::from_le_bytes(x.try_into().unwrap()))
    };
    if u32_at(0) != Some(u32::from_le_bytes(*b"KCAJ")) {
        return vec![];
    }
    let (Some(hdr), Some(entry)) = (u32_at(16), u32_at(20)) else {
        return vec![];
    };
    let (hdr, entry) = (hdr as usize, entry as usize);
    if entry < 12 + 2 {
        return vec![];
    }
    let mut v = Vec::new();
    let mut o = hdr;
    while o + entry <= b.len() {
        if u32_at(o + 4) == Some(pid) {
            let id = &b[o + 12..o + entry];
            let id = &id[..id.iter().position(|c| *c == 0).unwrap_or(id.len())];
            let id = String::from_utf8_lossy(id);
            let f = id.trim_start_matches('/');
            if f.starts_with("jack-") && !f.contains('/') {
                v.push(f.to_string());
            }
        }
        o += entry;
    }
    v
}

impl Drop for PrivateJackd {
    fn drop(&mut self) {
        self.stop();
    }
}
