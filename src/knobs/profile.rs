//! Profiles: the named settings a run is swept across (sched features, debugfs
//! tunables, sysctls, audio backend and period).

use super::knob::{DEBUGFS, SYSCTLS};
use crate::rig::limits::MAX_SETTINGS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: Option<String>,
    description: Option<String>,
    common: Option<Spanned<SettingDef>>,
    #[serde(default)]
    settings: Vec<Spanned<SettingDef>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SettingDef {
    name: Option<Spanned<String>>,
    description: Option<String>,
    #[serde(default)]
    features: Vec<Spanned<String>>,
    #[serde(default)]
    sysctl: BTreeMap<String, Spanned<toml::Value>>,
    #[serde(default)]
    debugfs: BTreeMap<String, Spanned<toml::Value>>,
    audio: Option<Spanned<AudioSetting>>,
}

/// Audio parameters a setting may fix (used by audio rigs; others ignore them).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AudioSetting {
    /// A bad name is refused as the profile is read, with the names it takes.
    pub backend: Option<crate::rig::backend::BackendChoice>,
    pub device: Option<String>,
    pub period: Option<u32>,
    pub rate: Option<u32>,
    pub nperiods: Option<u32>,
}

/// One change a setting asks for, before it is resolved to a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Change {
    /// Feature name without NO_, and whether it should be on.
    Feature(String, bool),
    Sysctl(String, String),
    Debugfs(String, String),
}

impl Change {
    pub fn describe(&self) -> String {
        match self {
            Change::Feature(n, true) => n.clone(),
            Change::Feature(n, false) => format!("NO_{n}"),
            Change::Sysctl(k, v) => format!("{k}={v}"),
            Change::Debugfs(k, v) => format!("{k}={v}"),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Setting {
    pub name: String,
    pub description: String,
    pub changes: Vec<Change>,
    pub audio: Option<AudioSetting>,
}

#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub path: Option<PathBuf>,
    pub text: String,
    pub settings: Vec<Setting>,
}

impl Profile {
    /// No profile: one setting that changes nothing.
    pub fn as_is() -> Profile {
        Profile {
            name: "as-is".into(),
            description: "the machine's settings as they are".into(),
            path: None,
            text: String::new(),
            settings: vec![Setting {
                name: "as-is".into(),
                description: "nothing changed".into(),
                changes: vec![],
                audio: None,
            }],
        }
    }

    pub fn changes_anything(&self) -> bool {
        self.settings.iter().any(|s| !s.changes.is_empty())
    }
}

fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Boolean(b) => Some(if *b { "1" } else { "0" }.into()),
        _ => None,
    }
}

/// A profile table (sysctl or debugfs): its name for messages, the knobs allowed in it,
/// its entries, and how an entry becomes a change.
type KnobTable<'a> = (
    &'static str,
    &'static [&'static str],
    &'a BTreeMap<String, Spanned<toml::Value>>,
    fn(String, String) -> Change,
);

/// A setting's `audio`, its counts within what the backends buffer (reported at the
/// `audio` table).
fn audio(
    d: &SettingDef,
    problems: &mut Vec<(std::ops::Range<usize>, String)>,
) -> Option<AudioSetting> {
    use crate::rig::limits::{MAX_NPERIODS, MAX_PERIOD, MAX_RATE};
    let a = d.audio.as_ref()?;
    for (what, v, max) in [
        ("period", a.get_ref().period, MAX_PERIOD),
        ("rate", a.get_ref().rate, MAX_RATE),
        ("nperiods", a.get_ref().nperiods, MAX_NPERIODS),
    ] {
        if let Some(v) = v
            && !(1..=max).contains(&v)
        {
            problems.push((a.span(), format!("audio.{what} = {v}: use 1..={max}")));
        }
    }
    Some(a.get_ref().clone())
}

fn changes(d: &SettingDef, problems: &mut Vec<(std::ops::Range<usize>, String)>) -> Vec<Change> {
    let mut out = Vec::new();
    for f in &d.features {
        let raw = f.get_ref().trim();
        let ok = !raw.is_empty()
            && raw
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !ok {
            problems.push((
                f.span(),
                format!("'{raw}' is not a sched feature name (e.g. RT_PUSH_IPI or NO_RT_PUSH_IPI)"),
            ));
            continue;
        }
        match raw.strip_prefix("NO_") {
            Some(n) => out.push(Change::Feature(n.to_string(), false)),
            None => out.push(Change::Feature(raw.to_string(), true)),
        }
    }
    let tables: [KnobTable; 2] = [
        ("sysctl", SYSCTLS, &d.sysctl, Change::Sysctl),
        ("debugfs tunable", DEBUGFS, &d.debugfs, Change::Debugfs),
    ];
    for (what, allowed, map, make) in tables {
        for (k, v) in map {
            if !allowed.contains(&k.as_str()) {
                problems.push((
                    v.span(),
                    format!(
                        "{what} '{k}' is not one xrunrig writes; allowed: {}",
                        allowed.join(", ")
                    ),
                ));
            } else if let Some(t) = value_text(v.get_ref()) {
                out.push(make(k.clone(), t));
            } else {
                problems.push((v.span(), format!("{what} '{k}': give a number or a string")));
            }
        }
    }
    out
}

/// Parses profile text; errors are `file:line:col: message` lines.
pub fn parse(path: &Path, text: &str) -> Result<Profile, String> {
    let file = path.display().to_string();
    let fmt = |items: Vec<(std::ops::Range<usize>, String)>| {
        items
            .into_iter()
            .map(|(s, m)| {
                let (l, c) = crate::rig::line_col(text, s.start);
                format!("{file}:{l}:{c}: {m}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let pf: ProfileFile = toml::from_str(text).map_err(|e| {
        fmt(vec![(
            e.span().unwrap_or(0..0),
            e.message().trim().replace('\n', " "),
        )])
    })?;
    let mut problems = Vec::new();
    let common = pf
        .common
        .as_ref()
        .map(|c| {
            if c.get_ref().name.is_some() {
                problems.push((
                    c.span(),
                    "[common] has no name: it applies to every setting".into(),
                ));
            }
            changes(c.get_ref(), &mut problems)
        })
        .unwrap_or_default();
    let common_audio = pf
        .common
        .as_ref()
        .and_then(|c| audio(c.get_ref(), &mut problems));
    if pf.settings.is_empty() {
        problems.push((0..0, "the profile has no [[settings]]".into()));
    }
    if let Some(s) = pf.settings.get(MAX_SETTINGS) {
        problems.push((
            s.span(),
            format!("at most {MAX_SETTINGS} [[settings]] in a profile"),
        ));
    }
    let mut settings = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    for s in pf.settings.iter().take(MAX_SETTINGS) {
        let d = s.get_ref();
        let Some(name) = &d.name else {
            problems.push((s.span(), "each [[settings]] needs a name".into()));
            continue;
        };
        if !names.insert(name.get_ref().clone()) {
            problems.push((
                name.span(),
                format!("setting '{}' is defined twice", name.get_ref()),
            ));
        }
        let mut ch = common.clone();
        for c in changes(d, &mut problems) {
            // The setting's own value wins over [common] for the same knob.
            ch.retain(|x| !same_knob(x, &c));
            ch.push(c);
        }
        settings.push(Setting {
            name: name.get_ref().clone(),
            description: d.description.clone().unwrap_or_default(),
            changes: ch,
            audio: audio(d, &mut problems).or_else(|| common_audio.clone()),
        });
    }
    if !problems.is_empty() {
        return Err(fmt(problems));
    }
    Ok(Profile {
        name: pf.name.unwrap_or_else(|| {
            path.file_stem()
                .map_or("profile".into(), |s| s.to_string_lossy().into_owned())
        }),
        description: pf.description.unwrap_or_default(),
        path: Some(path.to_path_buf()),
        text: text.to_string(),
        settings,
    })
}

fn same_knob(a: &Change, b: &Change) -> bool {
    match (a, b) {
        (Change::Feature(x, _), Change::Feature(y, _)) => x == y,
        (Change::Sysctl(x, _), Change::Sysctl(y, _)) => x == y,
        (Change::Debugfs(x, _), Change::Debugfs(y, _)) => x == y,
        _ => false,
    }
}

/// Reads (at most `limits::MAX_FILE_BYTES`) and parses a profile file.
pub fn load(path: &Path) -> Result<Profile, String> {
    let text = crate::rig::limits::read_capped(path, "profile")
        .map_err(|e| format!("{}:1:1: {e}", path.display()))?;
    parse(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_and_settings() {
        let p = parse(
            Path::new("p.toml"),
            r#"
name = "x"
[common]
sysctl = { "kernel.sched_rt_runtime_us" = -1 }
[[settings]]
name = "on"
features = ["RT_PUSH_IPI"]
[[settings]]
name = "off"
features = ["NO_RT_PUSH_IPI"]
sysctl = { "kernel.sched_rt_runtime_us" = 950000 }
"#,
        )
        .unwrap();
        assert_eq!(p.settings.len(), 2);
        assert_eq!(
            p.settings[0].changes,
            vec![
                Change::Sysctl("kernel.sched_rt_runtime_us".into(), "-1".into()),
                Change::Feature("RT_PUSH_IPI".into(), true)
            ]
        );
        assert_eq!(
            p.settings[1].changes,
            vec![
                Change::Feature("RT_PUSH_IPI".into(), false),
                Change::Sysctl("kernel.sched_rt_runtime_us".into(), "950000".into())
            ]
        );
    }

    #[test]
    fn audio_counts_and_settings_are_capped_with_position() {
        let e = parse(
            Path::new("p.toml"),
            "[common]\naudio = { nperiods = 99 }\n[[settings]]\nname = \"a\"\naudio = { period = 1000000, rate = 0 }\n",
        )
        .unwrap_err();
        assert!(
            e.contains("p.toml:2:9: audio.nperiods = 99: use 1..=32"),
            "{e}"
        );
        assert!(
            e.contains("p.toml:5:9: audio.period = 1000000: use 1..=16384"),
            "{e}"
        );
        assert!(
            e.contains("p.toml:5:9: audio.rate = 0: use 1..=768000"),
            "{e}"
        );
        let many: String = (0..70)
            .map(|i| format!("[[settings]]\nname = \"s{i}\"\n"))
            .collect();
        let e = parse(Path::new("p.toml"), &many).unwrap_err();
        assert!(e.contains("p.toml:129:1: at most 64 [[settings]]"), "{e}");
        let dir = std::env::temp_dir().join(format!("xrunrig-profile-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.toml");
        std::fs::write(&big, "#".repeat(2 << 20)).unwrap();
        let e = load(&big).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("big.toml:1:1: the profile file is over 1 MiB"),
            "{e}"
        );
    }

    #[test]
    fn rejects_knobs_off_the_list_with_position() {
        let e = parse(
            Path::new("p.toml"),
            "[[settings]]\nname = \"a\"\nsysctl = { \"vm.swappiness\" = 1 }\n",
        )
        .unwrap_err();
        assert!(e.starts_with("p.toml:3:"), "{e}");
        assert!(e.contains("not one xrunrig writes"), "{e}");
        let e = parse(
            Path::new("p.toml"),
            "[[settings]]\nname = \"a\"\nfeatures = [\"rt push\"]\n",
        )
        .unwrap_err();
        assert!(e.contains("not a sched feature name"), "{e}");
        let e = parse(
            Path::new("p.toml"),
            "[[settings]]\nname = \"a\"\ncolour = 1\n",
        )
        .unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
    }
}
