//! End-to-end: a livefx-push-ipi style results directory, written by hand here (hog
//! bursts, misses with their lock and cause, summary rows with "bursts" and "why"):
//! the burst table, "Why the misses", events.csv's new columns and the shaded timeline.
//! SYNTHETIC input, not a measurement.

use analysis::export::csv::EVENTS_CSV_HEAD;
use analysis::plot::timeline::shade_color;
use analysis::report::write_all;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

const STUCK: &str =
    "render held bus, and the FIFO 99 hog kept it off its CPU; nothing pushed it away";
const IRQ: &str = "fx.1 woke late behind an interrupt thread";

/// (start s, length ms, caught the holder, misses in it) per setting.
const NO_PUSH_BURSTS: [(f64, f64, bool, u32); 4] = [
    (2.0, 200.0, true, 3),
    (6.0, 150.0, false, 0),
    (10.0, 300.0, true, 2),
    (15.0, 100.0, true, 0),
];
const PUSH_BURSTS: [(f64, f64, bool, u32); 3] = [
    (3.0, 200.0, true, 0),
    (9.0, 250.0, false, 0),
    (14.0, 120.0, false, 0),
];
const PERIOD_S: f64 = 128.0 / 48000.0;
const TRIAL_S: f64 = 20.0;

fn event_lines(setting: &str, bursts: &[(f64, f64, bool, u32)], out: &mut Vec<Value>) {
    let mono0 = 8000.0;
    for (i, &(t, ms, caught, misses)) in bursts.iter().enumerate() {
        out.push(json!({
            "setting": setting, "variant": "default", "trial": 0, "kind": "burst",
            "cycle": null, "t_s": t, "usecs": ms * 1e3, "mono_s": mono0 + t,
            "wall": "2026-11-30T13:50:01.123456Z", "index": i,
            "caught": if caught { json!("render") } else { Value::Null },
            "lock": if caught { json!("bus") } else { Value::Null },
            "misses": misses
        }));
        for m in 0..misses {
            let ts = t + 0.02 + m as f64 * 0.04;
            out.push(json!({
                "setting": setting, "variant": "default", "trial": 0, "kind": "deadline_miss",
                "cycle": (ts / PERIOD_S) as u64, "t_s": ts, "usecs": 1500.0 + m as f64,
                "mono_s": mono0 + ts, "wall": "2026-11-30T13:50:03.000250Z",
                "worker": "fx.1", "lock": "bus", "holder": "render",
                "wait_us": 31_200.0 + 1000.0 * m as f64, "why": STUCK,
                "stuck_ms": 31.2 + 40.0 * m as f64, "burst": i
            }));
        }
    }
}

fn row(setting: &str, misses: u64, extra: Value) -> Value {
    let mut r = json!({
        "setting": setting, "variant": "default", "backend": "clock",
        "backend_note": "synthetic: no audio device was used",
        "rate": 48000, "period": 128, "trials": 1, "duration_s": TRIAL_S,
        "cycles": (TRIAL_S / PERIOD_S).round() as u64, "xruns": 0,
        "deadline_misses": misses, "injected": 0, "misses_not_injected": misses
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    r
}

/// The directory: NO_RT_PUSH_IPI misses in the bursts that caught the holder (plus one
/// outside any burst), RT_PUSH_IPI none.
fn write_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("analysis-test-bursts-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut ev = Vec::new();
    event_lines("RT_PUSH_IPI", &PUSH_BURSTS, &mut ev);
    event_lines("NO_RT_PUSH_IPI", &NO_PUSH_BURSTS, &mut ev);
    ev.push(json!({
        "setting": "NO_RT_PUSH_IPI", "variant": "default", "trial": 0, "kind": "deadline_miss",
        "cycle": 4500, "t_s": 12.0, "usecs": 800.0, "mono_s": 8012.0,
        "wall": "2026-11-30T13:50:13.000000Z", "worker": "fx.1", "lock": null,
        "holder": null, "wait_us": null, "why": IRQ, "stuck_ms": null, "burst": null
    }));
    let text: String = ev.iter().map(|e| e.to_string() + "\n").collect();
    std::fs::write(dir.join("events.jsonl"), text).unwrap();
    let summary = json!({
        "rig": "livefx-push-ipi", "kind": "livefx",
        "rows": [
            row("RT_PUSH_IPI", 0, json!({
                "bursts": 3, "bursts_caught": 1, "bursts_caught_missed": 0, "bursts_missed": 0,
                "misses_in_bursts": 0, "misses_per_min": 0.0, "misses_per_min_ci95": [0.0, 11.07],
                "why": []
            })),
            row("NO_RT_PUSH_IPI", 6, json!({
                "bursts": 4, "bursts_caught": 3, "bursts_caught_missed": 2, "bursts_missed": 2,
                "misses_in_bursts": 5, "misses_per_min": 18.0, "misses_per_min_ci95": [6.61, 39.18],
                "why": [
                    {"cause": STUCK, "count": 5, "stuck_ms": [31.2, 191.2], "wait_ms": [31.2, 35.2]},
                    {"cause": IRQ, "count": 1, "stuck_ms": null, "wait_ms": [0.8, 0.8]}
                ]
            }))
        ],
        "trials": [
            {"setting": "RT_PUSH_IPI", "variant": "default", "trial": 0, "cycles": 7500,
             "xruns": 0, "deadline_misses": 0, "injected": 0},
            {"setting": "NO_RT_PUSH_IPI", "variant": "default", "trial": 0, "cycles": 7500,
             "xruns": 0, "deadline_misses": 6, "injected": 0}
        ]
    });
    std::fs::write(dir.join("summary.json"), summary.to_string()).unwrap();
    let run = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/livefx-synthetic/run.json"),
    )
    .unwrap();
    std::fs::write(dir.join("run.json"), run).unwrap();
    dir
}

fn set_row_field(dir: &Path, setting: &str, key: &str, v: Value) {
    let p = dir.join("summary.json");
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    for r in s["rows"].as_array_mut().unwrap() {
        if r["setting"] == setting {
            r[key] = v.clone();
        }
    }
    std::fs::write(&p, s.to_string()).unwrap();
}

#[test]
fn burst_table_and_why_the_misses() {
    let dir = write_dir("report");
    let (txt, _) = write_all(&dir, false).unwrap();
    let lines: Vec<&str> = txt.lines().collect();
    // The table: shares from the rows' counts, the rate with its interval.
    for want in [
        "setting         bursts  caught  caught → miss  any → miss   misses/min",
        "RT_PUSH_IPI          3       1      0/1 (0 %)   0/3 (0 %)     0 (0–11)",
        "NO_RT_PUSH_IPI       4       3     2/3 (67 %)  2/4 (50 %)  18 (6.6–39)",
    ] {
        assert!(lines.contains(&want), "no line {want:?} in\n{txt}");
    }
    let f = flat(&txt);
    assert!(f.contains("Why the misses ---"), "{txt}");
    for want in [
        "RT_PUSH_IPI: no deadline misses.",
        "NO_RT_PUSH_IPI: 6 deadline misses, 5 of them inside a hog burst.",
        &format!("- 5 of 6 misses: {STUCK} (holder off-CPU 31–191 ms)"),
        &format!("- 1 of 6 misses: {IRQ} (wait 0.80 ms)"),
        // First events carry the lock a worker waited for.
        "fx.1 waited 31.20 ms for bus held by render (burst 0)",
        "cycle 4500, 800.0 us; the cycle waited for fx.1",
        "hog bursts shaded blue behind them",
    ] {
        assert!(f.contains(want), "no {want:?} in\n{txt}");
    }
    for l in &lines {
        assert!(l.chars().count() <= 80, "over 80 columns: {l}");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## Why the misses") && md.contains("| 2/3 (67 %) |"),
        "{md}"
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Why the misses</h2>"));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert!(
        json["tables"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["head"][3] == "caught → miss"),
        "{json}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn misses_without_a_cause_are_said_plainly() {
    let dir = write_dir("nocause");
    set_row_field(&dir, "NO_RT_PUSH_IPI", "why", json!([]));
    let (txt, _) = write_all(&dir, false).unwrap();
    assert!(
        flat(&txt).contains(
            "NO_RT_PUSH_IPI: 6 deadline misses, 5 of them inside a hog burst, but the run \
             recorded no cause for any of them."
        ),
        "{txt}"
    );
    // Causes for only some of the misses: the rest said to have none.
    set_row_field(
        &dir,
        "NO_RT_PUSH_IPI",
        "why",
        json!([{"cause": STUCK, "count": 4, "stuck_ms": null, "wait_ms": null}]),
    );
    let (txt, _) = write_all(&dir, false).unwrap();
    let f = flat(&txt);
    assert!(f.contains(&format!("- 4 of 6 misses: {STUCK} -")), "{txt}");
    assert!(f.contains("- 2 of 6 misses: no cause recorded"), "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_why_no_section_but_the_table_stays() {
    let dir = write_dir("nowhy");
    set_row_field(&dir, "NO_RT_PUSH_IPI", "why", Value::Null);
    set_row_field(&dir, "RT_PUSH_IPI", "why", Value::Null);
    let (txt, _) = write_all(&dir, false).unwrap();
    assert!(!txt.contains("Why the misses"), "{txt}");
    assert!(txt.contains("caught → miss"), "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nothing_missed_nothing_to_explain() {
    // Newer writers give every row a "why", empty when nothing missed.
    let dir = write_dir("nomiss");
    for k in ["deadline_misses", "misses_not_injected"] {
        set_row_field(&dir, "NO_RT_PUSH_IPI", k, json!(0));
    }
    set_row_field(&dir, "NO_RT_PUSH_IPI", "why", json!([]));
    let (txt, _) = write_all(&dir, false).unwrap();
    assert!(!txt.contains("Why the misses"), "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn events_csv_has_the_new_columns() {
    let dir = write_dir("csv");
    write_all(&dir, false).unwrap();
    let csv = std::fs::read_to_string(dir.join("export/events.csv")).unwrap();
    let mut lines = csv.lines();
    let head = lines.next().unwrap();
    assert_eq!(
        head,
        "setting,variant,trial,kind,cycle,t_s,usecs,mono_s,wall,worker,lock,holder,wait_us,why,stuck_ms,burst,caught,misses"
    );
    assert_eq!(head, EVENTS_CSV_HEAD.join(","));
    let rows: Vec<&str> = lines.collect();
    // 7 bursts, 5 misses in them, 1 outside.
    assert_eq!(rows.len(), 7 + 5 + 1);
    // The first miss of NO_RT_PUSH_IPI's first burst; the cause holds a comma, so it
    // is quoted.
    let miss = format!(
        "NO_RT_PUSH_IPI,default,0,deadline_miss,757,2.02,1500,8002.02,2026-11-30T13:50:03.000250Z,fx.1,bus,render,31200,\"{STUCK}\",31.2,0,,"
    );
    assert!(rows.contains(&miss.as_str()), "no {miss} in\n{csv}");
    // A burst gives its own index in the burst column, the one its misses give.
    let burst = "NO_RT_PUSH_IPI,default,0,burst,,10,300000,8010,2026-11-30T13:50:01.123456Z,,bus,,,,,2,render,2";
    assert!(rows.contains(&burst), "no {burst} in\n{csv}");
    let outside = format!(
        "NO_RT_PUSH_IPI,default,0,deadline_miss,4500,12,800,8012,2026-11-30T13:50:13.000000Z,fx.1,,,,{IRQ},,,,"
    );
    assert!(rows.contains(&outside.as_str()), "no {outside} in\n{csv}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Pixels of exactly this colour in the PNG.
fn count_color(p: &Path, c: (u8, u8, u8)) -> usize {
    let img = image::open(p).unwrap().to_rgb8();
    img.pixels().filter(|px| px.0 == [c.0, c.1, c.2]).count()
}

#[test]
fn timeline_shades_bursts_behind_the_misses() {
    let dir = write_dir("plot");
    write_all(&dir, false).unwrap();
    let png = dir.join("plots/timeline.png");
    let rgb = |level| {
        let c = shade_color(level);
        (c.0, c.1, c.2)
    };
    let light = rgb(analysis::load::events::SHADE_BURST);
    let strong = rgb(analysis::load::events::SHADE_CAUGHT);
    assert!(count_color(&png, light) > 500, "no light burst shading");
    assert!(
        count_color(&png, strong) > 500,
        "no shading of caught bursts"
    );
    let svg = std::fs::read_to_string(dir.join("plots/timeline.svg")).unwrap();
    assert!(
        svg.contains("hog burst that caught the lock holder (4)"),
        "legend"
    );
    assert!(svg.contains("hog burst (3)") && svg.contains("deadline miss (6)"));
    // The committed fixture has no bursts: nothing shaded.
    let old = std::env::temp_dir().join(format!("analysis-test-bursts-old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&old);
    std::fs::create_dir_all(&old).unwrap();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/livefx-synthetic");
    for f in [
        "summary.json",
        "events.jsonl",
        "run.json",
        "histograms.json",
    ] {
        std::fs::copy(fx.join(f), old.join(f)).unwrap();
    }
    let (txt, _) = write_all(&old, false).unwrap();
    assert!(!txt.contains("Why the misses") && !txt.contains("Hog bursts"));
    let png = old.join("plots/timeline.png");
    assert_eq!(count_color(&png, light) + count_color(&png, strong), 0);
    std::fs::remove_dir_all(&old).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unreadable_why_is_told_and_the_row_still_reads() {
    let dir = write_dir("badwhy");
    set_row_field(&dir, "NO_RT_PUSH_IPI", "why", json!("oops"));
    let (txt, _) = write_all(&dir, false).unwrap();
    let f = flat(&txt);
    assert!(
        f.contains("NO_RT_PUSH_IPI/default: the \"why\" of summary.json is unreadable"),
        "{txt}"
    );
    // The rest of the row still counts: its bursts stay in the table.
    assert!(f.contains("NO_RT_PUSH_IPI 4 3 2/3 (67 %)"), "{txt}");
    std::fs::remove_dir_all(&dir).unwrap();
}
