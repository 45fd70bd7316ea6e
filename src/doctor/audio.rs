//! Audio: JACK server, PipeWire, ALSA cards, the sound card's IRQ and the priority of
//! its IRQ thread.

use super::ctx::{Ctx, Proc};
use super::probe::JackAnswer;
use super::source::{ProbeError, Source, describe_err};
use super::{Check, Mode, data_of};
use serde::{Deserialize, Serialize};
use serde_json::Value;

const AREA: &str = "audio";

pub fn checks(src: &dyn Source, ctx: &Ctx, mode: Mode) -> Vec<Check> {
    let cards = cards(src, ctx);
    let irqs = sound_irqs(src, &cards);
    // One client connection serves both checks: which server answers matters to both.
    let answer = mode.connect_jack.then(|| src.jack());
    vec![
        jack(src, ctx, mode, &answer),
        pipewire(src, ctx, &answer),
        alsa_cards(&cards),
        sound_irq(&cards, &irqs),
        irq_thread(src, ctx, &cards, &irqs),
    ]
}

/// A sound card (audio.alsa_cards' data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    pub index: u32,
    pub id: String,
    pub driver: String,
    pub name: String,
}

/// Cards that have no interrupt of their own: they run from kernel timers.
const VIRTUAL: &[&str] = &["Dummy", "Loopback", "VirMIDI", "Virtual"];

/// Parses /proc/asound/cards (" 0 [Dummy          ]: Dummy - Dummy").
pub fn parse_cards(text: &str) -> Vec<Card> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let (idx, rest) = l.split_once(' ')?;
            let index = idx.parse().ok()?;
            let rest = rest.trim_start().strip_prefix('[')?;
            let (id, rest) = rest.split_once(']')?;
            let rest = rest.trim_start().strip_prefix(':')?;
            let (driver, name) = rest.split_once(" - ").unwrap_or((rest, ""));
            Some(Card {
                index,
                id: id.trim().to_string(),
                driver: driver.trim().to_string(),
                name: name.trim().to_string(),
            })
        })
        .collect()
}

/// The cards, or why there are none.
pub fn cards(src: &dyn Source, ctx: &Ctx) -> Result<Vec<Card>, String> {
    let path = "/proc/asound/cards";
    match src.read(path) {
        Ok(t) => {
            let v = parse_cards(&t);
            if v.is_empty() {
                Err(format!("no sound cards ({path}: '{}')", t.trim()))
            } else {
                Ok(v)
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let why = match &ctx.config {
                Ok(c) if c.get("CONFIG_SOUND") == Some("n") || c.get("CONFIG_SND") == Some("n") => {
                    "the kernel is built without sound (CONFIG_SOUND is not set)".to_string()
                }
                Ok(c) if c.get("CONFIG_SND") == Some("m") => {
                    "the sound modules are not loaded (CONFIG_SND=m)".to_string()
                }
                _ => "no sound support loaded in this kernel".to_string(),
            };
            Err(format!("no sound cards: no /proc/asound ({why})"))
        }
        Err(e) => Err(describe_err(path, &e)),
    }
}

/// A sound-related line of /proc/interrupts: IRQ number and handler names
/// (audio.sound_irq's data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IrqLine {
    pub irq: u32,
    pub names: String,
    pub count: u64,
}

/// Lines whose handler name matches one of `needles`.
pub fn parse_irqs(text: &str, needles: &[&str]) -> Vec<IrqLine> {
    let ncpu = text.lines().next().map_or(0, |h| {
        h.split_whitespace()
            .filter(|w| w.starts_with("CPU"))
            .count()
    });
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let (n, rest) = l.trim_start().split_once(':')?;
            let irq: u32 = n.trim().parse().ok()?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let counts: u64 = f
                .iter()
                .take(ncpu)
                .filter_map(|c| c.parse::<u64>().ok())
                .sum();
            // After the counts: chip, hwirq-type, then the handler names.
            let names = f.get(ncpu + 2..).map(|x| x.join(" ")).unwrap_or_default();
            needles
                .iter()
                .any(|n| names.contains(n))
                .then_some(IrqLine {
                    irq,
                    names,
                    count: counts,
                })
        })
        .collect()
}

fn sound_irqs(src: &dyn Source, cards: &Result<Vec<Card>, String>) -> Result<Vec<IrqLine>, String> {
    let Ok(cards) = cards else {
        return Ok(Vec::new());
    };
    let text = src
        .read("/proc/interrupts")
        .map_err(|e| describe_err("/proc/interrupts", &e))?;
    let mut needles = vec!["snd"];
    if cards.iter().any(|c| c.driver.contains("USB")) {
        needles.extend(["xhci_hcd", "ehci_hcd", "ohci_hcd", "uhci_hcd"]);
    }
    Ok(parse_irqs(&text, &needles))
}

fn alsa_cards(cards: &Result<Vec<Card>, String>) -> Check {
    let c = Check::new(
        AREA,
        "audio.alsa_cards",
        "ALSA cards",
        "the sound devices the kernel drives; without one there is nothing to play to or \
         record from (rigs then run on the clock backend)",
    );
    match cards {
        Err(e) => c.na(e.clone()),
        Ok(v) => c
            .pass(
                v.iter()
                    .map(|k| format!("{} {} ({})", k.index, k.id, k.driver))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
            .with_data(data_of(v)),
    }
}

fn sound_irq(cards: &Result<Vec<Card>, String>, irqs: &Result<Vec<IrqLine>, String>) -> Check {
    let c = Check::new(
        AREA,
        "audio.sound_irq",
        "sound card IRQ",
        "each period the card raises this interrupt; if another device shares it, or it lands \
         on a busy CPU, the audio thread is woken late",
    );
    let cards = match cards {
        Err(e) => return c.na(e.clone()),
        Ok(v) => v,
    };
    let irqs = match irqs {
        Err(e) => return c.na(e.clone()),
        Ok(v) => v,
    };
    if irqs.is_empty() {
        if cards.iter().all(|k| VIRTUAL.contains(&k.driver.as_str())) {
            return c.na("only virtual cards (no IRQ of their own: they run from kernel timers)");
        }
        return c.na("no snd_* line in /proc/interrupts for these cards");
    }
    let shared: Vec<&IrqLine> = irqs.iter().filter(|l| l.names.contains(',')).collect();
    let found = irqs
        .iter()
        .map(|l| format!("IRQ {} ({}, {} interrupts)", l.irq, l.names, l.count))
        .collect::<Vec<_>>()
        .join("; ");
    let c = c.with_data(data_of(irqs));
    if shared.is_empty() {
        c.pass(found)
    } else {
        c.warn(
            format!("{found}: shared with another device"),
            "move the card to another slot/port, or use MSI (snd_hda_intel enable_msi=1)",
        )
    }
}

/// (rt_priority, policy) from /proc/PID/stat.
pub fn stat_rt(text: &str) -> Option<(u32, u32)> {
    let after = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Field 40 (rt_priority) and 41 (policy); `after` starts at field 3.
    Some((f.get(37)?.parse().ok()?, f.get(38)?.parse().ok()?))
}

fn irq_threads(src: &dyn Source, ctx: &Ctx) -> Vec<(u32, String, u32, u32)> {
    ctx.procs
        .iter()
        .filter(|p| p.comm.starts_with("irq/"))
        .filter_map(|p| {
            let (rt, pol) = stat_rt(&src.read(&format!("/proc/{}/stat", p.pid)).ok()?)?;
            Some((p.pid, p.comm.clone(), rt, pol))
        })
        .collect()
}

fn irq_thread(
    src: &dyn Source,
    ctx: &Ctx,
    cards: &Result<Vec<Card>, String>,
    irqs: &Result<Vec<IrqLine>, String>,
) -> Check {
    let c = Check::new(
        AREA,
        "audio.irq_thread",
        "sound IRQ thread priority",
        "with threaded IRQs the card's handler is a FIFO thread (50 by default, like every \
         other IRQ); above the others, the card's interrupt is never queued behind a disk's",
    );
    if let Err(e) = cards {
        return c.na(e.clone());
    }
    let irqs = match irqs {
        Err(e) => return c.na(e.clone()),
        Ok(v) if v.is_empty() => return c.na("no sound card IRQ (see above)"),
        Ok(v) => v,
    };
    let threads = irq_threads(src, ctx);
    let mut found = Vec::new();
    let mut low = false;
    for l in irqs {
        let prefix = format!("irq/{}-", l.irq);
        let mine: Vec<_> = threads
            .iter()
            .filter(|t| t.1.starts_with(&prefix))
            .collect();
        if mine.is_empty() {
            found.push(format!("IRQ {}: no IRQ thread (not threaded)", l.irq));
            low = true;
            continue;
        }
        let others = threads
            .iter()
            .filter(|t| !t.1.starts_with(&prefix))
            .map(|t| t.2)
            .max()
            .unwrap_or(0);
        for t in mine {
            found.push(format!(
                "{} (pid {}) FIFO {} (other IRQ threads up to {others})",
                t.1, t.0, t.2
            ));
            if t.2 <= others || t.3 != libc::SCHED_FIFO as u32 {
                low = true;
            }
        }
    }
    let found = found.join("; ");
    if low {
        c.warn(
            found,
            "boot with threadirqs, then raise the card's IRQ thread: chrt -f -p 90 PID (or \
             install rtirq, which does it at boot)",
        )
    } else {
        c.pass(found)
    }
}

/// jackd's settings from its command line: the JACK backend reads it, as its launcher
/// writes it.
pub use crate::audio::jack::server::{Jackd, jackd_args};

/// A server to suggest: realtime, on the first card, at a common rate and period.
fn example_jackd() -> Vec<String> {
    use crate::audio::jack::server::{Command, Driver};
    Command {
        name: None,
        priority: Some(70),
        driver: Driver::Alsa {
            device: Some("hw:0".into()),
            playback: None,
            capture: None,
        },
        rate: Some(48000),
        period: Some(128),
        nperiods: None,
    }
    .args()
}

fn jack_procs(ctx: &Ctx) -> Vec<&Proc> {
    ctx.procs_named(&["jackd", "jackdbus"])
}

/// Highest rt_priority among a process's threads.
fn proc_rt_prio(src: &dyn Source, pid: u32) -> Option<u32> {
    let tasks = src.list(&format!("/proc/{pid}/task")).ok()?;
    tasks
        .iter()
        .filter_map(|t| stat_rt(&src.read(&format!("/proc/{pid}/task/{t}/stat")).ok()?))
        .map(|(p, _)| p)
        .max()
}

/// One running jackd: its server name and a one-line description.
fn describe_jackd(src: &dyn Source, p: &Proc) -> (String, bool, String) {
    let args: Vec<String> = src
        .read(&format!("/proc/{}/cmdline", p.pid))
        .unwrap_or_default()
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let j = jackd_args(&args);
    let name = j.name.clone().unwrap_or_else(|| "default".into());
    let live = proc_rt_prio(src, p.pid);
    let text = format!(
        "{} '{name}' (pid {}{}{}{}{})",
        p.comm,
        p.pid,
        j.rate.map_or(String::new(), |r| format!(", -r {r}")),
        j.period.map_or(String::new(), |r| format!(", -p {r}")),
        if j.realtime {
            j.prio.map_or(String::new(), |r| format!(", -P {r}"))
        } else {
            ", NOT realtime (-r)".into()
        },
        live.map_or(String::new(), |p| format!(", threads up to FIFO {p}"))
    );
    (name, j.realtime, text)
}

fn jack(
    src: &dyn Source,
    ctx: &Ctx,
    mode: Mode,
    answer: &Option<Result<JackAnswer, ProbeError>>,
) -> Check {
    let c = Check::new(
        AREA,
        "audio.jack",
        "JACK server",
        "pro-audio applications (and xrunrig's livefx rig) play through JACK: its period is \
         the deadline every cycle must meet, and it must run realtime",
    );
    let servers: Vec<(String, bool, String)> = jack_procs(ctx)
        .iter()
        .map(|p| describe_jackd(src, p))
        .collect();
    let running = servers
        .iter()
        .map(|s| s.2.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    let rt_fix = "restart jackd with -R (realtime)";
    if !mode.connect_jack {
        return if servers.is_empty() {
            c.na("no jackd process (quick check: no client connection made)")
        } else if servers.iter().any(|s| !s.1) {
            c.warn(running, rt_fix)
        } else {
            c.pass(format!(
                "{running} (quick check: no client connection made)"
            ))
        };
    }
    let Some(answer) = answer else {
        return c.na("no client connection made");
    };
    match answer {
        Ok(a) => {
            let ms = a.period as f64 * 1000.0 / a.rate.max(1) as f64;
            let me = servers.iter().find(|s| s.0 == a.server);
            let found = format!(
                "server '{}' answers: {} Hz, {} frames per period ({ms:.2} ms){}{}",
                a.server,
                a.rate,
                a.period,
                a.implementation
                    .as_deref()
                    .map_or(String::new(), |i| format!("; served by {i}")),
                me.map_or(String::new(), |s| format!("; {}", s.2))
            );
            let c = c.with_data(data_of(a));
            if me.is_some_and(|s| !s.1) {
                c.warn(found, rt_fix)
            } else {
                c.pass(found)
            }
        }
        Err(e @ ProbeError::NotRecorded(_)) => c.na(e.to_string()),
        Err(e) => {
            let want = crate::audio::jack::server_name(&None);
            if servers.iter().any(|s| s.0 == want) {
                c.fail(
                    format!("{running} runs, but {e}"),
                    "restart jackd; check its log for the error",
                )
            } else if let Some(other) = servers.first() {
                c.warn(
                    format!("{e}; other servers run: {running}"),
                    format!("select one with JACK_DEFAULT_SERVER={}", other.0),
                )
            } else {
                c.na(e.to_string()).with_fix(format!(
                    "to use JACK, start a server, e.g. {}",
                    example_jackd().join(" ")
                ))
            }
        }
    }
}

/// A PipeWire setting that changes what JACK clients get, and where it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PwFinding {
    /// Where: "settings metadata", "node 'NAME'", "FILE:LINE".
    pub at: String,
    pub key: String,
    pub value: String,
}

impl PwFinding {
    fn text(&self) -> String {
        format!("{} = {} ({})", self.key, self.value, self.at)
    }
}

/// What pw-dump says about the running PipeWire: its version, the settings the core
/// runs with, and the settings that force a period or rate on JACK clients.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PwState {
    pub version: Option<String>,
    pub quantum: Option<u64>,
    pub rate: Option<u64>,
    pub link_max_buffers: Option<u64>,
    /// Forcing settings: clock.force-quantum / clock.force-rate in the "settings"
    /// metadata, node.force-quantum / node.force-rate / node.lock-quantum on JACK nodes.
    pub forced: Vec<PwFinding>,
}

/// A JSON value as text, numbers and strings alike (metadata values are strings).
fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// "0", "false", "" and absent force nothing.
fn forces(value: &str) -> bool {
    let v = value.trim().trim_matches('"');
    !(v.is_empty() || v == "0" || v == "false")
}

/// Reads pw-dump's JSON (an array of objects).
pub fn parse_pw_dump(text: &str) -> Result<PwState, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("pw-dump's output is not JSON: {e}"))?;
    let objs = v
        .as_array()
        .ok_or("pw-dump's output is not a list of objects")?;
    let mut st = PwState::default();
    for o in objs {
        let ty = o["type"].as_str().unwrap_or("");
        let props = &o["info"]["props"];
        if ty.ends_with(":Core") && props["core.daemon"] == Value::Bool(true) {
            st.version = o["info"]["version"].as_str().map(str::to_string);
            st.quantum = props["default.clock.quantum"].as_u64();
            st.rate = props["default.clock.rate"].as_u64();
            st.link_max_buffers = props["link.max-buffers"].as_u64();
        } else if ty.ends_with(":Metadata") && o["props"]["metadata.name"] == "settings" {
            for m in o["metadata"].as_array().into_iter().flatten() {
                let key = m["key"].as_str().unwrap_or("");
                if key == "clock.force-quantum" || key == "clock.force-rate" {
                    let val = as_text(&m["value"]).unwrap_or_default();
                    if forces(&val) {
                        st.forced.push(PwFinding {
                            at: "settings metadata".into(),
                            key: key.into(),
                            value: val,
                        });
                    }
                }
            }
        } else if ty.ends_with(":Node") && props["client.api"] == "jack" {
            let name = props["node.name"].as_str().unwrap_or("?");
            for key in ["node.force-quantum", "node.force-rate", "node.lock-quantum"] {
                if let Some(val) = as_text(&props[key]).filter(|v| forces(v)) {
                    st.forced.push(PwFinding {
                        at: format!("JACK node '{name}'"),
                        key: key.into(),
                        value: val,
                    });
                }
            }
        }
    }
    Ok(st)
}

/// Keys in jack.conf that force a period or rate on JACK clients. Not
/// `jack.global-buffer-size`: Debian's own jack.conf sets it in a rule for jack_bufsize
/// only, and it forces nothing by itself (it makes a client's period change global).
const JACK_CONF_KEYS: &[&str] = &[
    "node.force-quantum",
    "node.force-rate",
    "node.lock-quantum",
    "node.quantum",
    "node.rate",
];

/// Lines of a PipeWire JACK config (SPA-JSON) that set one of `JACK_CONF_KEYS`, outside
/// comments: (line number, key, value). A line scan: it does not tell `jack.properties`
/// (every client) from a `jack.rules` entry (matching clients), so the line is named.
pub fn jack_conf_settings(text: &str) -> Vec<(usize, String, String)> {
    let mut v = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("").trim();
        for key in JACK_CONF_KEYS {
            let Some(rest) = code.strip_prefix(key) else {
                continue;
            };
            let rest = rest.trim_start();
            let Some(val) = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':')) else {
                continue;
            };
            let val = val.trim().trim_end_matches(',').trim().to_string();
            if forces(&val) {
                v.push((n + 1, key.to_string(), val));
            }
        }
    }
    v
}

/// jack.conf and its drop-ins, in PipeWire's search order (system, admin, user).
fn jack_conf_files(src: &dyn Source) -> Vec<String> {
    let mut dirs = vec![
        "/usr/share/pipewire".to_string(),
        "/etc/pipewire".to_string(),
    ];
    if let Some(c) = std::env::var_os("XDG_CONFIG_HOME") {
        dirs.push(format!("{}/pipewire", c.to_string_lossy()));
    } else if let Some(h) = std::env::var_os("HOME") {
        dirs.push(format!("{}/.config/pipewire", h.to_string_lossy()));
    }
    let mut files = Vec::new();
    for d in dirs {
        files.push(format!("{d}/jack.conf"));
        let mut drop: Vec<String> = src
            .list(&format!("{d}/jack.conf.d"))
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.ends_with(".conf"))
            .collect();
        drop.sort();
        files.extend(drop.into_iter().map(|f| format!("{d}/jack.conf.d/{f}")));
    }
    files
}

/// Forcing lines in the JACK configs this machine has.
fn jack_conf_forcing(src: &dyn Source) -> Vec<PwFinding> {
    let mut v = Vec::new();
    for f in jack_conf_files(src) {
        let Ok(text) = src.read(&f) else { continue };
        for (line, key, value) in jack_conf_settings(&text) {
            v.push(PwFinding {
                at: format!("{f}:{line}"),
                key,
                value,
            });
        }
    }
    v
}

/// audio.pipewire's data: the running PipeWire, what forces settings on JACK clients,
/// and pw-dump's settings when it was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipewireData {
    pub forced: Vec<PwFinding>,
    pub pid: u32,
    #[serde(flatten)]
    pub settings: Option<PwSettings>,
}

/// The settings the PipeWire core runs with (from pw-dump).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PwSettings {
    pub link_max_buffers: Option<u64>,
    pub quantum: Option<u64>,
    pub rate: Option<u64>,
    pub version: Option<String>,
}

fn pipewire(src: &dyn Source, ctx: &Ctx, answer: &Option<Result<JackAnswer, ProbeError>>) -> Check {
    let c = Check::new(
        AREA,
        "audio.pipewire",
        "PipeWire",
        "PipeWire serves JACK clients too (pw-jack); its quantum is then the period, and it \
         holds the card, so a separate jackd on the same card fails. A quantum or rate it \
         forces overrides the period a JACK client asks for, and too few buffers per link \
         leave no slack",
    );
    if !ctx.procs_listed {
        return c.na("cannot list processes in /proc");
    }
    let pw = ctx.procs_named(&["pipewire"]);
    let conf = jack_conf_forcing(src);
    let Some(p) = pw.first() else {
        return if conf.is_empty() {
            c.na("not running")
        } else {
            c.na(format!(
                "not running; its JACK config forces: {}",
                conf.iter()
                    .map(PwFinding::text)
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        };
    };
    let jackd = jack_procs(ctx);
    let mut found = vec![format!("running (pid {})", p.pid)];
    let mut fixes: Vec<String> = Vec::new();
    if let Some(j) = jackd.first() {
        found.push(format!("beside jackd (pid {})", j.pid));
        fixes.push(
            "use one of them: stop jackd and run JACK clients with pw-jack, or stop PipeWire \
             on the card jackd uses"
                .into(),
        );
    }
    // Which JACK a client reaches: PipeWire's only through its libjack (pw-jack).
    match answer {
        Some(Ok(a)) if a.kind.as_deref() == Some("pipewire") => {
            found.push(format!("JACK clients reach PipeWire (server '{}')", a.server))
        }
        Some(Ok(a)) => found.push(format!(
            "JACK clients reach {} (server '{}'), not PipeWire: run them with pw-jack to use PipeWire",
            a.implementation.as_deref().unwrap_or("another JACK server"),
            a.server
        )),
        _ => {}
    }
    let mut forced = conf;
    let mut settings = None;
    if answer.is_some() {
        match src
            .pipewire_dump()
            .and_then(|t| parse_pw_dump(&t).map_err(ProbeError::Failed))
        {
            Ok(st) => {
                found.push(format!(
                    "version {}, quantum {}, rate {}, link.max-buffers {}",
                    st.version.as_deref().unwrap_or("?"),
                    st.quantum.map_or("?".into(), |q| q.to_string()),
                    st.rate.map_or("?".into(), |q| q.to_string()),
                    st.link_max_buffers.map_or("?".into(), |q| q.to_string()),
                ));
                if st.link_max_buffers.is_some_and(|b| b < 2) {
                    found.push(
                        "link.max-buffers below 2: one buffer per link, no slack when a \
                         consumer is late"
                            .into(),
                    );
                    fixes.push(
                        "set link.max-buffers = 16 (the default) in pipewire.conf's \
                         context.properties"
                            .into(),
                    );
                }
                settings = Some(PwSettings {
                    link_max_buffers: st.link_max_buffers,
                    quantum: st.quantum,
                    rate: st.rate,
                    version: st.version,
                });
                forced.extend(st.forced);
            }
            Err(ProbeError::NotRecorded(_)) => {}
            Err(e) => found.push(format!("settings not read: {e}")),
        }
    }
    if !forced.is_empty() {
        found.push(format!(
            "forces on JACK clients: {}",
            forced
                .iter()
                .map(PwFinding::text)
                .collect::<Vec<_>>()
                .join("; ")
        ));
        fixes.push(
            "let clients choose: pw-metadata -n settings 0 clock.force-quantum 0 (and \
             clock.force-rate 0); remove node.force-*/node.lock-* lines from jack.conf"
                .into(),
        );
    }
    let c = c.with_data(data_of(PipewireData {
        forced,
        pid: p.pid,
        settings,
    }));
    let found = found.join("; ");
    if fixes.is_empty() {
        c.pass(found)
    } else {
        c.warn(found, fixes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::source::Recorded;

    /// The objects of a real pw-dump (PipeWire 0.3.65 with `pw-metadata -n settings 0
    /// clock.force-quantum 512`), cut to what the doctor reads, plus a JACK client node.
    fn dump(link_max_buffers: u64) -> String {
        r#"[
            {"id": 0, "type": "PipeWire:Interface:Core", "info": {"version": "0.3.65",
              "props": {"core.daemon": true, "default.clock.quantum": 1024,
                "default.clock.rate": 48000, "link.max-buffers": LINK_MAX_BUFFERS}}},
            {"id": 29, "type": "PipeWire:Interface:Metadata",
              "props": {"metadata.name": "settings"},
              "metadata": [
                {"subject": 0, "key": "clock.quantum", "type": "", "value": 1024},
                {"subject": 0, "key": "clock.force-quantum", "type": "", "value": 512},
                {"subject": 0, "key": "clock.force-rate", "type": "", "value": 0}]},
            {"id": 31, "type": "PipeWire:Interface:Node", "info": {"props": {
              "client.api": "jack", "node.name": "ardour", "node.force-rate": "44100",
              "node.lock-quantum": "false"}}},
            {"id": 27, "type": "PipeWire:Interface:Node", "info": {"props": {
              "node.name": "Dummy-Driver", "node.driver": true}}}
        ]"#
        .replace("LINK_MAX_BUFFERS", &link_max_buffers.to_string())
    }

    #[test]
    fn pw_dump_gives_version_settings_and_what_is_forced() {
        let st = parse_pw_dump(&dump(16)).unwrap();
        assert_eq!(st.version.as_deref(), Some("0.3.65"));
        assert_eq!(
            (st.quantum, st.rate, st.link_max_buffers),
            (Some(1024), Some(48000), Some(16))
        );
        let f: Vec<String> = st.forced.iter().map(PwFinding::text).collect();
        assert_eq!(
            f,
            [
                "clock.force-quantum = 512 (settings metadata)",
                "node.force-rate = 44100 (JACK node 'ardour')"
            ]
        );
        assert!(parse_pw_dump("not json").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn jack_conf_lines_that_force_are_found_outside_comments() {
        let conf = "jack.properties = {\n     #node.force-quantum = 256\n     node.force-quantum = 256\n     node.lock-quantum  = true  # keep it\n     node.force-rate = 0\n     jack.show-monitor = true\n}\n";
        assert_eq!(
            jack_conf_settings(conf),
            vec![
                (3, "node.force-quantum".to_string(), "256".to_string()),
                (4, "node.lock-quantum".to_string(), "true".to_string())
            ]
        );
    }

    fn pipewire_check(src: &Recorded, answer: Option<Result<JackAnswer, ProbeError>>) -> Check {
        let ctx = Ctx::read(src);
        pipewire(src, &ctx, &answer)
    }

    fn answer(kind: &str, what: &str) -> Option<Result<JackAnswer, ProbeError>> {
        Some(Ok(JackAnswer {
            server: "default".into(),
            rate: 48000,
            period: 1024,
            kind: Some(kind.into()),
            implementation: Some(what.into()),
        }))
    }

    #[test]
    fn the_pipewire_check_flags_forced_settings_and_few_link_buffers() {
        let src = Recorded::empty()
            .file("/proc/701/comm", "pipewire\n")
            .probes(&format!(r#"{{"pipewire_dump": {}}}"#, dump(1)));
        let c = pipewire_check(&src, answer("pipewire", "PipeWire 0.3.65"));
        assert_eq!(c.status, super::super::Status::Warn, "{c:?}");
        assert!(
            c.found.contains("JACK clients reach PipeWire"),
            "{}",
            c.found
        );
        assert!(c.found.contains("clock.force-quantum = 512"), "{}", c.found);
        assert!(c.found.contains("link.max-buffers below 2"), "{}", c.found);
        assert!(c.fix.as_deref().unwrap().contains("clock.force-quantum 0"));
        // Nothing forced, enough buffers, PipeWire answering: a pass.
        let src = Recorded::empty()
            .file("/proc/701/comm", "pipewire\n")
            .probes(
                r#"{"pipewire_dump": [{"type": "PipeWire:Interface:Core", "info": {
                    "version": "0.3.65", "props": {"core.daemon": true, "link.max-buffers": 16}}}]}"#,
            );
        let c = pipewire_check(&src, answer("pipewire", "PipeWire 0.3.65"));
        assert_eq!(c.status, super::super::Status::Pass, "{c:?}");
        // PipeWire runs but JACK clients reach jackd2's libjack: say how to reach it.
        let c = pipewire_check(&src, answer("jackd2", "jackd2 1.9.21"));
        assert!(
            c.found.contains("not PipeWire: run them with pw-jack"),
            "{}",
            c.found
        );
    }
}
