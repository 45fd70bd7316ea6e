//! `xrunrig report` and the exports on an `xrunrig bisect` directory: the synthetic
//! bisection of `analysis::synth::bisect` (16 commits, commit 11 the first bad one,
//! every kind of verdict among its steps, confirmed by its revert) reported, its table,
//! plot, CSV, KCIDB and LAVA exports checked against the record, and older, unfinished
//! or odd records read or refused.

use analysis::export::kcidb::{self, Options, Status};
use analysis::export::lava::lava_cases;
use analysis::report::write_all;
use analysis::synth::bisect as sb;
use results::bisect::{BisectDoc, Outcome, Verdict};
use std::path::{Path, PathBuf};

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn synthetic(tag: &str) -> (PathBuf, BisectDoc) {
    let d = std::env::temp_dir().join(format!("analysis-bisect-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let doc = sb::generate(&d).unwrap();
    (d, doc)
}

/// The text of one section of report.txt, up to the next section.
fn section<'a>(txt: &'a str, title: &str) -> &'a str {
    let head = format!("\n{title}\n{}\n", "-".repeat(title.chars().count()));
    let start = txt
        .find(&head)
        .unwrap_or_else(|| panic!("no {title}: {txt}"))
        + head.len();
    let rest = &txt[start..];
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

fn short(position: u32) -> String {
    sb::sha(position)[..12].to_string()
}

#[test]
fn report_writes_the_table_the_verdict_and_the_plot() {
    let (dir, doc) = synthetic("report");
    let (txt, files) = write_all(&dir, false).unwrap();
    for f in [
        "report.txt",
        "report.md",
        "report.html",
        "report.json",
        "plots/bisect_steps.png",
        "plots/bisect_steps.svg",
        "export/steps.csv",
    ] {
        assert!(files.contains(&f.to_string()), "{f} not in {files:?}");
        assert!(dir.join(f).is_file(), "{f}");
    }
    assert!(txt.lines().all(|l| l.chars().count() <= 80), "{txt}");
    // The verdict: the first bad commit, confirmed; a line per tested commit.
    let v = flat(section(&txt, "Verdict"));
    assert!(
        v.contains(&format!(
            "Conclusion: the first bad commit is {} {}",
            short(sb::FIRST_BAD_AT),
            sb::subject(sb::FIRST_BAD_AT)
        )) && v.contains("confirmed: the bad end with"),
        "{v}"
    );
    let lines = v.matches("- ").count();
    assert_eq!(lines, 2 + doc.steps.len() + 1, "{v}");
    assert!(v.contains("skip (build failed): kernel/sched/rt.c"), "{v}");
    assert!(v.contains("(commit 8 of 16)"), "{v}");
    // What was bisected.
    let w = flat(section(&txt, "What ran"));
    for want in [
        "kind bisect",
        sb::RIG,
        sb::SETTING,
        sb::TREE,
        &sb::sha(0),
        &sb::sha(sb::RANGE),
        "16 commits",
    ] {
        assert!(w.contains(want), "{want}: {w}");
    }
    // A kernel per commit, not the first run's as if it were the only one.
    let k = flat(section(&txt, "Kernel"));
    assert!(
        k.contains("one per tested commit") && k.contains(sb::CONFIG),
        "{k}"
    );
    assert!(!k.contains("release"), "{k}");
    // The table: every tested commit, its verdict and counts.
    let t = section(&txt, "Results");
    for s in doc.ends.iter().chain(&doc.steps) {
        assert!(
            t.contains(s.commit.short()),
            "{} not in {t}",
            s.commit.short()
        );
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| role | commit | subject | verdict | passed | p vs good | p vs bad | build s | run s |"),
        "{md}"
    );
    let row = |pos: u32| {
        md.lines()
            .find(|l| l.starts_with("| step |") && l.contains(&short(pos)))
            .unwrap_or_else(|| panic!("no row for {pos}: {md}"))
            .to_string()
    };
    assert!(row(8).contains("| good | 5/5 |"), "{}", row(8));
    assert!(row(10).contains("| good | 9/10 |"), "{}", row(10));
    assert!(row(11).contains("| bad | 0/5 |"), "{}", row(11));
    assert!(
        row(12).contains("| skip (build failed) | 0/0 |"),
        "{}",
        row(12)
    );
    assert!(
        row(14).contains("| skip (undecided) | 7/15 |"),
        "{}",
        row(14)
    );
    assert!(md.contains("| revert |"), "{md}");
    // The first bad commit, the rule, the error rate, the time and the replay.
    let f = flat(section(&txt, "First bad commit"));
    assert!(
        f.contains(&sb::sha(sb::FIRST_BAD_AT)) && f.contains("commit 11 of 16"),
        "{f}"
    );
    let r = flat(section(&txt, "The rule"));
    assert!(
        r.contains("Fisher's exact") && r.contains(sb::CRITERION),
        "{r}"
    );
    let e = flat(section(&txt, "Error rate"));
    assert!(
        e.contains("with 3 step(s) decided") && e.contains("at most 0.04"),
        "{e}"
    );
    assert!(
        flat(section(&txt, "Time")).contains("guest boot(s)"),
        "{txt}"
    );
    let rp = flat(section(&txt, "Replay"));
    assert!(
        rp.contains(&format!("cd {}", sb::TREE))
            && rp.contains(&format!(
                "git bisect replay {}",
                dir.canonicalize().unwrap().join("bisect.log").display()
            )),
        "{rp}"
    );
    // The guest's emulated CPUs are said, from the bisection's runs.
    assert!(v.contains("Emulated"), "{v}");
    // The plot is in the HTML and its file is a real PNG.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg"), "the plot is inlined");
    let png = image::open(dir.join("plots/bisect_steps.png")).unwrap();
    assert_eq!((png.width(), png.height()), (1200, 640));
    let svg = std::fs::read_to_string(dir.join("plots/bisect_steps.svg")).unwrap();
    for want in [
        "commits after the good end",
        "share of trials that passed",
        "first bad commit",
        "skip (build failed)",
        "good end",
        "bad end",
    ] {
        assert!(svg.contains(want), "{want} not in the plot");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn steps_csv_has_a_row_per_tested_commit() {
    let (dir, doc) = synthetic("csv");
    write_all(&dir, false).unwrap();
    let mut r = csv::Reader::from_path(dir.join("export/steps.csv")).unwrap();
    let head: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(head, analysis::export::csv::STEPS_CSV_HEAD);
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 2 + doc.steps.len() + 1);
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(&rows[0][col("role")], "good_end");
    assert_eq!(&rows[0][col("position")], "0");
    let bf = rows
        .iter()
        .find(|r| &r[col("verdict")] == "build_failed")
        .unwrap();
    assert_eq!(&bf[col("position")], "12");
    assert!(bf[col("note")].contains("Error 1"));
    let last = rows.last().unwrap();
    assert_eq!(
        (
            &last[col("role")],
            &last[col("verdict")],
            &last[col("position")]
        ),
        ("revert", "good", "16")
    );
    assert_eq!(&last[col("pass_fraction")], "1");
    assert_eq!(last[col("runs")].split(' ').count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn kcidb_and_lava_export_a_checkout_build_and_test_per_tested_commit() {
    let (dir, doc) = synthetic("kcidb");
    let res = analysis::export::load(&kcidb::Kcidb::default(), std::slice::from_ref(&dir)).unwrap();
    let io = kcidb::io(&res, &Options::default()).unwrap();
    let tested = 2 + doc.steps.len() + 1;
    assert_eq!(io.tests.len(), tested);
    // Each commit its checkout (the revert its own); each its build.
    assert_eq!(io.checkouts.len(), tested);
    assert_eq!(io.builds.len(), tested);
    for c in &io.checkouts {
        let h = c.git_commit_hash.as_deref().unwrap();
        assert_eq!(h.len(), 40);
        // A local tree is no https:// repository: said in misc, not as the URL.
        assert!(c.git_repository_url.is_none());
        assert_eq!(c.misc["tree"], sb::TREE);
    }
    let bf = doc
        .steps
        .iter()
        .find(|s| s.verdict == Verdict::BuildFailed)
        .unwrap();
    for b in &io.builds {
        let broken = b.checkout_id.contains(&bf.commit.sha);
        assert_eq!(
            b.status,
            if broken { Status::Fail } else { Status::Pass },
            "{b:?}"
        );
        if broken {
            assert!(b.log_excerpt.as_deref().unwrap().contains("Error 1"));
        } else {
            assert_eq!(b.config_name.as_deref(), Some(sb::CONFIG));
            assert!(b.duration.unwrap() > 0.0);
        }
    }
    let path = format!("xrunrig.bisect.{}.{}.{}", sb::RIG, sb::SETTING, sb::VARIANT);
    let status = |sha: &str| {
        io.tests
            .iter()
            .filter(|t| t.misc["commit"] == sha && t.misc["role"] != "revert")
            .map(|t| t.status)
            .next()
            .unwrap()
    };
    assert!(
        io.tests.iter().all(|t| t.path == path),
        "{:?}",
        io.tests[0].path
    );
    assert_eq!(status(&sb::sha(0)), Status::Pass);
    assert_eq!(status(&sb::sha(sb::RANGE)), Status::Fail);
    assert_eq!(status(&sb::sha(8)), Status::Pass);
    assert_eq!(status(&sb::sha(11)), Status::Fail);
    assert_eq!(status(&sb::sha(12)), Status::Skip);
    assert_eq!(status(&sb::sha(13)), Status::Error);
    assert_eq!(status(&sb::sha(14)), Status::Skip);
    // Each test on its commit's build, with its counts and p-values.
    for t in &io.tests {
        let b = io.builds.iter().find(|b| b.id == t.build_id).unwrap();
        let c = io.checkouts.iter().find(|c| c.id == b.checkout_id).unwrap();
        assert_eq!(c.git_commit_hash.as_ref().unwrap(), &t.misc["commit"]);
        assert!(t.misc.contains_key("passed") && t.misc.contains_key("trials"));
    }
    let ten = io
        .tests
        .iter()
        .find(|t| t.misc["commit"] == sb::sha(10))
        .unwrap();
    assert_eq!(
        (&ten.misc["passed"], &ten.misc["trials"]),
        (&9.into(), &10.into())
    );
    assert!(ten.misc["p_vs_bad"].as_f64().unwrap() <= doc.rule.per_look);
    assert!(
        ten.log_excerpt
            .contains("Conclusion: the first bad commit is")
    );
    // Test ids are unique; the revert's checkout is the bad end's with the commit reverted.
    let mut ids: Vec<&str> = io.tests.iter().map(|t| t.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), tested);
    assert!(io.checkouts.iter().any(|c| {
        c.id.contains(&format!("-revert:{}", sb::sha(sb::FIRST_BAD_AT)))
    }));
    // LAVA: a case per step, each its own name.
    let cases = lava_cases(&io);
    assert_eq!(cases.len(), tested);
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), tested, "{cases:?}");
    let of = |sha: &str, role: &str| {
        cases
            .iter()
            .find(|c| c.name.ends_with(&format!("{role}-{}", &sha[..12])))
            .unwrap()
            .result
    };
    assert_eq!(of(&sb::sha(8), "step"), "pass");
    assert_eq!(of(&sb::sha(11), "step"), "fail");
    assert_eq!(of(&sb::sha(12), "step"), "skip");
    assert_eq!(of(&sb::sha(sb::RANGE), "revert"), "pass");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_refuses_a_bisection_and_says_what_to_do() {
    let (a, _) = synthetic("cmp-a");
    let (b, _) = synthetic("cmp-b");
    let one = analysis::compare::Request::one_run_a_side;
    let e = analysis::compare_outcome(&one(&[a.clone(), b.clone()], 5.0, None))
        .err()
        .unwrap();
    assert!(
        e.contains("`xrunrig bisect` directory")
            && e.contains(&format!("xrunrig report {}", a.display()))
            && e.contains("runs/good-b1"),
        "{e}"
    );
    // Its runs are ordinary results directories, and compare takes them.
    let o = analysis::compare_outcome(&one(
        &[a.join("runs/good-b1"), a.join("runs/bad-b1")],
        5.0,
        None,
    ))
    .unwrap();
    assert!(!o.text.is_empty());
    std::fs::remove_dir_all(&a).unwrap();
    std::fs::remove_dir_all(&b).unwrap();
}

/// A record written before steps had their place in history still reports: the plot in
/// the order tested.
#[test]
fn an_older_record_without_positions_reports() {
    let (dir, mut doc) = synthetic("old");
    for s in doc
        .ends
        .iter_mut()
        .chain(&mut doc.steps)
        .chain(doc.confirmation.as_mut())
    {
        s.position = None;
    }
    sb::write_doc(&dir, &doc).unwrap();
    let text = std::fs::read_to_string(dir.join("bisect.json")).unwrap();
    assert!(!text.contains("\"position\": 8"), "positions are gone");
    let (txt, _) = write_all(&dir, false).unwrap();
    assert!(
        flat(&txt).contains("in the order tested (this bisect.json records no"),
        "{txt}"
    );
    let svg = std::fs::read_to_string(dir.join("plots/bisect_steps.svg")).unwrap();
    assert!(svg.contains("order tested"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ends that do not differ, an unfinished bisection and a stopped one each say why
/// there is no first bad commit; the ends' tests are DONE, not PASS and FAIL.
#[test]
fn no_first_bad_commit_is_said_with_its_reason() {
    let (dir, doc) = synthetic("none");
    let why = "the ends do not differ: good 29/30 passed, bad 27/30";
    for (outcome, want) in [
        (
            Outcome::EndsDoNotDiffer { why: why.into() },
            format!("Conclusion: nothing was bisected: {why}."),
        ),
        (
            Outcome::Stopped {
                why: "interrupted".into(),
            },
            "Conclusion: the bisection stopped after 0 step(s) (interrupted)".into(),
        ),
        (
            Outcome::Unfinished,
            "Conclusion: the bisection is unfinished after 0 step(s)".into(),
        ),
    ] {
        let mut d = doc.clone();
        d.steps.clear();
        d.first_bad = None;
        d.confirmation = None;
        d.overall_alpha = 0.0;
        d.outcome = outcome;
        sb::write_doc(&dir, &d).unwrap();
        let (txt, _) = write_all(&dir, false).unwrap();
        assert!(flat(&txt).contains(&want), "{want}: {txt}");
        let res =
            analysis::export::load(&kcidb::Kcidb::default(), std::slice::from_ref(&dir)).unwrap();
        let io = kcidb::io(&res, &Options::default()).unwrap();
        assert_eq!(io.tests.len(), 2);
        assert!(io.tests.iter().all(|t| t.status == Status::Done));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn odd_records_are_refused_or_flagged() {
    let (dir, doc) = synthetic("odd");
    let p = dir.join("bisect.json");
    let text = std::fs::read_to_string(&p).unwrap();
    // A newer format is refused by name.
    std::fs::write(
        &p,
        text.replace("\"format_version\": 1", "\"format_version\": 99"),
    )
    .unwrap();
    let e = write_all(&dir, false).unwrap_err();
    assert!(
        e.contains("bisect.json") && e.contains("newer xrunrig (format 99)"),
        "{e}"
    );
    // Not a bisection's record.
    std::fs::write(&p, "{\"kind\": \"bisect\"}").unwrap();
    let e = write_all(&dir, false).unwrap_err();
    assert!(e.contains("not a bisection's record"), "{e}");
    // A run listed but missing, and a run path outside the directory: said, not read.
    let mut d = doc.clone();
    d.steps[0].runs = vec!["runs/gone-b1".into(), "../../etc".into()];
    sb::write_doc(&dir, &d).unwrap();
    let (txt, _) = write_all(&dir, false).unwrap();
    let probs = flat(section(&txt, "Reading problems"));
    assert!(
        probs.contains("2 of the bisection's runs listed in bisect.json are missing")
            && probs.contains("runs/gone-b1"),
        "{probs}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The answer a finished bisection's report gives, as `xrunrig run` ends with one.
#[test]
fn the_answer_names_the_first_bad_commit() {
    let (dir, _) = synthetic("answer");
    let a = analysis::report::answer::answer(Path::new(&dir)).unwrap();
    assert!(
        a.one_line.contains(&sb::sha(sb::FIRST_BAD_AT)[..12]),
        "{}",
        a.one_line
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
