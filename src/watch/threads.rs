//! The audio threads of a session, for threads xrunrig did not make: every real-time
//! (SCHED_FIFO/RR) thread of the server's process and of each client's process, found in
//! /proc. A client's process comes from the server where it gives one (jackd2's
//! `jack_get_client_pid`), else from /proc: a process that has a JACK or PipeWire client
//! library mapped is an audio process.

use results::watch::Task;
use std::path::Path;

/// One thread as /proc shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    pub tid: i32,
    pub pid: i32,
    pub comm: String,
    /// The process's name.
    pub process: String,
    /// SCHED_OTHER 0, SCHED_FIFO 1, SCHED_RR 2, ...
    pub policy: u32,
    pub rt_priority: u32,
}

impl Thread {
    pub fn is_rt(&self) -> bool {
        self.policy == 1 || self.policy == 2
    }
    pub fn policy_text(&self) -> String {
        policy_text(self.policy, self.rt_priority, None)
    }
    pub fn task(&self) -> Task {
        Task {
            comm: self.comm.clone(),
            tid: self.tid,
            pid: Some(self.pid),
            process: Some(self.process.clone()),
            policy: self.policy_text(),
        }
    }
}

/// "FIFO 70", "RR 50", "nice 0" (nice from the trace's priority when known).
pub fn policy_text(policy: u32, rt_priority: u32, nice: Option<i32>) -> String {
    match policy {
        1 => format!("FIFO {rt_priority}"),
        2 => format!("RR {rt_priority}"),
        3 => "BATCH".into(),
        5 => "IDLE".into(),
        6 => "DEADLINE".into(),
        _ => format!("nice {}", nice.unwrap_or(0)),
    }
}

/// Parses /proc/PID/task/TID/stat: (comm, policy, rt_priority). The comm is in
/// parentheses and may hold spaces and parentheses: fields are counted after the last ')'.
pub fn parse_stat(text: &str) -> Option<(String, u32, u32)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state): rt_priority is field 40, policy field 41.
    let rt: u32 = rest.get(37)?.parse().ok()?;
    let policy: u32 = rest.get(38)?.parse().ok()?;
    Some((comm, policy, rt))
}

/// A thread as /proc shows it now (None once it is gone).
pub fn thread(pid: i32, tid: i32) -> Option<Thread> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    let (comm, policy, rt_priority) = parse_stat(&stat)?;
    Some(Thread {
        tid,
        pid,
        comm,
        process: process_name(pid).unwrap_or_default(),
        policy,
        rt_priority,
    })
}

pub fn process_name(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The thread group (process) of a thread id, where it still exists.
pub fn pid_of(tid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The threads of a process.
pub fn threads_of(pid: i32) -> Vec<Thread> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return vec![];
    };
    let mut v: Vec<Thread> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|tid| thread(pid, tid))
        .collect();
    v.sort_by_key(|t| t.tid);
    v
}

/// Processes whose memory maps hold a JACK or PipeWire client library: the audio
/// processes of the session, whoever started them. `seen` remembers each process's
/// answer (a process does not unload libjack), so a look reads the maps of new
/// processes only.
pub fn audio_processes(
    seen: &mut std::collections::HashMap<i32, bool>,
    jack_server: Option<&str>,
) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let live: Vec<i32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .collect();
    seen.retain(|pid, _| live.contains(pid));
    let mut v: Vec<i32> = live
        .into_iter()
        .filter(|pid| {
            *seen.entry(*pid).or_insert_with(|| {
                std::fs::read_to_string(format!("/proc/{pid}/maps")).is_ok_and(|m| {
                    maps_audio_library(&m) && !jack_server.is_some_and(|s| of_other_server(&m, s))
                })
            })
        })
        .collect();
    v.sort();
    v
}

/// Whether a maps text has libjack or libpipewire mapped (or is the JACK server).
pub fn maps_audio_library(maps: &str) -> bool {
    maps.lines().any(|l| {
        let Some(path) = l.split_whitespace().nth(5) else {
            return false;
        };
        let file = Path::new(path)
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("");
        file.starts_with("libjack.so")
            || file.starts_with("libjackserver.so")
            || file.starts_with("libpipewire-0.3.so")
    })
}

/// Whether a maps text shows a JACK client of other servers only: jackd2's futexes are
/// files `/dev/shm/jack_sem.UID_SERVER_NAME`, mapped by the clients that wait on or
/// signal them. A process with none of them (another JACK, PipeWire's libjack) cannot
/// be told apart and is kept.
pub fn of_other_server(maps: &str, server: &str) -> bool {
    let ours = format!("{server}_");
    let mut other = false;
    for l in maps.lines() {
        let Some(sem) = l
            .split_whitespace()
            .nth(5)
            .and_then(|p| p.strip_prefix("/dev/shm/jack_sem."))
        else {
            continue;
        };
        match sem.split_once('_') {
            Some((_uid, rest)) if rest.starts_with(&ours) => return false,
            Some(_) => other = true,
            None => {}
        }
    }
    other
}

/// The real-time threads of the given processes (each once).
pub fn rt_threads(pids: &[i32]) -> Vec<Thread> {
    let mut out: Vec<Thread> = pids
        .iter()
        .flat_map(|&p| threads_of(p))
        .filter(Thread::is_rt)
        .collect();
    out.sort_by_key(|t| t.tid);
    out.dedup_by_key(|t| t.tid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_comm_with_spaces_and_parens() {
        // A jackd process thread: FIFO (1) at 70.
        let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        f[0] = "S".into();
        f[40 - 3] = "70".into();
        f[41 - 3] = "1".into();
        let text = format!("1234 (jack (rt) x) {}\n", f.join(" "));
        assert_eq!(parse_stat(&text), Some(("jack (rt) x".into(), 1, 70)));
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(policy_text(1, 70, None), "FIFO 70");
        assert_eq!(policy_text(2, 50, None), "RR 50");
        assert_eq!(policy_text(0, 0, Some(-5)), "nice -5");
    }

    #[test]
    fn audio_libraries_in_maps() {
        let m = "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libjack.so.0.1.0\n";
        assert!(maps_audio_library(m));
        let p = "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libpipewire-0.3.so.0.365.0\n";
        assert!(maps_audio_library(p));
        let n = "7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
        assert!(!maps_audio_library(n));
        assert!(!maps_audio_library("7f00-7f01 rw-p 00000000 00:00 0 \n"));
    }

    #[test]
    fn a_client_of_another_jack_server_is_not_in_this_session() {
        let lib = "7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libjack.so.0.1.0\n";
        let sem = |s: &str| format!("7f02-7f03 rw-s 0 00:1a 2 /dev/shm/jack_sem.0_{s}\n");
        let bench = format!("{lib}{}", sem("bench_xrunrig-livefx"));
        assert!(of_other_server(&bench, "demo"));
        assert!(!of_other_server(&bench, "bench"));
        // A server name that is a prefix of another's is not that server.
        assert!(of_other_server(&format!("{lib}{}", sem("demo2_x")), "demo"));
        // Both servers' futexes mapped: it is (also) ours.
        assert!(!of_other_server(
            &format!("{bench}{}", sem("demo_x")),
            "demo"
        ));
        // No futex files to tell by: kept.
        assert!(!of_other_server(lib, "demo"));
    }

    #[test]
    fn this_process_is_found_in_proc() {
        let me = std::process::id() as i32;
        let ts = threads_of(me);
        assert!(ts.iter().any(|t| t.tid == me && t.pid == me), "{ts:?}");
        assert_eq!(pid_of(me), Some(me));
        assert!(process_name(me).is_some());
    }
}
