//! Why a guest stopped, read from its console: the emulator's fault (multi-threaded
//! TCG running a stale `int3` the kernel's text patching had already replaced), which
//! a fresh boot gets past, or the kernel's own crash, which is a finding.

/// Whose fault a guest's death was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The emulator's: nothing of the kernel under test; the run can resume.
    Emulator,
    /// The kernel's: an Oops, BUG or panic to report.
    Kernel,
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

/// The first crash report on the console, judged. None: the console shows no crash.
pub fn classify(console: &str) -> Option<Fault> {
    let lines: Vec<&str> = console.lines().map(bare).collect();
    let at = lines.iter().position(|l| headline(l))?;
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
}
