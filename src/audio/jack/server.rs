//! What xrunrig knows about a jackd server process: the command line that starts one
//! (the guest's launcher builds it), the same command line read back from a running
//! server (the doctor), the command that waits for it to answer, and how its priority
//! relates to its clients'. jackd's options come in two parts: the server's before
//! `-d DRIVER`, the driver's after it (so `-r` is "no realtime" before and "rate" after).

/// The environment variable libjack and the jack_* tools read for the server name.
pub const SERVER_ENV: &str = "JACK_DEFAULT_SERVER";
/// The server name when none is given.
pub const DEFAULT_SERVER: &str = "default";
/// Set in jackd's environment: no D-Bus device reservation (there may be no session
/// bus, and reserving one card for both playback and capture can fail).
pub const NO_RESERVATION_ENV: &str = "JACK_NO_AUDIO_RESERVATION";

/// A client's process thread runs at the server's priority − 5 (jackd2), so a client
/// that wants `callback` gets a server at `callback` + 5, within jackd's 10..=95.
pub fn server_priority(callback: i32) -> i32 {
    (callback + 5).clamp(10, 95)
}

/// The driver part of a jackd command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Driver {
    /// A sound card: one device for both directions (`-d hw:0`) or one each (`-P`, `-C`).
    Alsa {
        device: Option<String>,
        playback: Option<String>,
        capture: Option<String>,
    },
    /// A timer, no card, with this many ports each way.
    Dummy {
        playback_ports: Option<u32>,
        capture_ports: Option<u32>,
    },
}

/// A jackd command line to start a server.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    pub name: Option<String>,
    /// `-R -P PRIO` (realtime at this priority); None: realtime at jackd's default.
    pub priority: Option<i32>,
    pub driver: Driver,
    pub rate: Option<u32>,
    pub period: Option<u32>,
    /// Periods per buffer (`-n`); only the ALSA driver has it.
    pub nperiods: Option<u32>,
}

impl Command {
    pub fn args(&self) -> Vec<String> {
        let mut a: Vec<String> = vec!["jackd".into()];
        let opt = |a: &mut Vec<String>, flag: &str, v: Option<String>| {
            if let Some(v) = v {
                a.extend([flag.to_string(), v]);
            }
        };
        opt(&mut a, "-n", self.name.clone());
        a.push("-R".into());
        opt(&mut a, "-P", self.priority.map(|p| p.to_string()));
        a.push("-d".into());
        match &self.driver {
            Driver::Alsa {
                device,
                playback,
                capture,
            } => {
                a.push("alsa".into());
                opt(&mut a, "-d", device.clone());
                opt(&mut a, "-P", playback.clone());
                opt(&mut a, "-C", capture.clone());
            }
            Driver::Dummy {
                playback_ports,
                capture_ports,
            } => {
                a.push("dummy".into());
                opt(&mut a, "-P", playback_ports.map(|n| n.to_string()));
                opt(&mut a, "-C", capture_ports.map(|n| n.to_string()));
            }
        }
        opt(&mut a, "-r", self.rate.map(|r| r.to_string()));
        opt(&mut a, "-p", self.period.map(|p| p.to_string()));
        if matches!(self.driver, Driver::Alsa { .. }) {
            opt(&mut a, "-n", self.nperiods.map(|n| n.to_string()));
        }
        a
    }
}

/// `jack_wait` until server `name` answers, giving up after `secs`; exits 0 once it does.
pub fn wait_args(name: &str, secs: u32) -> Vec<String> {
    ["jack_wait", "-w", "-t", &secs.to_string(), "-s", name]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// jackd's settings read back from its command line, as written there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Jackd {
    pub name: Option<String>,
    pub rate: Option<String>,
    pub period: Option<String>,
    pub prio: Option<String>,
    /// False with `-r` / `--no-realtime` before the driver.
    pub realtime: bool,
}

/// Reads a jackd command line (argv, program first).
pub fn jackd_args(cmdline: &[String]) -> Jackd {
    let mut j = Jackd {
        realtime: true,
        ..Default::default()
    };
    let mut driver = false;
    let mut it = cmdline.iter().skip(1);
    while let Some(a) = it.next() {
        match (driver, a.as_str()) {
            (false, "-d") | (false, "--driver") => {
                driver = true;
                it.next();
            }
            (false, "-n") | (false, "--name") => j.name = it.next().cloned(),
            (false, "-P") | (false, "--realtime-priority") => j.prio = it.next().cloned(),
            (false, "-r") | (false, "--no-realtime") => j.realtime = false,
            (true, "-r") | (true, "--rate") => j.rate = it.next().cloned(),
            (true, "-p") | (true, "--period") => j.period = it.next().cloned(),
            _ => {}
        }
    }
    j
}

/// Which JACK implementation answers a client: jackd2's libjack talks to a jackd; PipeWire's
/// libjack (pipewire-jack, what `pw-jack` puts first on the library path) to PipeWire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    Jackd2,
    PipeWire,
    /// A libjack whose version string is neither's (jackd1, a newer scheme).
    Other,
}

impl Implementation {
    /// The name run.json and the doctor use.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Jackd2 => "jackd2",
            Implementation::PipeWire => "pipewire",
            Implementation::Other => "jack",
        }
    }
}

/// The JACK server behind a client, as its libjack says.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub implementation: Implementation,
    /// The server's version: PipeWire's ("0.3.65"), or jackd2's libjack version ("1.9.21").
    pub version: String,
    /// The libjack file the process loaded (from /proc/self/maps).
    pub library: Option<String>,
}

impl Identity {
    /// "PipeWire 0.3.65 (libjack /usr/lib/.../pipewire-0.3/jack/libjack.so.0)".
    pub fn describe(&self) -> String {
        let who = match self.implementation {
            Implementation::Jackd2 => "jackd2",
            Implementation::PipeWire => "PipeWire",
            Implementation::Other => "JACK",
        };
        let lib = self
            .library
            .as_deref()
            .map_or(String::new(), |l| format!(" (libjack {l})"));
        format!("{who} {}{lib}", self.version)
    }
}

/// Reads `jack_get_version_string()`: PipeWire's libjack says "3.0.0.0 (using PipeWire
/// 0.3.65)", jackd2's its own version ("1.9.21").
pub fn identify(version_string: &str, library: Option<String>) -> Identity {
    let v = version_string.trim();
    let (implementation, version) = if let Some(i) = v.find("PipeWire") {
        let rest = v[i + "PipeWire".len()..].trim_start();
        let ver: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (Implementation::PipeWire, ver)
    } else if v.starts_with("1.9.") {
        (Implementation::Jackd2, v.to_string())
    } else {
        (Implementation::Other, v.to_string())
    };
    // A library on PipeWire's own path is PipeWire's whatever its string says.
    let implementation = match &library {
        Some(l) if l.contains("pipewire") => Implementation::PipeWire,
        _ => implementation,
    };
    Identity {
        implementation,
        version,
        library,
    }
}

/// The libjack mapped into this process (a line of /proc/self/maps whose file name
/// starts with "libjack.so").
pub fn loaded_library(maps: &str) -> Option<String> {
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            p.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("libjack.so"))
        })
        .map(str::to_string)
}

/// The driver part of a running jackd's command line (argv, program first): the
/// driver's name and its device when it names one (`-d alsa -d hw:0` gives
/// "alsa hw:0"); None when no `-d` is given.
pub fn driver_of(cmdline: &[String]) -> Option<String> {
    let mut it = cmdline.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "-d" || a == "--driver" {
            let name = it.next()?.clone();
            let mut dev = None;
            while let Some(b) = it.next() {
                if matches!(b.as_str(), "-d" | "--device" | "-P" | "--playback") {
                    dev = it.next().cloned();
                    break;
                }
            }
            return Some(match dev {
                Some(d) if name == "alsa" => format!("{name} {d}"),
                _ => name,
            });
        }
        if let Some(name) = a.strip_prefix("--driver=") {
            return Some(name.to_string());
        }
    }
    None
}

/// The driver of the running jackd serving `name` (`serving`; for the default server,
/// a jackd given no `-n`), when exactly one is found.
pub fn running_driver(name: &str) -> Option<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmd
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let prog = args.first().map(|a| a.rsplit('/').next().unwrap_or(a));
        if prog != Some("jackd") {
            continue;
        }
        let served = jackd_args(&args)
            .name
            .unwrap_or_else(|| DEFAULT_SERVER.into());
        if served == name {
            found.extend(driver_of(&args));
        }
    }
    (found.len() == 1).then(|| found.remove(0))
}

/// Pids of live processes whose command line names server `name` (`-n NAME`): a
/// private jackd's, for starting and cleaning one up (the tests, the benchmarks).
pub fn serving(name: &str) -> Vec<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_is_read_from_jackds_command_line() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            driver_of(&args("jackd -n x -R -d dummy -r 48000 -p 256")).as_deref(),
            Some("dummy")
        );
        assert_eq!(
            driver_of(&args("/usr/bin/jackd -R -P 70 -d alsa -r 48000 -d hw:1")).as_deref(),
            Some("alsa hw:1")
        );
        assert_eq!(
            driver_of(&args("jackd -d alsa -P hw:Loopback,0 -C hw:Loopback,1")).as_deref(),
            Some("alsa hw:Loopback,0")
        );
        assert_eq!(driver_of(&args("jackd -R")), None);
        // The guest's launcher's own command lines read back as what they start.
        let dummy = Command {
            name: Some("x".into()),
            priority: None,
            driver: Driver::Dummy {
                playback_ports: None,
                capture_ports: None,
            },
            rate: Some(48000),
            period: Some(256),
            nperiods: None,
        };
        let d = driver_of(&dummy.args()).unwrap();
        assert!(results::livefx::no_sound_card(&d), "{d}");
        let d = driver_of(&alsa().args()).unwrap();
        assert!(results::livefx::no_sound_card(&d), "{d}");
        assert!(!results::livefx::no_sound_card("alsa hw:0"));
    }

    fn alsa() -> Command {
        Command {
            name: Some("xrunrig".into()),
            priority: Some(server_priority(70)),
            driver: Driver::Alsa {
                device: None,
                playback: Some("hw:Loopback,0".into()),
                capture: Some("hw:Loopback,1".into()),
            },
            rate: Some(48000),
            period: Some(128),
            nperiods: Some(2),
        }
    }

    #[test]
    fn command_lines_put_server_options_before_the_driver() {
        assert_eq!(
            alsa().args().join(" "),
            "jackd -n xrunrig -R -P 75 -d alsa -P hw:Loopback,0 -C hw:Loopback,1 \
             -r 48000 -p 128 -n 2"
        );
        let d = Command {
            name: None,
            priority: Some(70),
            driver: Driver::Dummy {
                playback_ports: None,
                capture_ports: None,
            },
            nperiods: Some(2),
            ..alsa()
        };
        // The dummy driver has no -n.
        assert_eq!(
            d.args().join(" "),
            "jackd -R -P 70 -d dummy -r 48000 -p 128"
        );
    }

    /// What the launcher writes, the doctor reads back.
    #[test]
    fn a_built_command_line_reads_back() {
        let j = jackd_args(&alsa().args());
        assert_eq!(
            j,
            Jackd {
                name: Some("xrunrig".into()),
                rate: Some("48000".into()),
                period: Some("128".into()),
                prio: Some("75".into()),
                realtime: true,
            }
        );
    }

    #[test]
    fn priorities_stay_in_jackd_range() {
        assert_eq!(server_priority(70), 75);
        assert_eq!(server_priority(1), 10);
        assert_eq!(server_priority(99), 95);
    }

    #[test]
    fn wait_names_the_server() {
        assert_eq!(
            wait_args("xrunrig", 20).join(" "),
            "jack_wait -w -t 20 -s xrunrig"
        );
    }

    #[test]
    fn version_strings_name_the_server() {
        let pw = identify("3.0.0.0 (using PipeWire 0.3.65)", None);
        assert_eq!(pw.implementation, Implementation::PipeWire);
        assert_eq!(pw.version, "0.3.65");
        let j = identify(
            "1.9.21",
            Some("/usr/lib/x86_64-linux-gnu/libjack.so.0.1.0".into()),
        );
        assert_eq!(j.implementation, Implementation::Jackd2);
        assert_eq!(j.version, "1.9.21");
        assert_eq!(
            j.describe(),
            "jackd2 1.9.21 (libjack /usr/lib/x86_64-linux-gnu/libjack.so.0.1.0)"
        );
        assert_eq!(
            identify("0.125.0", None).implementation,
            Implementation::Other
        );
        // pw-jack's library path wins over an unexpected string.
        let p = identify(
            "3.0.0.0",
            Some("/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0".into()),
        );
        assert_eq!(p.implementation, Implementation::PipeWire);
    }

    #[test]
    fn the_loaded_libjack_is_found_in_maps() {
        let maps = "7f1-7f2 r--p 00000000 fe:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7f3-7f4 r-xp 00000000 fe:01 2 /usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0.365.0\n\
                    7f5-7f6 rw-p 00000000 00:00 0 \n";
        assert_eq!(
            loaded_library(maps).as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/pipewire-0.3/jack/libjack.so.0.365.0")
        );
        assert_eq!(
            loaded_library("7f-8f r--p 0 0:0 0 /usr/lib/libjackserver.so.0\n"),
            None
        );
    }
}
