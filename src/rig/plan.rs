//! A validated rig, compiled to what the engine executes: names resolved to indices,
//! durations to nanoseconds, one plan per variant.

use super::units::Bound;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Fifo,
    Rr,
    Other,
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "fifo" => Some(Policy::Fifo),
            "rr" => Some(Policy::Rr),
            "other" => Some(Policy::Other),
            _ => None,
        }
    }
    pub fn is_rt(self) -> bool {
        self != Policy::Other
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Inherit,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Trials,
    Livefx,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// CPU work: consume this much of the thread's own CPU time.
    Run(u64),
    /// As Run, done as syscalls under seccomp filters: migrate-disabled while running.
    RunMigrateDisabled(u64),
    /// Busy for this much wall-clock time.
    Spin(u64),
    /// Busy until the event is signalled.
    SpinUntil(usize),
    Sleep(u64),
    Lock(usize),
    Unlock(usize),
    Signal(usize),
    Wait(usize),
    Barrier(usize),
    /// Take a timestamp into this mark slot.
    Mark(usize),
    Repeat {
        times: u64,
        body: Vec<Op>,
    },
    RepeatFor {
        ns: u64,
        body: Vec<Op>,
    },
}

#[derive(Debug, Clone)]
pub struct ThreadPlan {
    /// `owner`, or `worker.2` for the third instance.
    pub name: String,
    pub base: String,
    pub instance: u32,
    pub policy: Policy,
    pub priority: i32,
    pub cpus: Vec<usize>,
    pub ops: Vec<Op>,
    /// Line and column of the thread's CPU list (or name), for machine-check errors.
    pub cpus_at: (usize, usize),
}

#[derive(Debug, Clone)]
pub struct LockPlan {
    pub name: String,
    pub protocol: Protocol,
}

#[derive(Debug, Clone)]
pub struct MarkSlot {
    /// The thread instance that takes it, and the mark's name.
    pub thread: String,
    pub base: String,
    pub instance: u32,
    pub mark: String,
    /// How many times it can be taken in one trial (repeat counts multiplied).
    pub capacity: usize,
}

#[derive(Debug, Clone)]
pub struct Plan {
    pub threads: Vec<ThreadPlan>,
    pub locks: Vec<LockPlan>,
    pub events: Vec<String>,
    /// Barrier name and how many thread instances pass it.
    pub barriers: Vec<(String, u32)>,
    pub marks: Vec<MarkSlot>,
    /// The metrics with `end_early`, resolved against this plan's mark slots.
    pub early_ends: Vec<EarlyEnd>,
    /// Every metric of the rig is in `early_ends`: once all their `to` marks are taken
    /// the trial has nothing left to measure, and it ends there too (a passing trial
    /// need not sit out the rest of a hog's dwell).
    pub end_when_measured: bool,
}

/// A metric with `end_early` in one variant's plan: once mark slot `from` is taken and
/// slot `to` has not been `after_ns` later, the metric has failed its bound and the
/// trial is ended there (`engine::trial`); once `to` is taken, the metric is measured
/// (and when every metric is, `Plan::end_when_measured`, the trial ends then). Both
/// slots are taken once per trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlyEnd {
    /// Index into the rig's `metrics`.
    pub metric: usize,
    pub from: usize,
    pub to: usize,
    /// The bound's limit; one ns past it for `<=`, so a value cut there fails either op.
    pub after_ns: u64,
}

impl Plan {
    /// Every CPU some thread of this plan may run on.
    pub fn cpus_used(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .threads
            .iter()
            .flat_map(|t| t.cpus.iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub plan: Plan,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub name: String,
    pub from: (String, String),
    pub to: (String, String),
    pub bound: Option<Bound>,
    pub unit: String,
    pub description: String,
    /// `end_early`: a trial ends once this metric has passed its (upper) bound.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub end_early: bool,
}

impl Metric {
    /// The bound's limit in the metric's unit: what a value censored at the bound is
    /// recorded as (its value is at least this).
    pub fn bound_limit(&self) -> Option<f64> {
        let scale = super::units::unit_scale(&self.unit).unwrap_or(1e6);
        self.bound.map(|b| b.limit_ns as f64 / scale)
    }
}

#[derive(Debug, Clone)]
pub struct Rig {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    pub text: String,
    pub kind: Kind,
    pub trials: u32,
    pub trial_timeout_ns: u64,
    pub trial_gap_ns: u64,
    pub metrics: Vec<Metric>,
    pub variants: Vec<Variant>,
    /// The checked `[livefx]` table: present exactly when `kind` is `Livefx`.
    pub livefx: Option<super::livefx::Config>,
    /// The checked `[instruments]` table, when the rig has one.
    pub instruments: Option<super::instruments::Config>,
}

impl Rig {
    /// Every CPU any variant may use; what a machine must have online.
    pub fn cpus_used(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .variants
            .iter()
            .flat_map(|x| x.plan.cpus_used())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Checks the rig against the CPUs online here; the error says what it needs and
    /// that a guest kernel can provide it.
    pub fn check_machine(&self, online: &[usize]) -> Result<(), String> {
        let need = self.cpus_used();
        let missing: Vec<usize> = need
            .iter()
            .copied()
            .filter(|c| !online.contains(c))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let want = need.iter().max().map_or(1, |m| m + 1);
        let mut lines = Vec::new();
        for v in &self.variants {
            for t in &v.plan.threads {
                let bad: Vec<usize> = t
                    .cpus
                    .iter()
                    .copied()
                    .filter(|c| missing.contains(c))
                    .collect();
                let line = format!(
                    "{}:{}:{}: thread '{}' uses CPU {}, which this machine does not have",
                    self.path.display(),
                    t.cpus_at.0,
                    t.cpus_at.1,
                    t.base,
                    crate::sys::format_cpu_set(&bad)
                );
                if !bad.is_empty() && !lines.contains(&line) {
                    lines.push(line);
                }
            }
        }
        Err(format!(
            "{}\nrig '{}' needs CPUs {} but this machine has only {} online (missing {}).\n\
             Nothing was changed. Run it in a guest kernel with enough CPUs, e.g.\n  \
             xrunrig run {} --kernel debian:6.12 --cpus {}",
            lines.join("\n"),
            self.name,
            crate::sys::format_cpu_set(&need),
            crate::sys::format_cpu_set(online),
            crate::sys::format_cpu_set(&missing),
            self.path.display(),
            want.max(4)
        ))
    }
}
