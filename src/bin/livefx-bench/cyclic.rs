//! One slice of Debian's `cyclictest` (rt-tests), read back into a histogram of whole µs.

use hdrhistogram::Histogram;
use std::process::Command;

/// cyclictest's histogram bound (µs): beyond it only the overflow count and max are known.
const BUCKETS: u64 = 20_000;

/// Runs `cyclictest -m -q --laptop -t1` for `secs` on `cpu` at FIFO `prio` every
/// `interval_us`. `--laptop` keeps it from setting /dev/cpu_dma_latency itself: the
/// benchmark holds one setting for both sides.
pub fn slice(secs: u64, cpu: usize, prio: i32, interval_us: u64) -> Result<Histogram<u64>, String> {
    let out = Command::new("cyclictest")
        .args(["-m", "-q", "--laptop", "-t1"])
        .arg(format!("-h{BUCKETS}"))
        .arg(format!("-p{prio}"))
        .arg(format!("-a{cpu}"))
        .arg(format!("-i{interval_us}"))
        .arg(format!("-D{secs}"))
        .output()
        .map_err(|e| format!("cannot run cyclictest (apt-get install rt-tests): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cyclictest failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// Reads cyclictest's `-h` output: `VALUE COUNT` bucket lines, the overflow count and the
/// max. Overflows are recorded at the bound, and one of them at the max.
pub fn parse(text: &str) -> Result<Histogram<u64>, String> {
    let mut h = crate::stats::new_us();
    let (mut max, mut overflows) = (None, 0u64);
    let num = |s: &str| {
        s.split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
    };
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# Max Latencies:") {
            max = num(rest);
        } else if let Some(rest) = l.strip_prefix("# Histogram Overflows:") {
            overflows = num(rest).unwrap_or(0);
        } else if !l.starts_with('#') {
            let mut it = l.split_whitespace();
            if let (Some(a), Some(b), None) = (it.next(), it.next(), it.next())
                && let (Ok(v), Ok(n)) = (a.parse::<u64>(), b.parse::<u64>())
                && n > 0
            {
                h.record_n(v, n).map_err(|e| e.to_string())?;
            }
        }
    }
    if overflows > 0 {
        h.record_n(BUCKETS, overflows - 1)
            .map_err(|e| e.to_string())?;
        h.saturating_record(max.unwrap_or(BUCKETS).max(BUCKETS));
    }
    if h.is_empty() {
        return Err("cyclictest printed no histogram".into());
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_buckets_overflows_and_max() {
        let text = "# Histogram\n000000 000000\n000022 000003\n000030 000001\n\
                    # Total: 000000004\n# Min Latencies: 00022\n# Max Latencies: 25000\n\
                    # Histogram Overflows: 00002\n# Thread 0: 00007 00009\n";
        let h = parse(text).unwrap();
        assert_eq!(h.len(), 6);
        assert_eq!(h.value_at_quantile(0.5), 22);
        assert!(h.equivalent(h.max(), 25000), "{}", h.max());
        assert_eq!(h.count_between(20000, 20000), 1);
        assert!(parse("# Histogram\n# Total: 0\n").is_err());
    }
}
