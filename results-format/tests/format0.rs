//! Results written before the format had a version (format 0, kept verbatim in
//! tests/fixtures/format0-trials by `xrunrig run rigs/pi-inversion.toml --trials 2`)
//! read through the typed format, and write back the same JSON.

use results::run::{ReadError, RunDoc, SchedFeatures};
use results::trials::{Summary, TrialRecord, TrialStatus};
use serde_json::Value;
use std::path::PathBuf;

fn fixture(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/format0-trials")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn run_json_reads_and_writes_back_the_same_fields() {
    let text = fixture(results::RUN_JSON);
    let run = RunDoc::from_json(&text).unwrap();
    assert_eq!(run.format, 0);
    assert_eq!(
        run.rig.as_ref().and_then(|r| r.name.as_deref()),
        Some("pi-inversion")
    );
    assert_eq!(run.trials, Some(2));
    assert_eq!(run.variants.len(), 2);
    assert!(matches!(
        run.sched_features_before,
        Some(SchedFeatures::Unreadable { .. })
    ));
    let d = run.doctor.as_ref().unwrap();
    assert_eq!(d.checks.len(), 27);
    assert_eq!(d.counts.get("fail"), Some(&2));
    // Every field as it was: the typed document serialises to the same JSON, but for
    // the version it now carries.
    let mut back = serde_json::to_value(&run).unwrap();
    assert_eq!(back["format"], 0);
    back.as_object_mut().unwrap().remove("format");
    let orig: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(back, orig);
}

#[test]
fn summary_and_samples_read_and_write_back() {
    let text = fixture(results::SUMMARY_JSON);
    let s: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!((s.format, s.kind.as_str()), (0, results::KIND_TRIALS));
    assert_eq!(s.rows.len(), 2);
    assert_eq!(s.rows[0].within_bound, Some(2));
    let mut back = serde_json::to_value(&s).unwrap();
    back.as_object_mut().unwrap().remove("format");
    assert_eq!(back, serde_json::from_str::<Value>(&text).unwrap());
    let lines = fixture(results::SAMPLES_JSONL);
    for l in lines.lines() {
        let r: TrialRecord = serde_json::from_str(l).unwrap();
        assert_eq!(r.status, TrialStatus::Ok);
        assert_eq!(serde_json::to_string(&r).unwrap(), l);
    }
}

#[test]
fn a_newer_run_json_is_refused_with_both_versions() {
    let mut v: Value = serde_json::from_str(&fixture(results::RUN_JSON)).unwrap();
    v["format"] = 99.into();
    let e = RunDoc::from_value(v).unwrap_err();
    assert!(matches!(e, ReadError::NewerFormat(_)), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("newer xrunrig (format 99)") && e.contains("reads formats 0..=1"),
        "{e}"
    );
}
