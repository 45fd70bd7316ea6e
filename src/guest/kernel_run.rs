//! One kernel's guest run, from boot to the host's results directory: boot it
//! (`boot`), bring its results home over the disk or the serial channel (`channel`),
//! add the host's side to run.json (`record`), and print its table (`tables`).

use super::boot::{self, Booted};
use super::crash::{self, Cause, Fault};
use super::initramfs::Inject;
use super::kernel::Kernel;
use super::qemu::{Accel, End, Outcome};
use super::resume::{self, Boot};
use super::run_ctx::{Blame, Ctx, KernelRun};
use super::{HostPlan, record, tables};
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED};
use results::run::GuestStop;
use std::path::{Path, PathBuf};

/// Saves a boot's console (and QEMU's stderr) in the results dir as `name`.
fn save_console(s: &Path, dir: &Path, name: &str) -> PathBuf {
    let mut text = std::fs::read(s.join("console.log")).unwrap_or_default();
    let err = std::fs::read_to_string(s.join("qemu-stderr.log")).unwrap_or_default();
    if !err.trim().is_empty() {
        text.extend_from_slice(format!("\n--- qemu stderr ---\n{err}").as_bytes());
    }
    let p = dir.join(name);
    let _ = std::fs::write(&p, text);
    // The crashed first boot, when the guest was booted twice, is kept beside it.
    let first = s.join("console-first-boot.log");
    if first.exists() {
        let stem = name.trim_end_matches(".log");
        let _ = std::fs::copy(&first, dir.join(format!("{stem}-first-boot.log")));
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
        livefx_rows: vec![],
        error: None,
        blame: None,
        boot_s: None,
        wall_s: 0.0,
        decided: None,
        place: c.place.clone(),
    };
    if let Err(e) = run_inner(c, &mut run) {
        run.error = Some(e);
        // Not the guest's end (that is judged where it fails): the host's own scratch
        // space, initramfs, QEMU's start, or the results moved into place.
        run.blame.get_or_insert(Blame::Machine);
    }
    run
}

/// Whose a boot's failure is, from how it ended (`end`; QEMU's exit `code`) and what
/// its console or QEMU's stderr showed (`fault`, `crash::judge`'s).
pub fn blame(end: &End, code: Option<i32>, fault: Option<&Fault>) -> Blame {
    match fault.map(|f| f.cause) {
        Some(Cause::Kernel) => return Blame::Kernel,
        Some(Cause::Emulator) => return Blame::Machine,
        None => {}
    }
    match end {
        End::BootTimeout | End::RunTimeout | End::Crashed(_) => Blame::Kernel,
        // -no-reboot: a guest's reset (a triple fault) or power-off is QEMU's exit 0.
        End::Exited(_) if code == Some(0) => Blame::Kernel,
        // QEMU killed (the OOM killer's SIGKILL) or failing by itself, the guest's
        // timers stopped or silent, its results not home whole, Ctrl-C.
        End::Exited(_) | End::Stalled(_) | End::Silent(_) | End::Shipped | End::Interrupted => {
            Blame::Machine
        }
    }
}

/// Fresh boots after emulator faults, at most: a fault that keeps coming back is
/// reported rather than retried for ever.
const MAX_RESUMES: usize = 3;

/// What one boot brought home: its frames unpacked into `home.dir`.
struct Home {
    /// The final frame's exit code: the boot's parts all ran.
    rc: Option<i32>,
    channel: &'static str,
    torn: Option<String>,
    problem: Option<String>,
}

/// Unpacks a boot's frames (disk log, else the serial archive) into `dest`, later
/// frames over earlier ones.
fn bring_home(s: &Path, dest: &Path) -> Home {
    let mut h = Home {
        rc: None,
        channel: "virtio-blk disk",
        torn: None,
        problem: None,
    };
    let _ = std::fs::create_dir_all(dest);
    let disk = s.join("results.img");
    let log = super::channel::read_disk_log(&disk);
    let _ = std::fs::remove_file(&disk);
    let mut frames = 0;
    match log {
        Ok(log) => {
            for f in &log.frames {
                // The final frame is the whole directory: what it lacks (the run's
                // INCOMPLETE mark, removed when the guest's run finished) must go too.
                if f.last {
                    let _ = std::fs::remove_dir_all(dest);
                    let _ = std::fs::create_dir_all(dest);
                }
                if let Err(e) = super::channel::untar(&f.tar, dest) {
                    h.problem = Some(format!("frame {}: {e}", f.seq));
                    return h;
                }
                if f.last {
                    h.rc = Some(f.rc);
                }
            }
            frames = log.frames.len();
            h.torn = log.torn;
        }
        Err(e) => h.problem = Some(e),
    }
    if frames == 0 {
        // The serial channel when the kernel had no virtio-blk.
        if let Ok(chan) = std::fs::read(s.join("channel.bin"))
            && let Ok(a) = super::channel::parse(&chan)
        {
            match super::channel::untar(&a.tar, dest) {
                Ok(_) => {
                    h.rc = Some(a.rc);
                    h.channel = "serial ttyS1";
                    h.problem = None;
                }
                Err(e) => h.problem = Some(e),
            }
        }
    }
    h
}

fn stop_of(f: &Fault, after: u64, of: u64, log: &str) -> GuestStop {
    GuestStop {
        after_trial: after,
        of: Some(of),
        reason: Some(f.reason.clone()),
        console_excerpt: f.excerpt.clone(),
        console_log: Some(log.into()),
        cause: Some(f.cause.name().into()),
        line: Some(f.line.clone()),
    }
}

fn run_inner(c: &Ctx, run: &mut KernelRun) -> Result<(), String> {
    let p = c.plan;
    let total = p.order.total();
    // The boots' frames are unpacked here, then merged into the results directory.
    let stage = boot::scratch()?;
    let (started, _) = crate::sys::utc_now();
    let mut boots: Vec<Boot> = vec![];
    let mut resumed: Vec<GuestStop> = vec![];
    let mut crash: Option<GuestStop> = None;
    let mut done = 0u64;
    let mut fail: Option<String> = None;
    let mut fail_blame = Blame::Machine;
    let mut finished_rc: Option<i32> = None;
    let mut channel;
    let mut last: Option<(Outcome, Accel, String)>;
    // Moved on by the guest's per-trial lines as they are relayed (progress::relay).
    let bar = crate::output::progress::Progress::new(total, &run.kernel.release, None);
    loop {
        let b = boots.len();
        bar.set_position(done);
        bar.set_message(&format!("boot {}", b + 1));
        let parts = if b == 0 {
            vec![p.whole()]
        } else {
            p.parts_left(&boots, done)
        };
        let work = boot::Work {
            parts: (0..parts.len()).map(|i| p.command_for(i)).collect(),
            plans: parts
                .iter()
                .enumerate()
                .map(|(i, x)| (HostPlan::plan_path(i), p.plan_for(x)))
                .collect(),
            inject: if b == 0 { p.inject } else { Inject::None },
        };
        let s = boot::scratch()?;
        let Booted {
            outcome,
            accel,
            accel_note,
        } = boot::boot(c, &run.kernel, &s, &work)?;
        run.accel = Some(accel);
        run.boot_s = run.boot_s.or(outcome.ready_s);
        run.wall_s += outcome.wall_s;
        let log_name = if b == 0 {
            "guest-console.log".to_string()
        } else {
            format!("guest-console-boot{}.log", b + 1)
        };
        // Read before the scratch directory goes: the console alone, and QEMU's stderr.
        let raw = std::fs::read_to_string(s.0.join("console.log")).unwrap_or_default();
        let qemu_err = std::fs::read_to_string(s.0.join("qemu-stderr.log")).unwrap_or_default();
        let console = save_console(&s.0, &run.dir, &log_name);
        let home_dir = stage.0.join(format!("b{b}"));
        let home = bring_home(&s.0, &home_dir);
        let boot = Boot {
            dir: home_dir,
            parts,
        };
        let got = boot.finished();
        done += got;
        boots.push(boot);
        if let Some(t) = &home.torn {
            eprintln!("xrunrig: the guest died writing a frame; dropped it ({t})");
        }
        channel = home.channel;
        let fault = crash::judge(&outcome, &raw, &qemu_err, p.quiet_bound);
        let failed = |what: String| {
            format!(
                "{what}\n  the guest was stopped; console log: {}\n  last console lines:\n    {}",
                console.display(),
                tail(&console, 8)
            )
        };
        let end = outcome.end.clone();
        let code = outcome.code;
        last = Some((outcome, accel, accel_note));
        match (&fault, home.rc) {
            // The final frame came home (the run in the guest ended and its results
            // are whole): the emulator's trouble after that cost nothing.
            (Some(f), Some(rc)) if f.cause == Cause::Emulator => {
                eprintln!(
                    "xrunrig: after the guest's results came home whole: {}: {}",
                    f.line, f.reason
                );
                finished_rc = Some(rc);
            }
            (Some(f), _)
                if f.cause == Cause::Emulator
                    && !p.parts_left(&boots, done).is_empty()
                    && resumed.len() < MAX_RESUMES
                    && !c.stop.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                eprintln!(
                    "xrunrig: {}: {}\n  after trial {done} of {total}; resuming the remaining trials in a fresh boot",
                    f.line, f.reason
                );
                resumed.push(stop_of(f, done, total, &log_name));
                continue;
            }
            (Some(f), _) => {
                let mut g = stop_of(f, done, total, &log_name);
                let what = if f.cause == Cause::Emulator {
                    let why = if c.stop.load(std::sync::atomic::Ordering::SeqCst) {
                        "interrupted; not resumed".to_string()
                    } else if resumed.len() >= MAX_RESUMES {
                        format!("resumed {} times already; not again", resumed.len())
                    } else {
                        "every trial had come home; nothing to resume, but the guest's \
                         final frame (its exit code) did not"
                            .to_string()
                    };
                    g.reason = Some(format!("{} ({why})", f.reason));
                    "the guest stopped on an emulator fault"
                } else {
                    "the guest kernel crashed"
                };
                fail = Some(format!(
                    "{what} after trial {done} of {total}: {}\n  {}.\n  \
                     The {done} finished trials are kept in {}; console log: {}",
                    f.line,
                    g.reason.clone().unwrap_or_default(),
                    run.dir.display(),
                    console.display()
                ));
                crash = Some(g);
                fail_blame = blame(&end, code, Some(f));
            }
            (None, Some(rc)) => finished_rc = Some(rc),
            (None, None) => {
                let what = match &end {
                    End::Interrupted => {
                        run.code = EXIT_INTERRUPTED;
                        "interrupted".to_string()
                    }
                    End::BootTimeout => format!(
                        "the guest did not reach its ready marker within {} s (boot failed or hung)",
                        p.boot_bound.as_secs()
                    ),
                    End::RunTimeout => format!(
                        "the guest run passed its bound of {} s",
                        p.run_bound.as_secs()
                    ),
                    End::Crashed(l) => format!("the guest kernel failed: {l}"),
                    End::Stalled(l) => format!("the guest's timers stopped: {l}"),
                    End::Silent(q) => format!(
                        "the guest printed nothing for {q:.0} s (bound {} s)",
                        p.quiet_bound.as_secs()
                    ),
                    End::Exited(st) => format!(
                        "QEMU exited ({st}) before the guest {}",
                        if run.boot_s.is_some() {
                            "shipped its results"
                        } else {
                            "was ready"
                        }
                    ),
                    End::Shipped => format!(
                        "the guest's results did not arrive whole: {}",
                        home.problem.clone().unwrap_or_else(|| "no frame".into())
                    ),
                };
                fail_blame = blame(&end, code, None);
                fail = Some(failed(if done > 0 {
                    format!("{what}; the {done} trials that finished are kept")
                } else {
                    what
                }));
            }
        }
        break;
    }
    drop(bar);
    let (outcome, accel, accel_note) = last.expect("one boot at least");
    // One boot that ran the whole run and shipped it: its results as they are.
    let plain = boots.len() == 1 && finished_rc.is_some() && crash.is_none();
    if plain {
        let from = boots[0].part_dir(0);
        move_tree(&from, &run.dir)?;
    } else if done > 0 || crash.is_some() || !resumed.is_empty() {
        resume::merge(
            &p.plan,
            &boots,
            &run.kernel.release,
            (&started, &crate::sys::utc_now().0),
            &run.dir,
        )?;
    }
    let mut guest = record::guest_section(c, &run.kernel, &outcome, accel, accel_note, channel);
    guest.wall_s = Some((run.wall_s * 1000.0).round() / 1000.0);
    guest.boot_s = run.boot_s;
    guest.resumed = resumed;
    guest.crash = crash.clone();
    if !plain || fail.is_some() {
        let _ = record::patch_run_json(&run.dir, c.args, guest, fail.as_deref());
    } else {
        record::patch_run_json(&run.dir, c.args, guest, None)?;
    }
    tables::print_kernel(run, &outcome, p.plan.kind);
    if let Some(f) = fail {
        run.blame = Some(fail_blame);
        return Err(f);
    }
    let rc = finished_rc.unwrap_or(EXIT_FAILED);
    run.code = rc;
    if rc != 0 {
        eprintln!("xrunrig: the run in the guest exited with {rc} (its messages are above)");
    }
    Ok(())
}

/// Moves a directory's contents into `to` (a rename per entry; a copy across
/// filesystems).
fn move_tree(from: &Path, to: &Path) -> Result<(), String> {
    let rd = std::fs::read_dir(from).map_err(|e| {
        format!(
            "the guest's results are not where its frames put them ({}): {e}",
            from.display()
        )
    })?;
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in rd.flatten() {
        let dst = to.join(e.file_name());
        if std::fs::rename(e.path(), &dst).is_err() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                move_tree(&e.path(), &dst)?;
            } else {
                std::fs::copy(e.path(), &dst).map_err(|x| format!("{}: {x}", dst.display()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ends no console names: a guest that never got ready or ran past the run's
    /// bound is its kernel's (as `git bisect skip` would have it); results lost on the
    /// way, a QEMU that failed or was killed, Ctrl-C are the machine's.
    #[test]
    fn whose_an_unjudged_end_is() {
        for e in [End::BootTimeout, End::RunTimeout, End::Crashed("x".into())] {
            assert_eq!(blame(&e, None, None), Blame::Kernel, "{e:?}");
        }
        assert_eq!(
            blame(&End::Exited("exit status: 0".into()), Some(0), None),
            Blame::Kernel
        );
        for (e, code) in [
            (End::Exited("exit status: 1".into()), Some(1)),
            (End::Exited("signal: 9 (SIGKILL)".into()), None),
            (End::Shipped, None),
            (End::Interrupted, None),
            (End::Silent(70.0), None),
        ] {
            assert_eq!(blame(&e, code, None), Blame::Machine, "{e:?}");
        }
    }
}
