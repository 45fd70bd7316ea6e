//! Making a user thread migrate-disabled while it runs, for the push-IPI storm's md=1
//! victim. User space has no migrate_disable() call, but the kernel runs every seccomp
//! filter under migrate_disable() (seccomp_run_filters -> bpf_prog_run_pin_on_cpu), so
//! a thread with long seccomp filters that makes syscalls in a loop spends nearly all
//! its time migrate-disabled. Where the kernel can preempt there (preempt=full or
//! PREEMPT_RT), a preemption leaves it queued, migrate-disabled, unpushable: the
//! seed's md=1 condition. The filters allow every syscall and belong to the calling
//! thread only (no TSYNC); they go when it exits. Proof is in the trace's latency
//! column (fifth flag): see the root test below and rigs/INSTRUMENTS.md.

/// Instructions per filter and filters per thread: 8 x (4000 + 4) stays under the
/// kernel's MAX_INSNS_PER_PATH (32768) for all filters of a thread.
pub const FILTER_INSNS: usize = 4000;
pub const FILTERS: usize = 8;
const _: () = assert!(FILTERS * (FILTER_INSNS + 4) <= 32768);

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_ALU_ADD_K: u16 = 0x04;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// offsetof(struct seccomp_data, args[0]).
const ARG0: u32 = 16;

/// One filter: load args[0] (so the kernel's constant-action cache cannot skip the
/// filter), add 1 to it FILTER_INSNS - 2 times, allow.
fn program() -> Vec<libc::sock_filter> {
    let ins = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let mut p = vec![ins(BPF_LD_W_ABS, ARG0)];
    p.extend((0..FILTER_INSNS - 2).map(|_| ins(BPF_ALU_ADD_K, 1)));
    p.push(ins(BPF_RET_K, SECCOMP_RET_ALLOW));
    p
}

/// Installs the filters on the calling thread. Call it in the thread that will loop,
/// before it is released (it allocates and makes syscalls).
pub fn install_on_current_thread() -> Result<(), String> {
    let prog = program();
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // Without CAP_SYS_ADMIN seccomp needs no_new_privs; it is per thread.
    // SAFETY: plain prctl.
    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    for i in 0..FILTERS {
        // SAFETY: fprog points at `prog`, alive for the call; the kernel copies it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &fprog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(format!(
                "cannot install seccomp filter {} of {FILTERS}: {} (needs CONFIG_SECCOMP_FILTER)",
                i + 1,
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// A few cheap syscalls: one unit of migrate-disabled work for a `run` step's loop.
#[inline]
pub fn burst() {
    for _ in 0..16 {
        // SAFETY: getppid has no arguments or side effects.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
}

/// Makes cheap syscalls until `end_ns` (CLOCK_MONOTONIC): with the filters installed,
/// the thread is migrate-disabled for nearly all of it. No allocation, no blocking.
#[inline]
pub fn syscalls_until(end_ns: u64) {
    while crate::sys::now_ns() < end_ns {
        burst();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_shape() {
        let p = program();
        assert_eq!(p.len(), FILTER_INSNS);
        assert_eq!(p[0].code, BPF_LD_W_ABS);
        assert_eq!(p[0].k, ARG0);
        assert_eq!(p.last().unwrap().k, SECCOMP_RET_ALLOW);
    }

    #[test]
    fn filters_allow_syscalls_and_stay_on_their_thread() {
        std::thread::spawn(|| {
            if let Err(e) = install_on_current_thread() {
                crate::testkit::skip(&format!("seccomp filters on this kernel ({e})"));
                return;
            }
            let t0 = crate::sys::now_ns();
            syscalls_until(t0 + 20_000_000);
            // SAFETY: plain syscall.
            assert!(unsafe { libc::getppid() } > 0);
            let seccomp = std::fs::read_to_string("/proc/thread-self/status")
                .unwrap()
                .lines()
                .find(|l| l.starts_with("Seccomp_filters:"))
                .map(|l| l.to_string());
            if let Some(l) = seccomp {
                assert!(l.ends_with(&FILTERS.to_string()), "{l}");
            }
        })
        .join()
        .unwrap();
        let mine = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        if let Some(l) = mine.lines().find(|l| l.starts_with("Seccomp_filters:")) {
            assert!(l.ends_with('0'), "the test thread has no filters: {l}");
        }
    }
}
