//! The `[livefx]` table of a rig: the audio process (period, rate, backend), its worker
//! threads and their plugins, the injected overrun and the loopback check. Checked with
//! the rest of the rig (`super::validate::compile`), so every problem names
//! file:line:col. Plugins name locks from the rig's `[locks]`, so variants can switch
//! their protocol. Lives under `rig` so the rig parser does not reach up into
//! `crate::livefx`, which uses it (re-exported as `crate::livefx::config`).

use super::units::parse_duration;
use super::validate::Problem;
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
    #[serde(default)]
    workers: Vec<Spanned<WorkerDef>>,
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

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub duration_ns: u64,
    pub backend: String,
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
    fn cpus(&mut self, s: &Spanned<Vec<i64>>) -> Vec<usize> {
        let mut v = Vec::new();
        for &c in s.get_ref() {
            if !(0..4096).contains(&c) {
                self.err(s.span(), format!("CPU {c} is not a CPU number"));
            } else {
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
    let duration_ns = lf
        .duration
        .as_ref()
        .map_or(DEFAULT_DURATION_NS, |d| ck.duration(d));
    if let Some(d) = &lf.duration
        && duration_ns == 0
    {
        ck.err(d.span(), "duration must be more than 0");
    }
    let backend = lf
        .backend
        .as_ref()
        .map_or("auto".to_string(), |b| b.get_ref().clone());
    if let Some(b) = &lf.backend
        && let Err(e) = crate::audio::BackendChoice::parse(b.get_ref())
    {
        ck.err(b.span(), e);
    }
    let pos = |v: &Option<Spanned<u32>>, def: u32, what: &str, ck: &mut Ck| {
        let x = v.as_ref().map_or(def, |s| *s.get_ref());
        if x == 0 {
            ck.err(
                v.as_ref().map_or(at.clone(), |s| s.span()),
                format!("{what} must be at least 1"),
            );
        }
        x
    };
    let period = pos(&lf.period, 256, "period", &mut ck);
    let rate = pos(&lf.rate, 48000, "rate", &mut ck);
    let nperiods = pos(&lf.nperiods, 2, "nperiods", &mut ck);
    let inject_every = lf.inject_every.as_ref().map_or(0, |s| *s.get_ref());
    let inject_factor = lf.inject_factor.as_ref().map_or(1.5, |s| *s.get_ref());
    if let Some(f) = &lf.inject_factor
        && !(0.0..=100.0).contains(f.get_ref())
    {
        ck.err(f.span(), "inject_factor must be between 0 and 100 periods");
    }
    let (callback_priority, callback_cpus) = match &lf.callback {
        None => (70, vec![]),
        Some(c) => {
            let c = c.get_ref();
            (
                c.priority.as_ref().map_or(70, |p| ck.rt_priority(p)),
                c.cpus.as_ref().map_or(vec![], |s| ck.cpus(s)),
            )
        }
    };
    let loopback = match &lf.loopback {
        None => LoopbackCfg::default(),
        Some(l) => {
            let s = l.get_ref();
            if let Some(c) = &s.clock_latency
                && *c.get_ref() < period
            {
                ck.err(
                    c.span(),
                    format!("clock_latency must be at least one period ({period} frames)"),
                );
            }
            LoopbackCfg {
                enabled: s.enabled.unwrap_or(true),
                playback: s.playback.clone(),
                capture: s.capture.clone(),
                clock_latency: s.clock_latency.as_ref().map(|c| *c.get_ref()),
            }
        }
    };
    let bursts = lf.bursts.as_ref().and_then(|b| {
        let b = b.get_ref();
        let mut one = |m: &Spanned<String>| -> Option<(String, String)> {
            let known = marks.iter().any(|x| x == m.get_ref());
            let split = m.get_ref().split_once('.');
            if !known || split.is_none() {
                ck.err(
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
        };
        let (from, to) = (one(&b.from)?, one(&b.to)?);
        if from.0 != to.0 {
            ck.err(
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
    });
    let mut workers = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for w in &lf.workers {
        let wd = w.get_ref();
        let name = wd.name.get_ref();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            ck.err(
                wd.name.span(),
                format!("worker name '{name}' must be letters, digits, '_' or '-'"),
            );
        }
        if !names.insert(name.clone()) {
            ck.err(wd.name.span(), format!("worker '{name}' is defined twice"));
        }
        let instances = wd.instances.as_ref().map_or(1, |i| *i.get_ref());
        if let Some(i) = &wd.instances
            && !(1..=64).contains(i.get_ref())
        {
            ck.err(i.span(), "instances must be 1..=64");
        }
        let priority = ck.rt_priority(&wd.priority);
        let cpus = wd.cpus.as_ref().map_or(vec![], |s| ck.cpus(s));
        let mask = match wd.pin.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
            None | Some(("each", _)) => false,
            Some(("mask", _)) => true,
            Some((other, span)) => {
                ck.err(
                    span,
                    format!("pin = \"{other}\": use \"each\" (one CPU per instance) or \"mask\" (all of cpus)"),
                );
                false
            }
        };
        if wd.plugins.is_empty() {
            ck.err(
                w.span(),
                format!("worker '{name}' has no plugins: add plugins = [ {{ run = \"100 us\" }} ]"),
            );
        }
        let mut plugins = Vec::new();
        for p in &wd.plugins {
            let pd = p.get_ref();
            let work_ns = ck.duration(&pd.run);
            let jitter_ns = pd.jitter.as_ref().map_or(0, |j| ck.duration(j));
            let lock = pd.lock.as_ref().and_then(|l| {
                let i = lock_names.iter().position(|n| n == l.get_ref());
                if i.is_none() {
                    ck.err(
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
            plugins.push(PluginCfg {
                work_ns,
                jitter_ns,
                lock,
            });
        }
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
