//! What a run leaves behind: the results directory (summary.json, samples.jsonl,
//! run.json), the printed table and the progress lines; where each goes (`console`).

pub mod console;
pub mod progress;
pub mod provenance;
pub mod summary;
pub mod table;

use std::io::Write;
use std::path::{Path, PathBuf};

/// The verdict a run ends with, after its table: the report's verdict in plain words
/// (`analysis::report::answer`), where the results are and the next command; `--quiet`
/// keeps the one-line conclusion. Empty when the directory does not read (the run
/// failed to write it: the error was said).
pub fn answer(dir: &Path) -> String {
    match analysis::report::answer::answer(dir) {
        Ok(a) => {
            console::verdict(&a.one_line);
            let mut s = String::from("\nverdict:\n");
            for l in &a.lines {
                s += &format!("  {l}\n");
            }
            s += &format!("  {}\n", a.one_line);
            s += &format!(
                "results: {}\nnext: xrunrig report {} (plots and the full report)\n",
                dir.display(),
                dir.display()
            );
            s
        }
        Err(e) => format!("results: {}\n(no verdict: {e})\n", dir.display()),
    }
}

/// `results/<rig>-<UTC time>` unless the user named one.
pub fn results_dir(rig: &str, out: Option<&Path>) -> PathBuf {
    match out {
        Some(p) => p.to_path_buf(),
        None => {
            let (_, stamp) = crate::sys::utc_now();
            PathBuf::from("results").join(format!("{}-{stamp}", results::file_part(rig)))
        }
    }
}

/// Refuses a directory that already holds results, so nothing is lost; creates
/// nothing.
pub fn check_results_dir(dir: &Path) -> Result<(), String> {
    // A link there (planted, or the user's own) would have every file written through
    // it, wherever it points: refused, as report and compare refuse one.
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(format!(
            "refusing to write results into {}: it is a symbolic link{}; give the directory \
             itself or a new name, so nothing is written through a link (nothing was written)",
            dir.display(),
            std::fs::read_link(dir)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default()
        ));
    }
    if dir.join(results::SUMMARY_JSON).exists() || dir.join(results::RUN_JSON).exists() {
        return Err(format!(
            "{} already holds results; choose another --out (nothing was overwritten)",
            dir.display()
        ));
    }
    Ok(())
}

/// Creates the directory; refuses one that already holds results, so nothing is lost.
pub fn create_results_dir(dir: &Path) -> Result<(), String> {
    check_results_dir(dir)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

/// A run's results directory, marked INCOMPLETE until `mark_complete`. With `--out`
/// (`named`), that directory unless it already holds results; otherwise `dir` itself or,
/// when another run has it, `dir-2`, `dir-3`...: each claimed with one mkdir, so two
/// runs started in the same second never share one.
pub fn new_results_dir(dir: &Path, named: bool) -> Result<PathBuf, String> {
    let dir = if named {
        create_results_dir(dir)?;
        dir.to_path_buf()
    } else {
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let mut n = 1u32;
        loop {
            let cand = if n == 1 {
                dir.to_path_buf()
            } else {
                let mut s = dir.as_os_str().to_owned();
                s.push(format!("-{n}"));
                PathBuf::from(s)
            };
            match std::fs::create_dir(&cand) {
                Ok(()) => break cand,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => n += 1,
                Err(e) => return Err(format!("cannot create {}: {e}", cand.display())),
            }
        }
    };
    write_new(
        &dir.join(results::INCOMPLETE),
        b"this run has not finished writing its results (or was killed)\n",
    )
    .map_err(|e| {
        format!(
            "cannot write {}: {e}",
            dir.join(results::INCOMPLETE).display()
        )
    })?;
    sync_dir(&dir);
    Ok(dir)
}

/// The last step of a run: every results file is written; the INCOMPLETE mark goes.
pub fn mark_complete(dir: &Path) -> Result<(), String> {
    crate::sys::test_stall("complete");
    let p = dir.join(results::INCOMPLETE);
    match std::fs::remove_file(&p) {
        Ok(()) => {
            sync_dir(dir);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", p.display())),
    }
}

/// Writes a file whole or not at all: a temporary beside it, synced, renamed over it.
/// A reader (or a run killed mid-write) sees the old file or the new one, never half.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let r = (|| {
        let mut f = create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r?;
    sync_dir(dir);
    Ok(())
}

/// A file made anew at `path`, never through what was there: a leftover (a killed
/// write's, or a link planted at the name) is unlinked, not followed, and the file is
/// created with O_EXCL|O_NOFOLLOW, so nothing put there in between is written through.
pub fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path)
}

/// `bytes` written to a file made anew at `path` (`create_new`).
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create_new(path)?.write_all(bytes)
}

/// fsync a directory, so a rename or removal in it survives a crash (best effort).
pub fn sync_dir(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

pub fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    write_atomic(path, (text + "\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xrunrig-out-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Issue 35, item 2: `--out link` is refused, nothing written where it points; the
    /// INCOMPLETE mark and a temporary file planted as links are replaced, not followed.
    #[test]
    fn results_are_created_never_written_through_a_link() {
        let d = tmp("links");
        let victim = d.join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        let e = new_results_dir(&d.join("link"), true).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
        // An existing, empty-of-results directory with links planted at the names.
        let r = d.join("r");
        std::fs::create_dir(&r).unwrap();
        let file = d.join("file");
        std::fs::write(&file, "mine\n").unwrap();
        std::os::unix::fs::symlink(&file, r.join(results::INCOMPLETE)).unwrap();
        let tmpname = format!(".summary.json.tmp-{}", std::process::id());
        std::os::unix::fs::symlink(&file, r.join(&tmpname)).unwrap();
        new_results_dir(&r, true).unwrap();
        write_atomic(&r.join("summary.json"), b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
        assert!(
            std::fs::symlink_metadata(r.join(results::INCOMPLETE))
                .unwrap()
                .is_file()
        );
        assert!(!r.join(&tmpname).exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn default_results_dirs_never_collide_and_start_incomplete() {
        let d = tmp("unique");
        let base = d.join("results").join("rig-20260101T000000Z");
        // Four runs in the same second, from four threads.
        let got: Vec<PathBuf> = (0..4)
            .map(|_| {
                let b = base.clone();
                std::thread::spawn(move || new_results_dir(&b, false).unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let mut names: Vec<_> = got.iter().map(|p| p.display().to_string()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(got.contains(&base));
        for g in &got {
            assert!(g.join(results::INCOMPLETE).exists());
            mark_complete(g).unwrap();
            assert!(!g.join(results::INCOMPLETE).exists());
        }
        // A named directory that holds results is refused, one that does not is used.
        write_json(&got[0].join(results::SUMMARY_JSON), &1).unwrap();
        assert!(
            new_results_dir(&got[0], true)
                .unwrap_err()
                .contains("already holds")
        );
        assert_eq!(
            new_results_dir(&d.join("mine"), true).unwrap(),
            d.join("mine")
        );
    }

    #[test]
    fn atomic_writes_leave_no_half_file() {
        let d = tmp("atomic");
        let p = d.join("summary.json");
        write_atomic(&p, b"{\"a\": 1}").unwrap();
        write_atomic(&p, b"{\"a\": 2}").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{\"a\": 2}");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary left behind");
    }

    #[test]
    fn rig_names_are_made_safe_for_the_path() {
        let p = results_dir("../../etc/x y", None);
        assert_eq!(p.parent(), Some(Path::new("results")));
        assert!(
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(".._.._etc_x_y-")
        );
    }
}
