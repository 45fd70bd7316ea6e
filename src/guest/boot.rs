//! Booting one kernel: a scratch directory, the initramfs that holds xrunrig and the
//! rig, and QEMU under the chosen acceleration, with the KVM-to-TCG fallback and one
//! more boot of a kernel that crashed before /init.

use super::kernel::Kernel;
use super::qemu::{self, Accel, End, Launch, Outcome};
use super::run_ctx::Ctx;
use super::{initramfs, modules};
use crate::options::AccelChoice;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A scratch directory removed when dropped.
pub struct Scratch(pub PathBuf);

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

pub fn scratch() -> Result<Scratch, String> {
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

pub fn emulated_note(a: Accel) -> &'static str {
    match a {
        Accel::Tcg => {
            "TCG: emulated CPUs; timings are of an emulated machine, not of this host's hardware"
        }
        Accel::Kvm => "KVM: hardware-virtualised CPUs",
    }
}

/// How the guest ended, under which acceleration, and why that one.
pub struct Booted {
    pub outcome: Outcome,
    pub accel: Accel,
    pub accel_note: String,
}

/// What one boot runs: the commands of the sweep's parts left, and the test-only fault.
pub struct Work {
    pub parts: Vec<Vec<String>>,
    /// Each part's plan file: (guest path, plan).
    pub plans: Vec<(String, crate::sweep::PlanFile)>,
    pub inject: initramfs::Inject,
}

/// The initramfs for `k` in the scratch directory: its path and size.
fn initramfs_for(c: &Ctx, k: &Kernel, s: &Scratch, w: &Work) -> Result<(PathBuf, u64), String> {
    let p = c.plan;
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
        files: w
            .plans
            .iter()
            .map(|(path, plan)| {
                serde_json::to_vec(plan)
                    .map(|b| (path.clone(), b))
                    .map_err(|e| format!("cannot write the guest's plan file: {e}"))
            })
            .collect::<Result<_, _>>()?,
        parts: w.parts.clone(),
        inject: w.inject,
        ship_cpus: p.ship_cpus.clone(),
        modules: mods,
        audio: p.audio,
    };
    let initrd = s.0.join("initramfs.cpio");
    let (size, notes) = initramfs::build(&spec, &initrd)?;
    for n in notes {
        eprintln!("xrunrig: warning: {n}");
    }
    Ok((initrd, size))
}

/// Boots `k` until the guest ships its results, fails, or a bound passes.
pub fn boot(c: &Ctx, k: &Kernel, s: &Scratch, w: &Work) -> Result<Booted, String> {
    let p = c.plan;
    let (initrd, size) = initramfs_for(c, k, s, w)?;
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
        crate::note!(
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
            qemu::Bounds {
                boot: boot_bound,
                run: p.run_bound,
                quiet: p.quiet_bound,
            },
            c.stop,
            &mut crate::output::progress::relay,
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
    Ok(Booted {
        outcome,
        accel,
        accel_note,
    })
}
