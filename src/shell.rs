//! `xrunrig completions SHELL` and `xrunrig man`: shell completions and man pages
//! generated from the clap definitions (`cli.rs`), so they list every subcommand, flag
//! and enumerated value the binary takes, and never drift from it.

use crate::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;
use std::path::Path;

/// The completion script for `shell`, written to `w`.
pub fn completions(shell: Shell, w: &mut dyn Write) {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "xrunrig", w);
}

/// The man page of xrunrig (all subcommands listed) to `w`.
pub fn man_page(w: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(Cli::command()).render(w)
}

/// One page per command into `dir`: xrunrig.1, xrunrig-run.1, …; the files written.
pub fn man_pages(dir: &Path) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .map_err(|e| format!("cannot write man pages into {}: {e}", dir.display()))?;
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("xrunrig") && n.ends_with(".1"))
        .collect();
    names.sort();
    Ok(names)
}

/// `xrunrig completions` / `xrunrig man`: the exit code.
pub fn completions_main(shell: Shell) -> i32 {
    let mut out = std::io::stdout().lock();
    completions(shell, &mut out);
    match out.flush() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xrunrig completions: {e}");
            1
        }
    }
}

pub fn man_main(dir: Option<&Path>) -> i32 {
    let r = match dir {
        None => {
            let mut out = std::io::stdout().lock();
            man_page(&mut out)
                .and_then(|_| out.flush())
                .map_err(|e| e.to_string())
        }
        Some(d) => man_pages(d).map(|names| {
            crate::note!("xrunrig: wrote {} into {}", names.join(", "), d.display());
        }),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("xrunrig man: {e}");
            1
        }
    }
}
