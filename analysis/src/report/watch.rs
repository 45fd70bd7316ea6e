//! The report of an `xrunrig watch` directory: what was watched (server, period, how
//! long, what the flight recorder could do), the verdict, the counts per cause and per
//! client, "Why the xruns" grouped by culprit and sentence (as livefx's "Why the
//! misses"), the kept trace windows and how to open them, and the timeline by cause.

use super::common::{fmt_count, fmt_dur, fmt_val, provenance};
use super::livefx::fmt_small;
use super::part::Part;
use crate::doc::Block;
use crate::load::Results;
use crate::load::watch::{CAUSES, Culprit, Figures, Origin, WatchData, Who};
use crate::out::Ctx;
use crate::plot::watch::XrunTimeline;
use crate::stats::zero_events_upper_per_hour;
use results::watch::{Cause, Task};

/// What a cause word means, for a reader who has not seen the engine.
pub fn meaning(c: Cause) -> &'static str {
    match c {
        Cause::SelfWork => "the late thread ran the whole cycle: its own work was too much",
        Cause::Preempted => "the late thread was runnable but another task held its CPU",
        Cause::PiChain => "the late thread waited on a PI lock whose holder could not run",
        Cause::Blocked => "the late thread waited on something another task released late",
        Cause::Interrupt => "interrupt handlers took the late thread's CPU",
        Cause::LateWakeup => {
            "the late thread was woken but its CPU stayed idle past the deadline: the \
             wake-up came late (deep idle, a delayed IPI or timer); the idle task is never \
             a culprit"
        }
        Cause::Unexplained => {
            "no client's or server's audio thread was behind at the deadline (a late driver \
             or timer, or a cause outside the trace)"
        }
        Cause::NoTrace => "the flight recorder was off or blind at that moment",
    }
}

fn explained(c: Cause) -> bool {
    !matches!(c, Cause::Unexplained | Cause::NoTrace)
}

/// A time in ns as the report prints it: "0", "412.0 us", "21.33 ms".
pub fn fmt_ns(ns: f64) -> String {
    if ns == 0.0 {
        "0".into()
    } else {
        super::common::fmt_us(ns / 1e3)
    }
}

/// The median of values (the mean of the middle two for an even count).
pub fn median(v: &[u64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2] as f64
    } else {
        (s[n / 2 - 1] as f64 + s[n / 2] as f64) / 2.0
    })
}

/// "19.65 / 21.31 / 21.33 ms" (min / median / max, one unit for the three, chosen by the
/// largest), or "21.33 ms" when they are the same; None for no values.
pub fn fmt_spread(v: &[u64]) -> Option<String> {
    let min = *v.iter().min()? as f64;
    let max = *v.iter().max()? as f64;
    let med = median(v)?;
    if min == max {
        return Some(fmt_ns(min));
    }
    let (div, unit) = if max >= 1e6 {
        (1e6, "ms")
    } else if max >= 1e3 {
        (1e3, "us")
    } else {
        (1.0, "ns")
    };
    let f = |x: f64| {
        if x == 0.0 {
            "0".into()
        } else {
            fmt_val(x / div)
        }
    };
    Some(format!("{} / {} / {} {unit}", f(min), f(med), f(max)))
}

/// A sentence's figures: the culprit's hold, then how the late thread spent the cycle
/// (running, runnable; asleep where it waited on a lock, interrupts where they were the
/// cause), each when any xrun has it.
fn figures_text(cause: Cause, f: &Figures) -> String {
    let mut parts = Vec::new();
    let mut spread = false;
    let waited = matches!(cause, Cause::PiChain | Cause::Blocked);
    for (name, v, shown) in [
        ("culprit held", &f.culprit_ns, true),
        ("running", &f.running_ns, true),
        ("runnable", &f.runnable_ns, true),
        ("asleep", &f.asleep_ns, waited),
        ("interrupts", &f.interrupt_ns, cause == Cause::Interrupt),
    ] {
        if !shown || v.iter().all(|x| *x == 0) {
            continue;
        }
        if let Some(s) = fmt_spread(v) {
            spread |= s.contains(" / ");
            parts.push(format!("{name} {s}"));
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        " {}{}.",
        capitalise(&parts.join(", ")),
        if spread { " (min / median / max)" } else { "" }
    )
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn pct(k: u64, n: u64) -> String {
    format!("{:.0} %", 100.0 * k as f64 / n.max(1) as f64)
}

/// "'fifo-hog' (tid 8986, FIFO 90) in process 'watch-culprits' (pid 8984)".
pub fn task_text(t: &Task) -> String {
    match (&t.process, t.pid) {
        (Some(p), Some(pid)) => format!("{} in process '{p}' (pid {pid})", t.named()),
        (Some(p), None) => format!("{} in process '{p}'", t.named()),
        (None, Some(pid)) => format!("{} (process {pid})", t.named()),
        (None, None) => t.named(),
    }
}

/// How a culprit heads its group.
pub fn who_text(w: &Who) -> String {
    match w {
        Who::Task(t) => task_text(t),
        Who::Interrupt(i) => format!("interrupt handlers ({i})"),
        Who::Nobody => "no culprit named".into(),
    }
}

/// "14 of 38 xruns: <why>. Culprit held 19.65 / 21.31 / 21.33 ms, runnable ... (min /
/// median / max)."
pub fn sentence_line(s: &crate::load::watch::Sentence, of: u64) -> String {
    let why = s.why.trim();
    let stop = if why.ends_with('.') { "" } else { "." };
    format!(
        "{} of {of} xruns ({}): {why}{stop}{}",
        s.n,
        s.cause.label(),
        figures_text(s.cause, &s.figures)
    )
}

/// "Why the xruns": each culprit with its share, then each distinct sentence once with
/// its count and figures. Nothing when there were no xruns.
pub fn why_blocks(w: &WatchData) -> Vec<Block> {
    if w.xruns == 0 {
        return vec![];
    }
    let n = w.xruns;
    let mut out = vec![Block::Para(format!(
        "{n} xruns, grouped by culprit (who or what kept the late audio thread from \
         finishing its cycle), then by the sentence that explains them. Culprit held: \
         how long the culprit held the CPU, the lock or the thread in the late cycle; \
         running, runnable, asleep, interrupts: how the late thread spent that cycle."
    ))];
    for c in &w.culprits {
        out.push(Block::Para(format!(
            "{}: {} of {n} xruns.",
            capitalise(&who_text(&c.who)),
            c.n
        )));
        out.push(Block::Bullets(
            c.sentences.iter().map(|s| sentence_line(s, n)).collect(),
        ));
    }
    out
}

fn by_cause_text(m: &std::collections::BTreeMap<Cause, u64>) -> String {
    CAUSES
        .iter()
        .filter_map(|c| {
            m.get(c)
                .filter(|k| **k > 0)
                .map(|k| format!("{k} {}", c.label()))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Counts per cause (with what each means) and per client (the late thread's).
pub fn tables(w: &WatchData) -> Vec<Block> {
    if w.xruns == 0 {
        return vec![Block::Para(format!(
            "No xruns in {} cycles.",
            fmt_count(w.summary.cycles)
        ))];
    }
    let n = w.xruns;
    let rows = CAUSES
        .iter()
        .filter_map(|c| {
            let k = *w.by_cause.get(c)?;
            Some(vec![c.label().to_string(), k.to_string(), pct(k, n)])
        })
        .collect();
    let meanings = CAUSES
        .iter()
        .filter(|c| w.by_cause.contains_key(c))
        .map(|c| format!("{}: {}", c.label(), meaning(*c)))
        .collect();
    let mut clients: Vec<(&String, u64, String)> = w
        .by_client
        .iter()
        .map(|(name, m)| (name, m.values().sum::<u64>(), by_cause_text(m)))
        .collect();
    clients.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let crow = clients
        .into_iter()
        .map(|(name, k, causes)| vec![name.clone(), k.to_string(), pct(k, n), causes])
        .collect();
    let head = |h: &[&str]| h.iter().map(|s| s.to_string()).collect();
    vec![
        Block::Para(format!(
            "{n} xruns in {} cycles, by cause:",
            fmt_count(w.summary.cycles)
        )),
        Block::Table {
            head: head(&["cause", "xruns", "share"]),
            rows,
            right: vec![false, true, true],
        },
        Block::Bullets(meanings),
        Block::Para(
            "By client: the JACK client or process whose audio thread was late (the counts \
             per client name the thread that missed the deadline, not the culprit)."
                .into(),
        ),
        Block::Table {
            head: head(&["client", "xruns", "share", "causes"]),
            rows: crow,
            right: vec![false, true, true, false],
        },
    ]
}

/// "JACK server 'rep'".
fn server_text(w: &WatchData) -> String {
    let s = &w.summary;
    let kind = match s.server.as_str() {
        "jack" => "JACK",
        "pipewire" => "PipeWire (through its JACK library)",
        other => other,
    };
    match &s.server_name {
        Some(n) if !n.is_empty() => format!("{kind} server '{n}'"),
        _ => format!("{kind} server"),
    }
}

/// "1024 frames at 48000 Hz (21.33 ms per period)".
fn audio_text(w: &WatchData) -> String {
    let s = &w.summary;
    let per = (s.rate > 0).then(|| s.period as f64 * 1e9 / s.rate as f64);
    format!(
        "{} frames at {} Hz{}",
        s.period,
        s.rate,
        per.map_or(String::new(), |p| format!(" ({} per period)", fmt_ns(p)))
    )
}

fn ended_text(e: &str) -> String {
    match e {
        "duration" => "at the end of --duration".into(),
        "interrupted" => "stopped by the user (Ctrl-C)".into(),
        "server gone" => "the audio server went away".into(),
        other => format!("error: {other}"),
    }
}

/// The flight recorder in one line: its mode and what it cost.
fn recorder_text(w: &WatchData) -> String {
    let r = &w.summary.recorder;
    match r.mode.as_str() {
        "off" => format!(
            "off: {}",
            r.off_reason.as_deref().unwrap_or("no reason recorded")
        ),
        "snapshot" => "the kernel's snapshot buffer: no blind time".into(),
        "live-read" => "the ring read while it went on recording (no snapshot buffer on this \
                        kernel; pause-on-trace off): no blind time"
            .into(),
        "stop-read-rearm" => format!(
            "stop-read-rearm (no snapshot buffer on this kernel): blind {} in all, \
             longest {}, while windows were read",
            fmt_ns(r.blind_ns as f64),
            fmt_ns(r.blind_max_ns as f64)
        ),
        other => other.to_string(),
    }
}

/// "What ran" for a watch: the server, the audio format, how long, the clients and
/// audio threads seen, the flight recorder, then when, where and with which xrunrig.
pub fn what_ran(res: &Results, w: &WatchData) -> Block {
    let s = &w.summary;
    let sec = res.run.watch.as_ref();
    let mut kv: Vec<(String, String)> = vec![
        ("kind".into(), res.kind.into()),
        ("server".into(), server_text(w)),
        ("audio".into(), audio_text(w)),
        (
            "watched".into(),
            format!(
                "{}, {} cycles; ended {}",
                fmt_dur(s.duration_s),
                fmt_count(s.cycles),
                ended_text(&s.ended)
            ),
        ),
    ];
    if let Some(sec) = sec {
        if !sec.clients.is_empty() {
            let c: Vec<String> = sec
                .clients
                .iter()
                .map(|c| match c.pid {
                    Some(p) => format!("{} (pid {p})", c.name),
                    None => c.name.clone(),
                })
                .collect();
            kv.push(("clients".into(), c.join(", ")));
        }
        if !sec.threads.is_empty() {
            const SHOWN: usize = 12;
            let mut t: Vec<String> = sec.threads.iter().take(SHOWN).map(task_text).collect();
            if sec.threads.len() > SHOWN {
                t.push(format!("and {} more", sec.threads.len() - SHOWN));
            }
            kv.push(("audio threads".into(), t.join("; ")));
        }
    }
    if s.cpu_s > 0.0 && s.duration_s > 0.0 {
        kv.push((
            "watch's cost".into(),
            format!(
                "{} s of CPU ({:.2} % of one core)",
                fmt_val(s.cpu_s),
                100.0 * s.cpu_s / s.duration_s
            ),
        ));
    }
    if s.watch_culprit > 0 {
        kv.push((
            "watch's own xruns".into(),
            format!(
                "{} of the xruns had watch itself as the culprit (reading the kernel's trace \
                 held the CPU the late thread needed; a smaller --buffer-kb reads less)",
                s.watch_culprit
            ),
        ));
    }
    if let Some(n) = s.server_errors {
        kv.push((
            "server's own count".into(),
            format!(
                "{n} errors in PipeWire's profiler (what pw-top's ERR column shows: one per \
                 sample of a node not finished, so a late cycle can count twice); the xruns \
                 here are the late cycles"
            ),
        ));
    }
    kv.push(("recorder".into(), recorder_text(w)));
    let r = &s.recorder;
    if r.mode != "off" {
        let mut t = format!("{} kB ring", r.buffer_kb);
        if !r.instance.is_empty() {
            t += &format!(" in {}", r.instance);
        }
        if !r.events.is_empty() {
            t += &format!("; events {}", r.events.join(", "));
        }
        if !r.missing_events.is_empty() {
            t += &format!("; missing on this kernel: {}", r.missing_events.join(", "));
        }
        kv.push(("trace".into(), t));
        let keep = sec
            .and_then(|x| x.options.get("keep"))
            .map_or(String::new(), |k| format!(" (--keep {k})"));
        kv.push((
            "windows".into(),
            format!(
                "{} before and {} after each report; {} kept{keep}",
                fmt_ns(r.before_ns as f64),
                fmt_ns(r.after_ns as f64),
                s.windows_kept
            ),
        ));
    }
    // Ctrl-C is how a watch is stopped: said in "watched", not as a partial result.
    kv.extend(
        provenance(&res.run)
            .into_iter()
            .filter(|(k, _)| k != "interrupted"),
    );
    Block::KeyVals(kv)
}

/// The verdict's lines and its conclusion.
pub fn verdict(w: &WatchData) -> (Vec<String>, String) {
    let s = &w.summary;
    let n = w.xruns;
    let dur = fmt_dur(s.duration_s);
    let what = format!(
        "{}, {} cycles of {}",
        server_text(w),
        fmt_count(s.cycles),
        audio_text(w)
    );
    let mut bullets = Vec::new();
    let conclusion = if n == 0 {
        let mut b = format!("No xruns in {dur} of watching {what}.");
        if let Some(u) = zero_events_upper_per_hour(s.duration_s / 3600.0) {
            b += &format!(
                " With none seen, the true rate is below {} per hour (95 % confidence).",
                fmt_small(u)
            );
        }
        bullets.push(b);
        format!("Conclusion: no xruns in {dur} of watching.")
    } else {
        let mut b = format!("{n} xruns in {dur} of watching {what}");
        if s.duration_s > 0.0 {
            b += &format!(
                ": one about every {}, {} per hour",
                fmt_dur(s.duration_s / n as f64),
                fmt_small(n as f64 * 3600.0 / s.duration_s)
            );
        }
        bullets.push(b + ".");
        let ex: u64 = w
            .by_cause
            .iter()
            .filter(|(c, _)| explained(**c))
            .map(|(_, k)| k)
            .sum();
        bullets.push(format!(
            "{ex} of {n} explained: {}.",
            by_cause_text(&w.by_cause)
        ));
        let top = w.culprits.iter().find(|c| c.who != Who::Nobody);
        if let Some(c) = top {
            bullets.push(format!(
                "Named most often: {}, in {} of {n} xruns ({}).",
                who_text(&c.who),
                c.n,
                causes_of(c)
            ));
        }
        match top {
            Some(c) => format!(
                "Conclusion: {n} xruns in {dur} of watching, {ex} explained; the culprit \
                 named most often, in {} of them, is {}.",
                c.n,
                match &c.who {
                    Who::Task(t) => t.named(),
                    other => who_text(other),
                }
            ),
            None => {
                format!("Conclusion: {n} xruns in {dur} of watching, none explained by a culprit.")
            }
        }
    };
    let r = &s.recorder;
    match r.mode.as_str() {
        "off" => bullets.push(format!(
            "The flight recorder was off ({}): xruns were counted and timestamped but not \
             explained.",
            r.off_reason.as_deref().unwrap_or("no reason recorded")
        )),
        "stop-read-rearm" if r.blind_ns > 0 => bullets.push(format!(
            "This kernel has no snapshot buffer, so tracing stopped while windows were read: \
             {} in all (longest {}). An xrun in that time has no trace (no-trace).",
            fmt_ns(r.blind_ns as f64),
            fmt_ns(r.blind_max_ns as f64)
        )),
        _ => {}
    }
    if r.lost_events > 0 {
        bullets.push(format!(
            "The ring buffer overwrote {} events before a window was kept: raise --buffer-kb.",
            r.lost_events
        ));
    }
    match s.ended.as_str() {
        "duration" | "interrupted" => {}
        "server gone" => bullets.push("The audio server went away during the watch.".into()),
        e => bullets.push(format!("The watch ended with an error: {e}.")),
    }
    (bullets, conclusion)
}

/// "preempted", or "18 pi-chain, 3 self".
fn causes_of(c: &Culprit) -> String {
    let mut m = std::collections::BTreeMap::new();
    for s in &c.sentences {
        *m.entry(s.cause).or_insert(0u64) += s.n;
    }
    if m.len() == 1 {
        m.keys().next().map_or(String::new(), |c| c.label().into())
    } else {
        by_cause_text(&m)
    }
}

fn size_text(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} kB", b.div_ceil(1024))
    }
}

/// "1, 2, 5" (at most `max`, then "…").
fn index_list(v: &[u64], max: usize) -> String {
    let mut s: Vec<String> = v.iter().take(max).map(u64::to_string).collect();
    if v.len() > max {
        s.push(format!("… ({} in all)", v.len()));
    }
    s.join(", ")
}

/// "Kept trace windows": what each folder holds and how to open it.
pub fn windows_blocks(w: &WatchData) -> Vec<Block> {
    if w.windows.is_empty() && w.unkept == 0 {
        return vec![];
    }
    let mut out = Vec::new();
    if !w.windows.is_empty() {
        out.push(Block::Para(format!(
            "The flight recorder kept the kernel's scheduler trace around the xruns: one \
             folder per freeze of the recorder (xruns close together share one), under \
             {}/ in this directory. {} is ftrace's text output. To look at one, open \
             https://ui.perfetto.dev, choose \"Open trace file\" and give it the window's \
             {}: the Perfetto UI reads the kernel's text format and shows each CPU's tasks \
             over time (the xrun is marked in it as \"xrunrig xrun\"). A {} beside it \
             (written when trace-cmd is installed) opens in KernelShark. Both are plain \
             files to attach to a bug report.",
            results::watch::XRUNS_DIR,
            results::watch::WINDOW_TRACE,
            results::watch::WINDOW_TRACE,
            results::watch::WINDOW_DAT,
        )));
        let rows = w
            .windows
            .iter()
            .map(|x| {
                let files = if x.files.is_empty() {
                    "missing".to_string()
                } else {
                    x.files
                        .iter()
                        .map(|(f, b)| format!("{f} {}", size_text(*b)))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                vec![
                    x.folder.clone(),
                    index_list(&x.xruns, 6),
                    by_cause_text(&x.causes),
                    files,
                ]
            })
            .collect();
        out.push(Block::Table {
            head: ["window", "xruns", "causes", "files"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rows,
            right: vec![false, false, false, false],
        });
    }
    let mut notes = Vec::new();
    if w.windows_unlisted > 0 {
        notes.push(format!(
            "{} more xruns point to windows not listed here (over {}).",
            w.windows_unlisted,
            crate::load::watch::MAX_WINDOWS
        ));
    }
    if w.unkept > 0 {
        notes.push(format!(
            "{} of {} xruns have no window kept: watch keeps at most --keep windows, and \
             says each xrun's cause without one.",
            w.unkept, w.xruns
        ));
    }
    if !notes.is_empty() {
        out.push(Block::Para(notes.join(" ")));
    }
    out
}

/// The timeline of xruns by cause.
pub fn plots(w: &WatchData, ctx: &mut Ctx) -> Result<Vec<Block>, String> {
    let r = ctx.red.clone();
    let p = XrunTimeline {
        title: r.apply(&format!(
            "{}: {} xruns over {} of watching",
            ctx.rig,
            w.xruns,
            fmt_dur(w.summary.duration_s)
        )),
        data: w,
    };
    ctx.save(&p, "plots/xruns_timeline")?;
    let since = match &w.origin {
        Origin::Started(s) => format!("since the watch started ({s}, to the second)"),
        Origin::FirstXrun => "since the first xrun (run.json's start is unknown)".into(),
    };
    Ok(vec![Block::Image {
        file: "plots/xruns_timeline".into(),
        caption: format!("timeline: when each xrun happened, {since}, one lane per cause"),
    }])
}

/// A watch directory's part of the report, writing its plot.
pub fn part(res: &Results, w: &WatchData, ctx: &mut Ctx) -> Result<Part, String> {
    let (verdict, conclusion) = verdict(w);
    let plots = plots(w, ctx)?;
    let mut sections = Vec::new();
    let why = why_blocks(w);
    if !why.is_empty() {
        sections.push(("Why the xruns".to_string(), why));
    }
    let win = windows_blocks(w);
    if !win.is_empty() {
        sections.push(("Kept trace windows".to_string(), win));
    }
    Ok(Part {
        conclusion,
        verdict,
        table: tables(w),
        what_ran: what_ran(res, w),
        kernel: None,
        sections,
        plots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_and_medians() {
        assert_eq!(median(&[3, 1, 2]), Some(2.0));
        assert_eq!(median(&[4, 1, 3, 2]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(
            fmt_spread(&[21_330_000, 19_650_000, 21_310_000]).as_deref(),
            Some("19.65 / 21.31 / 21.33 ms")
        );
        assert_eq!(fmt_spread(&[5_000, 5_000]).as_deref(), Some("5.00 us"));
        assert_eq!(
            fmt_spread(&[0, 0, 1_680_000]).as_deref(),
            Some("0 / 0 / 1.68 ms")
        );
        assert_eq!(fmt_spread(&[]), None);
    }
}
