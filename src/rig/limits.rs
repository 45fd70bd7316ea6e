//! Caps on what a rig, a profile or the command line may ask for, and the checked
//! arithmetic of a run's time budget. Every count that becomes an allocation, a thread
//! or a loop is bounded here, so a typo (`cpus = "0-4000000000"`, `instances = 100000`)
//! is a positioned error instead of an out-of-memory abort, and no estimate can wrap
//! around into a tiny watchdog bound.

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// Rig and profile files are read whole: the biggest shipped rig is a few KiB.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// `trials` in a rig (the command line's `--trials` is bounded by the run's budget).
pub const MAX_TRIALS: u32 = 10_000;
/// `instances` of one `[[threads]]` entry, and thread instances in one plan.
pub const MAX_INSTANCES: u32 = 256;
pub const MAX_THREADS: usize = 256;
pub const MAX_VARIANTS: usize = 64;
/// Compiled steps over every thread instance of every variant.
pub const MAX_OPS: usize = 1_000_000;
/// Iterations of one repeat, nested repeats multiplied: a step list that signals or
/// marks in a loop never checks the clock, so its count must be finite and modest.
pub const MAX_REPEATS: u64 = 1_000_000_000;
/// Mark timestamps kept per trial over a whole plan (8 bytes each, preallocated).
pub const MAX_MARK_SAMPLES: usize = 4_000_000;
/// One trial's bound (`trial_timeout`, `[livefx] duration`, `--duration`).
pub const MAX_TRIAL_NS: u64 = 24 * 3600 * 1_000_000_000;
pub const MAX_GAP_NS: u64 = 3600 * 1_000_000_000;
/// A whole run's estimate: far beyond any real sweep, far below where `× 2 + 60 s` or
/// `now + bound` could overflow.
pub const MAX_RUN_NS: u64 = 90 * 24 * 3600 * 1_000_000_000;
/// Audio: the largest period any backend here buffers, and sane rates and counts.
pub const MAX_PERIOD: u32 = 16_384;
pub const MAX_RATE: u32 = 768_000;
pub const MAX_NPERIODS: u32 = 32;
/// Loopback latency in frames (the clock backend's delay line is this long).
pub const MAX_LATENCY: u32 = 1 << 20;
/// Plugins of one livefx worker (copied into each instance).
pub const MAX_PLUGINS: usize = 64;
/// `[livefx] pass`: the most deadline misses a trial, or a minute of it, may state as
/// its bound: a typo (`misses = 1000000000`) is a positioned error, not a bound no trial
/// reaches (100 000 a minute is a miss every 0.6 ms).
pub const MAX_PASS_MISSES: u64 = 1_000_000;
pub const MAX_PASS_PER_MINUTE: f64 = 100_000.0;
/// Settings in one profile.
pub const MAX_SETTINGS: usize = 64;
/// Names that become part of a path (the rig's `name`).
pub const MAX_NAME_BYTES: usize = 64;
/// Guest vCPUs (`--cpus` allows 1..=64): a rig may pin to CPUs a guest has.
pub const GUEST_MAX_CPUS: usize = 64;
/// Hard ceiling whatever sysfs says (the kernel's NR_CPUS maximum).
const NR_CPUS_MAX: usize = 8192;

/// Reads a rig or profile file of at most `MAX_FILE_BYTES`; `what` names it in errors
/// ("rig", "profile"). Reads no further than the cap, so /dev/zero or a huge file
/// costs nothing.
pub fn read_capped(path: &Path, what: &str) -> Result<String, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot read the {what} file: {e}"))?;
    let mut buf = Vec::new();
    f.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read the {what} file: {e}"))?;
    if buf.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "the {what} file is over 1 MiB ({MAX_FILE_BYTES} bytes); {what} files are a few KiB: is this the right file?"
        ));
    }
    String::from_utf8(buf).map_err(|e| {
        format!(
            "the {what} file is not UTF-8 text (bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The CPUs this machine could ever have (`/sys/devices/system/cpu/possible`), as
/// text for messages and the count (highest + 1).
pub fn possible_cpus() -> &'static (String, usize) {
    static P: OnceLock<(String, usize)> = OnceLock::new();
    P.get_or_init(|| {
        let text = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
        match parse_cpu_list(&text, NR_CPUS_MAX) {
            Ok(v) if !v.is_empty() => (text.trim().to_string(), v[v.len() - 1] + 1),
            _ => {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                (format!("0-{}", n - 1), n)
            }
        }
    })
}

/// CPU numbers a rig may name: this machine's possible CPUs, or as many as a guest
/// kernel can have (a rig written for `--kernel ... --cpus 4` on a 2-CPU host).
pub fn cpu_limit() -> usize {
    possible_cpus().1.max(GUEST_MAX_CPUS)
}

/// Why CPU `c` is refused, for messages.
pub fn cpu_refusal(c: impl std::fmt::Display) -> String {
    format!(
        "CPU {c} does not exist: this machine's possible CPUs are {} and a guest kernel has at most {GUEST_MAX_CPUS} (0-{})",
        possible_cpus().0,
        cpu_limit() - 1
    )
}

/// Parses a Linux CPU list such as `0-3,6,8-9`, refusing any CPU at or above `limit`
/// before a range is expanded, so the result has at most `limit` entries.
pub fn parse_cpu_list(s: &str, limit: usize) -> Result<Vec<usize>, String> {
    let num = |t: &str| -> Result<usize, String> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("bad CPU '{t}'"));
        }
        match t.parse::<usize>() {
            Ok(v) if v < limit => Ok(v),
            _ => Err(cpu_refusal(t)),
        }
    };
    let mut seen = vec![false; limit.min(NR_CPUS_MAX)];
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(part)?;
                (a, a)
            }
        };
        if b < a {
            return Err(format!("CPU range {part} runs backwards"));
        }
        for x in seen.iter_mut().take(b + 1).skip(a) {
            *x = true;
        }
    }
    Ok((0..seen.len()).filter(|&i| seen[i]).collect())
}

/// A name that becomes part of a path (the rig's `name` in `results/<name>-<time>`):
/// Err says why not.
pub fn check_path_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("is empty: give the rig a short name such as \"pi-inversion\"".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_NAME_BYTES}: it names the results directory",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c == '/' || c == '\\' || c.is_control())
    {
        return Err(format!(
            "contains {c:?}; it names the results directory: use letters, digits, '-', '_' or '.'"
        ));
    }
    if name.contains("..") || name.starts_with('.') {
        return Err(
            "starts with '.' or contains \"..\"; it names the results directory: use letters, digits, '-' or '_'"
                .into(),
        );
    }
    Ok(())
}

/// `name` made safe as one path component, whatever it holds: separators, control
/// characters and dots that could climb become '_', and it is cut to the cap.
pub fn path_safe(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    while out.contains("..") {
        out = out.replace("..", "_");
    }
    if out.starts_with('.') {
        out.replace_range(0..1, "_");
    }
    let mut end = out.len().min(MAX_NAME_BYTES);
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    if out.trim().is_empty() {
        "rig".into()
    } else {
        out
    }
}

/// A run's time estimate: `per_trial_ns` (each a trial's bound plus what surrounds it)
/// summed, times every count (trials, settings, variants). Err: it overflows or passes
/// `MAX_RUN_NS`, said with what to change.
pub fn run_estimate_ns(per_trial_ns: &[u64], counts: &[u64]) -> Result<u64, String> {
    let too_long = || {
        let n: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        format!(
            "the run is too long: {} runs of up to {} s each is more than the {} days a run may take; use fewer --trials, settings or variants, or a shorter trial bound",
            n.join(" × "),
            per_trial_ns
                .iter()
                .try_fold(0u64, |a, &b| a.checked_add(b))
                .map_or("∞".into(), |t| format!("{:.0}", t as f64 / 1e9)),
            MAX_RUN_NS / (24 * 3600 * 1_000_000_000)
        )
    };
    let per = per_trial_ns
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b))
        .ok_or_else(too_long)?;
    let total = counts
        .iter()
        .try_fold(per, |a, &b| a.checked_mul(b))
        .ok_or_else(too_long)?;
    if total > MAX_RUN_NS {
        return Err(too_long());
    }
    Ok(total)
}

/// The watchdog's bound on the whole run: `--max-time`, else twice the estimate plus a
/// minute. Err (never a wrapped, tiny bound) when it does not fit.
pub fn watchdog_bound_ns(max_time_ns: Option<u64>, estimate_ns: u64) -> Result<u64, String> {
    let b = match max_time_ns {
        Some(m) => Some(m),
        None => estimate_ns
            .checked_mul(2)
            .and_then(|x| x.checked_add(60_000_000_000)),
    };
    match b {
        Some(b) if b <= 2 * MAX_RUN_NS + 60_000_000_000 => Ok(b),
        _ => Err(format!(
            "the run's time bound does not fit: estimate {} s; use fewer trials, settings or variants, or --max-time",
            estimate_ns / 1_000_000_000
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_are_refused_before_they_are_expanded() {
        assert_eq!(parse_cpu_list("0-3,6", 64).unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list(" 1,3\n", 64).unwrap(), vec![1, 3]);
        assert!(parse_cpu_list("3-1", 64).unwrap_err().contains("backwards"));
        assert!(parse_cpu_list("x", 64).unwrap_err().contains("bad CPU"));
        assert!(parse_cpu_list("-1", 64).unwrap_err().contains("bad CPU"));
        let e = parse_cpu_list("0-4000000000", 64).unwrap_err();
        assert!(e.contains("CPU 4000000000 does not exist"), "{e}");
        let e = parse_cpu_list("99999999999999999999999", 64).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        assert!(parse_cpu_list("64", 64).is_err());
        assert_eq!(parse_cpu_list("63", 64).unwrap(), vec![63]);
    }

    #[test]
    fn the_cpu_limit_covers_this_machine_and_a_guest() {
        let (text, n) = possible_cpus();
        assert!(*n >= 1 && !text.is_empty());
        assert!(cpu_limit() >= GUEST_MAX_CPUS && cpu_limit() >= *n);
    }

    #[test]
    fn path_names_are_checked_and_made_safe() {
        for ok in ["pi-inversion", "livefx push ipi", "a.b", "ünïcode"] {
            assert!(check_path_name(ok).is_ok(), "{ok}");
            assert_eq!(path_safe(ok), ok);
        }
        for bad in [
            "", "  ", "a/b", "..", "../x", ".hidden", "a\\b", "a\nb", "a\u{7f}",
        ] {
            assert!(check_path_name(bad).is_err(), "{bad:?}");
            let s = path_safe(bad);
            assert!(
                !s.contains('/') && !s.contains("..") && !s.starts_with('.') && !s.is_empty(),
                "{bad:?} -> {s:?}"
            );
        }
        assert!(check_path_name(&"x".repeat(65)).is_err());
        let long = "é".repeat(100);
        assert!(path_safe(&long).len() <= MAX_NAME_BYTES);
        assert_eq!(path_safe("..."), "_.");
    }

    #[test]
    fn estimates_overflow_into_errors_not_tiny_bounds() {
        let day = 24 * 3600 * 1_000_000_000u64;
        assert_eq!(
            run_estimate_ns(&[10_000_000_000, 100_000_000], &[8, 2, 3]).unwrap(),
            48 * 10_100_000_000
        );
        // What wrapped before: a day's trial bound × 4e9 trials.
        let e = run_estimate_ns(&[day, 0], &[4_000_000_000, 1, 1]).unwrap_err();
        assert!(e.contains("too long"), "{e}");
        assert!(run_estimate_ns(&[u64::MAX, 1], &[1]).is_err());
        assert!(run_estimate_ns(&[day], &[91]).is_err());
        assert_eq!(
            watchdog_bound_ns(None, 1_000_000_000).unwrap(),
            62_000_000_000
        );
        assert_eq!(watchdog_bound_ns(Some(5), u64::MAX).unwrap(), 5);
        assert!(watchdog_bound_ns(None, u64::MAX / 2 + 1).is_err());
        assert!(watchdog_bound_ns(None, u64::MAX - 10).is_err());
        assert!(watchdog_bound_ns(Some(u64::MAX), 0).is_err());
    }
}
