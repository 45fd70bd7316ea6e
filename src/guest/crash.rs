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
        && ts
            .trim()
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
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
    let end = lines[at..]
        .iter()
        .position(|l| l.contains("Kernel panic - not syncing") || l.contains("---[ end trace"))
        .map_or((at + 40).min(lines.len()), |e| {
            // Through the panic line that often follows the end of the trace.
            let e = at + e + 1;
            let next_panic = lines[e..]
                .iter()
                .take(3)
                .position(|l| l.contains("Kernel panic - not syncing"));
            next_panic.map_or(e, |p| e + p + 1)
        });
    let excerpt: Vec<String> = lines[at..end.min(at + 60)]
        .iter()
        .map(|l| l.to_string())
        .collect();
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
        (false, _) => (Cause::Kernel, format!("the guest kernel crashed: {line}")),
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

    /// The console of a real guest (6.12.117 under TCG) crashed with
    /// `echo c > /proc/sysrq-trigger`, as tests/guest_lossless.rs does.
    const SYSRQ_CRASH: &str = "\
[    8.003121] sysrq: Trigger a crash
[    8.003541] Kernel panic - not syncing: sysrq triggered crash
[    8.004143] CPU: 0 UID: 0 PID: 1 Comm: init Not tainted 6.12.117+deb12-amd64 #1  Debian 6.12.117-1~deb12u1
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
