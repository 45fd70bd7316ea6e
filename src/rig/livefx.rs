//! The `[livefx]` table of a rig: the audio process (period, rate, backend), its worker
//! threads and their plugins, the injected overrun and the loopback check. Checked with
//! the rest of the rig (`super::validate::compile`), so every problem names
//! file:line:col. Plugins name locks from the rig's `[locks]`, so variants can switch
//! their protocol. Lives under `rig` so the rig parser does not reach up into
//! `crate::livefx`, which uses it (re-exported as `crate::livefx::config`).

use super::backend::BackendChoice;
use super::limits::{self, MAX_LATENCY, MAX_NPERIODS, MAX_PERIOD, MAX_PLUGINS, MAX_RATE};
use super::problem::Problem;
use super::units::parse_duration;
use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
/// `[livefx]` as written; `compile` checks it.
pub struct LivefxDef {
    /// Length of one trial, e.g. "10 s".
    duration: Option<Spanned<String>>,
    backend: Option<Spanned<String>>,
    device: Option<String>,
    period: Option<Spanned<u32>>,
    rate: Option<Spanned<u32>>,
    nperiods: Option<Spanned<u32>>,
    /// Burn `inject_factor` periods in the callback every Nth cycle (0: never).
    inject_every: Option<Spanned<u64>>,
    inject_factor: Option<Spanned<f64>>,
    callback: Option<Spanned<CallbackDef>>,
    loopback: Option<Spanned<LoopbackDef>>,
    /// Marks of a background thread that open and close its bursts of load.
    bursts: Option<Spanned<BurstsDef>>,
    /// A trial's pass or fail (`--until-decided`): its misses at most so many.
    pass: Option<Spanned<PassDef>>,
    #[serde(default)]
    workers: Vec<Spanned<WorkerDef>>,
}

/// `pass = { misses = N }` or `pass = { misses_per_minute = X }`: one of the two.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PassDef {
    misses: Option<Spanned<i64>>,
    misses_per_minute: Option<Spanned<f64>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BurstsDef {
    from: Spanned<String>,
    to: Spanned<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallbackDef {
    priority: Option<Spanned<i64>>,
    cpus: Option<Spanned<Vec<i64>>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoopbackDef {
    enabled: Option<bool>,
    playback: Option<String>,
    capture: Option<String>,
    clock_latency: Option<Spanned<u32>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkerDef {
    name: Spanned<String>,
    instances: Option<Spanned<u32>>,
    priority: Spanned<i64>,
    cpus: Option<Spanned<Vec<i64>>>,
    /// `"each"` (default): instance i is pinned to the i-th CPU of `cpus`, round robin;
    /// `"mask"`: every instance may run on all of `cpus` (an affinity set, as the seed's
    /// {1,3} owner has), so the scheduler chooses among them.
    pin: Option<Spanned<String>>,
    /// Whether the callback waits for this worker each cycle (default true). A worker
    /// it does not wait for renders ahead, like a DAW's anticipative FX threads.
    wait: Option<bool>,
    #[serde(default)]
    plugins: Vec<Spanned<PluginDef>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PluginDef {
    run: Spanned<String>,
    jitter: Option<Spanned<String>>,
    lock: Option<Spanned<String>>,
}

/// One plugin: CPU work with optional jitter, optionally under a rig lock.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginCfg {
    pub work_ns: u64,
    pub jitter_ns: u64,
    /// Index into the variant plan's `locks`.
    pub lock: Option<usize>,
}

/// One worker thread instance.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerCfg {
    pub name: String,
    pub priority: i32,
    /// The thread's affinity: one CPU (`pin = "each"`, round robin over the rig's list) or
    /// the whole list (`pin = "mask"`); empty: not pinned.
    pub cpus: Vec<usize>,
    /// The callback waits for it each cycle.
    pub waited: bool,
    pub plugins: Vec<PluginCfg>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoopbackCfg {
    pub enabled: bool,
    pub playback: Option<String>,
    pub capture: Option<String>,
    pub clock_latency: Option<u32>,
}

/// What a run's estimate gives an audio trial beyond its duration, to open and close
/// its stream (`sweep::Plan::estimate_ns`).
pub const OPEN_CLOSE_NS: u64 = 5_000_000_000;

/// One setting's audio as the run asks for it (the command line over the setting's
/// `audio` over the rig's `[livefx]`), decided with the plan, before any backend is
/// probed: `auto` is still `auto` here.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub backend: BackendChoice,
    pub device: Option<String>,
    pub period: u32,
    /// Asked for by the command line or the setting (a JACK server's period is then
    /// changed to it), not the rig's default.
    pub period_explicit: bool,
    pub rate: u32,
    pub nperiods: u32,
}

/// A trial's pass or fail as the rig states it: at most so many deadline misses not
/// injected (the record's `misses_not_injected`) in the trial, or per minute of it.
///
/// Misses, not xruns, are the dropouts counted: a miss is the callback's cycle ending
/// after its deadline, its output not there when the card needed it, which a listener
/// hears on every backend, and every backend measures it the same way. Xruns are the
/// server's word and differ by server: JACK does not call every late client cycle an
/// xrun (misses outnumber xruns in docs/measured.md), PipeWire never tells a client of
/// its own overrun, the clock backend counts each period an overrun skipped (one miss,
/// several xruns), and a server's xrun can come from outside the rig (a patched
/// livefx-push-ipi run had an xrun and no miss, docs/verdicts.md). Injected misses are
/// left out: they are the rig's own overruns (`--inject-every`), there to check the
/// counters, the same in every setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pass {
    /// At most this many in the trial, however long it is.
    Misses(u64),
    /// At most this many per minute of the trial (its record's `duration_ms`).
    MissesPerMinute(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub duration_ns: u64,
    pub backend: BackendChoice,
    pub device: Option<String>,
    pub period: u32,
    pub rate: u32,
    pub nperiods: u32,
    pub inject_every: u64,
    pub inject_factor: f64,
    pub callback_priority: i32,
    pub callback_cpus: Vec<usize>,
    pub loopback: LoopbackCfg,
    pub workers: Vec<WorkerCfg>,
    pub bursts: Option<BurstsCfg>,
    /// `pass`: None when the rig states no per-trial pass or fail.
    pub pass: Option<Pass>,
}

/// Where a background thread's bursts start and end: its marks (`thread.mark`), the
/// n-th `from` pairing with the n-th `to`, as `[metrics]` pair them.
#[derive(Debug, Clone, PartialEq)]
pub struct BurstsCfg {
    pub thread: String,
    pub from: String,
    pub to: String,
}

pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

struct Ck {
    problems: Vec<(Range<usize>, String)>,
}

impl Ck {
    fn err(&mut self, span: Range<usize>, msg: impl Into<String>) {
        self.problems.push((span, msg.into()));
    }
    fn duration(&mut self, s: &Spanned<String>) -> u64 {
        parse_duration(s.get_ref()).unwrap_or_else(|e| {
            self.err(s.span(), e);
            0
        })
    }
    /// A CPU list as written (its order kept: `pin = "each"` deals it out), each CPU
    /// once and every one a CPU a machine or guest can have.
    fn cpus(&mut self, s: &Spanned<Vec<i64>>) -> Vec<usize> {
        let mut v = Vec::new();
        for &c in s.get_ref() {
            if !(0..limits::cpu_limit() as i64).contains(&c) {
                self.err(s.span(), limits::cpu_refusal(c));
            } else if !v.contains(&(c as usize)) {
                v.push(c as usize);
            }
        }
        if s.get_ref().is_empty() {
            self.err(
                s.span(),
                "cpus is empty: list at least one CPU or leave it out",
            );
        }
        v
    }
    fn rt_priority(&mut self, p: &Spanned<i64>) -> i32 {
        if !(1..=99).contains(p.get_ref()) {
            self.err(
                p.span(),
                format!(
                    "priority {} is out of range: SCHED_FIFO priorities are 1..=99",
                    p.get_ref()
                ),
            );
        }
        *p.get_ref() as i32
    }
}

/// Checks `[livefx]` and builds its config, adding every problem to `problems`.
/// `lock_names`: the rig's locks in plan order; `marks`: its thread marks as
/// `thread.mark` (base thread names).
pub(super) fn compile(
    def: &Spanned<LivefxDef>,
    lock_names: &[String],
    marks: &[String],
    problems: &mut Vec<Problem>,
) -> Config {
    let at = def.span();
    let lf = def.get_ref();
    let mut ck = Ck { problems: vec![] };
    // Checked in the order the problems are reported: timing, callback, loopback,
    // bursts, pass, workers.
    let duration_ns = ck.trial_duration(&lf.duration);
    let backend = ck.backend(&lf.backend);
    let period = ck.count(&lf.period, 256, "period", MAX_PERIOD, &at);
    let rate = ck.count(&lf.rate, 48000, "rate", MAX_RATE, &at);
    let nperiods = ck.count(&lf.nperiods, 2, "nperiods", MAX_NPERIODS, &at);
    let inject_every = lf.inject_every.as_ref().map_or(0, |s| *s.get_ref());
    let inject_factor = ck.inject_factor(&lf.inject_factor);
    let (callback_priority, callback_cpus) = ck.callback(&lf.callback);
    let loopback = ck.loopback(&lf.loopback, period);
    let bursts = lf.bursts.as_ref().and_then(|b| ck.bursts(b, marks));
    let pass = lf.pass.as_ref().and_then(|p| ck.pass(p));
    let workers = ck.workers(&lf.workers, lock_names);
    if workers.len() > 254 {
        ck.err(at.clone(), "at most 254 worker instances");
    }
    problems.extend(
        ck.problems
            .into_iter()
            .map(|(span, msg)| Problem { span, msg }),
    );
    Config {
        duration_ns,
        backend,
        device: lf.device.clone(),
        period,
        rate,
        nperiods,
        inject_every,
        inject_factor,
        callback_priority,
        callback_cpus,
        loopback,
        workers,
        bursts,
        pass,
    }
}

/// The seams of `compile`, one per part of the table; each reports its problems in
/// the order `compile` always has.
impl Ck {
    /// `duration`: the default when absent, and never 0.
    fn trial_duration(&mut self, d: &Option<Spanned<String>>) -> u64 {
        let duration_ns = d.as_ref().map_or(DEFAULT_DURATION_NS, |d| self.duration(d));
        if let Some(d) = d
            && duration_ns == 0
        {
            self.err(d.span(), "duration must be more than 0");
        }
        if let Some(d) = d
            && duration_ns > limits::MAX_TRIAL_NS
        {
            self.err(d.span(), "duration is at most 24 h");
        }
        duration_ns
    }

    /// `backend`: auto when absent, else the one named (a bad name reported).
    fn backend(&mut self, b: &Option<Spanned<String>>) -> BackendChoice {
        let Some(b) = b else {
            return BackendChoice::Auto;
        };
        BackendChoice::parse(b.get_ref()).unwrap_or_else(|e| {
            self.err(b.span(), e);
            BackendChoice::Auto
        })
    }

    /// A count that must be 1..=`max` (`period`, `rate`, `nperiods`: buffers are
    /// sized from them); a bad default would be reported at the table (`at`).
    fn count(
        &mut self,
        v: &Option<Spanned<u32>>,
        def: u32,
        what: &str,
        max: u32,
        at: &Range<usize>,
    ) -> u32 {
        let x = v.as_ref().map_or(def, |s| *s.get_ref());
        if !(1..=max).contains(&x) {
            self.err(
                v.as_ref().map_or(at.clone(), |s| s.span()),
                format!("{what} must be 1..={max}"),
            );
        }
        x
    }

    /// `inject_factor`: 1.5 periods by default, 0..=100.
    fn inject_factor(&mut self, f: &Option<Spanned<f64>>) -> f64 {
        let inject_factor = f.as_ref().map_or(1.5, |s| *s.get_ref());
        if let Some(f) = f
            && !(0.0..=100.0).contains(f.get_ref())
        {
            self.err(f.span(), "inject_factor must be between 0 and 100 periods");
        }
        inject_factor
    }

    /// `[livefx.callback]`: its priority (70 by default) and CPUs (none: not pinned).
    fn callback(&mut self, c: &Option<Spanned<CallbackDef>>) -> (i32, Vec<usize>) {
        match c {
            None => (70, vec![]),
            Some(c) => {
                let c = c.get_ref();
                (
                    c.priority.as_ref().map_or(70, |p| self.rt_priority(p)),
                    c.cpus.as_ref().map_or(vec![], |s| self.cpus(s)),
                )
            }
        }
    }

    /// `[livefx.loopback]`: enabled by default once the table is there; its clock
    /// latency must cover at least one `period`.
    fn loopback(&mut self, l: &Option<Spanned<LoopbackDef>>, period: u32) -> LoopbackCfg {
        match l {
            None => LoopbackCfg::default(),
            Some(l) => {
                let s = l.get_ref();
                if let Some(c) = &s.clock_latency
                    && *c.get_ref() < period
                {
                    self.err(
                        c.span(),
                        format!("clock_latency must be at least one period ({period} frames)"),
                    );
                }
                if let Some(c) = &s.clock_latency
                    && *c.get_ref() > MAX_LATENCY
                {
                    self.err(
                        c.span(),
                        format!("clock_latency is at most {MAX_LATENCY} frames"),
                    );
                }
                LoopbackCfg {
                    enabled: s.enabled.unwrap_or(true),
                    playback: s.playback.clone(),
                    capture: s.capture.clone(),
                    clock_latency: s.clock_latency.as_ref().map(|c| *c.get_ref()),
                }
            }
        }
    }

    /// `[livefx.bursts]`: two known marks of one thread. Stops at the first bad mark,
    /// as `from` then `to` are checked.
    fn bursts(&mut self, b: &Spanned<BurstsDef>, marks: &[String]) -> Option<BurstsCfg> {
        let b = b.get_ref();
        let (from, to) = (
            self.burst_mark(&b.from, marks)?,
            self.burst_mark(&b.to, marks)?,
        );
        if from.0 != to.0 {
            self.err(
                b.to.span(),
                "bursts: from and to must be marks of the same thread",
            );
            return None;
        }
        Some(BurstsCfg {
            thread: from.0,
            from: from.1,
            to: to.1,
        })
    }

    /// One `thread.mark` of `bursts`, split, if the rig's threads have it.
    fn burst_mark(&mut self, m: &Spanned<String>, marks: &[String]) -> Option<(String, String)> {
        let known = marks.iter().any(|x| x == m.get_ref());
        let split = m.get_ref().split_once('.');
        if !known || split.is_none() {
            self.err(
                m.span(),
                format!(
                    "'{}' is not a mark of the rig's [[threads]]: name one as \"thread.mark\" \
                     (e.g. add {{ mark = \"on\" }} to the hog's steps and write \"hog.on\")",
                    m.get_ref()
                ),
            );
            return None;
        }
        split.map(|(t, m)| (t.to_string(), m.to_string()))
    }

    /// `pass`: exactly one of its two bounds, each in its range.
    fn pass(&mut self, p: &Spanned<PassDef>) -> Option<Pass> {
        let d = p.get_ref();
        let how = "write pass = { misses = 0 } (a trial passes with no deadline miss) or \
                   pass = { misses_per_minute = 2.0 }";
        match (&d.misses, &d.misses_per_minute) {
            (Some(n), None) => {
                let max = limits::MAX_PASS_MISSES;
                match u64::try_from(*n.get_ref()) {
                    Ok(v) if v <= max => Some(Pass::Misses(v)),
                    _ => {
                        self.err(
                            n.span(),
                            format!("pass: misses = {} must be 0..={max}", n.get_ref()),
                        );
                        None
                    }
                }
            }
            (None, Some(r)) => {
                let (x, max) = (*r.get_ref(), limits::MAX_PASS_PER_MINUTE);
                if x.is_finite() && (0.0..=max).contains(&x) {
                    Some(Pass::MissesPerMinute(x))
                } else {
                    self.err(
                        r.span(),
                        format!("pass: misses_per_minute = {x} must be between 0 and {max}"),
                    );
                    None
                }
            }
            (Some(_), Some(_)) => {
                self.err(p.span(), format!("pass: give one bound, not both: {how}"));
                None
            }
            (None, None) => {
                self.err(p.span(), format!("pass is empty: {how}"));
                None
            }
        }
    }

    /// `[[livefx.workers]]`, each expanded into its instances, in order.
    fn workers(&mut self, defs: &[Spanned<WorkerDef>], lock_names: &[String]) -> Vec<WorkerCfg> {
        let mut workers = Vec::new();
        let mut names = std::collections::BTreeSet::new();
        for w in defs {
            // Past the 254 `compile` refuses, stop expanding: the file may list many more.
            if workers.len() > 254 {
                break;
            }
            self.worker(w, lock_names, &mut names, &mut workers);
        }
        workers
    }

    /// One `[[livefx.workers]]` entry: checks it (its name against `names`, the ones
    /// seen so far) and appends its instances to `workers`.
    fn worker(
        &mut self,
        w: &Spanned<WorkerDef>,
        lock_names: &[String],
        names: &mut std::collections::BTreeSet<String>,
        workers: &mut Vec<WorkerCfg>,
    ) {
        let wd = w.get_ref();
        let name = wd.name.get_ref();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.err(
                wd.name.span(),
                format!("worker name '{name}' must be letters, digits, '_' or '-'"),
            );
        }
        if !names.insert(name.clone()) {
            self.err(wd.name.span(), format!("worker '{name}' is defined twice"));
        }
        // Clamped: a bad count is reported, never expanded.
        let instances = wd
            .instances
            .as_ref()
            .map_or(1, |i| *i.get_ref())
            .clamp(1, 64);
        if let Some(i) = &wd.instances
            && !(1..=64).contains(i.get_ref())
        {
            self.err(i.span(), "instances must be 1..=64");
        }
        let priority = self.rt_priority(&wd.priority);
        let cpus = wd.cpus.as_ref().map_or(vec![], |s| self.cpus(s));
        let mask = self.pin_mask(&wd.pin);
        if wd.plugins.len() > MAX_PLUGINS {
            self.err(
                wd.plugins[MAX_PLUGINS].span(),
                format!("worker '{name}' has more than {MAX_PLUGINS} plugins"),
            );
        }
        if wd.plugins.is_empty() {
            self.err(
                w.span(),
                format!("worker '{name}' has no plugins: add plugins = [ {{ run = \"100 us\" }} ]"),
            );
        }
        let plugins: Vec<PluginCfg> = wd
            .plugins
            .iter()
            .take(MAX_PLUGINS)
            .map(|p| self.plugin(p, lock_names))
            .collect();
        for i in 0..instances {
            workers.push(WorkerCfg {
                name: if instances == 1 {
                    name.clone()
                } else {
                    format!("{name}.{i}")
                },
                priority,
                cpus: if cpus.is_empty() || mask {
                    cpus.clone()
                } else {
                    vec![cpus[i as usize % cpus.len()]]
                },
                waited: wd.wait.unwrap_or(true),
                plugins: plugins.clone(),
            });
        }
    }

    /// A worker's `pin`: true for "mask" (every instance on all its CPUs), false for
    /// "each" (the default) and for a bad value, which is reported.
    fn pin_mask(&mut self, pin: &Option<Spanned<String>>) -> bool {
        match pin.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
            None | Some(("each", _)) => false,
            Some(("mask", _)) => true,
            Some((other, span)) => {
                self.err(
                    span,
                    format!("pin = \"{other}\": use \"each\" (one CPU per instance) or \"mask\" (all of cpus)"),
                );
                false
            }
        }
    }

    /// One plugin: its work, jitter, and the index of its lock among `lock_names`.
    fn plugin(&mut self, p: &Spanned<PluginDef>, lock_names: &[String]) -> PluginCfg {
        let pd = p.get_ref();
        let work_ns = self.duration(&pd.run);
        let jitter_ns = pd.jitter.as_ref().map_or(0, |j| self.duration(j));
        let lock = pd.lock.as_ref().and_then(|l| {
            let i = lock_names.iter().position(|n| n == l.get_ref());
            if i.is_none() {
                self.err(
                    l.span(),
                    format!(
                        "lock '{}' is not defined: add [locks.{}] with protocol = \"inherit\" or \"none\"",
                        l.get_ref(),
                        l.get_ref()
                    ),
                );
            }
            i
        });
        PluginCfg {
            work_ns,
            jitter_ns,
            lock,
        }
    }
}

impl Config {
    /// Every CPU the audio process pins a thread to.
    pub fn cpus_used(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .workers
            .iter()
            .flat_map(|w| w.cpus.iter().copied())
            .chain(self.callback_cpus.iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}
