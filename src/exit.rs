//! Exit codes, the same whether a run is on this machine or in a guest, and what each
//! command means by them: `--help` (`cli::command()`), the man pages (`shell`) and
//! docs/command-line.md (its exit code table) say these words. 0 done, 1 a finding (compare: a regression; doctor: a FAIL
//! that applies), 2 refused before anything ran or changed, 3 failed during the run,
//! 4 inconclusive (compare: the runs cannot tell), 130 interrupted.

pub const EXIT_FOUND: i32 = 1;
pub const EXIT_REFUSED: i32 = 2;
pub const EXIT_FAILED: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;
/// compare: the evidence cannot tell a change from the run-to-run variation.
pub const EXIT_INCONCLUSIVE: i32 = analysis::compare::EXIT_INCONCLUSIVE;

/// A command's exit codes in words (`""`: the program as a whole).
pub fn codes(cmd: &str) -> Vec<(i32, &'static str)> {
    let refused = (
        EXIT_REFUSED,
        "refused before anything ran or changed: bad input, or this machine cannot run it \
         (the message says why and what to do)",
    );
    match cmd {
        "run" => vec![
            (
                0,
                "every trial ran (dropouts do not change it: the verdict says them)",
            ),
            refused,
            (
                EXIT_FAILED,
                "the run failed while running (a trial failed, a server went away, the \
                 watchdog's bound); the results cover what finished",
            ),
            (
                EXIT_INTERRUPTED,
                "interrupted (Ctrl-C, SIGTERM); every setting restored",
            ),
        ],
        "compare" => vec![
            (
                0,
                "the same or better: every metric's change within the threshold, or an \
                 improvement beyond it, none worse",
            ),
            (
                EXIT_FOUND,
                "worse: a metric's change lies wholly beyond the threshold (its 95 % \
                 interval, Holm-adjusted)",
            ),
            (
                EXIT_REFUSED,
                "refused: a directory unreadable, runs of different rigs, settings or \
                 variants, a side mixing kernels, or a run compared with itself",
            ),
            (
                EXIT_INCONCLUSIVE,
                "inconclusive: the runs cannot tell a change from the run-to-run variation \
                 (run more runs a side, or calibrate); nothing was called worse",
            ),
        ],
        "calibrate" => vec![
            (0, "every run ran; the calibration is kept in the cache"),
            refused,
            (
                EXIT_FAILED,
                "a run failed; nothing was kept (the runs so far are in --out)",
            ),
            (
                EXIT_INTERRUPTED,
                "interrupted (Ctrl-C); nothing was kept, every setting restored",
            ),
        ],
        "doctor" => vec![
            (
                0,
                "no FAIL applies (with --rig: every check that rig needs passes)",
            ),
            (
                EXIT_FOUND,
                "a FAIL applies (with --rig: a check that rig needs fails)",
            ),
            (EXIT_REFUSED, "the --rig or --profile file does not read"),
        ],
        "check" => vec![
            (0, "`xrunrig run` would take the rig (and profile)"),
            (
                EXIT_REFUSED,
                "`xrunrig run` would refuse it; every reason is printed",
            ),
        ],
        "restore" => vec![
            (
                0,
                "nothing to restore, or everything restored (or discarded)",
            ),
            (EXIT_FOUND, "an entry could not be restored (see --discard)"),
            (EXIT_REFUSED, "another run holds the lock"),
        ],
        "report" | "export" => vec![
            (0, "written"),
            (
                EXIT_REFUSED,
                "bad usage, a directory that is not a complete results directory, or files                  that cannot be written (report: give --out DIR for a read-only one)",
            ),
        ],
        "watch" => vec![
            (
                0,
                "watched to the end (--duration or Ctrl-C); the xruns are in the verdict",
            ),
            (
                EXIT_REFUSED,
                "bad usage, or could not watch: no server answered, tracing could not be \
                 set up, the results could not be written",
            ),
            (
                EXIT_INTERRUPTED,
                "a second Ctrl-C (or SIGTERM) while the watch was ending: stopped at once",
            ),
        ],
        "bisect" => vec![
            (0, "the first bad commit found, and its revert confirmed it"),
            (
                EXIT_FOUND,
                "no confirmed answer: the ends do not differ, skipped steps left several \
                 candidates, or the revert did not confirm the commit (the table says which)",
            ),
            refused,
            (
                EXIT_FAILED,
                "stopped while running: the machine failed a build or a guest (no space, \
                 memory, an emulator fault, a lost guest), an end does not build, git failed; \
                 the same command resumes from bisect.json",
            ),
            (
                EXIT_INTERRUPTED,
                "interrupted (Ctrl-C, SIGTERM); the same command resumes from bisect.json",
            ),
        ],
        "completions" | "man" => vec![
            (0, "written"),
            (1, "cannot write"),
            (EXIT_REFUSED, "bad usage (the message says which option)"),
        ],
        _ => vec![
            (
                0,
                "done (run: every trial ran; compare: no regression; doctor: no FAIL applies)",
            ),
            (
                EXIT_FOUND,
                "a finding: compare found a regression, doctor a FAIL that applies",
            ),
            refused,
            (EXIT_FAILED, "run: failed while running"),
            (
                EXIT_INCONCLUSIVE,
                "compare: inconclusive, the runs cannot tell a change from their variation",
            ),
            (EXIT_INTERRUPTED, "run: interrupted (Ctrl-C)"),
        ],
    }
}

/// "Exit status:" and one line per code, for `--help`.
pub fn help(cmd: &str) -> String {
    let mut s = String::from("Exit status:\n");
    for (c, w) in codes(cmd) {
        s += &format!("  {c:<4} {w}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_command_names_its_codes() {
        for c in [
            "",
            "run",
            "compare",
            "calibrate",
            "doctor",
            "check",
            "restore",
            "report",
            "bisect",
            "watch",
            "completions",
            "man",
            "export",
        ] {
            let h = super::help(c);
            assert!(
                h.starts_with("Exit status:") && h.contains("  0 "),
                "{c}: {h}"
            );
        }
        // clap exits 2 on bad usage, whatever the command.
        for c in ["completions", "man", "watch", "report", "export"] {
            assert!(super::help(c).contains("\n  2    "), "{c}");
        }
        assert!(super::help("run").contains("  130  interrupted"));
        assert!(super::help("compare").contains("  4    inconclusive"));
    }
}
