//! The results readers of `analysis` (`analysis::load::load`, as `xrunrig report` and
//! `compare` call it): the input is cut at 0xFF bytes into summary.json, run.json,
//! samples.jsonl, events.jsonl, histograms.json and cycles/*.bin, written to a scratch
//! directory and loaded.
#![no_main]
use libfuzzer_sys::fuzz_target;

const FILES: [&str; 7] = [
    "summary.json",
    "run.json",
    "samples.jsonl",
    "events.jsonl",
    "histograms.json",
    "cycles/a.default.0.bin",
    "cycles/b.default.1.bin",
];

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("xrunrig-fuzz-results-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cycles")).unwrap();
    for (name, part) in FILES.iter().zip(data.split(|&b| b == 0xFF)) {
        std::fs::write(dir.join(name), part).unwrap();
    }
    let _ = analysis::load::load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
});
