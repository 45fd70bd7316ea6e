//! A private headless PipeWire for tests: `pipewire` (and, when asked, `wireplumber`) in
//! a runtime and config directory of the test's own, driven by PipeWire's built-in
//! Dummy-Driver (a timer: no card), stopped and reaped when dropped. PipeWire itself
//! needs no D-Bus session (its portal module logs that it found none); the core puts a
//! JACK client on the Dummy-Driver by itself. WirePlumber 0.4 exits at once without a
//! session bus, so it runs under `dbus-run-session` (a private bus of its own). JACK clients reach it through PipeWire's libjack: `client_env()` gives the
//! environment (`LD_LIBRARY_PATH` to pipewire-0.3/jack, as `pw-jack` does, and the
//! private runtime directory). Nothing shared is touched: the socket lives in the test's
//! own directory, so a user's session PipeWire, if any, never sees the test's clients.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's pipewire-jack puts PipeWire's libjack (what `pw-jack` prepends).
pub const JACK_LIB_DIR: &str = "/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack";

pub struct PrivatePipewire {
    pub dir: PathBuf,
    pub runtime: PathBuf,
    pub config: PathBuf,
    children: Vec<Child>,
}

/// Whether WirePlumber and dbus-run-session (package dbus-daemon) are installed.
pub fn wireplumber_available() -> bool {
    xrunrig::testkit::on_path("wireplumber") && xrunrig::testkit::on_path("dbus-run-session")
}

/// Whether pipewire, pipewire-jack's libjack and pw-dump are installed.
pub fn available() -> bool {
    xrunrig::testkit::on_path("pipewire")
        && xrunrig::testkit::on_path("pw-dump")
        && std::path::Path::new(JACK_LIB_DIR)
            .join("libjack.so.0")
            .exists()
}

/// True when PipeWire is installed; otherwise a visible skip (a failure in CI).
#[track_caller]
pub fn available_or_skip() -> bool {
    xrunrig::testkit::have(
        available(),
        "PipeWire (apt-get install pipewire pipewire-jack pipewire-bin wireplumber)",
    )
}

/// Settings for the private server.
#[derive(Debug, Clone)]
pub struct Setup {
    /// `default.clock.quantum` (the period JACK clients get unless they ask).
    pub quantum: u32,
    pub rate: u32,
    /// Extra `context.properties` lines for pipewire.conf (e.g. "link.max-buffers = 1").
    pub extra: Vec<String>,
    /// A jack.conf drop-in's `jack.properties` lines (e.g. "node.force-quantum = 512"):
    /// what a user's config forces on JACK clients.
    pub jack_properties: Vec<String>,
    /// Start WirePlumber too (the session manager a desktop runs).
    pub wireplumber: bool,
}

impl Setup {
    pub fn new(quantum: u32) -> Setup {
        Setup {
            quantum,
            rate: 48000,
            extra: vec![],
            jack_properties: vec![],
            wireplumber: false,
        }
    }
}

impl PrivatePipewire {
    /// Starts the server, ready (its core answers `pw-cli info 0`) when this returns;
    /// None (after a visible skip, a failure in CI) when PipeWire is missing.
    #[track_caller]
    pub fn start(tag: &str, setup: &Setup) -> Option<PrivatePipewire> {
        if !available_or_skip() {
            return None;
        }
        if setup.wireplumber
            && !xrunrig::testkit::have(
                wireplumber_available(),
                "WirePlumber (apt-get install wireplumber dbus-daemon)",
            )
        {
            return None;
        }
        let dir = xrunrig::testkit::private_dir(&format!("pipewire-{tag}"));
        let runtime = dir.join("run");
        let config = dir.join("config");
        let conf_d = config.join("pipewire/pipewire.conf.d");
        let jack_d = config.join("pipewire/jack.conf.d");
        for d in [&runtime, &conf_d, &jack_d] {
            std::fs::create_dir_all(d).expect("pipewire dirs");
        }
        let mut props = vec![
            format!("default.clock.rate = {}", setup.rate),
            format!("default.clock.quantum = {}", setup.quantum),
            "default.clock.min-quantum = 16".to_string(),
        ];
        props.extend(setup.extra.iter().cloned());
        std::fs::write(
            conf_d.join("50-xrunrig-test.conf"),
            format!(
                "context.properties = {{\n    {}\n}}\n",
                props.join("\n    ")
            ),
        )
        .expect("pipewire.conf drop-in");
        if !setup.jack_properties.is_empty() {
            std::fs::write(
                jack_d.join("50-xrunrig-test.conf"),
                format!(
                    "jack.properties = {{\n    {}\n}}\n",
                    setup.jack_properties.join("\n    ")
                ),
            )
            .expect("jack.conf drop-in");
        }
        let mut pw = PrivatePipewire {
            dir: dir.clone(),
            runtime,
            config,
            children: vec![],
        };
        pw.spawn("pipewire", &[]);
        if !pw.wait_ready(Duration::from_secs(10)) {
            let log = std::fs::read_to_string(dir.join("pipewire.log")).unwrap_or_default();
            pw.stop();
            panic!("pipewire did not answer within 10 s; its log:\n{log}");
        }
        if setup.wireplumber {
            pw.spawn("dbus-run-session", &["--", "wireplumber"]);
            // WirePlumber has no readiness signal of its own: its default nodes and
            // the "default" metadata appear once it has run its scripts.
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(10) && !pw.dump().contains("\"default\"") {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Some(pw)
    }

    /// The environment a process needs to reach this server through PipeWire's libjack.
    pub fn client_env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_LIBRARY_PATH".into(), JACK_LIB_DIR.into()),
            (
                "XDG_RUNTIME_DIR".into(),
                self.runtime.to_string_lossy().into_owned(),
            ),
            (
                "PIPEWIRE_RUNTIME_DIR".into(),
                self.runtime.to_string_lossy().into_owned(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                self.config.to_string_lossy().into_owned(),
            ),
            // No session bus: nothing for PipeWire's clients to reach there.
            ("DBUS_SESSION_BUS_ADDRESS".into(), "disabled:".into()),
        ]
    }

    /// A command with the client environment set.
    pub fn command(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.envs(self.client_env()).env_remove("JACK_DEFAULT_SERVER");
        c
    }

    fn spawn(&mut self, prog: &str, args: &[&str]) {
        let name = args.last().unwrap_or(&prog);
        let log = std::fs::File::create(self.dir.join(format!("{name}.log"))).expect("log");
        let child = self
            .command(prog)
            .args(args)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            // Info level: the server's "client too slow!" lines (a client's overrun,
            // which PipeWire does not report to the client) land in its log.
            .env("PIPEWIRE_DEBUG", "3")
            // A group of its own: stop() signals dbus-run-session's children with it.
            .process_group(0)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {prog}: {e}"));
        self.children.push(child);
    }

    fn wait_ready(&self, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            let ok = self
                .command("pw-cli")
                .args(["info", "0"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok && self.runtime.join("pipewire-0").exists() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// `pw-dump` of the server (JSON text; empty when it fails).
    pub fn dump(&self) -> String {
        self.command("pw-dump")
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// `pw-metadata -n settings 0 KEY VALUE` (what `jack_bufsize` does through libjack).
    pub fn set_setting(&self, key: &str, value: &str) {
        let ok = self
            .command("pw-metadata")
            .args(["-n", "settings", "0", key, value])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "pw-metadata -n settings 0 {key} {value} failed");
    }

    pub fn pid(&self) -> u32 {
        self.children.first().map_or(0, |c| c.id())
    }

    /// SIGTERM each process group (newest first), wait up to 5 s, then SIGKILL it.
    pub fn stop(&mut self) {
        while let Some(mut c) = self.children.pop() {
            // SAFETY: signalling our own child by pid.
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGTERM);
            }
            let t0 = Instant::now();
            let mut done = false;
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    done = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // SAFETY: as above; the group is ours (process_group(0) at spawn).
            unsafe {
                libc::kill(-(c.id() as i32), libc::SIGKILL);
            }
            if !done {
                let _ = c.wait();
            }
        }
    }
}

impl Drop for PrivatePipewire {
    fn drop(&mut self) {
        self.stop();
    }
}
