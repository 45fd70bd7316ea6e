//! What a rig needs from the machine, judged against the checks: RT policies need
//! SCHED_FIFO up to the rig's priority, pinned threads their CPUs, PI locks PI futexes,
//! livefx rigs an audio backend, instruments tracefs, and a profile that changes sched
//! features or debugfs knobs needs them writable. Unmet needs make the exit code 1.

use super::ctx::Ctx;
use super::source::Source;
use super::{Check, Status};
use crate::knobs::profile::{Change, Profile};
use crate::rig::{Kind, Op, Protocol, Rig};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Need {
    /// The check this need rests on.
    pub check: &'static str,
    pub what: String,
    pub met: bool,
    /// Advisory needs warn but do not change the exit code.
    pub advisory: bool,
    pub found: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
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
    let mut out = Vec::new();
    let threads: Vec<_> = rig
        .variants
        .iter()
        .flat_map(|v| v.plan.threads.iter())
        .collect();

    // CPUs the rig pins to.
    let need = rig.cpus_used();
    if !need.is_empty() {
        let online: Vec<usize> = find(checks, "cpus.online")
            .and_then(|c| serde_json::from_value(c.data["online"].clone()).ok())
            .unwrap_or_default();
        let missing: Vec<usize> = need
            .iter()
            .copied()
            .filter(|c| !online.contains(c))
            .collect();
        let want = need.iter().max().map_or(1, |m| m + 1).max(4);
        out.push(Need {
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
        });
    }

    // RT policies: FIFO up to the highest priority used.
    let max_rt = threads
        .iter()
        .filter(|t| t.policy.is_rt())
        .map(|t| t.priority)
        .max()
        .or((rig.kind == Kind::Livefx).then_some(1));
    if let Some(p) = max_rt {
        let c = find(checks, "rights.sched_fifo");
        let max_ok = c.and_then(|c| c.data["max_ok"].as_i64()).unwrap_or(0);
        out.push(Need {
            check: "rights.sched_fifo",
            what: format!("SCHED_FIFO up to priority {p}"),
            met: max_ok >= i64::from(p),
            advisory: false,
            found: c.map_or("not checked".into(), |c| {
                format!("{} {}", c.status.label(), c.found)
            }),
            fix: c.and_then(|c| c.fix.clone()),
        });
    }

    // PI locks.
    if rig
        .variants
        .iter()
        .any(|v| v.plan.locks.iter().any(|l| l.protocol == Protocol::Inherit))
    {
        out.push(from_check(
            checks,
            "kernel.pi_futex",
            "PI mutexes (protocol = \"inherit\")".into(),
            false,
        ));
    }

    // RT throttling against the longest busy step of an RT thread (advisory: a profile
    // usually switches throttling off for such rigs).
    let busy = threads
        .iter()
        .filter(|t| t.policy.is_rt())
        .map(|t| longest_busy(&t.ops))
        .max()
        .unwrap_or(0);
    if let Some(c) = find(checks, "sched.rt_throttling")
        && let Some(rt) = c.data["sched_rt_runtime_us"].as_i64()
        && busy > 0
    {
        let sets_it = profile.is_some_and(|p| {
            p.settings.iter().all(|s| {
                s.changes.iter().any(
                    |ch| matches!(ch, Change::Sysctl(k, _) if k == "kernel.sched_rt_runtime_us"),
                )
            })
        });
        let hit = rt >= 0 && busy > rt as u64 * 1000;
        out.push(Need {
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
        });
    }

    // livefx: an audio backend.
    if rig.kind == Kind::Livefx {
        let backend = rig.livefx.as_ref().map_or("auto", |c| c.backend.as_str());
        match backend {
            "clock" => {}
            "jack" => out.push(from_check(
                checks,
                "audio.jack",
                "a JACK server that answers".into(),
                false,
            )),
            "alsa" => out.push(from_check(
                checks,
                "audio.alsa_cards",
                "an ALSA sound card".into(),
                false,
            )),
            _ => {
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
                out.push(n);
            }
        }
    }

    // Instruments: tracing (the IPI counters alone need only /proc/interrupts).
    if rig.instruments.as_ref().is_some_and(|i| i.needs_trace()) {
        out.push(from_check(
            checks,
            "tracing.tracefs",
            "tracefs mounted ([instruments])".into(),
            false,
        ));
        out.push(from_check(
            checks,
            "tracing.sched_events",
            "sched trace events ([instruments])".into(),
            false,
        ));
    }

    // A profile: what it writes must be writable.
    if let Some(p) = profile {
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
    }
    out
}

pub fn exit_code(needs: &[Need]) -> i32 {
    i32::from(needs.iter().any(|n| !n.met && !n.advisory))
}

pub fn to_json(rig: &Rig, needs: &[Need]) -> serde_json::Value {
    serde_json::json!({
        "name": rig.name,
        "path": rig.path.display().to_string(),
        "needs": needs,
        "met": exit_code(needs) == 0,
    })
}
