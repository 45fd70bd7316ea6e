//! Audio: JACK server, PipeWire, ALSA cards, the sound card's IRQ and the priority of
//! its IRQ thread.

use super::ctx::{Ctx, Proc};
use super::source::{Source, describe_err};
use super::{Check, Mode};

const AREA: &str = "audio";

pub fn checks(src: &dyn Source, ctx: &Ctx, mode: Mode) -> Vec<Check> {
    let cards = cards(src, ctx);
    let irqs = sound_irqs(src, &cards);
    vec![
        jack(src, ctx, mode),
        pipewire(ctx),
        alsa_cards(&cards),
        sound_irq(&cards, &irqs),
        irq_thread(src, ctx, &cards, &irqs),
    ]
}

#[derive(Debug, Clone, PartialEq)]
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

/// A sound-related line of /proc/interrupts: IRQ number and handler names.
#[derive(Debug, Clone, PartialEq)]
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
            .data(serde_json::json!(v.iter().map(|k| serde_json::json!({"index": k.index, "id": k.id, "driver": k.driver, "name": k.name})).collect::<Vec<_>>())),
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
    let c = c.data(serde_json::json!(
        irqs.iter()
            .map(|l| serde_json::json!({"irq": l.irq, "names": l.names, "count": l.count}))
            .collect::<Vec<_>>()
    ));
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

fn jack(src: &dyn Source, ctx: &Ctx, mode: Mode) -> Check {
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
    match src.jack() {
        Ok(a) => {
            let ms = a.period as f64 * 1000.0 / a.rate.max(1) as f64;
            let me = servers.iter().find(|s| s.0 == a.server);
            let found = format!(
                "server '{}' answers: {} Hz, {} frames per period ({ms:.2} ms){}",
                a.server,
                a.rate,
                a.period,
                me.map_or(String::new(), |s| format!("; {}", s.2))
            );
            let c =
                c.data(serde_json::json!({"server": a.server, "rate": a.rate, "period": a.period}));
            if me.is_some_and(|s| !s.1) {
                c.warn(found, rt_fix)
            } else {
                c.pass(found)
            }
        }
        Err(e) if e.contains("not recorded") => c.na(e),
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
                c.na(e).with_fix(format!(
                    "to use JACK, start a server, e.g. {}",
                    example_jackd().join(" ")
                ))
            }
        }
    }
}

fn pipewire(ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "audio.pipewire",
        "PipeWire",
        "PipeWire serves JACK clients too (pw-jack); its quantum is then the period, and it \
         holds the card, so a separate jackd on the same card fails",
    );
    if !ctx.procs_listed {
        return c.na("cannot list processes in /proc");
    }
    let pw = ctx.procs_named(&["pipewire"]);
    match pw.first() {
        None => c.na("not running"),
        Some(p) => {
            let jackd = jack_procs(ctx);
            if jackd.is_empty() {
                c.pass(format!("running (pid {})", p.pid))
            } else {
                c.warn(
                    format!(
                        "running (pid {}) beside jackd (pid {})",
                        p.pid, jackd[0].pid
                    ),
                    "use one of them: stop jackd and run JACK clients with pw-jack, or stop \
                     PipeWire on the card jackd uses",
                )
            }
        }
    }
}
