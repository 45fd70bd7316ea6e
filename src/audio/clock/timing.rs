//! Period arithmetic on CLOCK_MONOTONIC: where period k starts, sleeping until then,
//! and which period comes next after an overrun.

/// Start of period `k` after `t0`, without accumulating rounding error.
pub fn period_start(t0: u64, k: u64, frames: u32, rate: u32) -> u64 {
    t0 + (k as u128 * frames as u128 * 1_000_000_000 / rate as u128) as u64
}

/// Sleeps until CLOCK_MONOTONIC reaches `t_ns` (absolute, so lateness does not drift).
pub fn sleep_until(t_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (t_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (t_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            return;
        }
    }
}

/// The first period after `end` that has not started yet, given the period that
/// should have come next; returns it and how many periods were skipped.
pub fn next_period(t0: u64, next: u64, end: u64, frames: u32, rate: u32) -> (u64, u64) {
    if end <= period_start(t0, next, frames, rate) {
        return (next, 0);
    }
    let elapsed = (end - t0) as u128 * rate as u128 / (frames as u128 * 1_000_000_000);
    let k = (elapsed as u64 + 1).max(next + 1);
    (k, k - next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_do_not_drift() {
        // 256 frames at 48 kHz is 5333333.33 ns: 3 periods must be 16 ms exactly.
        assert_eq!(period_start(0, 3, 256, 48000), 16_000_000);
        assert_eq!(period_start(10, 1, 48, 48000), 1_000_010);
    }

    #[test]
    fn overrun_skips_the_missed_periods() {
        // Period 1 ms. Ending before period 1 starts: no skip.
        assert_eq!(next_period(0, 1, 900_000, 48, 48000), (1, 0));
        // Ending at 1.5 ms: period 1 was missed; next is 2, one skipped.
        assert_eq!(next_period(0, 1, 1_500_000, 48, 48000), (2, 1));
        // Ending at 3.2 ms when 1 was next: 1, 2, 3 missed; next is 4.
        assert_eq!(next_period(0, 1, 3_200_000, 48, 48000), (4, 3));
    }
}
