//! `xrunrig run --from DIR`: a recorded run repeated from its own run.json — the rig
//! and profile as they were run (their recorded text, checked against the recorded
//! sha256), the options of the recorded command, the backend the run ended up on —
//! with only the results directory, the kernel, the bound and --json the receiver's.
//!
//! Resolved at the CLI edge: the recorded command is parsed by the same clap
//! definitions as a typed one, so a rerun is an ordinary run from here on.

use crate::cli::{Cli, Cmd, RunArgs};
use crate::output::provenance::sha256_hex;
use crate::rig::backend::BackendChoice;
use results::run::{RerunOf, RunDoc};
use std::path::{Path, PathBuf};

/// `a` as it runs: unchanged without `--from`; else the recorded run's options.
pub fn resolve(a: RunArgs) -> Result<RunArgs, String> {
    let Some(dir) = a.from.clone() else {
        return Ok(a);
    };
    let doc = read(&dir)?;
    let command = match &doc.rerun_of {
        // A rerun of a rerun repeats the first run's options.
        Some(r) if !r.command.is_empty() => r.command.clone(),
        _ => doc.command.clone(),
    };
    let mut run = recorded_args(&dir, &command)?;
    run.rig = Some(rig_file(&dir, &doc)?);
    run.profile = profile_file(&dir, &doc)?;
    if run.backend.is_none() || run.backend == Some(BackendChoice::Auto) {
        run.backend = backend_used(&doc);
    }
    run.out = a.out;
    run.json = a.json;
    run.from = None;
    if a.max_time.is_some() {
        run.max_time = a.max_time;
    }
    if !a.kernel.is_empty() {
        // Another kernel named: the recorded kernels and their patches give way to it.
        run.kernel = a.kernel;
        run.patch = a.patch;
        run.patch_kernel = a.patch_kernel;
    }
    // A record is someone else's: say what it will run and set before it does.
    crate::output::console::note(&format!(
        "xrunrig: repeating {}: `{}`, with the rig ({}) and profile ({}) as recorded; the \
         profile's settings are applied as it says and restored after",
        dir.display(),
        command.join(" "),
        doc.rig
            .as_ref()
            .and_then(|r| r.name.as_deref())
            .unwrap_or("?"),
        doc.profile
            .as_ref()
            .and_then(|p| p.name.as_deref())
            .unwrap_or("none"),
    ));
    run.rerun_of = Some(RerunOf {
        dir: Some(dir.display().to_string()),
        command,
    });
    Ok(run)
}

fn read(dir: &Path) -> Result<RunDoc, String> {
    let p = dir.join(results::RUN_JSON);
    let text = crate::rig::limits::read_capped(&p, "run.json").map_err(|e| {
        format!(
            "--from {}: {e}; give a results directory `xrunrig run` wrote",
            dir.display()
        )
    })?;
    RunDoc::from_json(&text).map_err(|e| format!("--from {}: {e}", dir.display()))
}

/// The recorded command through this xrunrig's own definitions.
fn recorded_args(dir: &Path, command: &[String]) -> Result<RunArgs, String> {
    if command.len() < 2 {
        return Err(format!(
            "--from {}: run.json records no command to repeat",
            dir.display()
        ));
    }
    let shown = command.join(" ");
    let cli = Cli::try_parse_args(command).map_err(|e| {
        let first = e.to_string();
        let first = first.lines().next().unwrap_or("").trim().to_string();
        format!(
            "--from {}: this xrunrig cannot read the recorded command `{shown}`: {first}",
            dir.display()
        )
    })?;
    match cli.cmd {
        Cmd::Run(r) if r.from.is_none() => Ok(*r),
        Cmd::Run(_) => Err(format!(
            "--from {}: the recorded command `{shown}` is itself a --from without the run \
             it repeated recorded; rerun that run's directory instead",
            dir.display()
        )),
        _ => Err(format!(
            "--from {}: the recorded command `{shown}` is not an `xrunrig run`",
            dir.display()
        )),
    }
}

/// The rig's recorded text, checked against its recorded sha256, as a file to run.
fn rig_file(dir: &Path, doc: &RunDoc) -> Result<PathBuf, String> {
    let r = doc.rig.as_ref();
    let Some(text) = r.and_then(|r| r.text.as_deref()) else {
        return Err(format!(
            "--from {}: run.json records no rig text (a run from before it was recorded); \
             run its rig file again by hand",
            dir.display()
        ));
    };
    let path = r.and_then(|r| r.path.as_deref()).unwrap_or("rig.toml");
    checked(dir, "rig", text, r.and_then(|r| r.sha256.as_deref()))?;
    materialise(&analysis::cache::root(), text, path)
}

/// The profile's file: its recorded text, else the recorded path when that file still
/// has the recorded sha256; None for a run without a profile.
fn profile_file(dir: &Path, doc: &RunDoc) -> Result<Option<PathBuf>, String> {
    let Some(p) = doc.profile.as_ref() else {
        return Ok(None);
    };
    let Some(path) = p.path.as_deref() else {
        return Ok(None);
    };
    if let Some(text) = p.text.as_deref() {
        checked(dir, "profile", text, p.sha256.as_deref())?;
        return materialise(&analysis::cache::root(), text, path).map(Some);
    }
    // Runs from before the profile's text was recorded: the file, if it is unchanged.
    let on_disk = std::fs::read_to_string(path).ok();
    match (on_disk, p.sha256.as_deref()) {
        (Some(t), Some(sha)) if sha256_hex(&t) == sha => Ok(Some(PathBuf::from(path))),
        _ => Err(format!(
            "--from {}: run.json records the profile {path} by path only, and that file is \
             gone or changed since (its sha256 differs); put the profile it ran back at \
             {path}, or run it again by hand",
            dir.display()
        )),
    }
}

fn checked(dir: &Path, what: &str, text: &str, sha: Option<&str>) -> Result<(), String> {
    match sha {
        Some(s) if s != sha256_hex(text) => Err(format!(
            "--from {}: the {what}'s recorded text does not have its recorded sha256 {s} \
             (run.json was edited or damaged); nothing was run",
            dir.display()
        )),
        _ => Ok(()),
    }
}

/// The backend every setting ran on, when they agree: a rerun on a machine that would
/// pick another one under `auto` runs the same one, or is refused by it.
fn backend_used(doc: &RunDoc) -> Option<BackendChoice> {
    let used: Vec<&str> = doc
        .livefx
        .as_ref()?
        .backends
        .iter()
        .map(|b| b.backend.split_whitespace().next().unwrap_or(""))
        .collect();
    let first = *used.first()?;
    if used.iter().all(|b| *b == first) {
        BackendChoice::parse(first).ok()
    } else {
        None
    }
}

/// `text` written once to the cache under its sha256, named as the recorded file was
/// (its last component, kept to safe characters): the run then names a file that holds
/// exactly what it runs.
fn materialise(root: &Path, text: &str, recorded: &str) -> Result<PathBuf, String> {
    let name: String = Path::new(recorded)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("rig.toml")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = if name.is_empty() || name.starts_with('.') {
        format!("file{name}")
    } else {
        name
    };
    let d = root.join("rerun").join(sha256_hex(text));
    let p = d.join(&name);
    if std::fs::read_to_string(&p).is_ok_and(|t| t == text) {
        return Ok(p);
    }
    std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    let tmp = d.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &p))
        .map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_name_is_kept_to_its_last_safe_component() {
        let root = std::env::temp_dir().join(format!("xrunrig-rerun-{}", std::process::id()));
        let p = materialise(&root, "name = \"x\"\n", "../../etc/pass wd.toml").unwrap();
        assert!(p.starts_with(root.join("rerun")));
        assert_eq!(p.file_name().unwrap(), "pass_wd.toml");
        let q = materialise(&root, "name = \"x\"\n", "/a/.hidden").unwrap();
        assert_eq!(q.file_name().unwrap(), "file.hidden");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "name = \"x\"\n");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_text_that_is_not_its_recorded_sha_is_refused() {
        let d = Path::new("r");
        assert!(checked(d, "rig", "a", Some(&sha256_hex("a"))).is_ok());
        let e = checked(d, "rig", "a", Some(&sha256_hex("b"))).unwrap_err();
        assert!(e.contains("nothing was run"), "{e}");
    }
}
