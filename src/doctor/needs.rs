//! What a rig needs from the machine, judged against the checks: RT policies need
//! SCHED_FIFO up to the rig's priority, pinned threads their CPUs, PI locks PI futexes,
//! livefx rigs an audio backend, instruments tracefs, and a profile that changes sched
//! features or debugfs knobs needs them writable. Unmet needs make the exit code 1.

use super::ctx::Ctx;
use super::source::Source;
use super::{Check, Status, cpus, data_as, rights, sched};
use crate::knobs::profile::{Change, Profile};
use crate::rig::backend::BackendChoice;
use crate::rig::{Op, Protocol, Rig, ThreadPlan};
use serde::Serialize;

/// Fields in alphabetical order, as `xrunrig doctor --json` wrote them when they went
/// through an untyped value.
#[derive(Debug, Clone, Serialize)]
pub struct Need {
    /// Advisory needs warn but do not change the exit code.
    pub advisory: bool,
    /// The check this need rests on.
    pub check: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    pub found: String,
    pub met: bool,
    pub what: String,
}

fn find<'a>(checks: &'a [Check], id: &str) -> Option<&'a Check> {
    checks.iter().find(|c| c.id == id)
}

/// A need met exactly when the check passes (warn counts as met when `warn_ok`).
fn from_check(checks: &[Check], id: &'static str, what: String, warn_ok: bool) -> Need {
    match find(checks, id) {
        Some(c) => Need {
            check: id,
            what,
            met: c.status == Status::Pass || (warn_ok && c.status == Status::Warn),
            advisory: false,
            found: format!("{} {}", c.status.label(), c.found),
            fix: c.fix.clone(),
        },
        None => Need {
            check: id,
            what,
            met: false,
            advisory: false,
            found: "not checked".into(),
            fix: None,
        },
    }
}

/// The longest single busy step (spin, run, repeat_for) in ns.
fn longest_busy(ops: &[Op]) -> u64 {
    ops.iter()
        .map(|o| match o {
            Op::Run(n) | Op::Spin(n) => *n,
            Op::RepeatFor { ns, body } => (*ns).max(longest_busy(body)),
            Op::Repeat { body, .. } => longest_busy(body),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

pub fn evaluate(
    rig: &Rig,
    profile: Option<&Profile>,
    checks: &[Check],
    src: &dyn Source,
) -> Vec<Need> {
    let ctx = Ctx::read(src);
    let threads: Vec<&ThreadPlan> = rig
        .variants
        .iter()
        .flat_map(|v| v.plan.threads.iter())
        .collect();
    let mut out = Vec::new();
    out.extend(cpus(rig, checks));
    out.extend(sched_fifo(rig, &threads, checks));
    out.extend(pi_locks(rig, checks));
    out.extend(rt_throttling(&threads, profile, checks));
    out.extend(audio_backend(rig, checks));
    out.extend(tracing(rig, checks));
    if let Some(p) = profile {
        out.extend(profile_writes(p, &ctx, checks));
    }
    out
}

/// The CPUs the rig pins to (its threads' and its `[livefx]` callback's and workers')
/// must be online.
fn cpus(rig: &Rig, checks: &[Check]) -> Option<Need> {
    let mut need = rig.cpus_used();
    if let Some(c) = &rig.livefx {
        need.extend(c.cpus_used());
        need.sort_unstable();
        need.dedup();
    }
    if need.is_empty() {
        return None;
    }
    let online: Vec<usize> = find(checks, "cpus.online")
        .and_then(data_as::<cpus::Online>)
        .map(|d| d.online)
        .unwrap_or_default();
    let missing: Vec<usize> = need
        .iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect();
    let want = need.iter().max().map_or(1, |m| m + 1).max(4);
    Some(Need {
        check: "cpus.online",
        what: format!("CPUs {}", crate::sys::format_cpu_set(&need)),
        met: !online.is_empty() && missing.is_empty(),
        advisory: false,
        found: if online.is_empty() {
            "online CPUs unknown".into()
        } else {
            format!(
                "online {}{}",
                crate::sys::format_cpu_set(&online),
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(", missing {}", crate::sys::format_cpu_set(&missing))
                }
            )
        },
        fix: (!missing.is_empty()).then(|| {
            format!(
                "run it in a guest kernel with enough CPUs: xrunrig run {} --kernel debian:6.12 --cpus {want}",
                rig.path.display()
            )
        }),
    })
}

/// RT policies: FIFO up to the highest priority used: the RT threads of its plan and a
/// livefx rig's callback and workers (its `[livefx]` priorities).
fn sched_fifo(rig: &Rig, threads: &[&ThreadPlan], checks: &[Check]) -> Option<Need> {
    let livefx = rig.livefx.iter().flat_map(|c| {
        std::iter::once(c.callback_priority).chain(c.workers.iter().map(|w| w.priority))
    });
    let p = threads
        .iter()
        .filter(|t| t.policy.is_rt())
        .map(|t| t.priority)
        .chain(livefx)
        .max()?;
    let c = find(checks, "rights.sched_fifo");
    let max_ok = c
        .and_then(data_as::<rights::FifoMax>)
        .map_or(0, |d| d.max_ok);
    Some(Need {
        check: "rights.sched_fifo",
        what: format!("SCHED_FIFO up to priority {p}"),
        met: max_ok >= i64::from(p),
        advisory: false,
        found: c.map_or("not checked".into(), |c| {
            format!("{} {}", c.status.label(), c.found)
        }),
        fix: c.and_then(|c| c.fix.clone()),
    })
}

/// PI locks need PI futexes.
fn pi_locks(rig: &Rig, checks: &[Check]) -> Option<Need> {
    rig.variants
        .iter()
        .any(|v| v.plan.locks.iter().any(|l| l.protocol == Protocol::Inherit))
        .then(|| {
            from_check(
                checks,
                "kernel.pi_futex",
                "PI mutexes (protocol = \"inherit\")".into(),
                false,
            )
        })
}

/// RT throttling against the longest busy step of an RT thread (advisory: a profile
/// usually switches throttling off for such rigs).
fn rt_throttling(
    threads: &[&ThreadPlan],
    profile: Option<&Profile>,
    checks: &[Check],
) -> Option<Need> {
    let busy = threads
        .iter()
        .filter(|t| t.policy.is_rt())
        .map(|t| longest_busy(&t.ops))
        .max()
        .unwrap_or(0);
    let c = find(checks, "sched.rt_throttling")?;
    let rt = data_as::<sched::RtThrottling>(c)?.sched_rt_runtime_us;
    if busy == 0 {
        return None;
    }
    let sets_it = profile.is_some_and(|p| {
        p.settings.iter().all(|s| {
            s.changes
                .iter()
                .any(|ch| matches!(ch, Change::Sysctl(k, _) if k == "kernel.sched_rt_runtime_us"))
        })
    });
    let hit = rt >= 0 && busy > rt as u64 * 1000;
    Some(Need {
        check: "sched.rt_throttling",
        what: format!("an RT busy phase of {} ms unthrottled", busy / 1_000_000),
        met: !hit || sets_it,
        advisory: true,
        found: c.found.clone(),
        fix: (hit && !sets_it).then(|| {
            "use a profile that sets kernel.sched_rt_runtime_us = -1 (e.g. profiles/rt-push-ipi.toml), \
             or sysctl -w kernel.sched_rt_runtime_us=-1 for the run"
                .to_string()
        }),
    })
}

/// livefx: an audio backend (the rig's; auto is met by JACK or else an ALSA card).
fn audio_backend(rig: &Rig, checks: &[Check]) -> Option<Need> {
    // A rig plays audio when it has a `[livefx]` table (its kind's only).
    match rig.livefx.as_ref()?.backend {
        BackendChoice::Clock => None,
        BackendChoice::Jack => Some(from_check(
            checks,
            "audio.jack",
            "a JACK server that answers".into(),
            false,
        )),
        BackendChoice::Alsa => Some(from_check(
            checks,
            "audio.alsa_cards",
            "an ALSA sound card".into(),
            false,
        )),
        BackendChoice::Auto => {
            let mut n = from_check(
                checks,
                "audio.jack",
                "a JACK server or an ALSA card (backend auto)".into(),
                false,
            );
            let alsa = from_check(checks, "audio.alsa_cards", String::new(), false);
            if !n.met && alsa.met {
                n = Need {
                    what: n.what,
                    check: "audio.alsa_cards",
                    ..alsa
                };
            } else if !n.met {
                n.found = format!("{}; {}", n.found, alsa.found);
                n.fix = Some(
                    "start a JACK server or load a sound card driver; without one livefx \
                     runs on the clock backend (--backend clock)"
                        .into(),
                );
            }
            Some(n)
        }
    }
}

/// Instruments: tracing (the IPI counters alone need only /proc/interrupts).
fn tracing(rig: &Rig, checks: &[Check]) -> Vec<Need> {
    if !rig.instruments.as_ref().is_some_and(|i| i.needs_trace()) {
        return vec![];
    }
    vec![
        from_check(
            checks,
            "tracing.tracefs",
            "tracefs mounted ([instruments])".into(),
            false,
        ),
        from_check(
            checks,
            "tracing.sched_events",
            "sched trace events ([instruments])".into(),
            false,
        ),
    ]
}

/// A profile: what it writes must be writable.
fn profile_writes(p: &Profile, ctx: &Ctx, checks: &[Check]) -> Vec<Need> {
    let mut out = Vec::new();
    let changes: Vec<&Change> = p.settings.iter().flat_map(|s| s.changes.iter()).collect();
    if changes
        .iter()
        .any(|c| matches!(c, Change::Feature(..) | Change::Debugfs(..)))
    {
        out.push(from_check(
            checks,
            "sched.features",
            format!("writable sched features / debugfs (profile {})", p.name),
            false,
        ));
    }
    if changes.iter().any(|c| matches!(c, Change::Sysctl(..))) {
        let root = ctx.uid == Some(0);
        out.push(Need {
            check: "rights.sched_fifo",
            what: format!("root, to write sysctls (profile {})", p.name),
            met: root,
            advisory: false,
            found: format!(
                "uid {}",
                ctx.uid.map_or("unknown".into(), |u| u.to_string())
            ),
            fix: (!root).then(|| "run as root (sudo)".to_string()),
        });
    }
    out
}

pub fn exit_code(needs: &[Need]) -> i32 {
    i32::from(needs.iter().any(|n| !n.met && !n.advisory))
}

/// `xrunrig doctor --json --rig`'s `rig`: what the rig needs and whether this machine
/// has it. Fields in alphabetical order (see `Need`).
#[derive(Debug, Serialize)]
pub struct RigNeeds<'a> {
    pub met: bool,
    pub name: &'a str,
    pub needs: &'a [Need],
    pub path: String,
}

pub fn rig_needs<'a>(rig: &'a Rig, needs: &'a [Need]) -> RigNeeds<'a> {
    RigNeeds {
        met: exit_code(needs) == 0,
        name: &rig.name,
        needs,
        path: rig.path.display().to_string(),
    }
}
