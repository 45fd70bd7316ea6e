//! The host's side of a guest run's run.json: how the guest was run (the `guest`
//! section), and the host's command and paths beside the guest's.

use super::boot::emulated_note;
use super::kernel::Kernel;
use super::qemu::{Accel, Outcome};
use super::run_ctx::Ctx;
use crate::options::RunOptions;
use results::run::{GuestHost, GuestSection, RunDoc};
use std::path::Path;

/// Milliseconds are enough for a boot or wall time.
fn ms(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// run.json's `guest` section for one kernel's run.
pub fn guest_section(
    c: &Ctx,
    k: &Kernel,
    outcome: &Outcome,
    accel: Accel,
    accel_note: String,
    channel: &str,
) -> GuestSection {
    let p = c.plan;
    GuestSection {
        accel: Some(accel.name().into()),
        accel_note: Some(accel_note),
        results_channel: Some(channel.into()),
        emulated: accel == Accel::Tcg,
        note: Some(emulated_note(accel).into()),
        cpus: Some(p.cpus.into()),
        memory: Some(p.memory.clone()),
        kernel: Some(k.label.clone()),
        kernel_release: Some(k.release.clone()),
        kernel_image: Some(k.image.display().to_string()),
        kernel_package: k.package.clone(),
        boot: Some(k.boot_note.clone()),
        qemu: Some(c.qemu_version.into()),
        boot_s: outcome.ready_s.map(ms),
        guest_uptime_at_start_s: outcome.guest_uptime_s,
        wall_s: Some(ms(outcome.wall_s)),
        cmdline: Some(p.cmdline.clone()),
        command: p.command.clone(),
        console_log: Some("guest-console.log".into()),
        host: Some(GuestHost {
            hostname: Some(crate::output::provenance::hostname()),
            kernel: Some(crate::output::provenance::kernel()),
            cpus: Some(crate::output::provenance::cpus()),
        }),
        image: None,
        release: None,
        crash: None,
        resumed: vec![],
        kernel_build: k.build.clone(),
        boot_place: c.place.clone(),
    }
}

/// run.json from the guest, with the host's command and paths and the `guest` section;
/// `error`, when the guest did not finish (its kernel crashed), says so.
pub fn patch_run_json(
    dir: &Path,
    a: &RunOptions,
    guest: GuestSection,
    error: Option<&str>,
) -> Result<(), String> {
    let p = dir.join(results::RUN_JSON);
    let host_command: Vec<String> = std::env::args().collect();
    let Ok(text) = std::fs::read_to_string(&p) else {
        // The guest refused before writing run.json; record what we know.
        let doc = RunDoc {
            format: results::FORMAT_VERSION,
            command: host_command,
            error: Some(error.map_or_else(
                || "the run inside the guest wrote no run.json (see guest-console.log)".into(),
                str::to_string,
            )),
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
    doc.rerun_of = a.choices.rerun_of.clone();
    doc.guest = Some(guest);
    if let Some(e) = error {
        doc.error = Some(e.to_string());
    }
    crate::output::write_json(&p, &doc)
}
