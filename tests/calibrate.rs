//! `xrunrig calibrate` on this machine, then `xrunrig compare` with one run a side: the
//! calibration is kept in the cache under the rig's key, the doctor lists it, and
//! compare finds it by the baseline's rig, kernel and machine and says which it used;
//! in another cache (none kept) the same pair is judged against the largest spread
//! measured, and compare says so. Real runs of the livefx rig on the clock backend
//! (SCHED_FIFO: root).

mod support;

use support::run::{command, compare_exit, json, serial, text};
use xrunrig::testkit;

#[test]
fn a_calibration_is_kept_listed_and_used_by_compare_with_one_run_a_side() {
    if !testkit::root() {
        return;
    }
    let _g = serial();
    let d = testkit::private_dir("calibrate");
    let (cache, empty) = (d.join("cache"), d.join("empty-cache"));
    let runs = d.join("runs");
    let o = command(&d)
        .env("XRUNRIG_CACHE_DIR", &cache)
        .args([
            "calibrate",
            "rigs/livefx.toml",
            "--backend",
            "clock",
            "--trials",
            "2",
            "--duration",
            "1",
            "--pairs",
            "2",
            "--out",
            runs.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("calibration kept in"), "{t}");
    let files: Vec<_> = std::fs::read_dir(cache.join("calibrations"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let cal = json(&files[0]);
    assert_eq!(cal["key"]["rig"], "livefx", "{cal}");
    assert_eq!(cal["key"]["backend"], "clock", "{cal}");
    assert_eq!(cal["runs"].as_array().unwrap().len(), 4, "{cal}");
    let dropouts = cal["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "dropouts" && m["variant"] == "pi")
        .unwrap_or_else(|| panic!("{cal}"));
    assert_eq!(dropouts["scale"], "log_rate", "{cal}");
    assert_eq!(dropouts["df"], 3, "{cal}");
    // The doctor lists it.
    let o = command(&d)
        .env("XRUNRIG_CACHE_DIR", &cache)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["calibrations"][0]["key"]["rig"], "livefx", "{doc}");
    // compare with one run a side finds and names it.
    let (a, b) = (runs.join("run-01"), runs.join("run-04"));
    let cmp = |cache: &std::path::Path, out: &str| {
        let o = command(&d)
            .env("XRUNRIG_CACHE_DIR", cache)
            .args(["compare", "--out"])
            .arg(d.join(out))
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let j = json(&d.join(out).join("compare.json"));
        (o.status.code(), text(&o), j)
    };
    let (code, t, j) = cmp(&cache, "cmp-cal");
    assert_eq!(code, compare_exit(&j), "{t}");
    assert!(
        j["calibration"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("calibration used: {}", files[0].display())),
        "{j}"
    );
    // Without one: the assumption, said.
    // What this checks is the rule said, not the verdict: an A/A pair's answer is a
    // statistical outcome (livefx-bench calibrate measures how often it is wrong).
    let (code, t, j) = cmp(&empty, "cmp-none");
    assert_eq!(code, compare_exit(&j), "{t}");
    assert!(
        j["calibration"]
            .as_str()
            .unwrap_or_default()
            .starts_with("no calibration of this rig on this machine"),
        "{j}"
    );
    assert!(j["between"].to_string().contains("taken as known"), "{j}");
    // Several runs a side, alternating in time (1 3 against 2 4): the runs are the
    // units, their own spread pooled with the calibration's; one after the other (1 2
    // against 3 4): each side one block, its spread the calibration's.
    let several = |a: [&str; 2], b: [&str; 2], out: &str| {
        let o = command(&d)
            .env("XRUNRIG_CACHE_DIR", &cache)
            .args(["compare", "--out"])
            .arg(d.join(out))
            .args(a.map(|x| runs.join(x)))
            .arg("--")
            .args(b.map(|x| runs.join(x)))
            .output()
            .unwrap();
        let t = text(&o);
        let j = json(&d.join(out).join("compare.json"));
        assert_eq!(o.status.code(), compare_exit(&j), "{t}");
        assert_eq!(j["runs_per_side"], serde_json::json!([2, 2]), "{j}");
        j["method"].as_str().unwrap_or_default().to_string()
    };
    let m = several(["run-01", "run-03"], ["run-02", "run-04"], "cmp-alt");
    assert!(
        m.contains("interleaved in time") && m.contains("with the calibration"),
        "{m}"
    );
    let m = several(["run-01", "run-02"], ["run-03", "run-04"], "cmp-blocks");
    assert!(m.contains("each side one block in time"), "{m}");
    // Calibrating again adds to it (another session's runs), --fresh starts anew.
    let again = |fresh: bool, out: &str| {
        let mut c = command(&d);
        c.env("XRUNRIG_CACHE_DIR", &cache).args([
            "calibrate",
            "rigs/livefx.toml",
            "--backend",
            "clock",
            "--trials",
            "2",
            "--duration",
            "1",
            "--pairs",
            "1",
            "--out",
        ]);
        c.arg(d.join(out));
        if fresh {
            c.arg("--fresh");
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        json(&files[0])["runs"].as_array().unwrap().len()
    };
    assert_eq!(again(false, "runs2"), 6);
    assert_eq!(again(true, "runs3"), 2);
}
