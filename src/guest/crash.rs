//! Why a guest stopped, read from its console and QEMU's own exit: the emulator's fault,
//! which a fresh boot gets past, or the kernel's own crash, which is a finding. The
//! emulator's faults recognised (each seen here under multi-threaded TCG):
//! - a stale `int3` the kernel's text patching had already replaced (`classify`);
//! - a guest whose timers stopped: the RCU stall report with "timer wakeup didn't
//!   happen" (`classify`), or no console output at all for a bound derived from the rig
//!   (`silence`);
//! - QEMU aborting on its own assertion (`qemu_abort`).
//!
//! The same recognition serves the guest runner (`kernel_run`), the tests that boot
//! guests and the LAVA test (`tests/support/guest.rs`, `tests/lava.rs`).

/// Whose fault a guest's death was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The emulator's: nothing of the kernel under test; the run can resume.
    Emulator,
    /// The kernel's: an Oops, BUG or panic to report.
    Kernel,
}

impl Cause {
    /// As run.json's `guest.resumed[].cause` and `guest.crash.cause` say it.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Emulator => "emulator",
            Cause::Kernel => "kernel",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub cause: Cause,
    /// The console line that names it (timestamp removed).
    pub line: String,
    /// Why it was judged so, for run.json and the report.
    pub reason: String,
    /// The Oops or panic as the console printed it.
    pub excerpt: Vec<String>,
}

/// An `int3` Oops as 6.12 prints it (`Oops: int3: 0000 [#1] …`); 6.1 prints the
/// same header without `Oops: `. Made from the kernel's `__die_header` and
/// `show_opcodes` formats with the function (`__schedule`): the byte before
/// the `<..>` marker is the patched instruction's first byte (`0f`, a 5-byte NOP),
/// not `cc`, which is what made the fault recognisable as the emulator's. The tests
/// print it from the guest to exercise the resume path.
pub const INT3_OOPS_SAMPLE: &str = "\
[  457.118502] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
[  457.119380] CPU: 3 UID: 0 PID: 0 Comm: swapper/3 Not tainted 6.12.117+deb12-amd64 #1  Debian 6.12.117-1~deb12u1
[  457.120480] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[  457.121413] RIP: 0010:__schedule+0x2e6/0xa20
[  457.122034] Code: 89 df e8 5c 4f ff ff 48 8b 45 c0 48 8b 55 b8 48 89 c6 48 89 df e8 a9 8f 52 ff 49 89 c7 0f 1f <44> 00 00 4c 89 f7 e8 2a 33 00 00 4d 39 fe 0f 84 4b 02 00 00 41 ff
[  457.124771] RSP: 0018:ffffb0b3c00e7e58 EFLAGS: 00000046
[  457.125385] RAX: ffff9c4dfec35d40 RBX: ffff9c4dfec35d40 RCX: 0000000000000000
[  457.126229] Call Trace:
[  457.126560]  <TASK>
[  457.126882]  ? die+0x36/0x90
[  457.127307]  ? do_int3+0x3b/0x60
[  457.127751]  ? __schedule+0x2e6/0xa20
[  457.128196]  schedule_idle+0x26/0x40
[  457.128645]  do_idle+0x185/0x240
[  457.129062]  cpu_startup_entry+0x29/0x30
[  457.129540]  </TASK>
[  457.130011] ---[ end trace 0000000000000000 ]---
[  457.130602] Kernel panic - not syncing: Attempted to kill the idle task!
";

/// An RCU stall report whose grace-period kthread's timer never fired, made from the
/// formats of 6.12's kernel/rcu/tree_stall.h with the figures (5251 jiffies,
/// cpu=3): what the console showed when a guest's idle vCPU stopped getting timer
/// interrupts under multi-threaded TCG and the guest hung until LAVA's 20-minute test
/// timeout. The tests print it from the guest (and the LAVA test's QEMU stand-in) to
/// exercise the stall's recognition.
pub const RCU_STALL_SAMPLE: &str = "\
[  312.405118] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[  312.405911] rcu: \t3-...!: (0 ticks this GP) idle=4b4c/0/0x0 softirq=2318/2318 fqs=0 (false positive?)
[  312.406870] rcu: \t(detected by 0, t=5252 jiffies, g=5993, q=1124 ncpus=4)
[  312.407556] Sending NMI from CPU 0 to CPUs 3:
[  312.408114] NMI backtrace for cpu 3 skipped: idling at default_idle+0xf/0x20
[  312.408893] rcu: rcu_preempt kthread timer wakeup didn't happen for 5251 jiffies! g5993 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402
[  312.410021] rcu: \tPossible timer handling issue on cpu=3 timer-softirq=1566
[  312.410780] rcu: rcu_preempt kthread starved for 5252 jiffies! g5993 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402 ->cpu=3
[  312.411843] rcu: \tUnless rcu_preempt kthread gets sufficient CPU time, OOM is now expected behavior.
[  312.412760] rcu: RCU grace-period kthread stack dump:
";

/// QEMU's own assertion as its stderr said it when it aborted in a guest's PCI probe
/// (QEMU 10.0.2, the run of tests/lava.rs); the process then died of SIGABRT.
pub const QEMU_ABORT_SAMPLE: &str = "qemu-system-x86_64: system/physmem.c:2678: iotlb_to_section: Assertion 'section_index < d->map.sections_nb' failed.";

use super::qemu::timer_stall_line;

/// A line without its `[   12.345678] ` timestamp.
fn bare(l: &str) -> &str {
    let t = l.trim_end_matches('\r');
    if let Some(r) = t.strip_prefix('[')
        && let Some((ts, rest)) = r.split_once(']')
        && ts.trim().chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        return rest.strip_prefix(' ').unwrap_or(rest);
    }
    t
}

/// `die()`'s header: `Oops: NAME: 0000 [#1] …` (6.10 on) or `NAME: 0000 [#1] …`.
fn die_name(l: &str) -> Option<&str> {
    let l = l.strip_prefix("Oops: ").unwrap_or(l);
    let (name, rest) = l.split_once(": ")?;
    let (code, rest) = rest.split_once(' ')?;
    (code.len() == 4 && code.chars().all(|c| c.is_ascii_hexdigit()) && rest.starts_with("[#"))
        .then_some(name)
}

/// Lines that start a kernel crash report.
fn headline(l: &str) -> bool {
    die_name(l).is_some()
        || l.starts_with("Oops: ")
        || l.starts_with("BUG: ")
        || l.starts_with("kernel BUG at ")
        || l.starts_with("general protection fault")
        || l.contains("Kernel panic - not syncing")
}

/// The byte just before `show_opcodes`'s `<..>` marker (the instruction byte before
/// the reported IP). For a trap like int3 the IP is after the trapping byte, so this
/// is what the CPU executed as `int3`: anything but `cc` means memory no longer held
/// a breakpoint there.
fn byte_before_ip(code: &str) -> Option<String> {
    let toks: Vec<&str> = code.split_whitespace().collect();
    let i = toks.iter().position(|t| t.starts_with('<'))?;
    (i > 0).then(|| toks[i - 1].to_ascii_lowercase())
}

/// The RCU stall report around the timer-stall line at `t`: from its `rcu: INFO:`
/// header (when it is within the 20 lines before) through the few lines after.
fn timer_stall(lines: &[&str], t: usize) -> Fault {
    let from = (t.saturating_sub(20)..t)
        .rev()
        .find(|&i| lines[i].starts_with("rcu: INFO: "))
        .unwrap_or(t);
    let to = (t + 4).min(lines.len());
    let excerpt: Vec<String> = lines[from..to].iter().map(|l| l.to_string()).collect();
    Fault {
        cause: Cause::Emulator,
        line: lines[from].trim().to_string(),
        reason: format!(
            "the emulator's fault, not the kernel's: the guest's timers stopped (an RCU \
             stall whose grace-period kthread's timer never fired: \"{}\"), as an idle vCPU \
             under multi-threaded TCG stops getting timer interrupts",
            lines[t].trim()
        ),
        excerpt,
    }
}

/// The first crash report or timer stall on the console, judged. None: the console
/// shows neither.
pub fn classify(console: &str) -> Option<Fault> {
    let lines: Vec<&str> = console.lines().map(bare).collect();
    let crash = lines.iter().position(|l| headline(l));
    let stall = lines.iter().position(|l| timer_stall_line(l));
    // Whichever came first: an Oops after the timers stopped is not the kernel's
    // finding, and a stall after an Oops is its consequence.
    if let Some(t) = stall
        && crash.is_none_or(|c| t < c)
    {
        return Some(timer_stall(&lines, t));
    }
    let at = crash?;
    let line = lines[at].trim().to_string();
    // Through the end of the report: an Oops' `---[ end trace` and the panic that
    // often follows it; a panic's own trace to `Kernel Offset` or `---[ end Kernel panic`.
    let panic_head = line.contains("Kernel panic - not syncing");
    let mut end = (at + 40).min(lines.len());
    for (i, l) in lines.iter().enumerate().skip(at + 1).take(60) {
        let ends = if panic_head {
            l.starts_with("Kernel Offset") || l.contains("---[ end Kernel panic")
        } else {
            l.contains("Kernel panic - not syncing")
        };
        if ends {
            end = i + 1;
            break;
        }
        if !panic_head && l.contains("---[ end trace") {
            end = i + 1;
            // The panic that follows, when it does.
            if let Some(p) = lines[end..]
                .iter()
                .take(3)
                .position(|l| l.contains("Kernel panic - not syncing"))
            {
                end += p + 1;
            }
            break;
        }
    }
    let excerpt: Vec<String> = lines[at..end].iter().map(|l| l.to_string()).collect();
    let is_int3 = die_name(&line) == Some("int3");
    let code = excerpt
        .iter()
        .find_map(|l| l.strip_prefix("Code: ").map(str::to_string));
    let (cause, reason) = match (is_int3, code.as_deref().and_then(byte_before_ip)) {
        (true, Some(b)) if b != "cc" => (
            Cause::Emulator,
            format!(
                "the emulator's fault, not the kernel's: an int3 trap where the kernel's \
                 text holds a patched instruction (byte {b}, not cc, before the trapping \
                 IP): QEMU TCG ran a stale breakpoint left by the kernel's code patching"
            ),
        ),
        (true, Some(_)) => (
            Cause::Kernel,
            "an int3 trap on a breakpoint still in the kernel's text (cc before the IP): \
             the kernel's own"
                .to_string(),
        ),
        (true, None) => (
            Cause::Kernel,
            "an int3 trap without the code bytes that would show whose it is: taken as \
             the kernel's"
                .to_string(),
        ),
        (false, _) => (
            Cause::Kernel,
            "a crash of the kernel under test (not the emulator's known int3 fault): a finding"
                .to_string(),
        ),
    };
    Some(Fault {
        cause,
        line,
        reason,
        excerpt,
    })
}

/// The console lines after the guest's ready marker: the run's part of it.
pub fn after_ready(console: &str) -> &str {
    console
        .find("XRUNRIG-READY")
        .map_or(console, |i| &console[i..])
}

/// Why a boot stopped early, when its console or QEMU's exit shows it: once the guest
/// was ready any crash report or timer stall (`classify`), before that only the
/// emulator's (a kernel that crashes before /init is `boot`'s: booted once more, then
/// a failure); QEMU dying of its own assertion (`qemu_abort`, from its stderr); a ready
/// guest silent past `quiet` (`silence`). None: nothing of the kind.
pub fn judge(
    o: &super::qemu::Outcome,
    console: &str,
    stderr: &str,
    quiet: std::time::Duration,
) -> Option<Fault> {
    use super::qemu::End;
    let seen = if o.ready_s.is_some() {
        classify(after_ready(console))
    } else {
        classify(console).filter(|f| f.cause == Cause::Emulator)
    };
    seen.or_else(|| match &o.end {
        End::Exited(_) => qemu_abort(stderr, o.signal),
        End::Silent(q) => Some(silence(*q, quiet.as_secs_f64(), after_ready(console))),
        _ => None,
    })
}

/// QEMU's own assertion on its stderr: glibc's `assert()` (`qemu-system-x86_64:
/// FILE:LINE: FUNC: Assertion `EXPR' failed.`) or GLib's (`ERROR:FILE:LINE:FUNC:
/// assertion failed: (EXPR)`).
fn assertion_line(l: &str) -> bool {
    let l = l.trim();
    let glibc = l.starts_with("qemu-") && l.contains(": Assertion ") && l.ends_with(" failed.");
    let glib = l.contains("ERROR:") && l.contains(": assertion failed");
    glibc || glib
}

/// QEMU aborting on its own assertion: the message on its stderr, and death by SIGABRT
/// (`signal`: what QEMU died of, None when not known, as in a LAVA log). None: QEMU
/// did not abort so.
pub fn qemu_abort(stderr: &str, signal: Option<i32>) -> Option<Fault> {
    if signal.is_some_and(|s| s != libc::SIGABRT) {
        return None;
    }
    let line = stderr
        .lines()
        .find(|l| assertion_line(l))?
        .trim()
        .to_string();
    Some(Fault {
        cause: Cause::Emulator,
        reason: format!(
            "the emulator's fault, not the kernel's: QEMU aborted on its own assertion{} \
             (a bug of the emulator, which no guest can cause by design)",
            if signal.is_some() {
                " and died of SIGABRT"
            } else {
                ""
            }
        ),
        excerpt: vec![line.clone()],
        line,
    })
}

/// A guest that printed nothing for `quiet_s` seconds, past its bound `bound_s` (from
/// the rig: see `guest::plan`): its timers stopped, or the emulator hung. `console`:
/// what it printed last.
pub fn silence(quiet_s: f64, bound_s: f64, console: &str) -> Fault {
    let lines: Vec<&str> = console
        .lines()
        .map(bare)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let last = &lines[lines.len().saturating_sub(5)..];
    Fault {
        cause: Cause::Emulator,
        line: format!("no console output for {quiet_s:.0} s"),
        reason: format!(
            "the emulator's fault, not the kernel's: the guest printed nothing for \
             {quiet_s:.0} s, past the {bound_s:.0} s that one of the rig's trials with its \
             bounds can take (its timers stopped, or the emulator hung); the last lines \
             are in the excerpt"
        ),
        excerpt: last.iter().map(|l| l.to_string()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The console of a real guest (6.12.117 under TCG, 2026-11-30) crashed with
    /// `echo c > /proc/sysrq-trigger` after 2 trials, as tests/guest_lossless.rs does.
    const SYSRQ_CRASH: &str = "\
[   10.287917] sysrq: Trigger a crash
[   10.290097] Kernel panic - not syncing: sysrq triggered crash
[   10.290820] CPU: 3 UID: 0 PID: 1 Comm: init Not tainted 6.12.117+deb12-amd64 #1  Debian 6.12.117-1~deb12u1
[   10.291488] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[   10.291993] Call Trace:
[   10.293582]  <TASK>
[   10.294271]  panic+0x344/0x3a0
[   10.294921]  ? _printk+0x64/0x80
[   10.295147]  sysrq_handle_crash+0x1a/0x20
[   10.295356]  __handle_sysrq+0xa4/0x1a0
[   10.295518]  write_sysrq_trigger+0x59/0x80
[   10.295685]  proc_reg_write+0x57/0xa0
[   10.295846]  vfs_write+0xf5/0x450
[   10.296003]  ksys_write+0x6f/0xf0
[   10.296147]  do_syscall_64+0x87/0x1b0
[   10.296319]  ? do_filp_open+0xc4/0x170
[   10.296498]  ? filp_flush+0x4e/0x70
[   10.296648]  ? filp_close+0x1d/0x30
[   10.296804]  ? do_dup2+0xbb/0x140
[   10.297142]  ? ksys_dup3+0x63/0xf0
[   10.297244]  ? arch_exit_to_user_mode_prepare.constprop.0+0x16/0xa0
[   10.297428]  ? syscall_exit_to_user_mode+0x37/0x1b0
[   10.297547]  ? do_syscall_64+0x93/0x1b0
[   10.297642]  ? arch_exit_to_user_mode_prepare.constprop.0+0x16/0xa0
[   10.297781]  entry_SYSCALL_64_after_hwframe+0x76/0x7e
[   10.298125] RIP: 0033:0x47b7a0
[   10.298501] Code: 40 00 48 c7 c2 e0 ff ff ff f7 d8 64 89 02 48 c7 c0 ff ff ff ff eb b7 0f 1f 00 80 3d e8 85 16 00 00 74 17 b8 01 00 00 00 0f 05 <48> 3d 00 f0 ff ff 77 58 c3 0f 1f 80 00 00 00 00 48 83 ec 28 48 89
[   10.298933] RSP: 002b:00007ffeeca5fb88 EFLAGS: 00000202 ORIG_RAX: 0000000000000001
[   10.299199] RAX: ffffffffffffffda RBX: 0000000000000001 RCX: 000000000047b7a0
[   10.299391] RDX: 0000000000000002 RSI: 0000000014e56400 RDI: 0000000000000001
[   10.299624] RBP: 0000000014e56400 R08: 0000000000000000 R09: 0000000000000000
[   10.299823] R10: 00000000000001b6 R11: 0000000000000202 R12: 0000000000000002
[   10.300020] R13: 0000000014e513a0 R14: 0000000000000001 R15: 00007ffeeca5fbf0
[   10.300239]  </TASK>
[   10.301352] Kernel Offset: disabled
";

    #[test]
    fn stale_int3_is_the_emulators() {
        let mut console = "[    2.1] Run /init as init process\nXRUNRIG-READY 3.1 1.0\n[1/4] as-is / pi trial 1/2: wait 90 ms\n".to_string();
        console.push_str(INT3_OOPS_SAMPLE);
        let f = classify(&console).unwrap();
        assert_eq!(f.cause, Cause::Emulator, "{f:?}");
        assert_eq!(f.line, "Oops: int3: 0000 [#1] PREEMPT SMP NOPTI");
        assert!(f.reason.contains("stale breakpoint"), "{}", f.reason);
        assert!(f.excerpt[3].starts_with("RIP: 0010:__schedule"), "{f:?}");
        assert!(
            f.excerpt
                .last()
                .unwrap()
                .contains("Attempted to kill the idle task"),
            "{f:?}"
        );
        // 6.1's header has no "Oops: ".
        let old = INT3_OOPS_SAMPLE.replace("Oops: int3", "int3");
        assert_eq!(classify(&old).unwrap().cause, Cause::Emulator);
    }

    #[test]
    fn a_breakpoint_still_in_memory_or_no_code_is_the_kernels() {
        let real = INT3_OOPS_SAMPLE.replace("0f 1f <44>", "0f cc <44>");
        let f = classify(&real).unwrap();
        assert_eq!(f.cause, Cause::Kernel, "{f:?}");
        let no_code: String = INT3_OOPS_SAMPLE
            .lines()
            .filter(|l| !l.contains("Code:"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(classify(&no_code).unwrap().cause, Cause::Kernel);
    }

    #[test]
    fn other_crashes_are_the_kernels_and_a_clean_console_is_none() {
        let f = classify(SYSRQ_CRASH).unwrap();
        assert_eq!(f.cause, Cause::Kernel);
        assert_eq!(f.line, "Kernel panic - not syncing: sysrq triggered crash");
        // The panic's whole report, through its trace.
        assert!(
            f.excerpt.iter().any(|l| l.contains("sysrq_handle_crash")),
            "{f:?}"
        );
        assert!(
            f.excerpt.last().unwrap().starts_with("Kernel Offset"),
            "{f:?}"
        );
        let gpf = "[ 9.0] Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] PREEMPT SMP NOPTI\n[ 9.1] RIP: 0010:foo+0x1/0x2\n[ 9.2] Code: 00 00 <cc> 00\n";
        let f = classify(gpf).unwrap();
        assert_eq!(f.cause, Cause::Kernel, "{f:?}");
        let bug = "[ 5.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\n";
        assert_eq!(classify(bug).unwrap().cause, Cause::Kernel);
        assert_eq!(
            classify("[ 1.0] Linux version 6.12\nXRUNRIG-READY 1 1\nXRUNRIG-SHIPPED\n"),
            None
        );
    }

    #[test]
    fn a_timer_stall_is_the_emulators_and_an_oops_before_it_the_kernels() {
        let mut console =
            "XRUNRIG-READY 3.1 1.0\n[1/4] as-is / pi trial 1/2: wait 90 ms\n".to_string();
        console.push_str(RCU_STALL_SAMPLE);
        let f = classify(&console).unwrap();
        assert_eq!(f.cause, Cause::Emulator, "{f:?}");
        assert_eq!(
            f.line,
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"
        );
        assert!(f.reason.contains("timers stopped"), "{}", f.reason);
        assert!(
            f.excerpt
                .iter()
                .any(|l| l.contains("Possible timer handling issue on cpu=3")),
            "{f:?}"
        );
        // A stall report without the timer line (a task hogging a CPU) is no fault.
        let plain: String = RCU_STALL_SAMPLE
            .lines()
            .filter(|l| !l.contains("timer wakeup"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(classify(&plain), None);
        // The first of the two decides.
        let oops_first = format!(
            "{}{RCU_STALL_SAMPLE}",
            "[ 9.0] BUG: kernel NULL pointer dereference, address: 8\n"
        );
        assert_eq!(classify(&oops_first).unwrap().cause, Cause::Kernel);
        let stall_first = format!("{RCU_STALL_SAMPLE}{INT3_OOPS_SAMPLE}");
        let f = classify(&stall_first.replace("0f 1f <44>", "0f cc <44>")).unwrap();
        assert_eq!(f.cause, Cause::Emulator, "{f:?}");
        assert!(timer_stall_line(
            "[ 1.0] rcu: rcu_sched kthread timer wakeup didn't happen for 9 jiffies!"
        ));
        assert!(!timer_stall_line(
            "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"
        ));
    }

    #[test]
    fn qemus_own_assertion_is_the_emulators_only_with_sigabrt() {
        let err = format!("some warning\n{QEMU_ABORT_SAMPLE}\n");
        let f = qemu_abort(&err, Some(libc::SIGABRT)).unwrap();
        assert_eq!(f.cause, Cause::Emulator);
        assert_eq!(f.line, QEMU_ABORT_SAMPLE);
        assert!(f.reason.contains("SIGABRT"), "{}", f.reason);
        // glibc's own quoting, and GLib's g_assert.
        let glibc = QEMU_ABORT_SAMPLE.replace("'section", "`section");
        assert!(qemu_abort(&glibc, None).is_some());
        let glib =
            "**\nERROR:../hw/pci/pci.c:1234:pci_foo: assertion failed: (dev != NULL)\nBail out!\n";
        assert!(qemu_abort(glib, Some(libc::SIGABRT)).is_some());
        // Killed otherwise (by us, SIGKILL), or no assertion: not this fault.
        assert_eq!(qemu_abort(&err, Some(libc::SIGKILL)), None);
        assert_eq!(
            qemu_abort("qemu-system-x86_64: terminating on signal 15\n", None),
            None
        );
        assert_eq!(qemu_abort("", Some(libc::SIGABRT)), None);
    }

    #[test]
    fn silence_names_its_length_bound_and_last_lines() {
        let f = silence(
            67.4,
            66.6,
            "[ 1.0] a\nXRUNRIG-READY 1 1\n[1/4] x trial 1/2: wait 90 ms\n\n",
        );
        assert_eq!(f.cause, Cause::Emulator);
        assert_eq!(f.line, "no console output for 67 s");
        assert!(f.reason.contains("past the 67 s"), "{}", f.reason);
        assert_eq!(f.excerpt.last().unwrap(), "[1/4] x trial 1/2: wait 90 ms");
        assert_eq!(f.excerpt.len(), 3);
    }

    #[test]
    fn judge_reads_the_console_qemus_exit_and_silence() {
        use crate::guest::qemu::{End, Outcome};
        use std::time::Duration;
        let o = |end: End, ready: bool, signal: Option<i32>| Outcome {
            end,
            ready_s: ready.then_some(20.0),
            guest_uptime_s: None,
            wall_s: 30.0,
            signal,
            code: None,
        };
        let q = Duration::from_secs(66);
        let ready = "[ 1.0] Linux version 6.12\nXRUNRIG-READY 3.1 1.0\n[1/4] t\n";
        // QEMU's abort: from its stderr, with SIGABRT; before the ready marker too.
        let f = judge(
            &o(
                End::Exited("signal: 6 (SIGABRT)".into()),
                false,
                Some(libc::SIGABRT),
            ),
            "[ 1.0] Linux version 6.12\n",
            QEMU_ABORT_SAMPLE,
            q,
        )
        .unwrap();
        assert_eq!(
            (f.cause, f.line.as_str()),
            (Cause::Emulator, QEMU_ABORT_SAMPLE)
        );
        // The same message with a plain exit is not the abort.
        let ex = o(End::Exited("exit status: 1".into()), true, None);
        assert_eq!(
            judge(&ex, ready, QEMU_ABORT_SAMPLE, q).map(|f| f.cause),
            Some(Cause::Emulator)
        );
        let ex1 = Outcome {
            signal: Some(libc::SIGTERM),
            ..ex
        };
        assert_eq!(judge(&ex1, ready, QEMU_ABORT_SAMPLE, q), None);
        // Silence, bounded by the rig.
        let f = judge(&o(End::Silent(70.2), true, None), ready, "", q).unwrap();
        assert_eq!(f.line, "no console output for 70 s");
        assert!(f.reason.contains("past the 66 s"), "{}", f.reason);
        // The stall report.
        let stalled = format!("{ready}{RCU_STALL_SAMPLE}");
        let f = judge(&o(End::Stalled("x".into()), true, None), &stalled, "", q).unwrap();
        assert_eq!(f.cause, Cause::Emulator);
        // Before the ready marker a kernel's crash is boot's business, not a fault here;
        // after it, it is the kernel's.
        let bug = "[ 5.0] BUG: kernel NULL pointer dereference, address: 8\n";
        let crashed = |ready| o(End::Crashed("x".into()), ready, None);
        assert_eq!(judge(&crashed(false), bug, "", q), None);
        let after = format!("{ready}{bug}");
        assert_eq!(
            judge(&crashed(true), &after, "", q).map(|f| f.cause),
            Some(Cause::Kernel)
        );
        // A run timeout is nobody's fault to retry.
        assert_eq!(judge(&o(End::RunTimeout, true, None), ready, "", q), None);
    }
}
