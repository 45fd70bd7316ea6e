//! One kernel's guest run, from initramfs to the host's results directory, and the
//! combined table when several kernels ran.

use super::qemu::{self, Accel, End, Launch};
use super::{HostPlan, KernelRun, initramfs, modules};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::options::{AccelChoice, GuestOptions, RunOptions};
use crate::output::summary::{Row, Summary};
use crate::output::table;
use results::run::{GuestSection, RunDoc};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub struct Ctx<'a> {
    pub plan: &'a HostPlan,
    pub args: &'a RunOptions,
    pub guest: &'a GuestOptions,
    pub qemu: &'a Path,
    pub qemu_version: &'a str,
    pub xrunrig: &'a Path,
    pub stop: &'a AtomicBool,
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes scratch directories of xrunrig processes that no longer exist (a SIGKILL
/// leaves them; their QEMU died with them through PDEATHSIG).
fn sweep_stale_scratch() {
    let Ok(rd) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("xrunrig-guest-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn scratch() -> Result<Scratch, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    sweep_stale_scratch();
    let d = std::env::temp_dir().join(format!(
        "xrunrig-guest-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    Ok(Scratch(d))
}

fn emulated_note(a: Accel) -> &'static str {
    match a {
        Accel::Tcg => {
            "TCG: emulated CPUs; timings are of an emulated machine, not of this host's hardware"
        }
        Accel::Kvm => "KVM: hardware-virtualised CPUs",
    }
}

/// Saves the console (and QEMU's stderr) as guest-console.log in the results dir.
fn save_console(s: &Path, dir: &Path) -> PathBuf {
    let mut text = std::fs::read(s.join("console.log")).unwrap_or_default();
    let err = std::fs::read_to_string(s.join("qemu-stderr.log")).unwrap_or_default();
    if !err.trim().is_empty() {
        text.extend_from_slice(format!("\n--- qemu stderr ---\n{err}").as_bytes());
    }
    let p = dir.join("guest-console.log");
    let _ = std::fs::write(&p, text);
    // The crashed first boot, when the guest was booted twice, is kept beside it.
    let first = s.join("console-first-boot.log");
    if first.exists() {
        let _ = std::fs::copy(&first, dir.join("guest-console-first-boot.log"));
    }
    p
}

fn tail(p: &Path, n: usize) -> String {
    let t = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n    ")
}

pub fn run_kernel(c: &Ctx, k: super::kernel::Kernel, dir: PathBuf) -> KernelRun {
    let mut run = KernelRun {
        kernel: k,
        dir,
        code: EXIT_FAILED,
        accel: None,
        rows: vec![],
        error: None,
        boot_s: None,
        wall_s: 0.0,
    };
    if let Err(e) = run_inner(c, &mut run) {
        run.error = Some(e);
    }
    run
}

fn run_inner(c: &Ctx, run: &mut KernelRun) -> Result<(), String> {
    let p = c.plan;
    let k = &run.kernel;
    let s = scratch()?;
    let mut wanted = modules::RESULTS_DISK.to_vec();
    if p.audio {
        wanted.extend_from_slice(modules::SOUND);
    }
    let (mods, notes) = match (&k.modules, p.audio) {
        (Some(m), _) => modules::collect(m, &wanted),
        (None, true) => (
            vec![],
            vec![format!(
                "no modules directory for {} (give --modules DIR)",
                k.release
            )],
        ),
        _ => (vec![], vec![]),
    };
    for n in notes {
        eprintln!("xrunrig: warning: {n}");
    }
    let spec = initramfs::Spec {
        xrunrig: c.xrunrig.to_path_buf(),
        files: p.files.clone(),
        command: p.command.clone(),
        modules: mods,
        audio: p.audio,
    };
    let initrd = s.0.join("initramfs.cpio");
    let (size, notes) = initramfs::build(&spec, &initrd)?;
    for n in notes {
        eprintln!("xrunrig: warning: {n}");
    }
    let (first, why) = match c.guest.accel {
        AccelChoice::Kvm => (Accel::Kvm, "--accel kvm".to_string()),
        AccelChoice::Tcg => (Accel::Tcg, "--accel tcg".to_string()),
        AccelChoice::Auto => match qemu::kvm_usable() {
            Ok(()) => (Accel::Kvm, "auto: /dev/kvm usable".to_string()),
            Err(e) => (Accel::Tcg, format!("auto: {e}")),
        },
    };
    let mut accel = first;
    let mut accel_note = why;
    let mut rebooted = false;
    let launch = |a: Accel| Launch {
        qemu: c.qemu.to_path_buf(),
        kernel: k.boot.clone(),
        initrd: initrd.clone(),
        cpus: p.cpus,
        memory: p.memory.clone(),
        cmdline: p.cmdline.clone(),
        accel: a,
        console: s.0.join("console.log"),
        channel: s.0.join("channel.bin"),
        disk: Some(s.0.join("results.img")),
        stderr: s.0.join("qemu-stderr.log"),
    };
    let outcome = loop {
        eprintln!(
            "xrunrig: booting {} ({}) in QEMU {}: {} vCPUs, {}, {}{}{}; {}; initramfs {:.1} MB",
            k.release,
            k.label,
            c.qemu_version,
            p.cpus,
            p.memory,
            accel.name().to_uppercase(),
            if accel == Accel::Tcg {
                " (emulated)"
            } else {
                ""
            },
            format_args!(" [{accel_note}]"),
            k.boot_note,
            size as f64 / 1e6
        );
        let mut g = qemu::spawn(&launch(accel))?;
        let boot_bound = if accel == Accel::Kvm && c.guest.accel == AccelChoice::Auto {
            Duration::from_secs(30).min(p.boot_bound)
        } else {
            p.boot_bound
        };
        let o = qemu::watch(
            &mut g,
            &s.0.join("console.log"),
            boot_bound,
            p.run_bound,
            c.stop,
            &mut |l| eprintln!("  guest| {l}"),
        );
        drop(g);
        // KVM that does not reach the ready marker is retried under TCG.
        if accel == Accel::Kvm
            && c.guest.accel == AccelChoice::Auto
            && o.ready_s.is_none()
            && o.end != End::Interrupted
        {
            accel_note = format!(
                "auto: KVM did not reach the ready marker ({:?}); fell back to TCG",
                o.end
            );
            accel = Accel::Tcg;
            continue;
        }
        // A kernel that started and then crashed before /init ran anything is booted
        // once more: seen under multi-threaded TCG about once in ten 6.12 boots
        // ("Oops: int3 ... sched_clock_cpu", the emulator racing the kernel's code
        // patching). Nothing of the rig ran, so nothing is repeated; a kernel that
        // cannot start at all (a corrupt image) is not retried.
        let console = s.0.join("console.log");
        if !rebooted
            && o.ready_s.is_none()
            && matches!(o.end, End::Crashed(_))
            && std::fs::read_to_string(&console).is_ok_and(|t| t.contains("Linux version"))
        {
            rebooted = true;
            let first = s.0.join("console-first-boot.log");
            let _ = std::fs::rename(&console, &first);
            eprintln!(
                "xrunrig: the guest kernel crashed while booting ({:?}); booting it once more",
                o.end
            );
            accel_note.push_str("; booted twice: the first boot crashed before /init");
            continue;
        }
        break o;
    };
    run.accel = Some(accel);
    run.boot_s = outcome.ready_s;
    run.wall_s = outcome.wall_s;
    let console = save_console(&s.0, &run.dir);
    let fail = |what: String| {
        format!(
            "{what}\n  the guest was stopped; console log: {}\n  last console lines:\n    {}",
            console.display(),
            tail(&console, 8)
        )
    };
    match &outcome.end {
        End::Shipped => {}
        End::Interrupted => {
            run.code = EXIT_INTERRUPTED;
            return Err(fail("interrupted".into()));
        }
        End::BootTimeout => {
            return Err(fail(format!(
                "the guest did not reach its ready marker within {} s (boot failed or hung)",
                p.boot_bound.as_secs()
            )));
        }
        End::RunTimeout => {
            return Err(fail(format!(
                "the guest run passed its bound of {} s",
                p.run_bound.as_secs()
            )));
        }
        End::Crashed(l) => return Err(fail(format!("the guest kernel failed: {l}"))),
        End::Exited(st) => {
            return Err(fail(format!(
                "QEMU exited ({st}) before the guest {}",
                if outcome.ready_s.is_some() {
                    "shipped its results"
                } else {
                    "was ready"
                }
            )));
        }
    }
    // The disk first; the serial channel when the kernel had no virtio-blk.
    let disk = s.0.join("results.img");
    let from_disk = super::channel::read_disk(&disk).and_then(|b| super::channel::parse(&b));
    let _ = std::fs::remove_file(&disk);
    let (arch, channel) = match from_disk {
        Ok(a) => (a, "virtio-blk disk"),
        Err(disk_err) => {
            let chan = std::fs::read(s.0.join("channel.bin")).map_err(|e| e.to_string())?;
            let a = super::channel::parse(&chan)
                .map_err(|e| fail(format!("{e} (serial channel); results disk: {disk_err}")))?;
            (a, "serial ttyS1")
        }
    };
    super::channel::untar(&arch.tar, &run.dir).map_err(fail)?;
    run.code = arch.rc;
    let guest = json!({
        "accel": accel.name(),
        "accel_note": accel_note,
        "results_channel": channel,
        "emulated": accel == Accel::Tcg,
        "note": emulated_note(accel),
        "cpus": p.cpus,
        "memory": p.memory,
        "kernel": k.label,
        "kernel_release": k.release,
        "kernel_image": k.image.display().to_string(),
        "kernel_package": k.package,
        "boot": k.boot_note,
        "qemu": c.qemu_version,
        "boot_s": outcome.ready_s.map(|x| (x * 1000.0).round() / 1000.0),
        "guest_uptime_at_start_s": outcome.guest_uptime_s,
        "wall_s": (outcome.wall_s * 1000.0).round() / 1000.0,
        "cmdline": p.cmdline,
        "command": p.command,
        "console_log": "guest-console.log",
        "host": {
            "hostname": crate::output::provenance::hostname(),
            "kernel": crate::output::provenance::kernel(),
            "cpus": crate::output::provenance::cpus(),
        },
    });
    patch_run_json(&run.dir, c.args, guest)?;
    let sum_path = run.dir.join(results::SUMMARY_JSON);
    let sum_text = std::fs::read_to_string(&sum_path).ok();
    // Trial rows only: reading is lenient, so a livefx summary would read as one.
    let summary: Option<Summary> = sum_text
        .as_deref()
        .and_then(|t| serde_json::from_str::<Summary>(t).ok())
        .filter(|s| s.kind == results::KIND_TRIALS);
    let livefx = sum_text
        .as_deref()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .filter(|v| v["kind"] == "livefx");
    println!();
    println!(
        "kernel {} ({}), guest {} — {}; boot to rig start {}",
        k.release,
        k.label,
        accel.name().to_uppercase(),
        emulated_note(accel),
        outcome.ready_s.map_or("-".into(), |b| format!("{b:.1} s"))
    );
    match &summary {
        Some(sm) => {
            print!("{}", table::render(&sm.rows));
            run.rows = sm.rows.clone();
        }
        None => match &livefx {
            Some(v) => print!("{}", livefx_table(v)),
            None => println!("(no summary.json: the guest run wrote no results)"),
        },
    }
    println!("results: {}", run.dir.display());
    if arch.rc != 0 {
        eprintln!(
            "xrunrig: the run in the guest exited with {} (its messages are above)",
            arch.rc
        );
    }
    Ok(())
}

/// run.json from the guest, with the host's command and paths and the "guest" block.
/// The guest's livefx rows, one line each (the full table is the guest's; its
/// summary.json has every figure).
fn livefx_table(sum: &serde_json::Value) -> String {
    let mut out = String::from(
        "setting / variant: backend, period, cycles, xruns, deadline misses, clicks (unexplained), round trip frames\n",
    );
    let f = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "-".to_string(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    for r in sum["rows"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        out.push_str(&format!(
            "{} / {}: {}, {}, {}, {}, {}, {} ({}), {}\n",
            f(&r["setting"]),
            f(&r["variant"]),
            f(&r["backend"]),
            f(&r["period"]),
            f(&r["cycles"]),
            f(&r["xruns"]),
            f(&r["deadline_misses"]),
            f(&r["discontinuities"]),
            f(&r["discontinuities_unexplained"]),
            f(&r["roundtrip_frames"]),
        ));
    }
    out
}

fn patch_run_json(dir: &Path, a: &RunOptions, guest: serde_json::Value) -> Result<(), String> {
    let p = dir.join(results::RUN_JSON);
    let guest: GuestSection =
        serde_json::from_value(guest).map_err(|e| format!("the guest section of run.json: {e}"))?;
    let host_command: Vec<String> = std::env::args().collect();
    let Ok(text) = std::fs::read_to_string(&p) else {
        // The guest refused before writing run.json; record what we know.
        let doc = RunDoc {
            format: results::FORMAT_VERSION,
            command: host_command,
            error: Some(
                "the run inside the guest wrote no run.json (see guest-console.log)".into(),
            ),
            guest: Some(guest),
            ..Default::default()
        };
        return crate::output::write_json(&p, &doc);
    };
    let mut doc = RunDoc::from_json(&text).map_err(|e| format!("the guest's {e}"))?;
    doc.guest_command = Some(serde_json::to_value(&doc.command).unwrap_or_default());
    doc.command = host_command;
    doc.host = Some(crate::output::provenance::hostname());
    if let Some(r) = doc.rig.as_mut() {
        r.path = Some(a.rig.display().to_string());
    }
    if let (Some(pr), Some(path)) = (doc.profile.as_mut(), &a.profile) {
        pr.path = Some(path.display().to_string());
    }
    doc.guest = Some(guest);
    crate::output::write_json(&p, &doc)
}

/// The table across kernels (a kernel column before the usual ones) and
/// combined.json in the parent directory.
pub fn combined(rig: &str, base: &Path, runs: &[KernelRun]) {
    let mut rows: Vec<Row> = vec![];
    let mut labels: Vec<String> = vec![];
    for r in runs {
        for row in &r.rows {
            rows.push(row.clone());
            labels.push(r.kernel.release.clone());
        }
    }
    let t = table::render(&rows);
    let w = labels
        .iter()
        .map(|l| l.len())
        .max()
        .unwrap_or(0)
        .max("kernel".len());
    let mut out = String::new();
    for (i, line) in t.lines().enumerate() {
        let k = if i == 0 { "kernel" } else { &labels[i - 1] };
        out.push_str(&format!("{k:<w$}  {line}\n"));
    }
    println!();
    println!("all kernels ({rig}):");
    print!("{out}");
    for r in runs {
        let acc = r.accel.map_or("-", |a| a.name());
        match &r.error {
            Some(_) => println!(
                "  {} ({}): FAILED, see {}",
                r.kernel.release,
                r.kernel.label,
                r.dir.display()
            ),
            None => println!(
                "  {} ({}): {} {}, boot {} s, {:.1} s in all, {}{}",
                r.kernel.release,
                r.kernel.label,
                acc,
                if r.accel == Some(Accel::Tcg) {
                    "(emulated)"
                } else {
                    ""
                },
                r.boot_s.map_or("-".into(), |b| format!("{b:.1}")),
                r.wall_s,
                r.dir.display(),
                if r.code != 0 {
                    format!(" (the guest run exited with {})", r.code)
                } else {
                    String::new()
                }
            ),
        }
    }
    let v = json!({
        "rig": rig,
        "kernels": runs.iter().map(|r| json!({
            "kernel": r.kernel.label,
            "release": r.kernel.release,
            "dir": r.dir.display().to_string(),
            "accel": r.accel.map(|a| a.name()),
            "emulated": r.accel == Some(Accel::Tcg),
            "exit": r.code,
            "error": r.error,
            "boot_s": r.boot_s,
        })).collect::<Vec<_>>(),
        "rows": runs.iter().flat_map(|r| r.rows.iter().map(move |row| {
            let mut x = serde_json::to_value(row).unwrap_or_default();
            if let Some(o) = x.as_object_mut() {
                o.insert("kernel".into(), json!(r.kernel.release));
            }
            x
        })).collect::<Vec<_>>(),
    });
    if let Err(e) = crate::output::write_json(&base.join("combined.json"), &v) {
        eprintln!("xrunrig: {e}");
    }
    let _ = std::fs::write(base.join("combined.txt"), &out);
    println!("combined: {}", base.join("combined.json").display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn livefx_rows_print_one_line_each() {
        let sum = json!({"kind": "livefx", "rows": [
            {"setting": "A", "variant": "v", "backend": "jack", "period": 512, "cycles": 467,
             "xruns": 2, "deadline_misses": 0, "discontinuities": 2,
             "discontinuities_unexplained": 0, "roundtrip_frames": 1536},
            {"setting": "B", "variant": "v", "backend": "clock", "period": 128, "cycles": 9,
             "xruns": 0, "deadline_misses": 0, "discontinuities": null,
             "discontinuities_unexplained": null, "roundtrip_frames": null},
        ]});
        let t = livefx_table(&sum);
        assert!(
            t.contains("A / v: jack, 512, 467, 2, 0, 2 (0), 1536\n"),
            "{t}"
        );
        assert!(t.contains("B / v: clock, 128, 9, 0, 0, - (-), -\n"), "{t}");
    }
}
