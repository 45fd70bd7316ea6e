//! `xrunrig run --from DIR` (issue 37): a recorded run repeated from its run.json alone —
//! the rig and profile files it ran are deleted first, so the rerun can only have their
//! recorded text — with the same rig, profile and options; a rerun of a rerun repeats
//! the first run; a damaged record, a missing one and an option --from already fixes
//! are refused with nothing run. Runs go through the binary, as a user's do.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::run::json;
use xrunrig::testkit;

/// `xrunrig` with the test's own state and cache, no progress bar.
fn xrunrig(state: &Path) -> Command {
    let mut c = support::run::command(state);
    c.env("XRUNRIG_CACHE_DIR", state.join("cache"))
        .env("XRUNRIG_NO_PROGRESS", "1");
    c
}

fn show(tag: &str, o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("--- {tag}: {}\n{err}", o.status);
    err
}

fn run_json(dir: &Path) -> Value {
    json(&dir.join("run.json"))
}

/// What a rerun must repeat: the rig and profile (text and sha256), the trials, the
/// variants and settings run, and each setting's audio as it ran.
fn what_ran(v: &Value) -> Value {
    let backends: Vec<Value> = v["livefx"]["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| serde_json::json!([b["setting"], b["backend"], b["period"], b["rate"]]))
        .collect();
    serde_json::json!({
        "rig": [v["rig"]["name"], v["rig"]["sha256"], v["rig"]["text"]],
        "profile": [v["profile"]["name"], v["profile"]["sha256"], v["profile"]["text"]],
        "trials": v["trials"],
        "variants": v["variants"],
        "settings": v["settings"].as_array().unwrap().iter().map(|s| s["name"].clone()).collect::<Vec<_>>(),
        "backends": backends,
        "duration_s": v["livefx"]["duration_s"],
    })
}

#[test]
fn a_recorded_run_is_run_again_from_its_run_json() {
    if !testkit::root() {
        return;
    }
    let state = testkit::private_dir("rerun");
    // The sender's files, deleted once the run is recorded.
    let sent = state.join("sender");
    std::fs::create_dir_all(&sent).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rig = sent.join("my-livefx.toml");
    let profile = sent.join("periods.toml");
    std::fs::copy(root.join("rigs/livefx.toml"), &rig).unwrap();
    std::fs::copy(root.join("profiles/audio-periods.toml"), &profile).unwrap();
    let first = state.join("first");
    let o = xrunrig(&state)
        .arg("run")
        .arg(&rig)
        .arg("--profile")
        .arg(&profile)
        .args([
            "--setting",
            "p128",
            "--setting",
            "p1024",
            "--variant",
            "pi",
            "--backend",
            "clock",
            "--duration",
            "1",
            "--trials",
            "2",
            "--out",
        ])
        .arg(&first)
        .output()
        .unwrap();
    show("first", &o);
    assert_eq!(o.status.code(), Some(0));
    std::fs::remove_dir_all(&sent).unwrap();
    let a = run_json(&first);
    // Its report ends with how to run it again.
    let r = xrunrig(&state).arg("report").arg(&first).output().unwrap();
    assert_eq!(r.status.code(), Some(0), "{}", show("report", &r));
    let report = std::fs::read_to_string(first.join("report.txt")).unwrap();
    let tail = report
        .split("Reproduce")
        .nth(1)
        .unwrap_or_else(|| panic!("{report}"));
    assert!(tail.contains("xrunrig run --from first"), "{tail}");

    let second = state.join("second");
    let o = xrunrig(&state)
        .args(["run", "--from"])
        .arg(&first)
        .arg("--out")
        .arg(&second)
        .output()
        .unwrap();
    let err = show("rerun", &o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let b = run_json(&second);
    // Recorded at all (else two absent texts would agree).
    assert!(
        a["rig"]["text"].is_string() && a["profile"]["text"].is_string(),
        "{a}"
    );
    assert_eq!(a["livefx"]["backends"].as_array().map(Vec::len), Some(2));
    assert_eq!(what_ran(&a), what_ran(&b));
    assert_eq!(b["rerun_of"]["dir"], first.display().to_string());
    assert_eq!(b["rerun_of"]["command"], a["command"]);

    // A rerun of the rerun repeats the first run's command.
    let third = state.join("third");
    let o = xrunrig(&state)
        .args(["run", "--from"])
        .arg(&second)
        .arg("--out")
        .arg(&third)
        .output()
        .unwrap();
    show("rerun of the rerun", &o);
    assert_eq!(o.status.code(), Some(0));
    let c = run_json(&third);
    assert_eq!(what_ran(&a), what_ran(&c));
    assert_eq!(c["rerun_of"]["command"], a["command"]);
    assert_eq!(c["rerun_of"]["dir"], second.display().to_string());

    // A record whose rig text is not its sha256 is refused, and nothing is run.
    let damaged = state.join("damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    let mut d = a.clone();
    d["rig"]["text"] = Value::from(format!(
        "{}\n# edited\n",
        a["rig"]["text"].as_str().unwrap()
    ));
    std::fs::write(damaged.join("run.json"), serde_json::to_string(&d).unwrap()).unwrap();
    let none = state.join("none");
    let o = xrunrig(&state)
        .args(["run", "--from"])
        .arg(&damaged)
        .arg("--out")
        .arg(&none)
        .output()
        .unwrap();
    let err = show("damaged", &o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sha256") && err.contains("nothing was run"),
        "{err}"
    );
    assert!(!none.exists(), "a refused rerun wrote {}", none.display());
    std::fs::remove_dir_all(&state).unwrap();
}

#[test]
fn from_refuses_what_it_cannot_repeat() {
    let state: PathBuf = testkit::private_dir("rerun-refused");
    // An option the recorded run fixes: refused by the command line, exit 2.
    let o = xrunrig(&state)
        .args(["run", "--from", "x", "--trials", "3"])
        .output()
        .unwrap();
    let err = show("--from with --trials", &o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--trials") && err.contains("--from"), "{err}");
    // Neither a rig nor --from.
    let o = xrunrig(&state).args(["run"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", show("bare run", &o));
    // A directory with no run.json.
    let empty = state.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = xrunrig(&state)
        .args(["run", "--from"])
        .arg(&empty)
        .output()
        .unwrap();
    let err = show("no run.json", &o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("give a results directory"), "{err}");
    // A run.json recording another command is not a run to repeat.
    std::fs::write(
        empty.join("run.json"),
        r#"{"command": ["xrunrig", "doctor"]}"#,
    )
    .unwrap();
    let o = xrunrig(&state)
        .args(["run", "--from"])
        .arg(&empty)
        .output()
        .unwrap();
    let err = show("a doctor command", &o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not an `xrunrig run`"), "{err}");
    std::fs::remove_dir_all(&state).unwrap();
}
