//! One kernel's guest run, from boot to the host's results directory: boot it
//! (`boot`), bring its results home over the disk or the serial channel (`channel`),
//! add the host's side to run.json (`record`), and print its table (`tables`).

use super::boot::{self, Booted};
use super::kernel::Kernel;
use super::qemu::{Accel, End};
use super::{HostPlan, record, tables};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED};
use crate::options::{GuestOptions, RunOptions};
use crate::output::summary::Row;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

pub struct Ctx<'a> {
    pub plan: &'a HostPlan,
    pub args: &'a RunOptions,
    pub guest: &'a GuestOptions,
    pub qemu: &'a Path,
    pub qemu_version: &'a str,
    pub xrunrig: &'a Path,
    pub stop: &'a AtomicBool,
}

/// What one kernel's run produced.
pub struct KernelRun {
    pub kernel: Kernel,
    pub dir: PathBuf,
    pub code: i32,
    pub accel: Option<Accel>,
    pub rows: Vec<Row>,
    pub error: Option<String>,
    pub boot_s: Option<f64>,
    pub wall_s: f64,
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

pub fn run_kernel(c: &Ctx, k: Kernel, dir: PathBuf) -> KernelRun {
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
    let s = boot::scratch()?;
    let Booted {
        outcome,
        accel,
        accel_note,
    } = boot::boot(c, &run.kernel, &s)?;
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
    let guest = record::guest_section(c, &run.kernel, &outcome, accel, accel_note, channel);
    record::patch_run_json(&run.dir, c.args, guest)?;
    tables::print_kernel(run, &outcome);
    if arch.rc != 0 {
        eprintln!(
            "xrunrig: the run in the guest exited with {} (its messages are above)",
            arch.rc
        );
    }
    Ok(())
}
