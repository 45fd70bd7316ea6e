//! Small facts about the running machine and clocks, shared by every part.

use std::fs;
use std::path::Path;

/// CLOCK_MONOTONIC in nanoseconds: the one time base every mark and deadline uses.
#[inline]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[inline]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The kernel's thread id of the caller.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Parses a Linux CPU list such as `0-3,6,8-9`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| format!("bad CPU '{a}'"))?;
            let b: usize = b.trim().parse().map_err(|_| format!("bad CPU '{b}'"))?;
            if b < a {
                return Err(format!("CPU range {part} runs backwards"));
            }
            out.extend(a..=b);
        } else {
            out.push(part.parse().map_err(|_| format!("bad CPU '{part}'"))?);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats CPUs as a compact list, e.g. `{1,3}` or `{0-3}`.
pub fn format_cpu_set(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if end > start + 1 {
            parts.push(format!("{start}-{end}"));
        } else if end == start + 1 {
            parts.push(format!("{start},{end}"));
        } else {
            parts.push(start.to_string());
        }
        i += 1;
    }
    format!("{{{}}}", parts.join(","))
}

/// CPUs that are online now (`/sys/devices/system/cpu/online`), or all CPUs the
/// process may use if that file is missing.
pub fn online_cpus() -> Vec<usize> {
    if let Ok(s) = fs::read_to_string("/sys/devices/system/cpu/online")
        && let Ok(v) = parse_cpu_list(&s)
        && !v.is_empty()
    {
        return v;
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
}

/// `uname` fields: (sysname, nodename, release, version, machine).
pub fn uname() -> (String, String, String, String, String) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid, writable utsname.
    unsafe { libc::uname(&mut u) };
    let f = |b: &[libc::c_char]| {
        let bytes: Vec<u8> = b
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (
        f(&u.sysname),
        f(&u.nodename),
        f(&u.release),
        f(&u.version),
        f(&u.machine),
    )
}

/// The CPU model name from /proc/cpuinfo.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// The kernel's preemption model, from the most precise source that can be read.
pub fn preemption_model() -> String {
    if let Ok(s) = fs::read_to_string("/sys/kernel/debug/sched/preempt") {
        // e.g. "none voluntary (full) lazy": the one in parentheses is in force.
        if let Some(a) = s.find('(')
            && let Some(b) = s[a..].find(')')
        {
            return format!("{} (dynamic)", &s[a + 1..a + b]);
        }
    }
    if fs::read_to_string("/sys/kernel/realtime").is_ok_and(|s| s.trim() == "1") {
        return "PREEMPT_RT".into();
    }
    let v = uname().3;
    for m in ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT_LAZY", "PREEMPT"] {
        if v.split_whitespace().any(|w| w == m) {
            return format!("{m} (from uname -v)");
        }
    }
    "none/voluntary (from uname -v)".into()
}

/// Current UTC time as an RFC 3339 string and as a compact stamp for directory names.
pub fn utc_now() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, mo, d, h, mi, s) = utc_fields(secs);
    (
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z"),
    )
}

/// RFC 3339 UTC with microseconds for a time in ns since the Unix epoch.
pub fn utc_at_ns(unix_ns: u64) -> String {
    let (y, mo, d, h, mi, s) = utc_fields(unix_ns / 1_000_000_000);
    let us = unix_ns % 1_000_000_000 / 1000;
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}Z")
}

fn utc_fields(secs: u64) -> (i32, i32, i32, i32, i32, i32) {
    let secs = secs as libc::time_t;
    // SAFETY: tm is plain data; gmtime_r fills it from a valid time_t.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::gmtime_r(&secs, &mut tm) };
    (
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    )
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC in ns, read back to back: add it to a
/// monotonic time (ours, or a trace timestamp under trace_clock mono) for wall time.
pub fn mono_to_unix_ns() -> i64 {
    let mono = now_ns() as i64;
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    wall - mono
}

/// Reads a small text file, trimming it; `Err` carries the OS error for messages.
pub fn read_trim(path: &Path) -> std::io::Result<String> {
    fs::read_to_string(path).map(|s| s.trim().to_string())
}

/// Whether a process with this pid exists and is an xrunrig (journal ownership check).
pub fn pid_is_xrunrig(pid: u32) -> bool {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("xrunrig"))
        .unwrap_or(false)
}

/// This boot's id (/proc/sys/kernel/random/boot_id): a journal from another boot is
/// stale, since the reboot reset every knob it lists.
pub fn boot_id() -> Option<String> {
    read_trim(Path::new("/proc/sys/kernel/random/boot_id"))
        .ok()
        .filter(|s| !s.is_empty())
}

/// The kill-9 matrix's hook (tests/trust_kill.rs): with `XRUNRIG_TEST_STALL_MS` set,
/// says `xrunrig: test-stall POINT` on stderr and sleeps that long, so a test can kill
/// the run inside a window that is otherwise microseconds wide (mid-apply, mid-restore,
/// between results files). Unset (always, outside that test) it does nothing.
pub fn test_stall(point: &str) {
    static MS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let ms = *MS.get_or_init(|| {
        std::env::var("XRUNRIG_TEST_STALL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if let Some(ms) = ms {
        eprintln!("xrunrig: test-stall {point}");
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Touches the calling thread's next 256 KiB of stack, a page at a time, so an RT loop
/// never takes a first-touch page fault there (mlockall's MCL_FUTURE keeps them; without
/// it they are at least resident). Call before the loop, not in it.
#[inline(never)]
pub fn prefault_stack() {
    const BYTES: usize = 256 * 1024;
    let mut buf = [0u8; BYTES];
    for i in (0..BYTES).step_by(4096) {
        // SAFETY: i < BYTES; volatile so the writes are not optimised away.
        unsafe { std::ptr::write_volatile(buf.as_mut_ptr().add(i), 1) };
    }
    std::hint::black_box(&buf);
}

/// Locks all current and future pages so a page fault never stalls an RT thread.
pub fn mlockall() -> Result<(), String> {
    // SAFETY: mlockall takes flags only.
    let r = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("1,3\n").unwrap(), vec![1, 3]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert_eq!(format_cpu_set(&[1, 3]), "{1,3}");
        assert_eq!(format_cpu_set(&[0, 1, 2, 3]), "{0-3}");
        assert_eq!(format_cpu_set(&[0, 1, 5]), "{0,1,5}");
    }

    #[test]
    fn clocks_advance() {
        let a = now_ns();
        let c = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(now_ns() > a);
        assert!(thread_cpu_ns() > c);
    }

    #[test]
    fn utc_at_ns_has_microseconds() {
        assert_eq!(
            utc_at_ns(1_764_510_600_123_456_789),
            "2025-11-30T13:50:00.123456Z"
        );
    }

    #[test]
    fn boot_id_is_this_boots_uuid() {
        let b = boot_id().expect("/proc/sys/kernel/random/boot_id");
        assert_eq!(b.len(), 36, "{b}");
        assert_eq!(
            boot_id().as_deref(),
            Some(b.as_str()),
            "stable within a boot"
        );
    }

    #[test]
    fn utc_stamp_has_shape() {
        let (iso, compact) = utc_now();
        assert_eq!(iso.len(), 20);
        assert!(iso.ends_with('Z'));
        assert_eq!(compact.len(), 16);
    }
}
