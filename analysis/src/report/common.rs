//! Report sections every rig kind shares: the doctor's warnings, what ran, the kernel
//! and the settings in force.

use crate::doc::Block;
use crate::load::json::{at, f64_at, str_at};
use serde_json::Value;

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

struct Check {
    status: String,
    name: String,
    found: Option<String>,
    fix: Option<String>,
}

fn check_of(name_hint: Option<&str>, v: &Value) -> Option<Check> {
    let pick = |keys: &[&str]| keys.iter().find_map(|k| str_at(v, &[k]));
    let status = pick(&["status", "level", "result", "verdict", "state"])?.to_lowercase();
    Some(Check {
        status,
        name: pick(&["name", "check", "id", "title"])
            .or(name_hint.map(|s| s.to_string()))
            .unwrap_or_else(|| "check".into()),
        found: pick(&["found", "value", "detail", "message", "why"]),
        fix: pick(&["fix", "hint", "remedy"]),
    })
}

/// Failing and warning doctor findings, in whatever shape run.json holds them.
pub fn doctor(run: &Value) -> Vec<String> {
    let Some(d) = at(run, &["doctor"]) else {
        return vec![];
    };
    let mut checks = Vec::new();
    let list = d.get("checks").or(d.get("findings")).unwrap_or(d);
    match list {
        Value::Array(a) => checks.extend(a.iter().filter_map(|c| check_of(None, c))),
        Value::Object(o) => {
            for (k, c) in o {
                if let Some(ch) = check_of(Some(k), c) {
                    checks.push(ch);
                } else if let Value::Array(a) = c {
                    // Grouped by section: {"kernel": [..], "audio": [..]}.
                    checks.extend(a.iter().filter_map(|c| check_of(None, c)));
                }
            }
        }
        _ => {}
    }
    let rank = |s: &str| {
        if s.starts_with("fail") || s == "error" {
            0
        } else {
            1
        }
    };
    let mut bad: Vec<&Check> = checks
        .iter()
        .filter(|c| {
            c.status.starts_with("fail") || c.status.starts_with("warn") || c.status == "error"
        })
        .collect();
    bad.sort_by_key(|c| rank(&c.status));
    bad.iter()
        .map(|c| {
            let mut s = format!("{}: {}", c.status.to_uppercase(), c.name);
            if let Some(f) = &c.found {
                s += &format!(": {f}");
            }
            if let Some(f) = &c.fix {
                s += &format!(". Fix: {f}");
            }
            s
        })
        .collect()
}

pub fn what_ran(run: &Value, rig: &str, kind: &str, extra: Vec<(String, String)>) -> Block {
    let mut kv: Vec<(String, String)> = Vec::new();
    let desc = str_at(run, &["rig", "description"]);
    kv.push((
        "rig".into(),
        match desc {
            Some(d) => format!("{rig}: {d}"),
            None => rig.to_string(),
        },
    ));
    if let Some(sha) = str_at(run, &["rig", "sha256"]) {
        kv.push(("rig sha256".into(), sha.chars().take(16).collect()));
    }
    kv.push(("kind".into(), kind.to_string()));
    if let Some(vs) = at(run, &["variants"]).and_then(|v| v.as_array()) {
        for v in vs {
            let name = str_at(v, &["name"]).unwrap_or_default();
            let d = str_at(v, &["description"]).unwrap_or_default();
            kv.push((
                "variant".into(),
                if d.is_empty() {
                    name
                } else {
                    format!("{name}: {d}")
                },
            ));
        }
    }
    if let Some(p) = str_at(run, &["profile", "name"]) {
        kv.push(("profile".into(), p));
    }
    kv.extend(extra);
    if let (Some(a), Some(b)) = (str_at(run, &["started"]), str_at(run, &["ended"])) {
        kv.push(("ran".into(), format!("{a} to {b}")));
    }
    if let Some(c) = at(run, &["command"]).and_then(|c| c.as_array()) {
        let words: Vec<String> = c
            .iter()
            .filter_map(|w| w.as_str().map(String::from))
            .collect();
        kv.push(("command".into(), words.join(" ")));
    }
    if let Some(h) = str_at(run, &["host"]) {
        kv.push(("host".into(), h));
    }
    if let Some(v) = str_at(run, &["xrunrig_version"]) {
        kv.push(("xrunrig".into(), v));
    }
    if run.get("interrupted").and_then(|v| v.as_bool()) == Some(true) {
        kv.push((
            "interrupted".into(),
            "yes: the run was stopped early; results are partial".into(),
        ));
    }
    if let Some(e) = str_at(run, &["error"]) {
        kv.push(("error".into(), e));
    }
    Block::KeyVals(kv)
}

/// For a guest run under TCG: the figures are of an emulated machine. Said next to
/// the verdict so nobody reads them as this host's hardware.
pub fn emulated_note(run: &Value) -> Option<String> {
    let g = at(run, &["guest"])?;
    let emulated = g.get("emulated").and_then(Value::as_bool).unwrap_or(false)
        || str_at(g, &["accel"]).is_some_and(|a| a == "tcg");
    emulated.then(|| {
        format!(
            "Emulated: measured in a guest kernel ({}) under QEMU TCG, whose CPUs are \
             emulated. Timings are of that emulated machine, not of real hardware; \
             compare them only with other TCG runs.",
            str_at(g, &["kernel_release"])
                .or_else(|| str_at(g, &["kernel"]))
                .unwrap_or_else(|| "?".into())
        )
    })
}

pub fn kernel(run: &Value) -> Vec<Block> {
    if run.is_null() {
        return vec![Block::Para("run.json is missing: kernel unknown.".into())];
    }
    let mut kv = Vec::new();
    let rel = str_at(run, &["kernel", "release"]).unwrap_or_else(|| "?".into());
    let ver = str_at(run, &["kernel", "version"]).unwrap_or_default();
    let mach = str_at(run, &["kernel", "machine"]).unwrap_or_default();
    kv.push((
        "release".into(),
        format!("{rel} {ver} {mach}").trim().to_string(),
    ));
    if let Some(p) = str_at(run, &["kernel", "preemption"]) {
        kv.push(("preemption".into(), p));
    }
    if let Some(g) = at(run, &["guest"]) {
        let mut s = String::from("yes");
        for k in ["kernel", "image", "release", "accel", "cpus", "memory"] {
            if let Some(v) = str_at(g, &[k]) {
                s += &format!(", {k} {v}");
            }
        }
        kv.push(("guest".into(), s));
    }
    let model = str_at(run, &["cpus", "model"]).unwrap_or_else(|| "?".into());
    let count = f64_at(run, &["cpus", "count"]).map(|c| c as u64);
    let online = str_at(run, &["cpus", "online"]).unwrap_or_default();
    if count.is_some() || !online.is_empty() {
        kv.push((
            "cpus".into(),
            format!(
                "{} x {model}, online {online}",
                count.map_or("?".into(), |c| c.to_string())
            ),
        ));
    }
    if let Some(c) = str_at(run, &["kernel", "cmdline"]) {
        kv.push(("cmdline".into(), c));
    }
    vec![Block::KeyVals(kv)]
}

pub fn settings(run: &Value) -> Vec<Block> {
    let mut kv = Vec::new();
    if let Some(ss) = at(run, &["settings"]).and_then(|v| v.as_array()) {
        for s in ss {
            let name = str_at(s, &["name"]).unwrap_or_else(|| "?".into());
            let mut text = str_at(s, &["description"]).unwrap_or_default();
            match at(s, &["in_force"]) {
                Some(Value::Object(o)) if !o.is_empty() => {
                    let kvs: Vec<String> = o
                        .iter()
                        .map(|(k, v)| {
                            let v = match v {
                                Value::String(s) => s.clone(),
                                other => other.to_string(),
                            };
                            format!("{k}={v}")
                        })
                        .collect();
                    text += &format!("; in force: {}", kvs.join(", "));
                }
                _ => {
                    if at(s, &["requested"])
                        .and_then(|r| r.as_array())
                        .is_some_and(|a| a.is_empty())
                    {
                        text += "; machine as found";
                    }
                }
            }
            kv.push((name, text.trim_start_matches("; ").to_string()));
        }
    }
    if run.get("settings_applied").and_then(|v| v.as_bool()) == Some(false) {
        kv.push((
            "applied".into(),
            "no: the profile's settings were NOT applied".into(),
        ));
    }
    if let Some(n) = str_at(run, &["settings_note"]) {
        kv.push(("note".into(), n));
    }
    if let Some(r) = str_at(run, &["sched_rt_runtime_us"]) {
        kv.push(("RT throttling".into(), format!("sched_rt_runtime_us = {r}")));
    }
    for (key, label) in [("sched_features_before", "sched features")] {
        match at(run, &[key]) {
            Some(Value::String(s)) => kv.push((label.into(), s.clone())),
            Some(v) => {
                if let Some(r) = str_at(v, &["unreadable"]) {
                    kv.push((label.into(), format!("unreadable: {r}")));
                }
            }
            None => {}
        }
    }
    if kv.is_empty() {
        return vec![];
    }
    vec![Block::KeyVals(kv)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_shapes() {
        let a: Value = serde_json::from_str(
            r#"{"doctor":[{"name":"rtprio","status":"fail","found":"0","fix":"add @audio - rtprio 95"},
                          {"name":"hz","status":"pass"},{"name":"gov","status":"warn","found":"powersave"}]}"#,
        )
        .unwrap();
        let d = doctor(&a);
        assert_eq!(d.len(), 2);
        assert!(
            d[0].starts_with("FAIL: rtprio: 0. Fix: add @audio"),
            "{d:?}"
        );
        let b: Value =
            serde_json::from_str(r#"{"doctor":{"checks":{"x":{"level":"WARN","message":"m"}}}}"#)
                .unwrap();
        assert_eq!(doctor(&b), vec!["WARN: x: m"]);
        assert!(doctor(&serde_json::json!({"doctor": null})).is_empty());
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
    use serde_json::json;

    #[test]
    fn tcg_guests_are_labelled_and_others_not() {
        let tcg = json!({"guest": {"accel": "tcg", "emulated": true, "kernel_release": "6.12.117+deb12-amd64"}});
        let note = emulated_note(&tcg).unwrap();
        assert!(
            note.contains("6.12.117+deb12-amd64") && note.contains("emulated"),
            "{note}"
        );
        assert!(emulated_note(&json!({"guest": {"accel": "kvm", "emulated": false}})).is_none());
        assert!(emulated_note(&json!({"kernel": {"release": "6.18"}})).is_none());
    }
}
