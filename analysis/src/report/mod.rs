//! `xrunrig report DIR`: report.txt / .md / .html / .json, plots and exports, written
//! into DIR.

pub mod answer;
pub mod common;
pub mod livefx;
pub mod trials;
pub mod watch;

use crate::doc::{self, Block, Doc};
use crate::load::{self, Kind, Results};
use crate::out::Ctx;
use crate::redact::Redactor;
use std::path::Path;

/// A name safe in a file name: the results format's rule, so plots and exports are
/// named as the engine names a trial's files (the livefx engine imports it from here).
pub use results::file_part as safe;

pub fn redactor_for(res: &Results, redact: bool) -> Redactor {
    if !redact {
        return Redactor::none();
    }
    Redactor::for_this_machine(&run_hosts(&res.run))
}

/// The host names run.json gives: where it ran, and where QEMU ran for a guest run.
pub fn run_hosts(run: &results::run::RunDoc) -> Vec<String> {
    let guest_host = run
        .guest
        .as_ref()
        .and_then(|g| g.host.as_ref())
        .and_then(|h| h.hostname.clone());
    run.host.iter().cloned().chain(guest_host).collect()
}

pub struct Built {
    pub doc: Doc,
    pub conclusion: String,
    pub verdict: Vec<String>,
    pub table: Vec<Block>,
}

/// Builds the document, writing plots and exports on the way.
pub fn build(res: &Results, ctx: &mut Ctx) -> Result<Built, String> {
    ctx.mkdir("plots")?;
    ctx.mkdir("export")?;
    let mut doc = Doc {
        title: format!("xrunrig report: {}", res.rig),
        subtitle: None,
        sections: vec![],
    };
    let doctor = common::doctor(&res.run);
    if !doctor.is_empty() {
        doc.section(
            "Machine check (xrunrig doctor): warnings and failures",
            vec![Block::Bullets(doctor)],
        );
    }
    let part = match &res.kind {
        Kind::Trials(t) => trials_part(res, t, ctx)?,
        Kind::Livefx(d) => livefx_part(res, d, ctx)?,
        Kind::Watch(w) => watch::part(res, w, ctx)?,
    };
    let Part {
        conclusion,
        verdict,
        table,
        what_ran,
        sections,
        plots,
    } = part;
    let mut verdict_blocks = vec![
        Block::Para(conclusion.clone()),
        Block::Bullets(verdict.clone()),
    ];
    if let Some(note) = common::emulated_note(&res.run) {
        verdict_blocks.push(Block::Para(note));
    }
    doc.section("Verdict", verdict_blocks);
    doc.section("What ran", vec![what_ran]);
    doc.section("Kernel", common::kernel(&res.run, res.has_run));
    doc.section("Settings in force", common::settings(&res.run));
    doc.section("Results", table.clone());
    for (t, b) in sections {
        doc.section(&t, b);
    }
    if !res.warnings.is_empty() {
        doc.section(
            "Reading problems",
            vec![Block::Bullets(res.warnings.clone())],
        );
    }
    doc.section("Plots", plots);
    Ok(Built {
        doc,
        conclusion,
        verdict,
        table,
    })
}

/// What one kind of results contributes to the report; `build` lays it out the same
/// way for every kind.
pub struct Part {
    pub conclusion: String,
    pub verdict: Vec<String>,
    pub table: Vec<Block>,
    /// "What ran".
    pub what_ran: Block,
    /// Sections after "Results", in order.
    pub sections: Vec<(String, Vec<Block>)>,
    pub plots: Vec<Block>,
}

/// A trial rig's part, writing its plots and exports.
fn trials_part(res: &Results, t: &load::trials::TrialsData, ctx: &mut Ctx) -> Result<Part, String> {
    let (bullets, conclusion) = trials::verdict(t);
    let trials_run = t.trials.len();
    let what_ran = common::what_ran(
        &res.run,
        &res.rig,
        res.kind.name(),
        vec![(
            "trials".to_string(),
            format!(
                "{} run{}",
                trials_run,
                res.run.trials.map_or(String::new(), |n| {
                    if t.until_decided.is_some() {
                        format!(", at most {n} per setting and variant (--until-decided)")
                    } else {
                        format!(", {n} per setting and variant")
                    }
                })
            ),
        )],
    );
    let table = vec![trials::table(t)];
    let ev = trials::evidence(t);
    let plots = trials::plots(t, ctx)?;
    crate::export::trials(t, ctx)?;
    let mut sections = Vec::new();
    if let Some(d) = &t.until_decided {
        sections.push(("Until decided".to_string(), trials::until_decided(d)));
    }
    if !ev.is_empty() {
        sections.push(("Trace evidence".to_string(), vec![Block::Pre(ev)]));
    }
    Ok(Part {
        conclusion,
        verdict: bullets,
        table,
        what_ran,
        sections,
        plots,
    })
}

/// A livefx rig's part, writing its plots and exports.
fn livefx_part(res: &Results, d: &load::livefx::LivefxData, ctx: &mut Ctx) -> Result<Part, String> {
    let cs = livefx::cases(d);
    let (bullets, conclusion) = livefx::verdict(&cs);
    let what_ran = common::what_ran(&res.run, &res.rig, res.kind.name(), livefx_what_ran(res, d));
    let table = livefx::tables(&cs);
    let ev = livefx::first_events(d);
    let plots = livefx::plots(d, &cs, ctx)?;
    crate::export::livefx(res, d, ctx)?;
    let sections = livefx_sections(d, &cs, ev);
    Ok(Part {
        conclusion,
        verdict: bullets,
        table,
        what_ran,
        sections,
        plots,
    })
}

/// "What ran" for a livefx rig: the backend, the audio format, the workers, the round
/// trip (from the first row) and the trials.
fn livefx_what_ran(res: &Results, d: &load::livefx::LivefxData) -> Vec<(String, String)> {
    let mut extra = Vec::new();
    if let Some(r) = d.rows.first() {
        let mut b = r.backend.clone();
        if let Some(n) = &r.backend_note {
            b += &format!(" ({n})");
        }
        extra.push(("backend".to_string(), b));
        extra.push((
            "audio".to_string(),
            format!(
                "{} frames at {} Hz{}",
                r.period.map_or("?".into(), |p| format!("{p:.0}")),
                r.rate.map_or("?".into(), |x| format!("{x:.0}")),
                r.period_us().map_or(String::new(), |p| format!(
                    " ({} per period)",
                    common::fmt_us(p)
                ))
            ),
        ));
        if let Some(w) = workers(&res.run) {
            extra.push(("workers".to_string(), w));
        }
        if let Some(rt) = r.counts.roundtrip_frames {
            extra.push(("round trip".into(), format!("{rt} frames (loopback)")));
        }
    }
    extra.push((
        "trials".to_string(),
        format!(
            "{} trial{} in all{}",
            d.trials.len(),
            if d.trials.len() == 1 { "" } else { "s" },
            d.rows
                .first()
                .and_then(|r| r.trial_s())
                .map_or(String::new(), |s| format!(", {} each", common::fmt_dur(s)))
        ),
    ));
    extra
}

/// A livefx report's sections after "Results": why the misses, the first events
/// (`ev`), and where the numbers come from.
fn livefx_sections(
    d: &load::livefx::LivefxData,
    cs: &[livefx::Case],
    ev: Vec<String>,
) -> Vec<(String, Vec<Block>)> {
    let mut sections = Vec::new();
    let why = livefx::why_blocks(cs);
    if !why.is_empty() {
        sections.push(("Why the misses".to_string(), why));
    }
    if !ev.is_empty() {
        sections.push((
            "First events (events.jsonl)".to_string(),
            vec![Block::Pre(ev)],
        ));
    }
    if let Some(s) = d.latency.values().map(|l| l.source).next() {
        sections.push((
            "Where the numbers come from".to_string(),
            vec![Block::Para(format!(
                "Latency percentiles from {}; counts from {}.",
                if s == crate::load::livefx::Source::Cycles {
                    "every cycle's raw record (cycles/*.bin)"
                } else {
                    results::HISTOGRAMS_JSON
                },
                if d.cycle_stats.is_empty() {
                    results::SUMMARY_JSON
                } else {
                    "the raw cycle records"
                }
            ))],
        ));
    }
    sections
}

/// run.json's livefx worker layout in one line: "fx.0 FIFO 60 on CPU 0: 150 us, 60 us
/// under bus, 40 us under state; ...".
fn workers(run: &results::run::RunDoc) -> Option<String> {
    let out: Vec<String> = run
        .livefx
        .as_ref()?
        .workers
        .iter()
        .map(|w| {
            let plugins: Vec<String> = w
                .plugins
                .iter()
                .map(|p| {
                    let us = p.run_us.map_or("?".into(), |v| {
                        if v.fract() == 0.0 {
                            format!("{v:.0}")
                        } else {
                            common::fmt_val(v)
                        }
                    });
                    match &p.lock {
                        Some(l) => format!("{us} us under {l}"),
                        None => format!("{us} us"),
                    }
                })
                .collect();
            let cpus: Vec<String> = w.cpus.iter().map(u64::to_string).collect();
            format!(
                "{} FIFO {}{}: {}",
                w.name.as_deref().unwrap_or("worker"),
                w.priority.map_or("?".into(), |p| p.to_string()),
                if cpus.is_empty() {
                    String::new()
                } else {
                    format!(" on CPU {}", cpus.join(","))
                },
                plugins.join(", ")
            )
        })
        .collect();
    (!out.is_empty()).then(|| out.join("; "))
}

/// Writes report.txt, report.md, report.html and report.json; returns report.txt.
pub fn write_all(dir: &Path, redact: bool) -> Result<(String, Vec<String>), String> {
    let res = load::load(dir)?;
    let red = redactor_for(&res, redact);
    let mut ctx = Ctx::new(dir, red.clone(), res.rig.clone())?;
    let b = build(&res, &mut ctx)?;
    let mut files_doc = b.doc.clone();
    let mut listing: Vec<String> = ctx
        .files
        .iter()
        .filter(|f| f.starts_with("export/"))
        .cloned()
        .collect();
    listing.sort();
    files_doc.section(
        "Exports",
        vec![Block::Para(format!(
            "For pandas and other tools, in export/: {}. summary.json, run.json and report.json hold the same in JSON.",
            listing.iter().map(|f| f.trim_start_matches("export/")).collect::<Vec<_>>().join(", ")
        ))],
    );
    let txt = doc::text::render(&files_doc);
    ctx.write("report.txt", &txt)?;
    ctx.write("report.md", &doc::markdown::render(&files_doc))?;
    let d = dir.to_path_buf();
    let html = doc::html::render(&files_doc, &|f| {
        std::fs::read_to_string(d.join(format!("{f}.svg"))).ok()
    });
    ctx.write("report.html", &html)?;
    let json = serde_json::json!({
        "rig": res.rig,
        "kind": res.kind.name(),
        "conclusion": b.conclusion,
        "verdict": b.verdict,
        "warnings": res.warnings,
        "tables": b.table.iter().filter_map(|t| match t {
            Block::Table { head, rows, .. } => Some(serde_json::json!({"head": head, "rows": rows})),
            _ => None,
        }).collect::<Vec<_>>(),
        "files": ctx.files,
    });
    ctx.write(
        "report.json",
        &(serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n"),
    )?;
    Ok((red.apply(&txt), ctx.files))
}

pub fn main(dir: &Path, redact: bool) -> Result<i32, String> {
    let (txt, files) = write_all(dir, redact)?;
    print!("{txt}");
    println!();
    println!(
        "wrote {} files into {}: report.txt, report.md, report.html, report.json, plots/, export/",
        files.len(),
        if redact {
            "the results directory".to_string()
        } else {
            dir.display().to_string()
        }
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use results::run::RunDoc;

    #[test]
    fn workers_in_one_line() {
        let run = RunDoc::from_json(
            r#"{"livefx": {"workers": [
                {"name": "fx.0", "priority": 60, "cpus": [0, 2],
                 "plugins": [{"run_us": 150}, {"run_us": 60.5, "lock": "bus"}]},
                {"priority": "x", "plugins": [{"lock": "state"}]}
            ]}}"#,
        )
        .unwrap();
        assert_eq!(
            super::workers(&run).unwrap(),
            format!(
                "fx.0 FIFO 60 on CPU 0,2: 150 us, {} us under bus; worker FIFO ?: ? us under state",
                super::common::fmt_val(60.5)
            )
        );
        assert_eq!(super::workers(&RunDoc::default()), None);
    }
}
