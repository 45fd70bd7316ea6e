//! `xrunrig report` on an `xrunrig watch` directory: the synthetic watch of
//! `analysis::synth::watch` (14 xruns whose causes, culprits and figures are known)
//! reported, and the grouping, the counts, the windows, the timeline and the refusals
//! checked against those known numbers.

use analysis::load::watch::{Who, group};
use analysis::report::write_all;
use analysis::synth::watch as sw;
use plotters::style::RGBColor;
use results::watch::{Cause, XrunEvent};
use std::path::{Path, PathBuf};

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("analysis-watch-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn synthetic(tag: &str) -> PathBuf {
    let d = scratch(tag);
    sw::generate(&d).unwrap();
    d
}

/// The text of one section of report.txt, up to the next section.
fn section<'a>(txt: &'a str, title: &str) -> &'a str {
    let head = format!("\n{title}\n{}\n", "-".repeat(title.chars().count()));
    let start = txt
        .find(&head)
        .unwrap_or_else(|| panic!("no {title}: {txt}"))
        + head.len();
    let rest = &txt[start..];
    // The next title is a line followed by a rule of its length.
    let lines: Vec<&str> = rest.lines().collect();
    let mut end = rest.len();
    let mut off = 0;
    for w in lines.windows(2) {
        if !w[0].is_empty() && w[1].chars().all(|c| c == '-') && w[1].len() == w[0].chars().count()
        {
            end = off;
            break;
        }
        off += w[0].len() + 1;
    }
    &rest[..end]
}

/// The committed fixture is what the generator makes today, and its report.txt is the
/// golden one.
#[test]
fn golden_watch_report_and_its_fixture_regenerate() {
    let dir = synthetic("regen");
    let fx = fixture("watch-synthetic");
    let mut stack = vec![PathBuf::new()];
    let mut files = 0;
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(fx.join(&rel)).unwrap() {
            let e = e.unwrap();
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(r);
                continue;
            }
            files += 1;
            assert_eq!(
                std::fs::read_to_string(dir.join(&r)).unwrap(),
                std::fs::read_to_string(fx.join(&r)).unwrap(),
                "{} differs from the generator's",
                r.display()
            );
        }
    }
    assert_eq!(files, 8, "README, summary, run, events and four windows");
    let (txt, _) = write_all(&dir, false).unwrap();
    let golden_path = fixture("watch-synthetic.report.txt");
    if std::env::var("UPDATE_GOLDEN").is_ok() {
        std::fs::write(&golden_path, &txt).unwrap();
    }
    let golden = std::fs::read_to_string(&golden_path)
        .expect("golden file missing: run with UPDATE_GOLDEN=1 once and review it");
    assert_eq!(
        txt,
        golden,
        "report.txt differs from {}",
        golden_path.display()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn xruns_are_grouped_by_culprit_then_sentence_wherever_they_fall() {
    let x = sw::xruns();
    assert_eq!(x.len(), 14);
    let check = |events: &[XrunEvent]| {
        let g = group(events);
        let who: Vec<(String, u64)> = g
            .iter()
            .map(|c| {
                let w = match &c.who {
                    Who::Task(t) => format!("{} {}", t.comm, t.tid),
                    Who::Interrupt(i) => i.clone(),
                    Who::Nobody => "nobody".into(),
                };
                (w, c.n)
            })
            .collect();
        let want: Vec<(String, u64)> = [
            ("spin 4242", 5),
            ("backup 5000", 3),
            ("zyn-synth 4101", 2),
            ("nobody", 2),
            ("disk-io 3100", 1),
            ("irq 45 nvme0q1", 1),
        ]
        .iter()
        .map(|(w, n)| (w.to_string(), *n))
        .collect();
        assert_eq!(who, want);
        // Each sentence once, under its culprit, with every xrun's figures.
        // One culprit, one cause, two sentences: CPU1 four times, CPU0 once.
        let spin = &g[0];
        let whys: Vec<(&str, u64)> = spin
            .sentences
            .iter()
            .map(|s| (s.why.as_str(), s.n))
            .collect();
        assert_eq!(whys, vec![(sw::SPIN_WHY, 4), (sw::SPIN_CPU0_WHY, 1)]);
        let mut held = spin.sentences[0].figures.culprit_ns.clone();
        held.sort_unstable();
        assert_eq!(held, vec![4_000_000, 5_000_000, 5_200_000, 5_330_000]);
        assert_eq!(spin.sentences[1].figures.culprit_ns, vec![3_100_000]);
        let nobody = &g[3];
        let mut whys: Vec<&str> = nobody.sentences.iter().map(|s| s.why.as_str()).collect();
        whys.sort_unstable();
        assert_eq!(whys, vec![sw::UNEXPLAINED_WHY, sw::NO_TRACE_WHY]);
        // The hog and the holder of one PI chain are two culprits, each its sentence.
        assert_eq!(g[1].sentences.len(), 1);
        assert_eq!(g[1].sentences[0].why, sw::PI_HOG_WHY);
        assert_eq!(g[4].sentences[0].why, sw::PI_RUN_WHY);
        let total: u64 = g.iter().flat_map(|c| &c.sentences).map(|s| s.n).sum();
        assert_eq!(total, 14);
    };
    check(&x);
    // The same xruns in another order group the same.
    let mut rev = x.clone();
    rev.reverse();
    check(&rev);
}

#[test]
fn same_name_other_thread_is_another_culprit() {
    let mut x = sw::xruns();
    // A second 'spin' thread (another tid) preempts once: its own group, not spin's.
    let e = x.iter_mut().find(|e| e.cause == Cause::Preempted).unwrap();
    e.culprit.as_mut().unwrap().tid = 4243;
    e.why = e.why.replace("4242", "4243");
    let g = group(&x);
    let spins: Vec<u64> = g
        .iter()
        .filter(|c| matches!(&c.who, Who::Task(t) if t.comm == "spin"))
        .map(|c| c.n)
        .collect();
    assert_eq!(spins, vec![4, 1]);
}

#[test]
fn the_report_says_why_counts_and_windows() {
    let dir = synthetic("report");
    let (txt, files) = write_all(&dir, false).unwrap();
    for l in txt.lines() {
        assert!(l.chars().count() <= 80, "over 80 columns: {l}");
    }
    let why = flat(section(&txt, "Why the xruns"));
    // Each distinct sentence once, with its count and figures.
    for w in [
        sw::SPIN_WHY,
        sw::SPIN_CPU0_WHY,
        sw::PI_HOG_WHY,
        sw::PI_RUN_WHY,
        sw::SELF_WHY,
        sw::IRQ_WHY,
        sw::UNEXPLAINED_WHY,
        sw::NO_TRACE_WHY,
    ] {
        assert_eq!(why.matches(w).count(), 1, "{w}\n{why}");
    }
    for want in [
        format!(
            "'spin' (tid 4242, FIFO 99) in process 'spin' (pid 4242): 5 of 14 xruns. \
             - 4 of 14 xruns (preempted): {}. Culprit held 4.00 / 5.10 / 5.33 ms, running \
             0 / 0 / 100.0 us, runnable 4.00 / 5.10 / 5.33 ms (min / median / max). \
             - 1 of 14 xruns (preempted): {}. Culprit held 3.10 ms, running 2.20 ms, \
             runnable 3.10 ms.",
            sw::SPIN_WHY,
            sw::SPIN_CPU0_WHY
        ),
        format!(
            "'backup' (tid 5000, FIFO 90) in process 'backup' (pid 5000): 3 of 14 xruns. \
             - 3 of 14 xruns (pi-chain): {}. Culprit held 5.10 / 5.30 / 5.33 ms, running \
             20.00 us, asleep 5.30 ms (min / median / max).",
            sw::PI_HOG_WHY
        ),
        format!(
            "- 2 of 14 xruns (self): {}. Culprit held 5.90 / 5.95 / 6.00 ms, running 5.90 / \
             5.95 / 6.00 ms (min / median / max).",
            sw::SELF_WHY
        ),
        format!(
            "Interrupt handlers (irq 45 nvme0q1): 1 of 14 xruns. - 1 of 14 xruns \
             (interrupt): {}. Culprit held 2.10 ms, running 2.90 ms, interrupts 2.40 ms.",
            sw::IRQ_WHY
        ),
        "No culprit named: 2 of 14 xruns.".to_string(),
    ] {
        assert!(why.contains(&flat(&want)), "{want}\n---\n{why}");
    }
    // Culprits most first.
    let order: Vec<usize> = [
        "'spin' (tid 4242, FIFO 99) in process",
        "'backup' (tid 5000, FIFO 90) in process",
        "'zyn-synth' (tid 4101, FIFO 60) in process",
        "No culprit named",
        "'disk-io' (tid 3100, FIFO 10) in process",
        "Interrupt handlers",
    ]
    .iter()
    .map(|h| why.find(h).unwrap_or_else(|| panic!("{h}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{why}");

    // The counts per cause and per client, as report.json's tables.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["kind"], "watch");
    let rows = |i: usize| -> Vec<Vec<String>> {
        serde_json::from_value(json["tables"][i]["rows"].clone()).unwrap()
    };
    let s = |v: &[&[&str]]| -> Vec<Vec<String>> {
        v.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    };
    assert_eq!(
        rows(0),
        s(&[
            &["self", "2", "14 %"],
            &["preempted", "5", "36 %"],
            &["pi-chain", "4", "29 %"],
            &["interrupt", "1", "7 %"],
            &["unexplained", "1", "7 %"],
            &["no-trace", "1", "7 %"],
        ])
    );
    assert_eq!(
        rows(1),
        s(&[
            &[
                "ardour",
                "10",
                "71 %",
                "5 preempted, 4 pi-chain, 1 interrupt"
            ],
            &[
                "(no late thread found)",
                "2",
                "14 %",
                "1 unexplained, 1 no-trace"
            ],
            &["zynaddsubfx", "2", "14 %", "2 self"],
        ])
    );
    let verdict = flat(section(&txt, "Verdict"));
    assert!(
        verdict.starts_with(
            "Conclusion: 14 xruns in 1 min 0 s of watching, 12 explained; the culprit named \
             most often, in 5 of them, is 'spin' (tid 4242, FIFO 99)."
        ),
        "{verdict}"
    );
    assert!(verdict.contains("12 of 14 explained: 2 self, 5 preempted, 4 pi-chain, 1 interrupt, 1 unexplained, 1 no-trace."), "{verdict}");
    assert!(
        verdict.contains(
            "tracing stopped while windows were read: 184.0 ms in all (longest 52.50 ms)"
        ),
        "{verdict}"
    );
    let ran = flat(section(&txt, "What ran"));
    assert!(ran.contains("server JACK server 'synthetic'"), "{ran}");
    assert!(
        ran.contains("audio 256 frames at 48000 Hz (5.33 ms per period)"),
        "{ran}"
    );
    assert!(
        ran.contains("watched 1 min 0 s, 11,250 cycles; ended stopped by the user (Ctrl-C)"),
        "{ran}"
    );
    assert!(
        ran.contains("watch's cost 0.420 s of CPU (0.70 % of one core)"),
        "{ran}"
    );
    assert!(
        !ran.contains("results are partial"),
        "Ctrl-C ends a watch: {ran}"
    );

    // The kept windows, with the xruns that share one and what is missing.
    let win = flat(section(&txt, "Kept trace windows"));
    assert!(win.contains("https://ui.perfetto.dev"), "{win}");
    assert!(
        win.contains("xruns/0007 7, 8 2 pi-chain trace.txt 1 kB"),
        "{win}"
    );
    assert!(win.contains("9 of 14 xruns have no window kept"), "{win}");
    std::fs::remove_dir_all(dir.join("xruns/0003")).unwrap();
    let (txt, _) = write_all(&dir, false).unwrap();
    assert!(flat(section(&txt, "Kept trace windows")).contains("xruns/0003 3 1 preempted missing"));

    // One CSV row per xrun, on the report's timeline.
    assert!(files.contains(&"export/xruns.csv".to_string()), "{files:?}");
    let csv = std::fs::read_to_string(dir.join("export/xruns.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 14);
    let row2: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
    assert_eq!((row2[0], row2[2], row2[5]), ("2", "3.500000", "pi-chain"));
    assert_eq!((row2[8], row2[9]), ("ardour-fx", "3002"), "waited for");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn png_pixels(p: &Path) -> image::RgbImage {
    image::open(p).unwrap().to_rgb8()
}

fn has_color(img: &image::RgbImage, c: [u8; 3]) -> usize {
    img.pixels().filter(|p| p.0 == c).count()
}

#[test]
fn the_timeline_is_drawn_coloured_by_cause() {
    use analysis::plot::watch::cause_color;
    let dir = synthetic("plot");
    write_all(&dir, false).unwrap();
    let img = png_pixels(&dir.join("plots/xruns_timeline.png"));
    let (w, h) = img.dimensions();
    assert!(
        (1000..=1400).contains(&w) && (400..=1000).contains(&h),
        "{w}x{h}"
    );
    // Every cause that happened has its colour on the plot (marks and legend).
    for c in [
        Cause::SelfWork,
        Cause::Preempted,
        Cause::PiChain,
        Cause::Interrupt,
        Cause::Unexplained,
        Cause::NoTrace,
    ] {
        let RGBColor(r, g, b) = cause_color(c);
        assert!(has_color(&img, [r, g, b]) > 100, "{c:?} not drawn");
    }
    let RGBColor(r, g, b) = cause_color(Cause::Blocked);
    assert_eq!(
        has_color(&img, [r, g, b]),
        0,
        "no blocked xruns, no blocked colour"
    );
    let svg = std::fs::read_to_string(dir.join("plots/xruns_timeline.svg")).unwrap();
    for t in [
        "preempted (5)",
        "time since the watch started at 00:00:00 UTC (s)",
        "pi-chain: a PI lock",
    ] {
        assert!(svg.contains(t), "{t} missing from the SVG");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<img"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn xrun_times_are_on_the_watch_clock() {
    let dir = synthetic("times");
    let res = analysis::kind::load(&dir).unwrap();
    let w = res.data::<analysis::load::WatchData>().expect("a watch");
    let t: Vec<f64> = w.times.iter().map(|t| t.0).collect();
    let want = [
        2.0, 3.5, 7.25, 11.0, 14.0, 19.5, 22.0, 22.2, 30.0, 33.3, 41.0, 47.5, 52.0, 58.75,
    ];
    assert_eq!(t.len(), want.len());
    for (a, b) in t.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{t:?}");
    }
    assert_eq!(w.t_max, 60.0);
    assert!(res.warnings.is_empty(), "{:?}", res.warnings);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_quiet_watch_says_so() {
    let dir = synthetic("quiet");
    std::fs::write(dir.join("events.jsonl"), "").unwrap();
    std::fs::remove_dir_all(dir.join("xruns")).unwrap();
    let p = dir.join("summary.json");
    let mut s: results::watch::WatchSummary =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    s.xruns = 0;
    s.explained = 0;
    s.windows_kept = 0;
    s.by_cause.clear();
    s.by_client.clear();
    s.by_culprit.clear();
    std::fs::write(&p, serde_json::to_string(&s).unwrap()).unwrap();
    let (txt, _) = write_all(&dir, false).unwrap();
    let f = flat(&txt);
    assert!(
        f.contains("Conclusion: no xruns in 1 min 0 s of watching."),
        "{f}"
    );
    assert!(
        f.contains("the true rate is below 180 per hour (95 % confidence)"),
        "{f}"
    );
    assert!(
        !f.contains("Why the xruns") && !f.contains("Kept trace windows"),
        "{f}"
    );
    assert!(dir.join("plots/xruns_timeline.png").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unfinished_or_odd_watch_directories_are_refused_or_flagged() {
    let dir = synthetic("refuse");
    std::fs::write(dir.join(results::INCOMPLETE), "").unwrap();
    let e = write_all(&dir, false).unwrap_err();
    assert!(e.contains("INCOMPLETE") && e.contains("run again"), "{e}");
    std::fs::remove_file(dir.join(results::INCOMPLETE)).unwrap();
    // A newer format is refused by name.
    let p = dir.join("summary.json");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace("\"format\": 1", "\"format\": 99")).unwrap();
    let e = write_all(&dir, false).unwrap_err();
    assert!(e.contains("newer xrunrig (format 99)"), "{e}");
    std::fs::write(&p, &text).unwrap();
    // A torn line and a window outside xruns/ are said, not fatal.
    let ev = dir.join("events.jsonl");
    let mut lines = std::fs::read_to_string(&ev).unwrap();
    lines = lines.replacen("\"window\":\"xruns/0002\"", "\"window\":\"../../etc\"", 1);
    lines += "{\"index\": 15, \"wall\": \n";
    std::fs::write(&ev, lines).unwrap();
    let (txt, _) = write_all(&dir, false).unwrap();
    let probs = flat(section(&txt, "Reading problems"));
    assert!(
        probs.contains("1 lines of events.jsonl are not xruns"),
        "{probs}"
    );
    assert!(
        probs.contains("1 xruns name a window that is not a folder under xruns/"),
        "{probs}"
    );
    // compare and the KCIDB and LAVA exports take rig runs only, and say what to do
    // instead.
    let other = synthetic("refuse-b");
    let e = analysis::compare_outcome(&analysis::compare::Request::one_run_a_side(
        &[dir.clone(), other.clone()],
        5.0,
        None,
    ))
    .err()
    .unwrap();
    assert!(
        e.contains("xrunrig watch") && e.contains("xrunrig report"),
        "{e}"
    );
    for export in [
        &analysis::export::kcidb::Kcidb::default() as &dyn analysis::export::Export,
        &analysis::export::lava::Lava,
    ] {
        let e = analysis::export::load(export, std::slice::from_ref(&dir))
            .err()
            .unwrap();
        assert!(
            e.contains("xrunrig watch") && e.contains("xrunrig report"),
            "{}: {e}",
            export.name()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
}
