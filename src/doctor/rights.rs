//! The user's real-time rights: RLIMIT_RTPRIO, RLIMIT_MEMLOCK, the audio group, and
//! whether SCHED_FIFO can actually be set.

use super::ctx::{CAP_IPC_LOCK, CAP_SYS_NICE, Ctx};
use super::source::{ProbeError, Source, describe_err};
use super::{Check, data_of};
use serde::{Deserialize, Serialize};

const AREA: &str = "rights";

const LIMITS_FIX: &str = "as root, create /etc/security/limits.d/audio.conf with the lines \
'@audio - rtprio 95' and '@audio - memlock unlimited', add yourself to the audio group \
(usermod -aG audio $USER) and log in again";

/// (soft, hard) of one /proc/self/limits row, e.g. "Max realtime priority".
pub fn limit(text: &str, name: &str) -> Option<(String, String)> {
    let rest = text.lines().find_map(|l| l.strip_prefix(name))?;
    let mut f = rest.split_whitespace();
    Some((f.next()?.to_string(), f.next()?.to_string()))
}

pub fn checks(src: &dyn Source, ctx: &Ctx) -> Vec<Check> {
    let limits = src
        .read("/proc/self/limits")
        .map_err(|e| describe_err("/proc/self/limits", &e));
    vec![
        rtprio(ctx, &limits),
        memlock(ctx, &limits),
        audio_group(src, ctx),
        sched_fifo(src),
    ]
}

fn rtprio(ctx: &Ctx, limits: &Result<String, String>) -> Check {
    let c = Check::new(
        AREA,
        "rights.rtprio",
        "RLIMIT_RTPRIO",
        "the highest SCHED_FIFO priority an unprivileged process may take; JACK and the \
         audio threads need one above every other RT thread",
    );
    let lim = match limits {
        Ok(t) => match limit(t, "Max realtime priority") {
            Some(l) => l,
            None => return c.na("/proc/self/limits has no 'Max realtime priority' row"),
        },
        Err(e) => return c.na(e.clone()),
    };
    let soft: Option<u32> = lim.0.parse().ok().or((lim.0 == "unlimited").then_some(99));
    let found = format!("{} (soft) / {} (hard)", lim.0, lim.1);
    if ctx.has_cap(CAP_SYS_NICE) {
        return c.pass(format!(
            "{found}; not needed: this process has CAP_SYS_NICE (root)"
        ));
    }
    match soft {
        None => c.na(format!("cannot parse the limit: {found}")),
        Some(p) if p >= 95 => c.pass(found),
        Some(0) => c.fail(format!("{found}: no SCHED_FIFO at all"), LIMITS_FIX),
        Some(_) => c.warn(
            format!("{found}: FIFO only up to this priority"),
            LIMITS_FIX,
        ),
    }
}

fn memlock(ctx: &Ctx, limits: &Result<String, String>) -> Check {
    let c = Check::new(
        AREA,
        "rights.memlock",
        "RLIMIT_MEMLOCK",
        "audio processes lock their memory (mlockall) so a page fault never stalls the \
         audio thread; a small limit makes that fail",
    );
    let lim = match limits {
        Ok(t) => match limit(t, "Max locked memory") {
            Some(l) => l,
            None => return c.na("/proc/self/limits has no 'Max locked memory' row"),
        },
        Err(e) => return c.na(e.clone()),
    };
    let found = if lim.0 == "unlimited" {
        "unlimited".to_string()
    } else {
        match lim.0.parse::<u64>() {
            Ok(b) => format!("{} MiB ({b} bytes)", b >> 20),
            Err(_) => return c.na(format!("cannot parse the limit '{}'", lim.0)),
        }
    };
    if ctx.has_cap(CAP_IPC_LOCK) {
        c.pass(format!(
            "{found}; not needed: this process has CAP_IPC_LOCK (root)"
        ))
    } else if lim.0 == "unlimited" {
        c.pass(found)
    } else {
        c.warn(
            format!("{found}: mlockall of a whole audio process fails"),
            LIMITS_FIX,
        )
    }
}

fn audio_group(src: &dyn Source, ctx: &Ctx) -> Check {
    let c = Check::new(
        AREA,
        "rights.audio_group",
        "audio group",
        "distributions grant the RT limits above (and /dev/snd access) to the audio group",
    );
    let group = match src.read("/etc/group") {
        Ok(t) => t,
        Err(e) => return c.na(describe_err("/etc/group", &e)),
    };
    let Some(gid) = group.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 3 && f[0] == "audio").then(|| f[2].parse::<u32>().ok())?
    }) else {
        return c.na("no audio group in /etc/group");
    };
    let status = src.read("/proc/self/status").unwrap_or_default();
    let groups: Vec<u32> = status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if groups.contains(&gid) {
        c.pass(format!("member of audio (gid {gid})"))
    } else if ctx.uid == Some(0) {
        c.pass(format!(
            "not a member of audio (gid {gid}); not needed: running as root"
        ))
    } else {
        c.warn(
            format!("not a member of audio (gid {gid})"),
            "usermod -aG audio $USER, then log out and in again",
        )
    }
}

/// rights.sched_fifo's data: the highest priority SCHED_FIFO could be set at (0: none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FifoMax {
    pub max_ok: i64,
}

fn sched_fifo(src: &dyn Source) -> Check {
    let c = Check::new(
        AREA,
        "rights.sched_fifo",
        "SCHED_FIFO",
        "the audio callback and xrunrig's rig threads run SCHED_FIFO; if it cannot be set \
         they compete with every normal task",
    );
    let fix = "run as root, or raise RLIMIT_RTPRIO (see above); in a container or cgroup \
               with RT group scheduling, give it RT runtime (cpu.rt_runtime_us)";
    match src.try_fifo(1) {
        Err(e @ ProbeError::NotRecorded(_)) => c.na(e.to_string()),
        Err(e) => c
            .fail(format!("cannot be set, even at priority 1: {e}"), fix)
            .with_data(data_of(FifoMax { max_ok: 0 })),
        Ok(()) => {
            let max = [99, 95, 90, 80, 70, 50, 20, 10, 1]
                .into_iter()
                .find(|p| src.try_fifo(*p).is_ok())
                .unwrap_or(1);
            let c = c.with_data(data_of(FifoMax {
                max_ok: i64::from(max),
            }));
            if max == 99 {
                c.pass("works: set and read back at priorities 1 and 99 on a probe thread")
            } else {
                c.warn(format!("works up to priority {max} only"), fix)
            }
        }
    }
}
