//! `xrunrig completions SHELL` and `xrunrig man`: shell completions and man pages
//! generated from the clap definitions (`cli.rs`), so they list every subcommand, flag
//! and enumerated value the binary takes, and never drift from it. Each man page adds
//! EXIT STATUS (`exit::codes`), ENVIRONMENT and EXAMPLES after clap_mangen's sections.

use clap_complete::Shell;
use clap_mangen::Man;
use std::io::Write;
use std::path::Path;

/// The completion script for `shell`, written to `w`.
pub fn completions(shell: Shell, w: &mut dyn Write) {
    let mut cmd = crate::cli::command();
    clap_complete::generate(shell, &mut cmd, "xrunrig", w);
}

/// The environment variables xrunrig reads, and what for.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "XRUNRIG_STATE_DIR",
        "where the run lock and the settings journal live (default /var/lib/xrunrig as \
         root, else $XDG_STATE_HOME/xrunrig)",
    ),
    (
        "XRUNRIG_CACHE_DIR",
        "guest kernels are kept in its kernels/ (default /var/cache/xrunrig/kernels as \
         root, else $XDG_CACHE_HOME/xrunrig/kernels)",
    ),
    (
        "XRUNRIG_KBUILD_DIR",
        "where kernels built from source are cached (default: kbuild beside the kernels \
         directory, /var/cache/xrunrig/kbuild as root)",
    ),
    (
        "XRUNRIG_QEMU",
        "the qemu-system-x86_64 binary to boot guests with",
    ),
    (
        "XRUNRIG_GUEST_BIN",
        "the xrunrig binary to put in a guest (default: this one)",
    ),
    (
        "XRUNRIG_NO_PROGRESS",
        "set: no progress bar, plain lines (as when stderr is not a terminal)",
    ),
];

/// Examples per command ("": the program).
fn examples(cmd: &str) -> &'static [(&'static str, &'static str)] {
    match cmd {
        "run" => &[
            (
                "xrunrig run rigs/livefx.toml --trials 5 --duration 30",
                "an audio rig on the best backend found, 5 trials of 30 s; ends with the \
                 verdict and the next command",
            ),
            (
                "xrunrig run rigs/livefx-push-ipi.toml --profile profiles/rt-push-ipi.toml --kernel debian:6.12 --cpus 4",
                "in a guest kernel, under both settings of the profile",
            ),
            (
                "xrunrig run RIG --kernel debian-src:6.12 --kernel debian-src:6.12 --patch fix.patch",
                "one kernel built twice, the second with the patch (each --patch binds to \
                 the --kernel before it)",
            ),
        ],
        "compare" => &[(
            "xrunrig compare results/A results/B",
            "B against A, trial against trial; exit code 1 on a regression",
        )],
        "doctor" => &[(
            "xrunrig doctor --rig rigs/livefx.toml",
            "what this machine lacks for that rig; exit code 1 if a check it needs fails",
        )],
        "check" => &[(
            "xrunrig check rigs/livefx-push-ipi.toml --profile profiles/rt-push-ipi.toml --cpus 4",
            "what `run --kernel ... --cpus 4` would refuse, without booting",
        )],
        "report" => &[(
            "xrunrig report results/DIR",
            "report.txt, .md, .html and plots",
        )],
        _ => &[
            (
                "xrunrig doctor",
                "is this machine set up for real-time audio?",
            ),
            (
                "xrunrig run rigs/livefx.toml --trials 5",
                "does it keep audio running? (the verdict ends the run)",
            ),
            (
                "xrunrig compare results/A results/B",
                "did B get worse than A?",
            ),
        ],
    }
}

/// Text for roff: backslashes and dashes escaped, no line starting with a control
/// character.
fn roff_text(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// EXIT STATUS, ENVIRONMENT and EXAMPLES of `cmd` ("": the program) in roff.
fn extra_sections(cmd: &str) -> String {
    let mut r = String::from(".SH \"EXIT STATUS\"\n");
    for (c, w) in crate::exit::codes(cmd) {
        r += &format!(".TP\n{c}\n{}\n", roff_text(w));
    }
    r += ".SH ENVIRONMENT\n";
    for (v, w) in ENVIRONMENT {
        r += &format!(".TP\n\\fB{v}\\fR\n{}\n", roff_text(w));
    }
    r += ".SH EXAMPLES\n";
    for (e, w) in examples(cmd) {
        r += &format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(e), roff_text(w));
    }
    r
}

/// One command's page: clap_mangen's sections, then the extra ones, then the version.
fn render(cmd: &clap::Command, sub: &str, w: &mut dyn Write) -> std::io::Result<()> {
    let man = Man::new(cmd.clone());
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(w)?;
    }
    w.write_all(extra_sections(sub).as_bytes())?;
    if cmd.get_version().is_some() {
        man.render_version_section(w)?;
    }
    Ok(())
}

/// The man page of xrunrig (all subcommands listed) to `w`.
pub fn man_page(w: &mut dyn Write) -> std::io::Result<()> {
    render(&crate::cli::command(), "", w)
}

/// One page per command into `dir`: xrunrig.1, xrunrig-run.1, …; the files written.
pub fn man_pages(dir: &Path) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut cmd = crate::cli::command().disable_help_subcommand(true);
    // Gives subcommands their display names (xrunrig-run), as clap_mangen's own does.
    cmd.build();
    let write = |c: &clap::Command, sub: &str| -> std::io::Result<()> {
        let name = c.get_display_name().unwrap_or_else(|| c.get_name());
        let mut f = std::fs::File::create(dir.join(format!("{name}.1")))?;
        render(c, sub, &mut f)?;
        f.flush()
    };
    let err = |e: std::io::Error| format!("cannot write man pages into {}: {e}", dir.display());
    write(&cmd, "").map_err(err)?;
    for sc in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write(sc, sc.get_name()).map_err(err)?;
        for sub2 in sc.get_subcommands().filter(|s| !s.is_hide_set()) {
            write(sub2, sc.get_name()).map_err(err)?;
        }
    }
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
