//! Report sections every rig kind shares: the doctor's warnings, what ran, the kernel
//! and the settings in force.

use crate::doc::Block;
use results::run::{Finding, RunDoc, SchedFeatures, Status};

/// "10.0 s", "12 min 5 s", "20 h 50 min".
pub fn fmt_dur(s: f64) -> String {
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {} s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!(
            "{} h {} min",
            (s / 3600.0) as u64,
            ((s % 3600.0) / 60.0) as u64
        )
    }
}

/// A value with precision that suits its size (1499.6, 12.34, 0.830), as the engine's
/// table prints it.
pub fn fmt_val(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// 12345678 -> "12,345,678".
pub fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// µs with a unit that suits: "412 us", "9.30 ms".
pub fn fmt_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", fmt_val(us / 1000.0))
    } else {
        format!("{} us", fmt_val(us))
    }
}

/// "< 100 ms" -> "under 100 ms".
pub fn bound_words(b: &str) -> String {
    let b = b.trim();
    for (op, w) in [
        ("<=", "at most"),
        (">=", "at least"),
        ("<", "under"),
        (">", "over"),
    ] {
        if let Some(rest) = b.strip_prefix(op) {
            return format!("{w} {}", rest.trim());
        }
    }
    b.to_string()
}

/// Failing and warning doctor findings, in whatever shape run.json holds them
/// (results::run::DoctorSection reads them all).
pub fn doctor(run: &RunDoc) -> Vec<String> {
    let Some(d) = &run.doctor else {
        return vec![];
    };
    // Failures first, then warnings, each in the doctor's order.
    let mut bad: Vec<&Finding> = d
        .checks
        .iter()
        .filter(|c| matches!(c.status, Status::Fail | Status::Warn))
        .collect();
    bad.sort_by_key(|c| c.status);
    bad.iter()
        .map(|c| {
            let mut s = format!("{}: {}", c.status.label(), c.label().unwrap_or("check"));
            if let Some(f) = c.text() {
                s += &format!(": {f}");
            }
            if let Some(f) = &c.fix {
                s += &format!(". Fix: {f}");
            }
            s
        })
        .collect()
}

pub fn what_ran(run: &RunDoc, rig: &str, kind: &str, extra: Vec<(String, String)>) -> Block {
    let mut kv: Vec<(String, String)> = Vec::new();
    let ri = run.rig.as_ref();
    kv.push((
        "rig".into(),
        match ri.and_then(|r| r.description.as_ref()) {
            Some(d) => format!("{rig}: {d}"),
            None => rig.to_string(),
        },
    ));
    if let Some(sha) = ri.and_then(|r| r.sha256.as_ref()) {
        kv.push(("rig sha256".into(), sha.chars().take(16).collect()));
    }
    kv.push(("kind".into(), kind.to_string()));
    for v in &run.variants {
        kv.push((
            "variant".into(),
            if v.description.is_empty() {
                v.name.clone()
            } else {
                format!("{}: {}", v.name, v.description)
            },
        ));
    }
    if let Some(p) = run.profile.as_ref().and_then(|p| p.name.clone()) {
        kv.push(("profile".into(), p));
    }
    kv.extend(extra);
    kv.extend(provenance(run));
    Block::KeyVals(kv)
}

/// When and how it ran, where, with which xrunrig, and whether it was cut short: the
/// end of "What ran" for every kind.
pub fn provenance(run: &RunDoc) -> Vec<(String, String)> {
    let mut kv: Vec<(String, String)> = Vec::new();
    if let (Some(a), Some(b)) = (&run.started, &run.ended) {
        kv.push(("ran".into(), format!("{a} to {b}")));
    }
    if !run.command.is_empty() {
        kv.push(("command".into(), run.command.join(" ")));
    }
    if let Some(h) = &run.host {
        kv.push(("host".into(), h.clone()));
    }
    if let Some(v) = &run.xrunrig_version {
        // The commit it was built from, when run.json has it (newer runs).
        let commit = run.git.as_ref().and_then(|g| {
            g.commit.as_ref().map(|c| {
                let dirty = if g.dirty == Some(true) { ", dirty" } else { "" };
                format!(" (commit {c}{dirty})")
            })
        });
        kv.push((
            "xrunrig".into(),
            format!("{v}{}", commit.unwrap_or_default()),
        ));
    }
    if run.interrupted {
        kv.push((
            "interrupted".into(),
            "yes: the run was stopped early; results are partial".into(),
        ));
    }
    if let Some(e) = &run.error {
        kv.push(("error".into(), e.clone()));
    }
    kv
}

/// For a guest run under TCG: the figures are of an emulated machine. Said next to
/// the verdict so nobody reads them as this host's hardware.
pub fn emulated_note(run: &RunDoc) -> Option<String> {
    let g = run.guest.as_ref()?;
    let emulated = g.emulated || g.accel.as_deref() == Some("tcg");
    emulated.then(|| {
        format!(
            "Emulated: measured in a guest kernel ({}) under QEMU TCG, whose CPUs are \
             emulated. Timings are of that emulated machine, not of real hardware; \
             compare them only with other TCG runs.",
            g.kernel_release
                .as_deref()
                .or(g.kernel.as_deref())
                .unwrap_or("?")
        )
    })
}

/// Other processes' share of the CPUs above which the verdict says the run was loaded:
/// a tenth of the machine is more than a quiet desktop uses beside an audio session.
pub const LOADED_PERCENT: f64 = 10.0;

/// What the verdict says of the machine around the run, when it could explain the
/// result: a hypervisor under it, other processes' CPU time beside it.
pub fn environment_notes(run: &RunDoc) -> Vec<String> {
    let Some(e) = run.environment.as_ref() else {
        return vec![];
    };
    let mut out = vec![];
    if let Some(hv) = &e.virtualised {
        out.push(format!(
            "Virtualised: this machine runs under {hv}. Its host and the host's other \
             guests can take CPU time from it at any moment, which no setting here \
             controls; misses may be theirs."
        ));
    }
    if let Some(p) = e.others_cpu_percent.filter(|p| *p >= LOADED_PERCENT) {
        out.push(format!(
            "Under load: other processes used {p:.0} % of all CPUs' time while the trials \
             ran (/proc/stat's busy time less xrunrig's own, at the start and end of the \
             trials). Misses may be theirs, not the kernel's: run it again with the \
             machine otherwise idle before reporting it."
        ));
    }
    out
}

/// The "Reproduce" section of a run's report: `xrunrig run --from` on this directory
/// (the rig and profile from run.json's text, the same options and backend), on this
/// kernel or another, and the command as it was given. None for what is not a run
/// (a watch session, a run.json without the rig's text).
/// `redacted`: the command is shown as `--redact` cuts it (`redact::command`).
pub fn reproduce(run: &RunDoc, dir_name: &str, redacted: bool) -> Option<Vec<Block>> {
    if run.watch.is_some() || run.command.len() < 2 {
        return None;
    }
    run.rig.as_ref()?.text.as_ref()?;
    let given = match &run.rerun_of {
        Some(r) if !r.command.is_empty() => &r.command,
        _ => &run.command,
    };
    let (given, said) = if redacted {
        (
            given.join(" "),
            "The command as it was given, its paths cut to their file names (--redact):",
        )
    } else {
        (
            given.join(" "),
            "The command as it was given (its paths are the sender's):",
        )
    };
    Some(vec![
        Block::Para(
            "Run it again from this directory's run.json: the rig and profile as they ran \
             (their recorded text, checked against their sha256), the same options and \
             backend. Give --kernel to run it in a guest kernel instead of the recorded one; \
             --out to choose where the rerun goes."
                .into(),
        ),
        Block::Pre(vec![
            format!("xrunrig run --from {dir_name}"),
            format!("xrunrig run --from {dir_name} --kernel debian:6.12"),
        ]),
        Block::Para(said.into()),
        Block::Pre(vec![given]),
    ])
}

pub fn kernel(run: &RunDoc, has_run: bool) -> Vec<Block> {
    if !has_run {
        return vec![Block::Para("run.json is missing: kernel unknown.".into())];
    }
    let mut kv = Vec::new();
    let k = run.kernel.clone().unwrap_or_default();
    let rel = k.release.unwrap_or_else(|| "?".into());
    let ver = k.version.unwrap_or_default();
    let mach = k.machine.unwrap_or_default();
    kv.push((
        "release".into(),
        format!("{rel} {ver} {mach}").trim().to_string(),
    ));
    if let Some(p) = k.preemption {
        kv.push(("preemption".into(), p));
    }
    if let Some(g) = &run.guest {
        let mut s = String::from("yes");
        let cpus = g.cpus.map(|c| c.to_string());
        for (k, v) in [
            ("kernel", &g.kernel),
            ("image", &g.image),
            ("release", &g.release),
            ("accel", &g.accel),
            ("cpus", &cpus),
            ("memory", &g.memory),
        ] {
            if let Some(v) = v {
                s += &format!(", {k} {v}");
            }
        }
        kv.push(("guest".into(), s));
        // A guest that stopped mid-run: resumed in a fresh boot, or its kernel crashed.
        for (what, st) in g
            .resumed
            .iter()
            .map(|r| ("guest resumed", r))
            .chain(g.crash.iter().map(|c| ("guest crashed", c)))
        {
            kv.push((
                what.into(),
                format!(
                    "after trial {} of {}: {}; {} ({})",
                    st.after_trial,
                    st.of.map_or("?".into(), |n| n.to_string()),
                    st.line
                        .as_deref()
                        .or(st.console_excerpt.first().map(|l| l.as_str()))
                        .unwrap_or("-"),
                    st.reason.as_deref().unwrap_or("-"),
                    st.console_log.as_deref().unwrap_or("console not saved")
                ),
            ));
        }
    }
    let c = run.cpus.clone().unwrap_or_default();
    let model = c.model.unwrap_or_else(|| "?".into());
    let online = c.online.unwrap_or_default();
    if c.count.is_some() || !online.is_empty() {
        kv.push((
            "cpus".into(),
            format!(
                "{} x {model}, online {online}",
                c.count.map_or("?".into(), |c| c.to_string())
            ),
        ));
    }
    if let Some(c) = k.cmdline {
        kv.push(("cmdline".into(), c));
    }
    vec![Block::KeyVals(kv)]
}

pub fn settings(run: &RunDoc) -> Vec<Block> {
    let mut kv = Vec::new();
    for s in &run.settings {
        let name = s.name.clone().unwrap_or_else(|| "?".into());
        let mut text = s.description.clone().unwrap_or_default();
        match &s.in_force {
            Some(f) if !f.is_empty() => {
                let kvs: Vec<String> = f.iter().map(|(k, v)| format!("{k}={v}")).collect();
                text += &format!("; in force: {}", kvs.join(", "));
            }
            _ => {
                if s.requested.as_ref().is_some_and(|r| r.is_empty()) {
                    text += "; machine as found";
                }
            }
        }
        kv.push((name, text.trim_start_matches("; ").to_string()));
    }
    if run.settings_applied == Some(false) {
        kv.push((
            "applied".into(),
            "no: the profile's settings were NOT applied".into(),
        ));
    }
    if let Some(n) = &run.settings_note {
        kv.push(("note".into(), n.clone()));
    }
    if let Some(r) = &run.sched_rt_runtime_us {
        kv.push(("RT throttling".into(), format!("sched_rt_runtime_us = {r}")));
    }
    match &run.sched_features_before {
        Some(SchedFeatures::Read(s)) => kv.push(("sched features".into(), s.clone())),
        Some(SchedFeatures::Unreadable { unreadable }) => {
            kv.push(("sched features".into(), format!("unreadable: {unreadable}")))
        }
        None => {}
    }
    if kv.is_empty() {
        return vec![];
    }
    vec![Block::KeyVals(kv)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(json: &str) -> RunDoc {
        RunDoc::from_json(json).unwrap()
    }

    #[test]
    fn a_run_ends_with_how_to_run_it_again() {
        let r = run(
            r#"{"command":["xrunrig","run","/home/a/x.toml","--trials","3"],
                       "rig":{"text":"name = 'x'"}}"#,
        );
        let b = reproduce(&r, "x-20261207", false).unwrap();
        let Block::Pre(cmds) = &b[1] else {
            panic!("{b:?}")
        };
        assert_eq!(cmds[0], "xrunrig run --from x-20261207");
        let Block::Pre(given) = &b[3] else {
            panic!("{b:?}")
        };
        assert_eq!(given[0], "xrunrig run /home/a/x.toml --trials 3");
        // Without the rig's text there is nothing --from could run.
        assert!(
            reproduce(
                &run(r#"{"command":["xrunrig","run","x.toml"]}"#),
                "d",
                false
            )
            .is_none()
        );
    }

    #[test]
    fn the_verdict_names_a_hypervisor_and_a_load_it_could_be_explained_by() {
        assert!(environment_notes(&run("{}")).is_empty());
        let quiet = run(r#"{"environment":{"others_cpu_percent":9.9}}"#);
        assert!(environment_notes(&quiet).is_empty());
        let n = environment_notes(&run(
            r#"{"environment":{"virtualised":"KVM","others_cpu_percent":10.0}}"#,
        ));
        assert_eq!(n.len(), 2, "{n:?}");
        assert!(n[0].starts_with("Virtualised: this machine runs under KVM."));
        assert!(n[1].starts_with("Under load: other processes used 10 % "));
    }

    #[test]
    fn doctor_shapes() {
        let a = run(
            r#"{"doctor":[{"name":"rtprio","status":"fail","found":"0","fix":"add @audio - rtprio 95"},
                          {"name":"hz","status":"pass"},{"name":"gov","status":"warn","found":"powersave"}]}"#,
        );
        let d = doctor(&a);
        assert_eq!(d.len(), 2);
        assert!(
            d[0].starts_with("FAIL: rtprio: 0. Fix: add @audio"),
            "{d:?}"
        );
        let b = run(r#"{"doctor":{"checks":{"x":{"level":"WARN","message":"m"}}}}"#);
        assert_eq!(doctor(&b), vec!["WARN: x: m"]);
        assert!(doctor(&run(r#"{"doctor": null}"#)).is_empty());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_count(12345678), "12,345,678");
        assert_eq!(fmt_dur(75_000.0), "20 h 50 min");
        assert_eq!(bound_words("< 100 ms"), "under 100 ms");
        assert_eq!(fmt_us(9300.0), "9.30 ms");
    }
}

#[cfg(test)]
mod emulated_tests {
    use super::emulated_note;
    use results::run::RunDoc;

    fn run(json: &str) -> RunDoc {
        RunDoc::from_json(json).unwrap()
    }

    #[test]
    fn tcg_guests_are_labelled_and_others_not() {
        let tcg = run(
            r#"{"guest": {"accel": "tcg", "emulated": true, "kernel_release": "6.12.117+deb12-amd64"}}"#,
        );
        let note = emulated_note(&tcg).unwrap();
        assert!(
            note.contains("6.12.117+deb12-amd64") && note.contains("emulated"),
            "{note}"
        );
        assert!(emulated_note(&run(r#"{"guest": {"accel": "kvm", "emulated": false}}"#)).is_none());
        assert!(emulated_note(&run(r#"{"kernel": {"release": "6.18"}}"#)).is_none());
    }
}
