//! `xrunrig watch`: a flight recorder beside a musician's own JACK or PipeWire session
//! that says why each xrun happened. A passive client stamps every cycle
//! (`audio::jack::passive`); the server's xrun reports (JACK's callback, or PipeWire's
//! profiler as pw-top counts ERR: `pipewire`) are tied to the late cycle; the flight
//! recorder (`recorder`) freezes the scheduler's story around it; `explain` names the
//! late audio thread and what kept it (its own work, another task, interrupts, a PI
//! lock's holder) with `instruments::story`, the explainer the livefx rig uses too.
//! Results (`out`) are a directory a user can attach to a bug; `xrunrig report` reads it.

pub mod cycles;
pub mod explain;
pub mod out;
pub mod pipewire;
pub mod recorder;
pub mod threads;

use crate::audio::jack::passive::{Passive, WATCH_CLIENT};
use crate::options::WatchOptions;
use explain::{AudioThread, Explained};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The least time between two freezes of the flight recorder (ms): reports in a burst
/// share one freeze, whose cost (reading the ring as text; in stop-read mode, blind
/// time too) is then paid once. The window of one freeze reaches back to its
/// oldest report less --before.
const MIN_FREEZE_MS: u64 = 1000;

/// An xrun reported and not yet explained.
#[derive(Debug, Clone, Copy)]
struct Pending {
    t_ns: u64,
    /// Set for PipeWire reports: the late cycle is known (start, deadline).
    cycle: Option<(u64, u64)>,
}

pub fn main(o: &WatchOptions) -> i32 {
    match run(o) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("xrunrig watch: {e}");
            2
        }
    }
}

fn run(o: &WatchOptions) -> Result<i32, String> {
    // Tracing state a killed run (or a killed watch) left behind.
    crate::instruments::tracefs::warn_recovered(crate::instruments::recover());
    let mut client = Passive::attach(&o.server, o.ring)?;
    let pipewire = client.is_pipewire();
    let server_kind = if pipewire { "pipewire" } else { "jack" };
    let started_wall = crate::sys::utc_now();
    let out_dir = match &o.out {
        Some(d) => crate::output::new_results_dir(d, true)?,
        None => crate::output::new_results_dir(
            std::path::Path::new(&format!("watch-{}", started_wall.1)),
            false,
        )?,
    };
    let mut sink = out::Sink::create(&out_dir, o)?;
    let recorder = match recorder::Recorder::start(o.buffer_kb, o.no_snapshot) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("xrunrig watch: xruns are counted and timestamped but not explained: {e}");
            sink.recorder.mode = "off".into();
            sink.recorder.off_reason = Some(e);
            None
        }
    };
    if let Some(r) = &recorder {
        sink.recorder.mode = r.mode.name().into();
        sink.recorder.instance = r.instance().display().to_string();
        sink.recorder.buffer_kb = r.buffer_kb;
        sink.recorder.events = r.events.clone();
        sink.recorder.missing_events = r.missing.clone();
    }
    sink.recorder.before_ns = o.before_ns;
    sink.recorder.after_ns = o.after_ns;
    let mut pw = if pipewire {
        match pipewire::Profiler::start(WATCH_CLIENT) {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("xrunrig watch: PipeWire's xruns cannot be counted: {e}");
                None
            }
        }
    } else {
        None
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // The first signal ends the watch in order; a second one, while the end is
        // stuck (a JACK server starved by spinners does not answer the client's close),
        // ends the process at once. Registered first: it sees the flag before this
        // signal sets it.
        signal_hook::flag::register_conditional_shutdown(
            sig,
            crate::exit::EXIT_INTERRUPTED,
            stop.clone(),
        )
        .map_err(|e| format!("cannot install a signal handler: {e}"))?;
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    }
    let mut w = Watcher {
        o,
        pipewire,
        source: server_kind,
        hist: cycles::History::new(history_len(o, client.rate, client.period)),
        audio: Vec::new(),
        maps_seen: std::collections::HashMap::new(),
        sink,
        pending: Vec::new(),
        prev_text: None,
        overruns: Default::default(),
        recorder,
    };
    w.refresh_audio(&client);
    crate::note!(
        "watching {} server '{}' ({} Hz, period {}): {} audio threads; flight recorder: {}; results: {}{}",
        if pipewire { "PipeWire's JACK" } else { "JACK" },
        client.server,
        client.rate,
        client.period,
        w.audio.len(),
        w.sink.recorder.mode,
        out_dir.display(),
        match o.duration_ns {
            Some(d) => format!("; for {:.0} s", d as f64 / 1e9),
            None => "; Ctrl-C to stop".into(),
        }
    );
    let t0 = Instant::now();
    let mut last_refresh = Instant::now();
    let mut last_freeze = Instant::now();
    let ended = loop {
        // 20 reads a second: the ring holds --ring cycles, and a report waits --after
        // (100 ms) anyway.
        std::thread::sleep(Duration::from_millis(50));
        w.take_news(&mut client);
        if let Some(p) = pw.as_mut() {
            for late in p.poll(&w.hist) {
                if let Some(r) = &w.recorder {
                    r.mark(&format!(
                        "xrunrig xrun (PipeWire profiler) node={}\n",
                        late.node
                    ));
                }
                w.pending.push(Pending {
                    t_ns: late.deadline_ns,
                    cycle: Some((late.start_ns, late.deadline_ns)),
                });
                w.sink.pipewire_client(late.node);
            }
        }
        let now = crate::sys::now_ns();
        // Reports in a burst share one freeze: each freeze costs a read of the ring (and,
        // in stop-read mode, blind time).
        if w.pending
            .first()
            .is_some_and(|p| now >= p.t_ns + o.after_ns)
            && last_freeze.elapsed() >= Duration::from_millis(MIN_FREEZE_MS)
        {
            w.explain_pending(&client, now);
            last_freeze = Instant::now();
        }
        if last_refresh.elapsed() > Duration::from_secs(5) {
            w.refresh_audio(&client);
            last_refresh = Instant::now();
        }
        if stop.load(Ordering::SeqCst) {
            eprintln!(
                "xrunrig watch: stopping (Ctrl-C again ends at once; what is written stays, marked incomplete until the summary is)"
            );
            break "interrupted".to_string();
        }
        if client.notes.is_gone() {
            break "server gone".to_string();
        }
        if o.duration_ns
            .is_some_and(|d| t0.elapsed() >= Duration::from_nanos(d))
        {
            break "duration".to_string();
        }
    };
    // Reports still waiting for their "after" window: give them what there is.
    std::thread::sleep(Duration::from_nanos(o.after_ns.min(200_000_000)));
    w.take_news(&mut client);
    if !w.pending.is_empty() {
        w.explain_pending(&client, crate::sys::now_ns());
    }
    let Watcher {
        mut sink,
        recorder,
        audio,
        ..
    } = w;
    if let Some(p) = pw.take() {
        sink.server_errors = Some(p.errors);
        sink.pw_note = p.finish();
    }
    let duration_s = t0.elapsed().as_secs_f64();
    // The tracing instance goes first and the results are written before the client
    // asks its server anything more: a server that stops answering (starved by
    // spinners) then leaves nothing of watch's behind a second Ctrl-C but the client.
    if let Some(r) = recorder {
        sink.recorder.blind_ns = r.blind_ns;
        sink.recorder.blind_max_ns = r.blind_max_ns;
        sink.recorder.lost_events = r.overwritten();
        match r.end() {
            Ok(lines) => sink.restored = lines,
            Err(e) => eprintln!("xrunrig watch: {e}"),
        }
    }
    let clients = client.clients();
    let section_threads: Vec<_> = audio.iter().map(|a| a.task.clone()).collect();
    let server_name = Some(client.server.clone());
    let (rate, period) = (client.rate, client.period_now());
    let offset = client.offset_ns;
    let summary = sink.finish(out::Finish {
        server: server_kind,
        server_name,
        rate,
        period,
        duration_s,
        ended: &ended,
        started: started_wall.0,
        clients,
        threads: section_threads,
        clock_offset_ns: offset,
    })?;
    crate::output::mark_complete(&out_dir)?;
    crate::output::console::report(&out::verdict(&summary, &out_dir));
    crate::output::console::document(&summary);
    client.close();
    Ok(0)
}

/// How many cycles of history to keep: the longest window a report can reach back to,
/// and a second more.
fn history_len(o: &WatchOptions, rate: u32, period: u32) -> usize {
    let period_ns = (period.max(1) as u64 * 1_000_000_000 / rate.max(1) as u64).max(1);
    // At least 1024: PipeWire's profiler rows arrive a second or two late and are tied
    // to these stamps.
    ((o.before_ns + o.after_ns + 1_000_000_000) / period_ns + 16).clamp(1024, 1 << 20) as usize
}

/// The audio threads now: the real-time threads of every client's process (by the pid
/// the server gives, else by the audio library it has mapped) and the server's.
fn find_audio(
    client: &Passive,
    pipewire: bool,
    seen: &mut std::collections::HashMap<i32, bool>,
) -> Vec<AudioThread> {
    let me = std::process::id() as i32;
    let mut named: Vec<(i32, String)> = client
        .clients()
        .into_iter()
        .filter_map(|(n, pid)| pid.map(|p| (p, n)))
        .collect();
    // Only JACK's own clients of this server: a client of another server on the same
    // machine is not in this session.
    let jack_server = (!pipewire).then_some(client.server.as_str());
    for pid in threads::audio_processes(seen, jack_server) {
        if !named.iter().any(|(p, _)| *p == pid) {
            let name = threads::process_name(pid).unwrap_or_else(|| format!("pid {pid}"));
            named.push((pid, name));
        }
    }
    let server_names = if pipewire {
        &["pipewire", "pipewire-media-session", "wireplumber"][..]
    } else {
        &["jackd", "jackdbus"][..]
    };
    let mut out = Vec::new();
    for (pid, name) in named {
        let process = threads::process_name(pid).unwrap_or_default();
        let server = server_names.contains(&process.as_str());
        for th in threads::rt_threads(&[pid]) {
            out.push(AudioThread {
                task: th.task(),
                client: if pid == me {
                    WATCH_CLIENT.to_string()
                } else {
                    name.clone()
                },
                server,
            });
        }
    }
    out
}

/// Adds threads not seen before (a thread that has gone stays: a report may still name
/// it), up to a bound.
fn merge_audio(seen: &mut Vec<AudioThread>, now: Vec<AudioThread>) {
    for a in now {
        if let Some(s) = seen.iter_mut().find(|s| s.task.tid == a.task.tid) {
            *s = a;
        } else if seen.len() < 4096 {
            seen.push(a);
        }
    }
}

/// What the watch loop and its last look share: the cycles seen, the reports waiting,
/// the audio threads, the recorder and where explained xruns go.
struct Watcher<'a> {
    o: &'a WatchOptions,
    pipewire: bool,
    /// Who reported the xruns ("jack" or "pipewire").
    source: &'static str,
    recorder: Option<recorder::Recorder>,
    hist: cycles::History,
    audio: Vec<AudioThread>,
    maps_seen: std::collections::HashMap<i32, bool>,
    sink: out::Sink,
    pending: Vec<Pending>,
    /// The last freeze's text: the next window's start may be in it.
    prev_text: Option<String>,
    /// Each CPU's ring overruns at the last freeze: a CPU whose count grew since lost
    /// the oldest part of its stretch.
    overruns: std::collections::BTreeMap<u32, u64>,
}

impl Watcher<'_> {
    /// The cycles stamped and the xruns the server reported since the last look.
    fn take_news(&mut self, client: &mut Passive) {
        let mut stamps = Vec::new();
        client.drain(&mut stamps);
        self.sink.cycles += stamps.len() as u64;
        for s in stamps {
            self.hist.push(s);
        }
        for n in client.notes.take_xruns() {
            // Into the trace as a marker, so a kept window shows the report.
            if let Some(r) = &self.recorder {
                r.mark(&format!(
                    "xrunrig xrun (JACK notification at {}.{:06})\n",
                    n.t_ns / 1_000_000_000,
                    n.t_ns % 1_000_000_000 / 1000
                ));
            }
            self.pending.push(Pending {
                t_ns: n.t_ns,
                cycle: None,
            });
        }
    }

    /// A client that started since the last look is in the story too.
    fn refresh_audio(&mut self, client: &Passive) {
        let now = find_audio(client, self.pipewire, &mut self.maps_seen);
        merge_audio(&mut self.audio, now);
    }

    /// Freezes the recorder once for the reports waiting, explains each, writes them.
    fn explain_pending(&mut self, client: &Passive, now: u64) {
        self.refresh_audio(client);
        let Watcher {
            o,
            source,
            recorder: rec,
            hist,
            audio,
            sink,
            pending,
            prev_text: prev,
            overruns,
            ..
        } = self;
        let (o, source, hist, audio) = (*o, *source, &*hist, &audio[..]);
        let frozen = rec.as_mut().map(|r| r.freeze());
        let (text, blind) = match frozen {
            Some(Ok(f)) => (Some(f.text), f.blind_ns),
            Some(Err(e)) => {
                eprintln!("xrunrig watch: the flight recorder could not be read: {e}");
                (None, 0)
            }
            None => (None, 0),
        };
        // A ring that wrapped since the last look holds that CPU's events only from its
        // first one on: a cycle before that is not seen whole (a busy build's events
        // pushed the audio threads' out), and is `no-trace`, never "unexplained".
        let now_over = rec.as_ref().map(|r| r.overruns()).unwrap_or_default();
        let mut wrapped: std::collections::BTreeSet<u32> = now_over
            .iter()
            .filter(|(c, n)| **n > overruns.get(c).copied().unwrap_or(0))
            .map(|(c, _)| *c)
            .collect();
        // What the text itself says was lost (a consuming read's gap marks).
        if let Some(t) = text.as_deref() {
            wrapped.extend(recorder::lost_cpus(t));
        }
        let lost: u64 = now_over
            .iter()
            .map(|(c, n)| n.saturating_sub(overruns.get(c).copied().unwrap_or(0)))
            .sum();
        *overruns = now_over;
        let whole_from = text
            .as_deref()
            .and_then(|t| recorder::complete_from(&recorder::cpu_firsts(t), &wrapped));
        let taken: Vec<Pending> = pending.drain(..).filter(|p| p.t_ns <= now).collect();
        let from = taken
            .iter()
            .map(|p| p.t_ns)
            .min()
            .unwrap_or(now)
            .saturating_sub(o.before_ns);
        let (window_text, span) = match &text {
            Some(t) => {
                let (w, span) = recorder::window(t, from, now);
                // A freeze holds what came since the one before (the snapshot swap, or the
                // ring cleared after a read): the part of the window before it is in the
                // previous freeze's text.
                match (prev.as_deref(), span) {
                    (Some(old), Some((first, last))) if first > from => {
                        let (mut early, espan) =
                            recorder::window(old, from, first.saturating_sub(1));
                        for l in w.lines().filter(|l| !l.starts_with('#')) {
                            early.push_str(l);
                            early.push('\n');
                        }
                        (Some(early), Some((espan.map_or(first, |e| e.0), last)))
                    }
                    _ => (Some(w), span),
                }
            }
            None => (None, None),
        };
        *prev = text;
        let recs = window_text
            .as_deref()
            .map(|w| crate::instruments::parse::parse_text(w).0)
            .unwrap_or_default();
        let mut kept: Option<String> = None;
        for p in taken {
            let cands = match p.cycle {
                // The late cycle, and the one before it: a node still busy with that one
                // is late for this one too (PipeWire flags both).
                Some((s, d)) => {
                    let mut v: Vec<explain::Cycle> = hist
                        .candidates(s, 1)
                        .into_iter()
                        .filter(|c| c.start_ns < s)
                        .collect();
                    v.push(explain::Cycle {
                        start_ns: s,
                        deadline_ns: d,
                        frame: hist.frame_at(s),
                    });
                    v
                }
                None => hist.candidates(p.t_ns, 4),
            };
            let reaches = |c: &explain::Cycle| span.is_some_and(|(a, _)| a <= c.start_ns);
            let whole = |c: &explain::Cycle| whole_from.is_none_or(|(_, t)| t <= c.start_ns);
            let e: Explained = if window_text.is_none() {
                explain::no_trace(&cands, "the flight recorder is off")
            } else if cands.is_empty() {
                explain::no_trace(
                    &cands,
                    "the passive client saw no cycle before this report (the server stopped calling it)",
                )
            } else if !cands.last().is_some_and(reaches) {
                explain::no_trace(
                    &cands,
                    "the trace does not reach back to the late cycle (raise --buffer-kb)",
                )
            } else if !cands.last().is_some_and(whole) {
                explain::no_trace(
                    &cands,
                    &format!(
                        "the ring overwrote {lost} events since the last look, CPU{}'s up to \
                         after the late cycle began (a busy machine: raise --buffer-kb)",
                        whole_from.map_or(0, |x| x.0)
                    ),
                )
            } else {
                let e = explain::explain(&recs, &cands, audio);
                let blind = |c: &explain::Cycle| {
                    rec.as_ref()
                        .is_some_and(|r| r.blind_during(c.start_ns, c.deadline_ns))
                };
                if told_from_a_blind_stretch(&e, &cands, blind) {
                    explain::no_trace(
                        &cands,
                        "tracing was off during this cycle (the recorder stops tracing while \
                         it reads the ring: stop-read mode)",
                    )
                } else {
                    e
                }
            };
            if kept.is_none()
                && let Some(w) = &window_text
                && sink.windows_kept < o.keep as u64
            {
                kept = sink.keep_window(w);
            }
            sink.xrun(&e, p.t_ns, source, kept.clone(), blind, p.cycle.is_none());
        }
    }
}

/// Whether `e` rests on a stretch the recorder did not see: the cycle it names, or, for
/// "nothing was behind", any cycle it looked at (a thread still busy with the cycle
/// before, unseen, looks like nothing behind in this one).
fn told_from_a_blind_stretch(
    e: &Explained,
    cands: &[explain::Cycle],
    blind: impl Fn(&explain::Cycle) -> bool,
) -> bool {
    if e.cause == results::watch::Cause::Unexplained {
        cands.iter().any(&blind)
    } else {
        e.cycle.as_ref().is_some_and(blind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_behind_is_not_claimed_when_the_cycle_before_was_unseen() {
        let c = |s: u64| explain::Cycle {
            start_ns: s,
            deadline_ns: s + 10,
            frame: None,
        };
        let cands = [c(0), c(10)];
        let nothing = explain::explain(&[], &cands, &[]);
        assert_eq!(nothing.cause, results::watch::Cause::Unexplained);
        // The cycle before was blind: "nothing behind" cannot be said.
        assert!(told_from_a_blind_stretch(&nothing, &cands, |x| x.start_ns == 0));
        assert!(!told_from_a_blind_stretch(&nothing, &cands, |_| false));
        // A story about a seen cycle stands though an earlier one was blind.
        let told = Explained {
            cause: results::watch::Cause::SelfWork,
            cycle: Some(c(10)),
            ..nothing.clone()
        };
        assert!(!told_from_a_blind_stretch(&told, &cands, |x| x.start_ns == 0));
        assert!(told_from_a_blind_stretch(&told, &cands, |x| x.start_ns == 10));
    }
}
