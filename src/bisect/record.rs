//! The bisection's record: bisect.json (`results::bisect`), bisect.log in
//! `git bisect log`'s form, and the printed table.

use results::bisect::{BISECT_JSON, BISECT_LOG, BisectDoc, Outcome, Role, Step, Verdict};
use std::fmt::Write as _;
use std::path::Path;

pub fn read(out: &Path) -> Result<Option<BisectDoc>, String> {
    let p = out.join(BISECT_JSON);
    match std::fs::read_to_string(&p) {
        Ok(t) => {
            let doc: BisectDoc = serde_json::from_str(&t)
                .map_err(|e| format!("{}: {e} (not a bisection's record)", p.display()))?;
            // Its names go to git on resume: each must be an object name, not an option.
            if let Some(c) = doc.commits().into_iter().find(|c| !c.is_object_name()) {
                return Err(format!(
                    "{}: {:?} is not a full commit name (40 or 64 lowercase hex digits); the \
                     record is damaged or not xrunrig's: give another --out",
                    p.display(),
                    c.sha.chars().take(80).collect::<String>()
                ));
            }
            Ok(Some(doc))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// bisect.json and bisect.log, each written whole under another name and renamed, so a
/// killed bisection leaves the last whole record.
pub fn write(out: &Path, doc: &BisectDoc) -> Result<(), String> {
    let json = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    for (name, text) in [(BISECT_JSON, json), (BISECT_LOG, git_log(doc))] {
        let p = out.join(name);
        let tmp = out.join(format!(".{name}.part"));
        crate::output::write_new(&tmp, text.as_bytes())
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &p).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

/// The steps as `git bisect log` prints them: `git bisect replay bisect.log` in the
/// user's tree repeats the bisection's decisions there.
pub fn git_log(doc: &BisectDoc) -> String {
    let mut s = String::from("git bisect start\n");
    let i = &doc.inputs;
    let _ = writeln!(
        s,
        "# bad: [{}] {}\ngit bisect bad {}",
        i.bad.sha, i.bad.subject, i.bad.sha
    );
    let _ = writeln!(
        s,
        "# good: [{}] {}\ngit bisect good {}",
        i.good.sha, i.good.subject, i.good.sha
    );
    for st in &doc.steps {
        let word = match st.verdict {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            _ => "skip",
        };
        let _ = writeln!(
            s,
            "# {word}: [{}] {}\ngit bisect {word} {}",
            st.commit.sha, st.commit.subject, st.commit.sha
        );
    }
    if let Some(f) = &doc.first_bad {
        let _ = writeln!(s, "# first bad commit: [{}] {}", f.sha, f.subject);
    }
    s
}

fn p(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2e}"))
}

/// One step's line, as printed when it is decided.
pub fn line(s: &Step) -> String {
    let role = match s.role {
        Role::GoodEnd => "good end",
        Role::BadEnd => "bad end",
        Role::Step => "step",
        Role::Revert => "revert",
    };
    format!(
        "xrunrig bisect: {role} {} {}: {} ({}/{} passed, p vs good {}, vs bad {}; build {:.0} s, run {:.0} s)",
        s.commit.short(),
        s.commit.subject,
        s.verdict.word(),
        s.passed,
        s.trials,
        p(s.p_vs_good),
        p(s.p_vs_bad),
        s.build_s,
        s.run_s
    )
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// The table a bisection ends with: the ends, every step, the first bad commit and
/// its confirmation.
pub fn table(doc: &BisectDoc) -> String {
    let mut out = String::new();
    let i = &doc.inputs;
    let _ = writeln!(
        out,
        "bisect: rig {} setting {} variant {}, {} commit(s) from {} to {}",
        i.rig,
        i.setting,
        i.variant,
        doc.range,
        i.good.short(),
        i.bad.short()
    );
    let _ = writeln!(out, "rule: {}", doc.rule.text);
    let _ = writeln!(
        out,
        "{:<9} {:<12} {:<40} {:<20} {:>7} {:>9} {:>9} {:>7} {:>7}",
        "role", "commit", "subject", "verdict", "passed", "p good", "p bad", "build s", "run s"
    );
    let rows = doc
        .ends
        .iter()
        .chain(&doc.steps)
        .chain(doc.confirmation.as_ref());
    for s in rows {
        let role = match s.role {
            Role::GoodEnd => "good end",
            Role::BadEnd => "bad end",
            Role::Step => "step",
            Role::Revert => "revert",
        };
        let _ = writeln!(
            out,
            "{:<9} {:<12} {:<40} {:<20} {:>7} {:>9} {:>9} {:>7.0} {:>7.0}",
            role,
            s.commit.short(),
            cut(&s.commit.subject, 40),
            s.verdict.word(),
            format!("{}/{}", s.passed, s.trials),
            p(s.p_vs_good),
            p(s.p_vs_bad),
            s.build_s,
            s.run_s
        );
    }
    match &doc.outcome {
        Outcome::Found { confirmed } => {
            let f = doc.first_bad.clone().unwrap_or_default();
            let _ = writeln!(out, "first bad commit: {} {}", f.sha, f.subject);
            let _ = writeln!(
                out,
                "confirmation (the bad end with it reverted): {}",
                match confirmed {
                    Some(true) => "confirmed, it behaves like the good end",
                    Some(false) => "NOT confirmed, it still behaves like the bad end",
                    None => "undecided",
                }
            );
        }
        Outcome::Candidates { commits } => {
            let _ = writeln!(out, "the first bad commit is one of (steps were skipped):");
            for c in commits {
                let _ = writeln!(out, "  {} {}", c.sha, c.subject);
            }
        }
        Outcome::EndsDoNotDiffer { why } => {
            let _ = writeln!(out, "nothing bisected: {why}");
        }
        Outcome::Stopped { why } => {
            let _ = writeln!(out, "stopped: {why} (give the same command to resume)");
        }
        Outcome::Unfinished => {}
    }
    let _ = writeln!(
        out,
        "error rate: each decided step at most {}, the ends' comparison at most {}; this bisection's at most {:.2}",
        doc.rule.alpha_step, doc.rule.alpha_ends, doc.overall_alpha
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::bisect::Commit;

    fn c(sha: char, subject: &str) -> Commit {
        Commit {
            sha: sha.to_string().repeat(40),
            subject: subject.into(),
        }
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("xrunrig-record-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue 35, item 1: a step's sha that is an option (or not ASCII) never reaches git:
    /// the record is refused on reading.
    #[test]
    fn a_forged_record_is_refused_before_git_sees_it() {
        let d = scratch("forged");
        let mut doc = BisectDoc::default();
        doc.inputs.good = c('a', "base");
        doc.inputs.bad = c('f', "tip");
        write(&d, &doc).unwrap();
        assert!(read(&d).unwrap().is_some());
        for sha in ["--output=/tmp/x", "éééé"] {
            doc.steps = vec![Step {
                commit: Commit {
                    sha: sha.into(),
                    subject: String::new(),
                },
                ..Default::default()
            }];
            write(&d, &doc).unwrap();
            let e = read(&d).unwrap_err();
            assert!(e.contains("is not a full commit name"), "{e}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Issue 35, item 2: a link planted at the record's temporary name is replaced, not
    /// written through.
    #[test]
    fn a_link_at_the_part_file_is_not_followed() {
        let d = scratch("link");
        let victim = d.join("victim");
        std::fs::write(&victim, "mine\n").unwrap();
        std::os::unix::fs::symlink(&victim, d.join(".bisect.json.part")).unwrap();
        std::os::unix::fs::symlink(&victim, d.join(".bisect.log.part")).unwrap();
        write(&d, &BisectDoc::default()).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine\n");
        assert!(
            std::fs::symlink_metadata(d.join(BISECT_JSON))
                .unwrap()
                .is_file()
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_log_replays_in_git() {
        let mut d = BisectDoc::default();
        d.inputs.good = c('a', "base");
        d.inputs.bad = c('f', "tip");
        for (x, v) in [
            ('c', Verdict::Good),
            ('e', Verdict::Bad),
            ('d', Verdict::BuildFailed),
        ] {
            d.steps.push(Step {
                commit: c(x, "s"),
                verdict: v,
                ..Default::default()
            });
        }
        d.first_bad = Some(c('e', "s"));
        let l = git_log(&d);
        let cmds: Vec<&str> = l.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(cmds[0], "git bisect start");
        assert_eq!(cmds[1], format!("git bisect bad {}", "f".repeat(40)));
        assert_eq!(cmds[2], format!("git bisect good {}", "a".repeat(40)));
        assert_eq!(cmds[3], format!("git bisect good {}", "c".repeat(40)));
        assert_eq!(cmds[4], format!("git bisect bad {}", "e".repeat(40)));
        assert_eq!(cmds[5], format!("git bisect skip {}", "d".repeat(40)));
        assert!(l.ends_with(&format!("# first bad commit: [{}] s\n", "e".repeat(40))));
    }

    #[test]
    fn a_record_reads_back_and_another_file_is_refused() {
        let d = crate::testkit::private_dir("bisect-record");
        assert_eq!(read(&d).unwrap(), None);
        let mut doc = BisectDoc::default();
        doc.inputs.setting = "NO_RT_PUSH_IPI".into();
        doc.inputs.good = c('a', "base");
        doc.inputs.bad = c('f', "tip");
        write(&d, &doc).unwrap();
        assert_eq!(read(&d).unwrap(), Some(doc));
        std::fs::write(d.join(BISECT_JSON), "{}").unwrap();
        assert!(read(&d).unwrap_err().contains("not a bisection's record"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
