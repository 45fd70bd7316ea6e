//! Futex wait and wake on a u32 word, always with an absolute CLOCK_MONOTONIC deadline:
//! the callback and workers never wait without a bound.

use std::sync::atomic::AtomicU32;

/// Sleeps while `*word == expected`, at most until `deadline_ns`.
#[inline]
pub fn wait_until(word: &AtomicU32, expected: u32, deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: word is a valid aligned u32 for the call; ts is valid. FUTEX_WAIT_BITSET
    // takes an absolute CLOCK_MONOTONIC time.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        );
    }
}

#[inline]
pub fn wake_all(word: &AtomicU32) {
    // SAFETY: word is a valid aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}
