//! The guest's root filesystem, built on the fly as a newc cpio: busybox-static for a
//! shell and insmod, the host's own xrunrig binary with its library closure (from
//! `ldd`), jackd and its plugins for audio rigs, the rig and profile files, the
//! decompressed modules, and /init.

use super::cpio::CpioWriter;
use super::modules::Module;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Spec {
    /// The xrunrig binary that runs in the guest.
    pub xrunrig: PathBuf,
    /// Extra files: (guest path, contents).
    pub files: Vec<(String, Vec<u8>)>,
    /// The guest's `xrunrig run …` commands, already pointing at guest paths: one, or
    /// the parts of the sweep a resumed boot has left; run in order, each into its own
    /// `/results/x/pN` (its --out), stopping at the first that fails.
    pub parts: Vec<Vec<String>>,
    /// Test-only faults (see `Inject`).
    pub inject: Inject,
    /// CPUs the rig does not use, where /init ships each trial's results; empty: any.
    pub ship_cpus: Vec<usize>,
    pub modules: Vec<Module>,
    /// Include jackd, libjack, its drivers and ALSA's configuration.
    pub audio: bool,
}

/// The paths of the shared libraries `bin` loads, as ldd names them (including the
/// dynamic loader). Empty for a static binary.
pub fn ldd(bin: &Path) -> Result<Vec<PathBuf>, String> {
    let o = Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| format!("cannot run ldd (install libc-bin): {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    if !o.status.success() {
        // "not a dynamic executable"
        return Ok(vec![]);
    }
    let mut out = vec![];
    for l in text.lines() {
        let l = l.trim();
        let path = match l.split_once("=>") {
            Some((name, rest)) => {
                let p = rest.split_whitespace().next().unwrap_or("");
                if p == "not" {
                    return Err(format!(
                        "{}: library {} not found on this host",
                        bin.display(),
                        name.trim()
                    ));
                }
                p
            }
            None => l.split_whitespace().next().unwrap_or(""),
        };
        if path.starts_with('/') {
            out.push(PathBuf::from(path));
        }
    }
    Ok(out)
}

const LIB_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib",
    "/lib",
];

fn find_lib(name: &str) -> Option<PathBuf> {
    LIB_DIRS
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

fn which(cmd: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A command as one shell-safe line.
pub fn shell_line(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

/// Test-only faults the guest makes on purpose once `after` trials have reached the
/// host: the tests' only way to a guest that dies mid-run on demand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Inject {
    #[default]
    None,
    /// A real kernel crash: `echo c > /proc/sysrq-trigger`.
    Crash { after: u64 },
    /// The emulator's stale-breakpoint Oops, printed on the console as the kernel
    /// prints it (`crash::INT3_OOPS_SAMPLE`), then power off.
    Int3 { after: u64 },
    /// A guest whose timers stopped: the RCU stall report as the kernel prints it
    /// (`crash::RCU_STALL_SAMPLE`), then nothing more (the run frozen, no power-off).
    Stall { after: u64 },
    /// The run frozen and the guest waiting, nothing printed: for a test whose QEMU
    /// stand-in aborts once a frame is home (tests/support/guest.rs `QemuStandIn`), so
    /// that it aborts mid-run with a known number of trials home.
    Hold { after: u64 },
    /// The kill -9 matrix in the guest (tests/guest_kill.rs), before the run itself:
    /// the first part's run is started and SIGKILLed at `KILLS` seeded moments (mid-apply,
    /// mid-trial, mid-restore), each followed by `xrunrig restore`; kill.log (in the
    /// results) tells sched/features before, at each kill and after each restore. Each
    /// kill says so on the console, which would otherwise be silent for all of them.
    Kill { seed: u64 },
}

/// The guest kill matrix's kills, and how long the run stalls at each hook.
pub const KILLS: usize = 3;
pub const KILL_STALL_MS: u64 = 2000;

/// `Inject::Kill`'s shell: a function, then one call per kill with its phase (the
/// stall line to wait for, how many of them) and its seeded delay inside the window.
fn kill_matrix(first: &[String], seed: u64) -> String {
    let mut x = seed;
    let mut next = || {
        // splitmix64: the same kills for the same seed.
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut out = format!(
        r#"  KCMD={cmd}
  F=/sys/kernel/debug/sched/features
  f0=$(cat $F); echo "before: $f0" >>/results/kill.log
  kill_one() {{
    c=$(echo "$KCMD" | sed "s#/results/x/p0#/results/k$1#")
    (export XRUNRIG_TEST_STALL_MS={stall}; eval "exec $c") >/dev/null 2>/results/k$1.err &
    pid=$!; t=0
    while [ $(grep -c "$2" /results/k$1.err) -lt $3 ] && kill -0 $pid 2>/dev/null && [ $t -lt 1200 ]; do sleep 0.05; t=$((t+1)); done
    sleep $4
    fk=$(cat $F); kill -9 $pid; wait $pid
    /bin/xrunrig restore >>/results/kill.log 2>&1; r=$?
    f1=$(cat $F)
    ch=no; [ "$fk" != "$f0" ] && ch=yes
    ok=CHANGED; [ "$f1" = "$f0" ] && ok=back
    echo "kill $1 '$2' x$3 +$4 s: changed-at-kill $ch; restore rc $r; features $ok" >>/results/kill.log
    [ $ok = back ] || echo "after: $f1" >>/results/kill.log
    echo "xrunrig-guest: kill $1 done, features $ok"
  }}
"#,
        cmd = quote(&shell_line(first)),
        stall = KILL_STALL_MS,
    );
    // (phase: the stall line, how many of them first, extra seconds before the window)
    let phases = [
        ("test-stall apply", 2, 0.0),
        ("test-stall apply", 2, KILL_STALL_MS as f64 / 1e3),
        ("test-stall restore", 1, 0.0),
    ];
    for (i, (needle, n, extra)) in phases.iter().enumerate().take(KILLS) {
        let within = (next() % (KILL_STALL_MS * 8 / 10)) as f64 / 1e3;
        out.push_str(&format!(
            "  kill_one {i} '{needle}' {n} {:.2}
",
            extra + within
        ));
    }
    out
}

/// Where the injected console text goes in the initramfs.
pub const INJECT_CONSOLE: &str = "/xrunrig/inject-console.txt";

/// /init: mounts, modules, the ready marker, the run's parts in the background while
/// the foreground ships each finished trial (a new line in a part's samples.jsonl) to
/// the results disk as a frame of the files changed since the last one, then the final
/// frame with the whole results directory (ttyS1 when there is no disk), power off.
/// Should anything in it die, init exiting panics the kernel, and panic=-1 with QEMU's
/// -no-reboot ends the guest.
pub fn init_script(
    parts: &[Vec<String>],
    lib_dirs: &[String],
    inject: Inject,
    ship_cpus: &[usize],
) -> String {
    let pin = if ship_cpus.is_empty() {
        String::new()
    } else {
        let l: Vec<String> = ship_cpus.iter().map(|c| c.to_string()).collect();
        format!("taskset -p -c {} $$ >/dev/null 2>&1\n", l.join(","))
    };
    let mut run = String::new();
    if let (Inject::Kill { seed }, Some(first)) = (inject, parts.first()) {
        run.push_str(&kill_matrix(first, seed));
    }
    for cmd in parts {
        run.push_str(&format!(
            "  if [ $rc -eq 0 ]; then {}; rc=$?; fi\n",
            shell_line(cmd)
        ));
    }
    // The injected fault, after the frame that carries trial `after` is on the disk.
    // The run is frozen first, so no further trial finishes unshipped.
    let (after, poll, fault) = match inject {
        Inject::None => (0, "5", String::new()),
        Inject::Crash { after } => (after, "0.05", "echo c >/proc/sysrq-trigger".into()),
        Inject::Int3 { after } => (after, "0.05", format!("cat {INJECT_CONSOLE}; poweroff -f")),
        // Quiet for longer than any bound: the host must stop it.
        Inject::Stall { after } => (after, "0.05", format!("cat {INJECT_CONSOLE}; sleep 100000")),
        Inject::Hold { after } => (after, "0.05", "sleep 100000".into()),
        Inject::Kill { .. } => (0, "5", String::new()),
    };
    let (stop, crash) = if fault.is_empty() {
        (String::new(), String::new())
    } else {
        (
            format!(
                "    if [ $n -ge {after} ]; then killall -STOP xrunrig; n=$(cat /results/x/p*/samples.jsonl 2>/dev/null | wc -l); fi\n"
            ),
            format!("    if [ $n -ge {after} ]; then {fault}; sleep 30; fi\n"),
        )
    };
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
# The console is a terminal, but the host reads it by lines: no live progress line.
export PATH=/bin:/usr/bin:/sbin:/usr/sbin HOME=/root LD_LIBRARY_PATH={libs} XRUNRIG_NO_PROGRESS=1
mkdir -p /proc /sys /dev /tmp /run /root /var/lib/xrunrig /results/x
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
for m in $(cat /xrunrig/modules.list); do
  insmod /xrunrig/modules/$m.ko || echo "xrunrig-guest: insmod $m failed"
done
stty -F /dev/ttyS1 raw -echo
echo "XRUNRIG-READY $(cat /proc/uptime)"
# The shipper's wait (below) is a `read -t` on this FIFO, which nobody writes but the
# run, once, when it ends: the results go home at once, not at the next poll (up to 5 s
# of an idle guest after every run, measured: 5.3 s from the rig's last line to QEMU's
# exit on the seed's A/B).
mkfifo /results/tick && exec 3<>/results/tick
(
  exec 3<&-
  rc=0
{run}{keep}  echo $rc >/results/rc.tmp && mv /results/rc.tmp /results/rc
  echo >/results/tick
) >/results/stdout.txt &
# The shipping below yields to the run, on CPUs the rig does not use.
renice -n 19 -p $$ >/dev/null 2>&1
{pin}DISK={disk}
# The results disk (virtio-blk) when the kernel has it; else ttyS1, at the end only.
i=0; while [ ! -b $DISK ] && [ $i -lt 50 ] && grep -q virtio_blk /proc/modules; do sleep 0.1; i=$((i+1)); done
off=0; seq=0; echo - >/results/m.old
# The wait below is the shell's own `read -t` on the FIFO, every 5 s: no process is
# started while nothing changed. Under TCG the shipper's wake-ups cost the emulated CPUs
# the rig measures: hrtick-repick on 6.1, HRTICK long_a was 43 and 62 with a 0.25 s
# poll, 6 with 5 s (9 before per-trial shipping; one run each).
# frame KIND RC: /results/f.tar as the next frame of the disk's log, at a 4 KiB boundary.
frame() {{
  sz=$(wc -c </results/f.tar); sum=$(sha256sum /results/f.tar)
  head="{magic} seq=$seq kind=$1 rc=$2 size=$sz sha256=${{sum%% *}}"
  {{ echo "$head"; cat /results/f.tar; }} >/results/frame
  dd if=/results/frame of=$DISK bs=4096 seek=$((off / 4096)) conv=notrunc,fsync 2>/dev/null || return 1
  off=$(( (off + ${{#head}} + 1 + sz + 4095) / 4096 * 4096 )); seq=$((seq + 1))
}}
# The files new or changed since the last frame (size and mtime to the nanosecond).
changed() {{
  (cd /results/x && find . -type f -exec stat -c '%s|%y|%n' {{}} + | sort) >/results/m.new
  grep -vxFf /results/m.old /results/m.new | cut -d'|' -f3 >/results/list
}}
shipped=0; tick=0
while :; do
  gone=; [ -e /results/rc ] && gone=1
  # -nt compares whole seconds: a line appended in the second of the last frame shows
  # only in the full count, taken every 2nd turn anyway.
  new=; tick=$(( (tick + 1) % 2 )); [ $tick -eq 0 ] && new=1
  for f in /results/x/p*/samples.jsonl; do [ "$f" -nt /results/m.old ] && new=1; done
  n=$shipped
  [ -n "$new" ] && n=$(cat /results/x/p*/samples.jsonl 2>/dev/null | wc -l)
  if [ -z "$gone" ] && [ -b $DISK ] && [ $n -gt $shipped ]; then
{stop}    changed
    if tar -cf /results/f.tar -C /results/x $(cat /results/list) && frame trial 0; then
      mv /results/m.new /results/m.old; shipped=$n
      echo "XRUNRIG-FRAME trials=$n"
    fi
{crash}  fi
  [ -n "$gone" ] && break
  read -t {poll} -u 3 _ || true
done
rc=$(cat /results/rc)
echo "XRUNRIG-RC $rc"
cd /results/x && tar -cf /results/f.tar .
sz=$(wc -c </results/f.tar)
if [ -b $DISK ] && frame final $rc; then
  echo "XRUNRIG-CHANNEL disk $sz bytes"
else
  echo "XRUNRIG-CHANNEL serial $sz bytes"
  sum=$(sha256sum /results/f.tar)
  {{ echo "{archive} rc=$rc size=$sz sha256=${{sum%% *}}"; cat /results/f.tar; }} >/dev/ttyS1
fi
echo XRUNRIG-SHIPPED
poweroff -f
"#,
        libs = lib_dirs.join(":"),
        // The kill matrix's log goes home with the run's results.
        keep = if matches!(inject, Inject::Kill { .. }) {
            "  cp /results/kill.log /results/x/p0/kill.log\n"
        } else {
            ""
        },
        magic = super::channel::FRAME_MAGIC,
        archive = super::channel::MAGIC,
        disk = super::channel::GUEST_DISK,
    )
}

/// Writes the initramfs to `out`; returns its size and notes (what was left out).
pub fn build(spec: &Spec, out: &Path) -> Result<(u64, Vec<String>), String> {
    let mut notes = vec![];
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("busybox not found: install busybox-static (apt-get install busybox-static)")?;
    if !ldd(&busybox)?.is_empty() {
        return Err(format!(
            "{} is dynamically linked; the guest needs busybox-static (apt-get install busybox-static)",
            busybox.display()
        ));
    }
    // A debug build is mostly debug info: stripped it loads and unpacks faster
    // (64 MB → 23 MB measured); without `strip` the binary goes in as it is.
    let stripped = out.with_file_name("xrunrig.stripped");
    let xr = match Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(&spec.xrunrig)
        .status()
    {
        Ok(s) if s.success() => stripped,
        _ => spec.xrunrig.clone(),
    };
    // (guest path, host source)
    let mut bins: Vec<(String, PathBuf)> = vec![("/bin/xrunrig".into(), xr)];
    let mut extra_libs: Vec<PathBuf> = vec![];
    let mut trees: Vec<PathBuf> = vec![];
    if spec.audio {
        match which("jackd") {
            Some(j) => {
                bins.push(("/usr/bin/jackd".into(), j));
                for t in ["jack_wait", "jack_lsp", "jack_iodelay"] {
                    if let Some(p) = which(t) {
                        bins.push((format!("/usr/bin/{t}"), p));
                    }
                }
                match find_lib("libjack.so.0") {
                    Some(l) => extra_libs.push(l),
                    None => notes.push(
                        "libjack.so.0 not found: the JACK backend will not load in the guest"
                            .into(),
                    ),
                }
                if let Some(d) = LIB_DIRS
                    .iter()
                    .map(|d| Path::new(d).join("jack"))
                    .find(|p| p.is_dir())
                {
                    for e in std::fs::read_dir(&d).map_err(|e| e.to_string())?.flatten() {
                        if e.path().extension().is_some_and(|x| x == "so") {
                            extra_libs.push(e.path());
                        }
                    }
                }
            }
            None => notes.push(
                "jackd not found on the host: audio rigs run without JACK in the guest".into(),
            ),
        }
        trees.push(PathBuf::from("/usr/share/alsa"));
    }
    let mut libs: BTreeSet<PathBuf> = BTreeSet::new();
    for (_, b) in &bins {
        libs.extend(ldd(b)?);
    }
    for l in &extra_libs {
        libs.insert(l.clone());
        libs.extend(ldd(l)?);
    }
    let lib_dirs: Vec<String> = libs
        .iter()
        .filter_map(|l| l.parent().map(|p| p.display().to_string()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let f = std::fs::File::create(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = CpioWriter::new(std::io::BufWriter::new(f));
    let io = |e: std::io::Error| format!("writing the initramfs {}: {e}", out.display());
    for d in [
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/proc",
        "/sys",
        "/dev",
        "/tmp",
        "/root",
    ] {
        w.dir(d).map_err(io)?;
    }
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    w.file("/bin/busybox", 0o755, &read(&busybox)?)
        .map_err(io)?;
    w.file(
        "/init",
        0o755,
        init_script(&spec.parts, &lib_dirs, spec.inject, &spec.ship_cpus).as_bytes(),
    )
    .map_err(io)?;
    for (g, h) in &bins {
        w.file(g, 0o755, &read(h)?).map_err(io)?;
    }
    for l in &libs {
        w.file(&l.display().to_string(), 0o755, &read(l)?)
            .map_err(io)?;
    }
    for t in &trees {
        add_tree(&mut w, t).map_err(io)?;
    }
    for (g, data) in &spec.files {
        w.file(g, 0o644, data).map_err(io)?;
    }
    let console = match spec.inject {
        Inject::Int3 { .. } => Some(super::crash::INT3_OOPS_SAMPLE),
        Inject::Stall { .. } => Some(super::crash::RCU_STALL_SAMPLE),
        _ => None,
    };
    if let Some(text) = console {
        w.file(INJECT_CONSOLE, 0o644, text.as_bytes()).map_err(io)?;
    }
    let list: Vec<&str> = spec.modules.iter().map(|m| m.name.as_str()).collect();
    w.file(
        "/xrunrig/modules.list",
        0o644,
        format!("{}\n", list.join("\n")).as_bytes(),
    )
    .map_err(io)?;
    w.dir("/xrunrig/modules").map_err(io)?;
    for m in &spec.modules {
        w.file(&format!("/xrunrig/modules/{}.ko", m.name), 0o644, &m.data)
            .map_err(io)?;
    }
    let (_, size) = w.finish().map_err(io)?;
    Ok((size, notes))
}

fn add_tree<W: std::io::Write>(w: &mut CpioWriter<W>, dir: &Path) -> std::io::Result<()> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p)?;
        if meta.file_type().is_symlink() {
            let t = std::fs::read_link(&p)?;
            w.symlink(&p.display().to_string(), &t.display().to_string())?;
        } else if meta.is_dir() {
            add_tree(w, &p)?;
        } else {
            w.file(&p.display().to_string(), 0o644, &std::fs::read(&p)?)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lists_libc_and_loader() {
        let v = ldd(Path::new("/bin/sh")).unwrap();
        assert!(
            v.iter().any(|p| p.to_string_lossy().contains("libc.so")),
            "{v:?}"
        );
        assert!(
            v.iter().any(|p| p.to_string_lossy().contains("ld-linux")),
            "{v:?}"
        );
    }

    #[test]
    fn quoting_survives_the_shell() {
        let args: Vec<String> = ["run", "a b", "it's", "--x=1", ""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = shell_line(&args);
        let o = Command::new("sh")
            .args([
                "-c",
                &format!("for a in {line}; do printf '<%s>' \"$a\"; done"),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "<run><a b><it's><--x=1><>"
        );
    }

    #[test]
    fn init_script_has_the_pieces() {
        let s = init_script(
            &[vec![
                "/bin/xrunrig".into(),
                "run".into(),
                "--out".into(),
                "/results/x/p0".into(),
            ]],
            &["/lib/x86_64-linux-gnu".into()],
            Inject::None,
            &[0, 2],
        );
        for needle in [
            "mount -t debugfs",
            "XRUNRIG-READY",
            "if [ $rc -eq 0 ]; then /bin/xrunrig run --out /results/x/p0; rc=$?; fi",
            ") >/results/stdout.txt &",
            "frame trial 0",
            "frame final $rc",
            "/dev/ttyS1",
            "poweroff -f",
            "LD_LIBRARY_PATH=/lib/x86_64-linux-gnu",
            "taskset -p -c 0,2 $$",
        ] {
            assert!(s.contains(needle), "{needle} missing from\n{s}");
        }
        assert!(!s.contains("sysrq") && !s.contains(INJECT_CONSOLE));
        // The FIFO exists before the run starts, and the run's last act wakes the shipper.
        let at = |n: &str| s.find(n).unwrap_or_else(|| panic!("{n} missing from\n{s}"));
        assert!(at("mkfifo /results/tick") < at(") >/results/stdout.txt &"));
        assert!(at("mv /results/rc.tmp /results/rc\n  echo >/results/tick\n)") > at("(\n"));
        let s = init_script(
            &[vec!["a".into()], vec!["b".into()]],
            &[],
            Inject::Crash { after: 2 },
            &[],
        );
        assert!(
            s.contains("then a; rc=$?; fi\n  if [ $rc -eq 0 ]; then b; rc=$?"),
            "{s}"
        );
        assert!(
            s.contains("if [ $n -ge 2 ]; then echo c >/proc/sysrq-trigger"),
            "{s}"
        );
        let s = init_script(
            &[vec!["/bin/xrunrig".into(), "/results/x/p0".into()]],
            &[],
            Inject::Kill { seed: 7 },
            &[],
        );
        for needle in [
            "KCMD='/bin/xrunrig /results/x/p0'",
            "kill_one 0 'test-stall apply' 2 ",
            "kill_one 1 'test-stall apply' 2 ",
            "kill_one 2 'test-stall restore' 1 ",
            "cp /results/kill.log /results/x/p0/kill.log",
            "echo \"xrunrig-guest: kill $1 done",
        ] {
            assert!(s.contains(needle), "{needle} missing from\n{s}");
        }
        assert!(!s.contains("sysrq"));
        let s = init_script(&[vec!["a".into()]], &[], Inject::Stall { after: 1 }, &[]);
        assert!(
            s.contains(&format!(
                "if [ $n -ge 1 ]; then cat {INJECT_CONSOLE}; sleep 100000"
            )),
            "{s}"
        );
        assert!(!s.contains("poweroff -f; sleep"), "{s}");
        let s = init_script(&[vec!["a".into()]], &[], Inject::Hold { after: 2 }, &[]);
        assert!(s.contains("if [ $n -ge 2 ]; then sleep 100000"), "{s}");
        assert!(s.contains("killall -STOP xrunrig"), "{s}");
    }
}
