//! `xrunrig export kcidb`: what it writes is accepted by KCIDB's own validator (the
//! `kcidb-io` package from PyPI, which `.ci/setup` installs into a virtualenv), for a
//! guest A/B run (recorded once, committed as a fixture: tests/fixtures/kcidb/) and a
//! fresh clock-backend livefx run; and it holds one test per summary row (per figure for
//! livefx) with the status the row's bound gives, checked against summary.json read
//! through the results types.
//!
//! kcidb-io has no command-line validator (its `kcidb-validate` lives in the `kcidb`
//! package, which is not on PyPI): the test calls the library's own
//! `kcidb_io.schema.LATEST.validate_exactly`, which is what `kcidb-validate` runs.
//! A missing validator fails these tests, whatever XRUNRIG_REQUIRE_ALL says.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use xrunrig::testkit;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The guest A/B fixture: pi-boost-affinity, RT_PUSH_IPI against NO_RT_PUSH_IPI, in a
/// Debian 6.12 guest under TCG (see its README for the command).
fn guest_ab() -> PathBuf {
    repo().join("tests/fixtures/kcidb/guest-ab")
}

/// A real clock-backend livefx run, committed by the results-format tests.
fn livefx_clock() -> PathBuf {
    repo().join("results-format/tests/fixtures/format0-livefx-clock")
}

fn trials_fixture() -> PathBuf {
    repo().join("results-format/tests/fixtures/format0-trials")
}

/// The virtualenv's python with kcidb-io, where `.ci/setup` installs it.
fn validator_python() -> PathBuf {
    if let Some(p) = std::env::var_os("XRUNRIG_KCIDB_PYTHON") {
        return PathBuf::from(p);
    }
    // The cache .ci/setup (like .ci/fetch-kernel) picks.
    let cache = if let Some(c) = std::env::var_os("XRUNRIG_CACHE_DIR") {
        PathBuf::from(c)
    } else if xrunrig::sys::is_root() {
        PathBuf::from("/var/cache/xrunrig")
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_default()
            .join("xrunrig")
    };
    cache.join("kcidb-venv/bin/python3")
}

const VALIDATE: &str = r#"
import json, sys
import kcidb_io
schema = kcidb_io.schema.LATEST
data = json.load(open(sys.argv[1]))
schema.validate_exactly(data)
print("valid", schema, "kcidb-io", __import__("importlib.metadata").metadata.version("kcidb-io"))
"#;

/// Runs kcidb-io's validator on `file`: (accepted, what it said).
fn kcidb_validate(file: &Path) -> (bool, String) {
    let py = validator_python();
    let o = Command::new(&py)
        .arg("-c")
        .arg(VALIDATE)
        .arg(file)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "the KCIDB validator is missing: cannot run {} ({e}); install it with \
                 `bash .ci/setup` (a virtualenv with kcidb-io from PyPI), or point \
                 XRUNRIG_KCIDB_PYTHON at a python that has kcidb-io",
                py.display()
            )
        });
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        !text.contains("No module named 'kcidb_io'"),
        "the KCIDB validator is missing: {} has no kcidb_io; run `bash .ci/setup`\n{text}",
        py.display()
    );
    (o.status.success(), text)
}

fn export(dirs: &[&Path], extra: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .args(["export", "kcidb"])
        .args(dirs)
        .args(extra)
        .output()
        .expect("running xrunrig export kcidb");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Exports `dirs`, has kcidb-io validate the JSON, returns it.
fn export_valid(tag: &str, dirs: &[&Path], extra: &[&str]) -> Value {
    let (code, out, err) = export(dirs, extra);
    assert_eq!(code, 0, "xrunrig export kcidb failed: {err}");
    let d = testkit::private_dir(&format!("kcidb-{tag}"));
    let f = d.join("kcidb.json");
    std::fs::write(&f, &out).unwrap();
    let (ok, said) = kcidb_validate(&f);
    assert!(
        ok,
        "kcidb-io rejects the export of {dirs:?}:\n{said}\n{out}"
    );
    assert!(said.contains("valid v5."), "{said}");
    let _ = std::fs::remove_dir_all(&d);
    serde_json::from_str(&out).unwrap()
}

fn tests_of(v: &Value) -> &Vec<Value> {
    v["tests"].as_array().expect("tests")
}

#[test]
fn guest_ab_run_is_valid_kcidb() {
    let v = export_valid("guest-ab", &[&guest_ab()], &["--origin", "xrunrig_ci"]);
    assert_eq!(v["version"], serde_json::json!({"major": 5, "minor": 3}));
    let checkouts = v["checkouts"].as_array().unwrap();
    let builds = v["builds"].as_array().unwrap();
    assert_eq!((checkouts.len(), builds.len()), (1, 1), "{v}");
    let c = &checkouts[0];
    assert_eq!(c["origin"], "xrunrig_ci");
    assert_eq!(c["tree_name"], "debian");
    assert!(
        c["misc"]["release"].as_str().unwrap().starts_with("6.12."),
        "{c}"
    );
    assert!(
        c["misc"]["package"]
            .as_str()
            .unwrap()
            .starts_with("linux-image-6.12"),
        "{c}"
    );
    assert_eq!(builds[0]["checkout_id"], c["id"]);
    assert_eq!(builds[0]["architecture"], "x86_64");
    let ts = tests_of(&v);
    assert!(ts.len() >= 4, "{v}");
    for t in ts {
        assert_eq!(t["build_id"], builds[0]["id"]);
        assert!(
            t["path"]
                .as_str()
                .unwrap()
                .starts_with("xrunrig.pi-boost-affinity."),
            "{t}"
        );
        // Emulated CPUs are said in the environment and in the excerpt.
        assert_eq!(t["environment"]["misc"]["emulated"], true, "{t}");
        assert!(
            t["log_excerpt"].as_str().unwrap().contains("Emulated"),
            "{t}"
        );
        // Waits in ms; migrations counted; rows with no value (no boost without PI) have
        // no number.
        let unit = &t["number"]["unit"];
        assert!(
            unit == "ms" || unit == "count" || t.get("number").is_none(),
            "{t}"
        );
        assert!(t["start_time"].as_str().unwrap().ends_with('Z'), "{t}");
    }
    // Both settings of the A/B are there.
    for s in ["RT_PUSH_IPI", "NO_RT_PUSH_IPI"] {
        assert!(
            ts.iter()
                .any(|t| t["path"].as_str().unwrap().contains(&format!(".{s}."))),
            "{s} missing"
        );
    }
}

#[test]
fn livefx_run_is_valid_kcidb() {
    let v = export_valid("livefx", &[&livefx_clock()], &[]);
    let ts = tests_of(&v);
    assert!(
        ts.iter()
            .any(|t| t["path"] == "xrunrig.livefx.as-is.pi.xruns"
                && t["number"]["value"].is_number()),
        "{v}"
    );
    assert!(
        ts.iter()
            .any(|t| t["path"] == "xrunrig.livefx.as-is.pi.callback_p99"
                && t["number"]["unit"] == "us"),
        "{v}"
    );
}

/// A fresh short livefx run on the clock backend (needs root for SCHED_FIFO), exported
/// alone and together with the guest A/B: two kernels, one submission.
#[test]
fn fresh_livefx_clock_run_is_valid_kcidb() {
    if !testkit::root() {
        return;
    }
    let state = testkit::private_dir("kcidb-livefx-run");
    let out = state.join("res");
    let o = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .current_dir(repo())
        .env("XRUNRIG_STATE_DIR", &state)
        .args([
            "run",
            "rigs/livefx.toml",
            "--backend",
            "clock",
            "--variant",
            "pi",
        ])
        .args(["--duration", "2 s", "--trials", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "the livefx run failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = export_valid("fresh", &[&out], &[]);
    check_against_summary(&v, &out, "livefx");
    let both = export_valid("fresh-and-guest", &[&out, &guest_ab()], &[]);
    assert_eq!(both["checkouts"].as_array().unwrap().len(), 2, "{both}");
    assert_eq!(
        tests_of(&both).len(),
        tests_of(&v).len() + tests_of(&export_valid("guest-only", &[&guest_ab()], &[])).len()
    );
    let _ = std::fs::remove_dir_all(&state);
}

/// What summary.json says each test must be: (path, status, value), read through the
/// results types, with the rules written out here rather than taken from the exporter.
fn expected(dir: &Path, rig: &str) -> Vec<(String, String, Option<f64>)> {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let head: results::SummaryHead = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    if head.kind.as_deref() == Some("livefx") {
        let s: results::livefx::Summary = serde_json::from_str(&text).unwrap();
        for r in &s.rows {
            let p = |m: &str| format!("xrunrig.{rig}.{}.{}.{m}", r.setting, r.variant);
            let zero = |n: u64| if n == 0 { "PASS" } else { "FAIL" }.to_string();
            let c = &r.counts;
            out.push((p("xruns"), zero(c.xruns), Some(c.xruns as f64)));
            let real = c
                .misses_not_injected
                .unwrap_or(c.deadline_misses.saturating_sub(c.injected));
            out.push((p("deadline_misses"), zero(real), Some(real as f64)));
            if let Some(d) = c.discontinuities {
                out.push((p("discontinuities"), zero(d), Some(d as f64)));
            }
            for (name, pc) in [
                ("callback", &r.callback_us),
                ("lateness", &r.lateness_us),
                ("wake", &r.wake_us),
            ] {
                if let Some(x) = pc.p99 {
                    out.push((p(&format!("{name}_p99")), "DONE".into(), Some(x)));
                }
                if let Some(x) = pc.max {
                    out.push((p(&format!("{name}_max")), "DONE".into(), Some(x)));
                }
            }
        }
    } else {
        let s: results::trials::Summary = serde_json::from_str(&text).unwrap();
        for r in &s.rows {
            let status = match (&r.bound, r.within_bound) {
                (None, _) => "DONE",
                (Some(_), Some(w)) if r.n > 0 && w == r.n => "PASS",
                (Some(_), Some(_)) if r.n > 0 => "FAIL",
                _ => "MISS or ERROR",
            };
            out.push((
                format!("xrunrig.{rig}.{}.{}.{}", r.setting, r.variant, r.metric),
                status.into(),
                // A median on a censored trial is a lower bound: exported without a number.
                r.median.filter(|_| !r.median_at_least),
            ));
        }
    }
    out
}

fn check_against_summary(v: &Value, dir: &Path, rig: &str) {
    let want = expected(dir, rig);
    let ts = tests_of(v);
    assert_eq!(
        ts.len(),
        want.len(),
        "tests against summary.json rows in {dir:?}"
    );
    for (t, (path, status, value)) in ts.iter().zip(&want) {
        assert_eq!(t["path"].as_str().unwrap(), path, "{t}");
        assert_eq!(t["status"].as_str().unwrap(), status, "{t}");
        assert_eq!(t["number"]["value"].as_f64(), *value, "{t}");
    }
}

#[test]
fn tests_follow_summary_rows_and_bounds() {
    let v = export_valid("rows-guest", &[&guest_ab()], &[]);
    check_against_summary(&v, &guest_ab(), "pi-boost-affinity");
    // The A/B shows both outcomes: the bound met under RT_PUSH_IPI with PI, missed
    // without (as measured when the fixture was recorded).
    let st: Vec<&str> = tests_of(&v)
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert!(st.contains(&"PASS") && st.contains(&"FAIL"), "{st:?}");
    let v = export_valid("rows-trials", &[&trials_fixture()], &[]);
    check_against_summary(&v, &trials_fixture(), "pi-inversion");
    let v = export_valid("rows-livefx", &[&livefx_clock()], &[]);
    check_against_summary(&v, &livefx_clock(), "livefx");
}

/// A bisection (the synthetic one of `analysis::synth::bisect`): a checkout, a build and
/// a test per tested commit, which KCIDB's validator accepts; a build that failed is
/// FAIL and its test SKIP, and each test says its commit's counts.
#[test]
fn bisection_is_valid_kcidb() {
    use analysis::synth::bisect as sb;
    let d = testkit::private_dir("kcidb-bisect-dir");
    let dir = d.join("bisect-pi-boost");
    let doc = sb::generate(&dir).unwrap();
    let v = export_valid("bisect", &[&dir], &["--origin", "xrunrig_ci"]);
    let tested = 2 + doc.steps.len() + 1;
    let checkouts = v["checkouts"].as_array().unwrap();
    let builds = v["builds"].as_array().unwrap();
    let ts = tests_of(&v);
    assert_eq!(
        (checkouts.len(), builds.len(), ts.len()),
        (tested, tested, tested),
        "{v}"
    );
    let path = format!("xrunrig.bisect.{}.{}.{}", sb::RIG, sb::SETTING, sb::VARIANT);
    for t in ts {
        assert_eq!(t["path"], path.as_str(), "{t}");
        let b = builds.iter().find(|b| b["id"] == t["build_id"]).unwrap();
        let c = checkouts
            .iter()
            .find(|c| c["id"] == b["checkout_id"])
            .unwrap();
        assert_eq!(c["git_commit_hash"], t["misc"]["commit"], "{c}\n{t}");
        let want = match t["misc"]["verdict"].as_str().unwrap() {
            "good" => "PASS",
            "bad" => "FAIL",
            "undecided" | "build_failed" => "SKIP",
            "run_failed" => "ERROR",
            // The ends, which differ: the good one passes, the bad one fails.
            _ if t["misc"]["role"] == "good_end" => "PASS",
            _ => "FAIL",
        };
        assert_eq!(t["status"], want, "{t}");
        let built = t["misc"]["verdict"] != "build_failed";
        assert_eq!(b["status"], if built { "PASS" } else { "FAIL" }, "{b}");
        assert!(t["misc"]["trials"].is_number() && t["misc"]["passed"].is_number());
        // Emulated CPUs are said, as for any guest run.
        assert_eq!(t["environment"]["misc"]["emulated"], true, "{t}");
    }
    // The record and the log are the tests' outputs.
    let files: Vec<&str> = ts[0]["output_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"bisect.json") && files.contains(&"bisect.log"),
        "{files:?}"
    );
    // The LAVA export: a case per tested commit.
    let o = Command::new(env!("CARGO_BIN_EXE_xrunrig"))
        .args(["export", "lava"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lava = String::from_utf8_lossy(&o.stdout);
    assert_eq!(lava.lines().count(), tested, "{lava}");
    let _ = std::fs::remove_dir_all(&d);
}

/// The validator is not a rubber stamp: a status KCIDB does not know is refused.
#[test]
fn the_validator_refuses_what_kcidb_does_not_take() {
    let (code, out, _) = export(&[&trials_fixture()], &[]);
    assert_eq!(code, 0);
    let d = testkit::private_dir("kcidb-refuse");
    let f = d.join("bad.json");
    std::fs::write(
        &f,
        out.replace("\"PASS\"", "\"OK\"")
            .replace("\"FAIL\"", "\"OK\""),
    )
    .unwrap();
    let (ok, said) = kcidb_validate(&f);
    assert!(!ok && said.contains("'OK' is not one of"), "{said}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let (code, _, err) = export(&[&trials_fixture()], &["--origin", "My Lab"]);
    assert_eq!(code, 2);
    assert!(err.contains("lower-case letters, digits and _"), "{err}");
    let (code, _, err) = export(&[Path::new("/nonexistent/results")], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("not a directory"), "{err}");
    // The same run twice would be one test submitted twice: refused.
    let (code, _, err) = export(&[&trials_fixture(), &trials_fixture()], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("already exported"), "{err}");
}

/// Published results get http(s) URLs under --url-base; local ones file:// URLs.
#[test]
fn output_files_point_at_the_results() {
    let v = export_valid(
        "urls",
        &[&livefx_clock()],
        &["--url-base", "https://lab.example.org/xrunrig/"],
    );
    let t = &tests_of(&v)[0];
    let files = t["output_files"].as_array().unwrap();
    assert!(
        files.iter().any(|f| f["name"] == "summary.json"
            && f["url"] == "https://lab.example.org/xrunrig/format0-livefx-clock/summary.json"),
        "{t}"
    );
    let v = export_valid("local-urls", &[&livefx_clock()], &[]);
    let url = tests_of(&v)[0]["output_files"][0]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        url.starts_with("file:///") && url.ends_with("/format0-livefx-clock/summary.json"),
        "{url}"
    );
}
