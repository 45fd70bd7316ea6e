//! One livefx trial: start the workers, the writer and any background load, open the
//! audio stream, run for the duration with a live progress line, stop everything in
//! order, and tie JACK's xrun notifications to cycles.

use super::config::Config;
use super::rt::{Hold, LivefxProcess, LoopResult, RtCounters, Shared, Workers};
use super::writer::{self, Event, Marker, Progress, RECORD_BYTES, Side, Stats};
use crate::audio::{self, BackendKind, Notes, StreamInfo, StreamSpec};
use crate::engine::trial::TrialResult;
use crate::rig::Plan;
use crate::sys::now_ns;
use results::trials::TrialStatus;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// Everything one trial needs, resolved from the rig, the setting and the command line.
#[derive(Debug, Clone)]
pub struct Params {
    pub kind: BackendKind,
    /// Why this backend (auto's reasons, or the flag).
    pub why: String,
    pub spec: StreamSpec,
    pub duration_ns: u64,
    pub inject_every: u64,
    pub inject_factor: f64,
    pub loopback: bool,
    /// Show the live progress line (`output::progress::Live`: a bar's message on a
    /// terminal, a plain line now and then elsewhere).
    pub progress: bool,
}

pub struct Outcome {
    /// "ok", "aborted" or "failed".
    pub status: TrialStatus,
    pub detail: Option<String>,
    pub info: Option<StreamInfo>,
    pub stats: Stats,
    /// RT-path xruns plus JACK's notifications.
    pub xruns: u64,
    pub discontinuities: Option<u64>,
    pub roundtrip: Option<u32>,
    /// Loopback discontinuities with no xrun, miss or skipped cycle just before them.
    pub unexplained: Option<u64>,
    pub duration_ns: u64,
    pub server_gone: bool,
    pub dropped: u64,
    /// Main-thread tids of the workers, for instruments.
    pub worker_tids: Vec<i32>,
    /// The background load's bursts (the rig's `bursts` marks): CLOCK_MONOTONIC ns
    /// (start, end); a burst still on at the end of the trial ends with the trial.
    pub bursts: Vec<(u64, u64)>,
    /// CLOCK_MONOTONIC ns the trial's times (`t_s`) count from.
    pub t0_ns: u64,
}

fn failed(detail: String) -> Outcome {
    Outcome {
        status: TrialStatus::Failed,
        detail: Some(detail),
        info: None,
        stats: Stats::new(),
        xruns: 0,
        discontinuities: None,
        roundtrip: None,
        unexplained: None,
        duration_ns: 0,
        server_gone: false,
        dropped: 0,
        worker_tids: vec![],
        bursts: vec![],
        t0_ns: now_ns(),
    }
}

/// Called with the workers' (name, tid) once they are set up, before the audio starts.
pub type OnReady<'a> = dyn FnMut(&[(String, i32)]) + 'a;

/// Queue length between the RT side and the writer: 64 Ki cycles (over 40 s at 32 frames).
const QUEUE: usize = 1 << 16;

/// Where a trial's records go: the raw cycles file, the progress line's label, and the
/// trace marker (tracefs) that misses and xruns are written into while tracing.
pub struct Out<'a> {
    pub cycles: &'a Path,
    pub label: &'a str,
    pub marker: Option<std::fs::File>,
}

/// One trial, its steps in this order: start the workers and tell `on_ready`, start the
/// writer and the background load, open the stream and play it for the duration, stop
/// the workers, the load and the writer, then read the results back.
pub fn run(
    cfg: &Config,
    plan: &Plan,
    p: &Params,
    out: Out,
    stop: &AtomicBool,
    on_ready: &mut OnReady,
) -> Outcome {
    let Out {
        cycles: cycles_path,
        label,
        marker,
    } = out;
    let (sh, workers, holds) = match start_workers(cfg, plan) {
        Ok(w) => w,
        Err(e) => return failed(e),
    };
    let worker_tids = sh.tids();
    // Instruments filter on these tids (the callback thread is the backend's).
    let named: Vec<(String, i32)> = cfg
        .workers
        .iter()
        .map(|w| w.name.clone())
        .zip(worker_tids.iter().copied())
        .collect();
    on_ready(&named);
    let (tx, rx) = rtrb::RingBuffer::new(QUEUE);
    let counters = Arc::new(RtCounters::default());
    let loop_result = Arc::new(LoopResult::default());
    let notes = Arc::new(Notes::default());
    let marker = marker.map(|file| trace_marker(file, &notes, cfg, plan, &named));
    let progress = Arc::new(Progress::default());
    let wdone = Arc::new(AtomicBool::new(false));
    let t0 = now_ns();
    let wh = writer::spawn(
        rx,
        cycles_path.to_path_buf(),
        t0,
        !cfg.workers.is_empty(),
        progress.clone(),
        wdone.clone(),
        Side {
            holds,
            keep_holds: cfg.bursts.is_some(),
            marker,
        },
    );
    let (load_stop, load) = spawn_load(plan, p.duration_ns);
    let process = LivefxProcess::new(
        sh.clone(),
        tx,
        counters.clone(),
        p.inject_every,
        p.inject_factor,
        p.loopback,
        loop_result.clone(),
    );
    let stream = audio::open(p.kind, &p.spec, Box::new(process), notes.clone());
    let (mut end, info, server_gone) = play(stream, p, stop, &notes, &progress, t0, label);
    let duration_ns = now_ns() - t0;
    workers.stop();
    let (load_end, bursts) = stop_load(&load_stop, load, cfg, plan);
    let mut stats = join_writer(&wdone, wh, load_end, &mut end);
    // The RT path's own xruns, counted before JACK's are tied in.
    let rt_xruns = stats.counts.xruns;
    let xruns = rt_xruns + tie_notes(cycles_path, t0, &notes, &mut stats, &mut end);
    let enabled = loop_result.enabled.load(Ordering::SeqCst);
    let rt = loop_result.roundtrip_plus1.load(Ordering::SeqCst);
    let unexplained = enabled
        .then(|| unexplained_in(cycles_path, p.spec.period, rt))
        .flatten();
    if server_gone {
        end.fail(server_gone_detail(&notes, t0, &mut stats));
    }
    Outcome {
        status: end.status,
        detail: end.detail,
        info,
        xruns,
        discontinuities: enabled.then(|| loop_result.discontinuities.load(Ordering::SeqCst)),
        roundtrip: (enabled && rt > 0).then(|| rt - 1),
        unexplained,
        stats,
        duration_ns,
        server_gone,
        dropped: counters.dropped.load(Ordering::SeqCst),
        worker_tids,
        bursts,
        t0_ns: t0,
    }
}

/// How a trial is ending so far: a later failure replaces an earlier one's detail.
struct Ending {
    status: TrialStatus,
    detail: Option<String>,
}

impl Ending {
    fn fail(&mut self, detail: String) {
        self.status = TrialStatus::Failed;
        self.detail = Some(detail);
    }
}

/// Plays the opened stream (if it opened) until the trial's end, then stops it: how
/// the trial is ending so far, the stream's info and whether the JACK server went away.
fn play(
    stream: Result<Box<dyn audio::Stream>, String>,
    p: &Params,
    stop: &AtomicBool,
    notes: &Notes,
    progress: &Progress,
    t0: u64,
    label: &str,
) -> (Ending, Option<StreamInfo>, bool) {
    let mut end = Ending {
        status: TrialStatus::Ok,
        detail: None,
    };
    let mut info = None;
    let mut server_gone = false;
    match stream {
        Err(e) => end.fail(e),
        Ok(s) => {
            info = Some(s.info().clone());
            match wait_out(p, stop, notes, progress, t0, label) {
                Waited::Elapsed => {}
                Waited::Stopped => end.status = TrialStatus::Aborted,
                Waited::ServerGone => server_gone = true,
            }
            if let Err(e) = s.stop()
                && !server_gone
                && !notes.is_gone()
            {
                end.fail(e);
            }
            server_gone |= notes.is_gone();
        }
    }
    (end, info, server_gone)
}

/// Stops the background load and waits for it: its result, and the bursts its marks
/// show (none without a `bursts` table or a result).
fn stop_load(
    load_stop: &AtomicBool,
    load: Option<JoinHandle<TrialResult>>,
    cfg: &Config,
    plan: &Plan,
) -> (Option<TrialResult>, Vec<(u64, u64)>) {
    load_stop.store(true, Ordering::SeqCst);
    let load_end = load.and_then(|h| h.join().ok());
    let bursts = match (&cfg.bursts, &load_end) {
        (Some(b), Some(r)) => bursts_of(plan, b, r, now_ns()),
        _ => vec![],
    };
    (load_end, bursts)
}

/// Lets the writer drain the queue and end: its stats. Its I/O error, then a failed
/// background load, fail the trial.
fn join_writer(
    wdone: &AtomicBool,
    wh: JoinHandle<Stats>,
    load_end: Option<TrialResult>,
    end: &mut Ending,
) -> Stats {
    wdone.store(true, Ordering::SeqCst);
    let mut stats = wh.join().unwrap_or_default();
    if let Some(e) = stats.io_error.take() {
        end.fail(e);
    }
    if let Some(r) = load_end
        && let crate::engine::trial::TrialStatus::Failed(e) = r.status
    {
        end.fail(format!("background load: {e}"));
    }
    stats
}

/// The shared state the callback and the workers meet in, the workers started on it,
/// and the queues their lock holds come back on.
type Started = (Arc<Shared>, Workers, Vec<rtrb::Consumer<Hold>>);

/// Starts the workers (see `Started`).
fn start_workers(cfg: &Config, plan: &Plan) -> Result<Started, String> {
    let protocols: Vec<_> = plan.locks.iter().map(|l| l.protocol).collect();
    let waited: Vec<bool> = cfg.workers.iter().map(|w| w.waited).collect();
    let sh = Shared::new(&waited, &protocols)?;
    let (workers, holds) = Workers::start(sh.clone(), &cfg.workers)?;
    Ok((sh, workers, holds))
}

/// The trace marker the writer notes misses and xruns in; the backend gets its own
/// handle on the same file (through `notes`) for what it sees.
fn trace_marker(
    file: std::fs::File,
    notes: &Notes,
    cfg: &Config,
    plan: &Plan,
    named: &[(String, i32)],
) -> Marker {
    if let Ok(f) = file.try_clone() {
        let _ = notes.marker.set(f);
    }
    Marker {
        file,
        workers: cfg.workers.iter().map(|w| w.name.clone()).collect(),
        locks: plan.locks.iter().map(|l| l.name.clone()).collect(),
        tids: named.iter().map(|(n, t)| (*t, n.clone())).collect(),
    }
}

/// Background load: the rig's ordinary threads, run as a trial beside the audio (none
/// when the rig has no threads), with the flag that stops it.
fn spawn_load(plan: &Plan, duration_ns: u64) -> (Arc<AtomicBool>, Option<JoinHandle<TrialResult>>) {
    let load_stop = Arc::new(AtomicBool::new(false));
    let load = (!plan.threads.is_empty()).then(|| {
        let (plan2, ls) = (plan.clone(), load_stop.clone());
        let bound = duration_ns + 5_000_000_000;
        std::thread::spawn(move || crate::engine::trial::run_trial(&plan2, bound, &ls))
    });
    (load_stop, load)
}

/// Why the wait for the trial's end ended.
enum Waited {
    /// The duration is over.
    Elapsed,
    /// `stop` was set (Ctrl-C): the trial is aborted.
    Stopped,
    /// The JACK server went away.
    ServerGone,
}

/// Waits out the trial's duration while the stream plays, updating the live progress
/// line every 0.5 s when asked to: the counters the writer thread keeps (cycles, xruns,
/// misses) and JACK's xrun notes, read here with relaxed loads; the RT side is untouched.
fn wait_out(
    p: &Params,
    stop: &AtomicBool,
    notes: &Notes,
    progress: &Progress,
    t0: u64,
    label: &str,
) -> Waited {
    let end = now_ns() + p.duration_ns;
    let mut next_print = now_ns();
    // Cleared when this returns (the trial's own line follows).
    let mut live = p.progress.then(crate::output::progress::Live::new);
    loop {
        let now = now_ns();
        if now >= end {
            return Waited::Elapsed;
        }
        if stop.load(Ordering::SeqCst) {
            return Waited::Stopped;
        }
        if notes.is_gone() {
            return Waited::ServerGone;
        }
        if let Some(l) = live.as_mut().filter(|l| l.due())
            && now >= next_print
        {
            next_print = now + 500_000_000;
            // The counts first: a narrow terminal cuts the end of the line.
            l.update(&format!(
                "cycles {} xruns {} misses {} · {:.1}/{:.0} s of {label}",
                progress.cycles.load(Ordering::Relaxed),
                progress.xruns.load(Ordering::Relaxed) + notes.xrun_count.load(Ordering::Relaxed),
                progress.misses.load(Ordering::Relaxed),
                (now - t0) as f64 / 1e9,
                p.duration_ns as f64 / 1e9,
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// JACK's notifications, tied to cycles and marked in the cycles file: how many there
/// were (a failure to tie them fails the trial).
fn tie_notes(
    cycles_path: &Path,
    t0: u64,
    notes: &Notes,
    stats: &mut Stats,
    end: &mut Ending,
) -> u64 {
    let notes_v = notes.take_xruns();
    if !notes_v.is_empty()
        && let Err(e) = tie_xruns(cycles_path, t0, &notes_v, stats)
    {
        end.fail(e);
    }
    // Xruns whose note did not fit the ring still count (their cycles stay untied).
    notes_v.len() as u64 + notes.xruns_unrecorded.swap(0, Ordering::SeqCst)
}

/// Loopback discontinuities with no xrun, miss or skipped cycle just before them, read
/// back from the cycles file (None when it cannot be read).
fn unexplained_in(cycles_path: &Path, period: u32, roundtrip_plus1: u32) -> Option<u64> {
    // The window covers the round trip: a dropout arrives that many frames late.
    let period = period.max(1) as usize;
    let window = 4 + roundtrip_plus1 as usize / period;
    match std::fs::read(cycles_path) {
        Ok(b) => {
            let cycles: Vec<(u64, u32)> = b
                .chunks_exact(RECORD_BYTES)
                .map(|c| {
                    let r = writer::decode(c);
                    (r.start_ns, r.flags)
                })
                .collect();
            Some(super::xrun::unexplained_discontinuities(&cycles, window))
        }
        Err(_) => None,
    }
}

/// The detail of a trial the JACK server left, with its `server_gone` event logged.
fn server_gone_detail(notes: &Notes, t0: u64, stats: &mut Stats) -> String {
    let at = notes.gone_at_ns.load(Ordering::SeqCst).saturating_sub(t0) as f64 / 1e9;
    let detail = format!(
        "the JACK server went away {at:.1} s into the trial; the results cover the {} cycles recorded before",
        stats.counts.cycles
    );
    stats.event(Event {
        kind: "server_gone",
        cycle: stats.counts.cycles,
        t_s: at,
        usecs: None,
        mono_ns: notes.gone_at_ns.load(Ordering::SeqCst),
        cause: None,
    });
    detail
}

/// The bursts of the background load from its marks: the n-th `from` with the n-th
/// `to`; a last burst with no end yet ends at `end_ns`.
fn bursts_of(
    plan: &Plan,
    b: &super::config::BurstsCfg,
    r: &TrialResult,
    end_ns: u64,
) -> Vec<(u64, u64)> {
    let slot = |m: &str| {
        plan.marks
            .iter()
            .position(|s| s.base == b.thread && s.mark == m)
            .and_then(|i| r.marks.get(i))
    };
    let (Some(from), Some(to)) = (slot(&b.from), slot(&b.to)) else {
        return vec![];
    };
    from.iter()
        .enumerate()
        .map(|(i, &s)| {
            let e = to.get(i).map_or(end_ns, |&e| r.t0_ns + e);
            (r.t0_ns + s, e.max(r.t0_ns + s))
        })
        .collect()
}

/// Reads the cycles back, ties each notification to a cycle, sets its xrun bit in the
/// file and logs the xrun with JACK's delayed usecs.
fn tie_xruns(
    path: &Path,
    t0: u64,
    notes: &[audio::XrunNote],
    stats: &mut Stats,
) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("cannot reopen {}: {e}", path.display()))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut cycles: Vec<(u64, u32)> = buf
        .chunks_exact(RECORD_BYTES)
        .map(|c| {
            let d = writer::decode(c);
            (d.start_ns, d.flags)
        })
        .collect();
    let before: Vec<u32> = cycles.iter().map(|c| c.1).collect();
    let rel: Vec<u64> = notes.iter().map(|n| n.t_ns.saturating_sub(t0)).collect();
    let tied = super::xrun::attribute(&mut cycles, &rel);
    for (i, (c, b)) in cycles.iter().zip(&before).enumerate() {
        if c.1 != *b {
            f.seek(SeekFrom::Start((i * RECORD_BYTES + 16) as u64))
                .and_then(|_| f.write_all(&c.1.to_le_bytes()))
                .map_err(|e| format!("cannot update {}: {e}", path.display()))?;
        }
    }
    for ((n, r), t) in notes.iter().zip(&rel).zip(&tied) {
        stats.event(Event {
            kind: "xrun",
            cycle: t.map_or(0, |i| i as u64),
            t_s: *r as f64 / 1e9,
            usecs: Some(n.delayed_us as f64),
            mono_ns: n.t_ns,
            cause: None,
        });
    }
    Ok(())
}
