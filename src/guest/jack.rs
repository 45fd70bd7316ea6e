//! A JACK server for livefx rigs run with `--backend jack` in a guest: the guest has
//! no running server, so the guest command starts jackd on the snd-aloop card, waits
//! for it, runs the rig against it and stops it. Playback substream 0 of Loopback
//! device 0 comes back as capture on device 1, so `system:playback_N` is heard on
//! `system:capture_N` (what the loopback check wires up). The guest's /init is a shell
//! script, so this is a `/bin/sh` line; the jackd and jack_wait command lines, and the
//! server priority rule, are the JACK backend's (`audio::jack::server`).

use super::initramfs::shell_line;
use crate::audio::jack::server::{
    self, Command, Driver, NO_RESERVATION_ENV, SERVER_ENV, server_priority,
};
pub use crate::options::GuestJack;

/// Server name used when `--device` names none.
pub const SERVER: &str = "xrunrig";
pub const PLAYBACK: &str = "hw:Loopback,0";
pub const CAPTURE: &str = "hw:Loopback,1";
/// jack_wait's bound on the server coming up (seconds); TCG guests are slow.
const WAIT_S: u32 = 20;

pub struct Server {
    pub name: String,
    pub rate: u32,
    pub period: u32,
    pub nperiods: u32,
    /// The rig's callback priority: the client's process thread runs at the
    /// server's priority − 5, so the server gets this + 5.
    pub callback_priority: i32,
    pub driver: GuestJack,
    /// Run `xrunrig watch` beside the command (`--guest-watch`).
    pub watch: bool,
}

impl Server {
    pub fn jackd_args(&self) -> Vec<String> {
        let driver = match self.driver {
            GuestJack::Alsa => Driver::Alsa {
                device: None,
                playback: Some(PLAYBACK.into()),
                capture: Some(CAPTURE.into()),
            },
            // Two ports each way, so the loopback check's system:playback_1 exists.
            GuestJack::Dummy => Driver::Dummy {
                playback_ports: Some(2),
                capture_ports: Some(2),
            },
        };
        Command {
            name: Some(self.name.clone()),
            priority: Some(server_priority(self.callback_priority)),
            driver,
            rate: Some(self.rate),
            period: Some(self.period),
            nperiods: Some(self.nperiods),
        }
        .args()
    }

    /// `/bin/sh -c SCRIPT` running `command` against this server: its exit code is
    /// the command's, or 1 with jackd's log on stderr if the server never came up.
    /// No D-Bus device reservation: the guest has no session bus, and reserving the
    /// one Loopback card for both playback and capture fails ("cannot be acquired").
    pub fn wrap(&self, command: &[String]) -> Vec<String> {
        let name = shell_line(std::slice::from_ref(&self.name));
        let (watch_on, watch_off) = match self.watch_dir(command) {
            Some(dir) => {
                let w = shell_line(&[
                    command[0].clone(),
                    "watch".into(),
                    "--server".into(),
                    self.name.clone(),
                    "--out".into(),
                    dir.clone(),
                    "--duration".into(),
                    WATCH_BOUND_S.to_string(),
                    // A smaller ring: reading it is what watch costs the emulated CPUs.
                    "--buffer-kb".into(),
                    "1024".into(),
                ]);
                let d = shell_line(&[dir]);
                (
                    // Started, and attached with its recorder running, before the rig.
                    format!(
                        "{w} >/tmp/watch.log 2>&1 &
                         w=$!; i=0
                         while ! grep -q watching /tmp/watch.log && kill -0 $w 2>/dev/null && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
"
                    ),
                    format!("kill -INT $w 2>/dev/null; wait $w; cp /tmp/watch.log {d}/watch.log 2>/dev/null
"),
                )
            }
            None => (String::new(), String::new()),
        };
        let script = format!(
            "{NO_RESERVATION_ENV}=1 {jackd} >/tmp/jackd.log 2>&1 &\n\
             j=$!\n\
             if {wait} >/dev/null 2>&1; then\n\
             {watch_on}{SERVER_ENV}={name} {cmd}; rc=$?\n\
             {watch_off}else\n\
             echo \"xrunrig-guest: jackd did not come up within {WAIT_S} s:\" >&2; cat /tmp/jackd.log >&2; rc=1\n\
             fi\n\
             kill $j 2>/dev/null; wait $j\n\
             exit $rc\n",
            jackd = shell_line(&self.jackd_args()),
            wait = shell_line(&server::wait_args(&self.name, WAIT_S)),
            cmd = shell_line(command),
        );
        vec!["/bin/sh".into(), "-c".into(), script]
    }

    /// Where watch writes beside a part: `watch` inside the first part's results
    /// directory (`--out /results/x/p0`), `watch-pN` inside part N's.
    fn watch_dir(&self, command: &[String]) -> Option<String> {
        if !self.watch {
            return None;
        }
        let out = command
            .iter()
            .position(|a| a == "--out")
            .and_then(|i| command.get(i + 1))?;
        let part = std::path::Path::new(out)
            .file_name()?
            .to_string_lossy()
            .into_owned();
        Some(if part == "p0" {
            format!("{out}/watch")
        } else {
            format!("{out}/watch-{part}")
        })
    }
}

/// watch's own bound in the guest (the host bounds the whole boot anyway).
const WATCH_BOUND_S: u64 = 6 * 3600;

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Server {
        Server {
            name: SERVER.into(),
            rate: 48000,
            period: 128,
            nperiods: 2,
            callback_priority: 70,
            driver: GuestJack::Alsa,
            watch: false,
        }
    }

    #[test]
    fn jackd_uses_the_loopback_pair_and_the_rig_timing() {
        let a = server().jackd_args().join(" ");
        assert_eq!(
            a,
            "jackd -n xrunrig -R -P 75 -d alsa -P hw:Loopback,0 -C hw:Loopback,1 \
             -r 48000 -p 128 -n 2"
        );
        let d = Server {
            driver: GuestJack::Dummy,
            ..server()
        };
        assert_eq!(
            d.jackd_args().join(" "),
            "jackd -n xrunrig -R -P 75 -d dummy -P 2 -C 2 -r 48000 -p 128"
        );
    }

    #[test]
    fn watch_runs_beside_the_command_and_is_stopped_after_it() {
        let w = Server {
            watch: true,
            ..server()
        }
        .wrap(&[
            "/bin/xrunrig".into(),
            "run".into(),
            "--out".into(),
            "/results/x/p1".into(),
        ]);
        let s = &w[2];
        let at = |n: &str| s.find(n).unwrap_or_else(|| panic!("{n} missing from\n{s}"));
        let start = at("/bin/xrunrig watch --server xrunrig --out /results/x/p1/watch-p1");
        let run = at("JACK_DEFAULT_SERVER=xrunrig /bin/xrunrig run");
        let stop = at("kill -INT $w");
        assert!(start < run && run < stop, "{s}");
        assert!(s.contains("grep -q watching /tmp/watch.log"), "{s}");
        let o = std::process::Command::new("sh")
            .args(["-n", "-c", s])
            .status()
            .unwrap();
        assert!(o.success());
        // Without --guest-watch nothing of it.
        assert!(!server().wrap(&["/bin/xrunrig".into()])[2].contains("watch"));
    }

    #[test]
    fn wrapper_runs_the_command_and_stops_jackd() {
        let w = server().wrap(&["/bin/xrunrig".into(), "run".into(), "a b".into()]);
        assert_eq!(&w[..2], &["/bin/sh".to_string(), "-c".to_string()]);
        let s = &w[2];
        for needle in [
            "jack_wait -w -t 20 -s xrunrig",
            "JACK_DEFAULT_SERVER=xrunrig /bin/xrunrig run 'a b'; rc=$?",
            "kill $j",
            "exit $rc",
        ] {
            assert!(s.contains(needle), "{needle} missing from\n{s}");
        }
        // The script is valid shell.
        let o = std::process::Command::new("sh")
            .args(["-n", "-c", s])
            .status()
            .unwrap();
        assert!(o.success());
    }
}
