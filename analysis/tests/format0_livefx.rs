//! Livefx results written before the results format had types (format 0, kept in
//! results-format/tests/fixtures) still load and make a report: the synthetic fixture's
//! report is its golden one, and a real clock-backend run's tells its injected overruns.

use std::path::{Path, PathBuf};

fn format0(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../results-format/tests/fixtures")
        .join(name)
}

/// A scratch copy, so reports are never written into the source tree.
fn scratch(name: &str) -> PathBuf {
    fn copy(src: &Path, dst: &Path) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &dst.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
            }
        }
    }
    // The directory keeps the fixture's name (a report's Reproduce section names it);
    // the process id is its parent's.
    let dst = std::env::temp_dir()
        .join(format!("analysis-format0-{name}-{}", std::process::id()))
        .join("results");
    let _ = std::fs::remove_dir_all(&dst);
    copy(&format0(name), &dst);
    dst
}

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn synthetic_format0_gives_its_golden_report() {
    let dir = scratch("format0-livefx");
    assert_eq!(analysis::report_main(&dir, None, false), Ok(0));
    let txt = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/livefx-synthetic.report.txt"),
    )
    .unwrap();
    assert_eq!(txt, golden);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn real_clock_run_format0_reports() {
    let dir = scratch("format0-livefx-clock");
    let (txt, _) = analysis::report::write_all(&dir, false).unwrap();
    let f = flat(&txt);
    for want in [
        "as-is / pi",
        "as-is / no-pi",
        "3 overruns were injected on purpose to check the counters; 3 of them were seen as deadline misses.",
        // Each miss line carries its cause sentence; the first events are the xruns.
        "xrun at 1.617 s, cycle 299",
    ] {
        assert!(f.contains(want), "no {want:?} in\n{txt}");
    }
    for not in [
        "of summary.json is unreadable",
        "summary.json says",
        "torn record",
        "not JSON",
    ] {
        assert!(!f.contains(not), "{not:?} in\n{txt}");
    }
    let csv = std::fs::read_to_string(dir.join("export/events.csv")).unwrap();
    assert!(
        csv.contains("an injected overrun (--inject-every)"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 18);
    std::fs::remove_dir_all(&dir).unwrap();
}
