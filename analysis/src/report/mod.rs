//! `xrunrig report DIR`: report.txt / .md / .html / .json, plots and exports, written
//! into DIR.

pub mod answer;
pub mod bisect;
pub mod common;
pub mod livefx;
pub mod part;
pub mod trials;
pub mod watch;

use crate::doc::{self, Block, Doc};
use crate::export::{self, Out};
use crate::kind;
use crate::load::Results;
use crate::out::Ctx;
use crate::redact::Redactor;
use std::path::Path;

use part::Part;

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

/// Builds the document and renders the plots it shows, writing nothing: the plots
/// (`Ctx::flush`) and the exports are the report command's own steps (`write_all()`).
pub fn build(res: &Results, ctx: &mut Ctx) -> Result<Built, String> {
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
    let part = kind::of(res).part(res, ctx)?;
    let Part {
        conclusion,
        verdict,
        table,
        what_ran,
        kernel,
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
    for note in common::environment_notes(&res.run) {
        verdict_blocks.push(Block::Para(note));
    }
    doc.section("Verdict", verdict_blocks);
    doc.section("What ran", vec![what_ran]);
    doc.section(
        "Kernel",
        kernel.unwrap_or_else(|| common::kernel(&res.run, res.has_run)),
    );
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
    let name = res.dir.file_name().map_or_else(
        || res.dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    if res.has_run
        && let Some(blocks) = common::reproduce(&res.run, &name, ctx.red.active())
    {
        doc.section("Reproduce", blocks);
    }
    Ok(Built {
        doc,
        conclusion,
        verdict,
        table,
    })
}

/// Writes report.txt, report.md, report.html and report.json, the plots and the exports
/// that belong in a results directory; returns report.txt and the files written.
pub fn write_all(dir: &Path, redact: bool) -> Result<(String, Vec<String>), String> {
    write_into(dir, dir, redact)
}

/// `write_all` with the files going into `out` (made if missing), so a results
/// directory that cannot be written (an attachment unpacked read-only) can be reported.
/// With `redact`, the records a bug is sent with are written too, redacted:
/// run.redacted.json and summary.redacted.json (the originals stay whole for the sender's
/// own use and `run --from`).
pub fn write_into(dir: &Path, out: &Path, redact: bool) -> Result<(String, Vec<String>), String> {
    let mut res = kind::load(dir)?;
    let red = redactor_for(&res, redact);
    if redact {
        // Every section that shows a command line shows it cut, however it wraps it.
        let r = &mut res.run;
        r.command = crate::redact::command(&r.command);
        if let Some(o) = r.rerun_of.as_mut() {
            o.command = crate::redact::command(&o.command);
        }
        if let Some(g) = r.guest_command.as_mut() {
            let mut v = serde_json::json!({ "guest_command": g.take() });
            crate::redact::json_commands(&mut v);
            *g = v["guest_command"].take();
        }
    }
    if out != dir {
        std::fs::create_dir_all(out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    }
    let mut ctx = Ctx::new(out, red.clone(), res.rig.clone())?;
    let b = build(&res, &mut ctx)?;
    ctx.mkdir("plots")?;
    ctx.flush()?;
    // After the plots: report.json lists the files in the order they were written.
    for e in export::all().iter().filter(|e| e.in_report()) {
        e.export(std::slice::from_ref(&res), &mut Out::Dir(&mut ctx))?;
    }
    let mut files_doc = b.doc.clone();
    let mut listing: Vec<String> = ctx
        .files
        .iter()
        .filter(|f| f.starts_with("export/"))
        .cloned()
        .collect();
    listing.sort();
    // A bisection's record is its bisect.json; a run's, summary.json and run.json.
    let json = match res.head.file_name().and_then(|n| n.to_str()) {
        Some(n) if n != results::SUMMARY_JSON => n.to_string(),
        _ => format!("{}, {}", results::SUMMARY_JSON, results::RUN_JSON),
    };
    files_doc.section(
        "Exports",
        vec![Block::Para(format!(
            "For pandas and other tools, in export/: {}. {json} and report.json hold the same in JSON.",
            listing.iter().map(|f| f.trim_start_matches("export/")).collect::<Vec<_>>().join(", ")
        ))],
    );
    let txt = doc::text::render(&files_doc);
    ctx.write("report.txt", &txt)?;
    ctx.write("report.md", &doc::markdown::render(&files_doc))?;
    let d = out.to_path_buf();
    let html = doc::html::render(&files_doc, &|f| {
        std::fs::read_to_string(d.join(format!("{f}.svg"))).ok()
    });
    ctx.write("report.html", &html)?;
    if red.active() {
        for (from, to) in [
            (results::RUN_JSON, "run.redacted.json"),
            (results::SUMMARY_JSON, "summary.redacted.json"),
        ] {
            let Ok(text) = std::fs::read_to_string(dir.join(from)) else {
                continue;
            };
            let mut v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: {e}", dir.join(from).display()))?;
            crate::redact::json_commands(&mut v);
            ctx.write(
                to,
                &(serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n"),
            )?;
        }
    }
    let json = serde_json::json!({
        "rig": res.rig,
        "kind": res.kind,
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

pub fn main(dir: &Path, out: Option<&Path>, redact: bool) -> Result<i32, String> {
    let (txt, files) = write_into(dir, out.unwrap_or(dir), redact)?;
    print!("{txt}");
    println!();
    println!(
        "wrote {} files into {}: report.txt, report.md, report.html, report.json, plots/, export/{}",
        files.len(),
        match (redact, out) {
            (true, None) => "the results directory".to_string(),
            (true, Some(_)) => "the output directory".to_string(),
            (false, o) => o.unwrap_or(dir).display().to_string(),
        },
        if redact {
            ", run.redacted.json and summary.redacted.json (attach these, not run.json)"
        } else {
            ""
        }
    );
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Redactor;

    /// `build` computes the document and writes nothing; the plots and the exports are
    /// `write_all`'s steps.
    #[test]
    fn build_writes_nothing() {
        let d = std::env::temp_dir().join(format!("analysis-build-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        crate::synth::trials::generate(&d).unwrap();
        let res = kind::load(&d).unwrap();
        let mut ctx = Ctx::new(&d, Redactor::none(), res.rig.clone()).unwrap();
        let b = build(&res, &mut ctx).unwrap();
        assert!(!b.verdict.is_empty());
        assert!(
            ctx.files.iter().all(|f| f.starts_with("plots/")),
            "{:?}",
            ctx.files
        );
        assert!(!d.join("export").exists());
        assert!(!d.join("plots").exists());
        let plots = ctx.files.clone();
        assert!(!plots.is_empty());
        let (_, files) = write_all(&d, false).unwrap();
        assert!(
            files.contains(&"export/trials.csv".to_string()),
            "{files:?}"
        );
        for p in &plots {
            assert!(d.join(p).is_file(), "{p}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
