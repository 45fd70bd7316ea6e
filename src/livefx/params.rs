//! A livefx run's audio parameters, settled before anything is changed: the CPUs the
//! rig pins to are online, each setting's parameters resolve (command line over the
//! setting over the rig), a backend asked for by name answers, and the plan is told.

use super::config::Config;
use super::trial::Params;
use crate::audio::{BackendChoice, BackendKind, LoopbackSpec, ProbeSpec, StreamSpec, select};
use crate::exit::EXIT_REFUSED;
use crate::options::AudioOptions;
use crate::rig::livefx::Asked;
use crate::sweep::Prepared;

/// Refuses a rig that pins livefx threads to CPUs this machine does not have online.
pub fn check_cpus(p: &Prepared, cfg: &Config) -> Result<(), i32> {
    if let Err(e) = missing_cpus(&p.plan.rig.name, cfg, &crate::sys::online_cpus()) {
        eprintln!("xrunrig: {e}");
        return Err(EXIT_REFUSED);
    }
    Ok(())
}

/// Why a rig whose livefx threads pin to CPUs not in `online` is refused (`run` and
/// `check` say the same).
pub fn missing_cpus(rig: &str, cfg: &Config, online: &[usize]) -> Result<(), String> {
    let missing: Vec<usize> = cfg
        .cpus_used()
        .into_iter()
        .filter(|c| !online.contains(c))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let want = cfg.cpus_used().iter().max().map_or(1, |m| m + 1).max(4);
    Err(format!(
        "rig '{rig}' pins livefx threads to CPUs {} but this machine has only {} online. \
         Nothing was changed. Edit the rig's cpus, or run it in a guest kernel with enough CPUs \
         (--kernel debian:6.12 --cpus {want}).",
        crate::sys::format_cpu_set(&missing),
        crate::sys::format_cpu_set(online)
    ))
}

/// Each setting's audio parameters, in the order of `p.plan.settings`; auto's probe runs once
/// per (backend, device).
pub fn resolve_settings(p: &Prepared, cfg: &Config) -> Result<Vec<Params>, i32> {
    let mut cache = Vec::new();
    let mut params = Vec::new();
    for (s, asked) in p.plan.settings.iter().zip(&p.plan.audio) {
        let Some(asked) = asked else {
            eprintln!(
                "xrunrig: setting '{}': the plan has no audio for it",
                s.name
            );
            return Err(EXIT_REFUSED);
        };
        match resolve(cfg, &p.plan.choices.audio, asked, &mut cache) {
            Ok(x) => params.push(x),
            Err(e) => {
                eprintln!("xrunrig: setting '{}': {e}", s.name);
                return Err(EXIT_REFUSED);
            }
        }
    }
    Ok(params)
}

/// A backend asked for by name must answer before anything is changed.
pub fn probe_named(p: &Prepared, params: &[Params]) -> Result<(), i32> {
    if let Err(e) = probe_backends(&p.plan.settings, params) {
        eprintln!("xrunrig: {e}");
        return Err(EXIT_REFUSED);
    }
    Ok(())
}

/// Each setting's backend answers its probe (`run` and `check` say the same).
pub fn probe_backends(
    settings: &[crate::knobs::profile::Setting],
    params: &[Params],
) -> Result<(), String> {
    for (s, x) in settings.iter().zip(params) {
        let probe = x.kind.backend().probe(&ProbeSpec::device(&x.spec.device));
        if let Err(e) = probe {
            let hint = match x.kind {
                BackendKind::Jack => "start a JACK server or name it with --device NAME",
                _ => "name a card with --device (e.g. hw:1; see `aplay -l`)",
            };
            return Err(format!(
                "setting '{}': backend {}: {e}. Nothing was changed. Either {hint}, \
                 or use --backend clock or auto.",
                s.name,
                x.kind.name()
            ));
        }
    }
    Ok(())
}

/// Tells what the run will do: its size, then each setting's backend and parameters.
pub fn announce(p: &Prepared, cfg: &Config, params: &[Params]) {
    crate::note!(
        "xrunrig: {} — {} trial(s) × {} setting(s) × {} variant(s) of {:.0} s, results in {}",
        p.plan.rig.name,
        p.plan.trials,
        p.plan.settings.len(),
        p.plan.variants.len(),
        cfg.duration_ns as f64 / 1e9,
        p.dir.display()
    );
    for (s, x) in p.plan.settings.iter().zip(params) {
        crate::note!(
            "xrunrig: setting '{}': backend {} ({}), period {}, {} Hz{}{}",
            s.name,
            x.kind.name(),
            x.why,
            x.spec.period,
            x.spec.rate,
            if x.inject_every > 0 {
                format!(
                    ", injected overrun of {}× the period every {} cycles",
                    x.inject_factor, x.inject_every
                )
            } else {
                String::new()
            },
            if x.loopback {
                ", loopback check on"
            } else {
                ""
            }
        );
    }
    if let Some(n) = &p.plan.settings_note {
        crate::note!("xrunrig: {n}");
    }
}

/// One setting's audio parameters: what the plan asked (`Asked`) with the backend
/// `auto` picks, probed here. `cache` keeps auto's probe per (backend, device), so it
/// runs once.
pub fn resolve(
    cfg: &Config,
    a: &AudioOptions,
    asked: &Asked,
    cache: &mut Vec<((BackendChoice, Option<String>), select::Selected)>,
) -> Result<Params, String> {
    let Asked {
        backend: choice,
        device,
        period,
        period_explicit,
        rate,
        nperiods,
    } = asked.clone();
    let key = (choice, device.clone());
    let sel = match cache.iter().find(|(k, _)| *k == key) {
        Some((_, s)) => s.clone(),
        None => {
            let s = select::select(choice, &device);
            cache.push((key, s.clone()));
            s
        }
    };
    let loopback = a.loopback || cfg.loopback.enabled;
    let inject_factor = a.inject_factor.unwrap_or(cfg.inject_factor);
    Ok(Params {
        kind: sel.kind,
        why: sel.why,
        spec: StreamSpec {
            period,
            rate,
            nperiods,
            device,
            priority: cfg.callback_priority,
            cpus: cfg.callback_cpus.clone(),
            period_explicit,
            loopback: loopback.then(|| LoopbackSpec {
                playback: cfg.loopback.playback.clone(),
                capture: cfg.loopback.capture.clone(),
                // Both capped (MAX_NPERIODS × MAX_PERIOD): no overflow.
                clock_latency: cfg.loopback.clock_latency.unwrap_or(nperiods * period),
            }),
            // A JACK server's period the run changes is the run's knob: journaled.
            journal: Some(crate::knobs::JackPeriodJournal::shared()),
        },
        duration_ns: cfg.duration_ns,
        inject_every: a.inject_every.unwrap_or(cfg.inject_every),
        inject_factor,
        loopback,
        // A bar's live line on a terminal, plain lines elsewhere, none with --quiet
        // (output::progress decides; a guest's console gets plain lines).
        progress: crate::output::progress::style() != crate::output::progress::Style::Off,
    })
}
