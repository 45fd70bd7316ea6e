//! Holding `/dev/cpu_dma_latency` (the CPU latency PM QoS request) for a whole benchmark,
//! so both sides run under the same idle-state limit. cyclictest sets it to 0 µs by
//! default for as long as it runs; the rig does not. Both sides then get `--laptop`
//! (cyclictest leaves the request alone) and this one setting.

use std::io::Write;

/// The request as given on the command line: a bound in µs, or none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DmaLatency {
    Us(i32),
    None,
}

impl std::str::FromStr for DmaLatency {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "none" {
            return Ok(DmaLatency::None);
        }
        s.parse::<i32>()
            .ok()
            .filter(|v| *v >= 0)
            .map(DmaLatency::Us)
            .ok_or_else(|| {
                format!("'{s}': give a latency bound in µs (0 = cyclictest's default) or 'none'")
            })
    }
}

impl std::fmt::Display for DmaLatency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DmaLatency::Us(v) => write!(f, "{v} µs"),
            DmaLatency::None => write!(f, "none"),
        }
    }
}

/// Open while the request holds; the kernel drops it when the file closes.
pub struct Hold(#[allow(dead_code)] Option<std::fs::File>);

pub fn hold(d: DmaLatency) -> Result<Hold, String> {
    let DmaLatency::Us(v) = d else {
        return Ok(Hold(None));
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .map_err(|e| {
            format!(
                "cannot open /dev/cpu_dma_latency ({e}): run as root, or pass --dma-latency none"
            )
        })?;
    // The device takes a binary s32 (or a hex string); binary as cyclictest writes it.
    f.write_all(&v.to_ne_bytes())
        .map_err(|e| format!("cannot write /dev/cpu_dma_latency: {e}"))?;
    Ok(Hold(Some(f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bounds_and_none() {
        assert_eq!("0".parse::<DmaLatency>(), Ok(DmaLatency::Us(0)));
        assert_eq!("none".parse::<DmaLatency>(), Ok(DmaLatency::None));
        assert!("-1".parse::<DmaLatency>().is_err());
        assert!("fast".parse::<DmaLatency>().is_err());
    }
}
