//! The command line as users of cyclictest, hyperfine and rtla expect it (issue 16):
//! durations with a bare number as seconds and min/h; `--version` and run.json naming
//! the commit; `--json` on run, compare and doctor with the summary document alone on
//! stdout; `--quiet`; shell completions and man pages from the clap definitions; and
//! progress that writes no escape codes or carriage returns when stderr is not a
//! terminal. Runs go through the binary, as a user's do.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use xrunrig::testkit;

/// Runs with RT threads one at a time: they share the pinned CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

const SUBCOMMANDS: [&str; 10] = [
    "bisect",
    "run",
    "watch",
    "check",
    "restore",
    "doctor",
    "report",
    "compare",
    "completions",
    "man",
];

fn xrunrig(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xrunrig"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("XRUNRIG_STATE_DIR", state)
        .env_remove("XRUNRIG_NO_PROGRESS");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(tag: &str, o: &Output) {
    eprintln!(
        "--- {tag}: {}\n[stdout]\n{}\n[stderr]\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn json_file(p: &Path) -> Value {
    let t = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{} does not parse: {e}", p.display()))
}

/// What a log reader would choke on: escape sequences and carriage returns.
fn assert_plain(tag: &str, bytes: &[u8]) {
    assert!(
        !bytes.contains(&0x1b),
        "{tag}: an escape code (0x1b) in output that is not a terminal"
    );
    assert!(
        !bytes.contains(&b'\r'),
        "{tag}: a carriage return in output that is not a terminal"
    );
}

/// The commit this checkout is at, when git can say.
fn git_head() -> Option<String> {
    let o = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| text(&o.stdout).trim().to_string())
}

#[test]
fn durations_take_bare_seconds_min_and_h() {
    use clap::Parser;
    use xrunrig::cli::{Cli, Cmd};
    let opts = |dur: &str, max: &str| {
        let cli = Cli::try_parse_from([
            "xrunrig",
            "run",
            "rigs/livefx.toml",
            "--duration",
            dur,
            "--max-time",
            max,
        ])
        .map_err(|e| e.to_string())?;
        match cli.cmd {
            Cmd::Run(a) => {
                let o = a.into_options();
                Ok::<_, String>((o.choices.audio.duration_ns, o.choices.max_time_ns))
            }
            _ => unreachable!(),
        }
    };
    const S: u64 = 1_000_000_000;
    assert_eq!(opts("10", "600"), Ok((Some(10 * S), Some(600 * S))));
    assert_eq!(
        opts("1.5", "12 h"),
        Ok((Some(S * 3 / 2), Some(12 * 3600 * S)))
    );
    assert_eq!(opts("2 min", "1h"), Ok((Some(120 * S), Some(3600 * S))));
    assert_eq!(opts("250 ms", "90 s"), Ok((Some(S / 4), Some(90 * S))));
    let e = opts("10 parsecs", "1").unwrap_err();
    assert!(e.contains("min") && e.contains("h"), "{e}");
    assert!(opts("0", "1").is_err(), "a trial of no time is refused");

    // Rig files take the same units; a bare number there is refused with the units
    // named (rig durations go down to µs: a guess of seconds would be wrong there).
    let base =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rigs/livefx.toml"))
            .unwrap();
    assert!(base.contains("duration = \"10 s\""));
    for (d, ns) in [("2 min", 120 * S), ("1 h", 3600 * S), ("1.5s", S * 3 / 2)] {
        let t = base.replace("duration = \"10 s\"", &format!("duration = \"{d}\""));
        let rig =
            xrunrig::rig::parse(Path::new("x.toml"), &t).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(rig.livefx.unwrap().duration_ns, ns, "{d}");
    }
    let t = base.replace("duration = \"10 s\"", "duration = \"10\"");
    let e = xrunrig::rig::parse(Path::new("x.toml"), &t)
        .unwrap_err()
        .to_string();
    assert!(e.contains("unit") && e.contains("min"), "{e}");
}

#[test]
fn completions_name_every_subcommand() {
    let state = testkit::private_dir("cli-compl");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = xrunrig(&state)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(o.status.success(), "{shell}: {}", text(&o.stderr));
        let s = text(&o.stdout);
        for sub in SUBCOMMANDS {
            assert!(s.contains(sub), "{shell} completion lacks '{sub}'");
        }
        // The enumerated values come from the ValueEnums (elvish's and PowerShell's
        // generators complete flags, not values).
        if ["elvish", "powershell"].contains(&shell) {
            continue;
        }
        for v in ["clock", "jack", "tcg", "dummy"] {
            assert!(s.contains(v), "{shell} completion lacks the value '{v}'");
        }
    }
    let o = xrunrig(&state)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!o.status.success(), "an unknown shell is refused");
    assert!(
        text(&o.stderr).contains("bash"),
        "and the shells are listed"
    );
}

#[test]
fn man_pages_from_the_clap_definitions() {
    let state = testkit::private_dir("cli-man");
    let o = xrunrig(&state).arg("man").output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let page = text(&o.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH xrunrig"),
        "{page}"
    );
    for sub in SUBCOMMANDS {
        assert!(page.contains(sub), "the man page lacks '{sub}'");
    }
    let dir = state.join("man");
    let o = xrunrig(&state)
        .args(["man", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run = std::fs::read_to_string(dir.join("xrunrig-run.1")).unwrap();
    assert!(
        run.contains("guest\\-jack") || run.contains("guest-jack"),
        "{run}"
    );
    assert!(dir.join("xrunrig.1").is_file() && dir.join("xrunrig-compare.1").is_file());
    // Each page says its exit codes, the environment it reads and examples.
    for f in [
        "xrunrig.1",
        "xrunrig-run.1",
        "xrunrig-compare.1",
        "xrunrig-doctor.1",
    ] {
        let p = std::fs::read_to_string(dir.join(f)).unwrap();
        for sec in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
            assert!(p.contains(sec), "{f} lacks {sec}");
        }
        assert!(p.contains("XRUNRIG_STATE_DIR"), "{f}");
    }
    let compare = std::fs::read_to_string(dir.join("xrunrig-compare.1")).unwrap();
    assert!(
        compare.contains("change lies wholly beyond the threshold"),
        "{compare}"
    );
}

/// `--help` ends with the exit codes, for the program and each command.
#[test]
fn help_names_the_exit_codes() {
    let state = testkit::private_dir("cli-help");
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["compare", "--help"],
        &["doctor", "--help"],
    ] {
        let o = xrunrig(&state).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}");
        let t = text(&o.stdout);
        assert!(t.contains("Exit status:\n  0 "), "{args:?}: {t}");
        assert!(
            t.contains("  2    refused") || t.contains("  2    the --rig"),
            "{args:?}: {t}"
        );
    }
}

/// Flags are refused at the caps the run itself has, with those caps named; a negative
/// duration says it must be positive (clap used to suggest `-- -5`, which is another
/// command); `m` is minutes as in cyclictest's `-D 10m`, `ms` stays milliseconds.
#[test]
fn clap_ranges_are_the_caps_and_durations_say_must_be_positive() {
    use xrunrig::cli::{Cli, Cmd};
    let err = |args: &[&str]| {
        let mut all = vec!["xrunrig", "run", "rigs/livefx.toml"];
        all.extend(args);
        match Cli::try_parse_args(all) {
            Ok(_) => panic!("{args:?} was taken"),
            Err(e) => e.to_string(),
        }
    };
    let e = err(&["--trials", "0"]);
    assert!(e.contains("1..=10000"), "{e}");
    assert!(err(&["--trials", "10001"]).contains("1..=10000"));
    let e = err(&["--period", "100000"]);
    assert!(e.contains("1..=16384"), "{e}");
    assert!(err(&["--rate", "800000"]).contains("1..=768000"));
    assert!(err(&["--cpus", "65"]).contains("1..=64"));
    for d in ["-5", "-1s"] {
        let e = err(&["--duration", d]);
        assert!(
            e.contains("must be positive") && !e.contains("-- "),
            "{d}: {e}"
        );
    }
    assert!(err(&["--max-time", "-5"]).contains("must be positive"));
    assert!(err(&["--duration", "25 h"]).contains("at most 24 h"));
    let dur = |d: &str| match Cli::try_parse_args(["xrunrig", "run", "x.toml", "--duration", d])
        .unwrap()
        .cmd
    {
        Cmd::Run(a) => a.into_options().choices.audio.duration_ns,
        _ => unreachable!(),
    };
    assert_eq!(dur("10m"), Some(600_000_000_000));
    assert_eq!(dur("10ms"), Some(10_000_000));
}

#[test]
fn version_names_the_commit() {
    let state = testkit::private_dir("cli-version");
    let o = xrunrig(&state).arg("--version").output().unwrap();
    assert!(o.status.success());
    let v = text(&o.stdout);
    assert!(
        v.starts_with(&format!("xrunrig {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    match git_head() {
        Some(head) => assert!(v.contains(&format!("(commit {head}")), "{v} lacks {head}"),
        None => assert!(v.contains("(commit unknown)"), "{v}"),
    }
}

#[test]
fn doctor_json_is_alone_on_stdout_and_quiet_prints_nothing() {
    let state = testkit::private_dir("cli-doctor");
    let o = xrunrig(&state).args(["doctor", "--json"]).output().unwrap();
    show("doctor --json", &o);
    let v: Value = serde_json::from_slice(&o.stdout).expect("doctor --json parses");
    assert!(v["checks"].as_array().is_some_and(|c| !c.is_empty()));
    let o = xrunrig(&state).arg("doctor").output().unwrap();
    assert!(
        !o.stdout.is_empty(),
        "the doctor's findings without --quiet"
    );
    let o = xrunrig(&state)
        .args(["doctor", "--quiet"])
        .output()
        .unwrap();
    // 1 when a check fails on this machine (lockdown's sched features here): --quiet
    // keeps the exit code.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
}

#[test]
fn compare_json_is_compare_json() {
    let state = testkit::private_dir("cli-compare");
    let (a, b, out) = (state.join("a"), state.join("b"), state.join("out"));
    // Two runs (two seeds): the same run twice is refused.
    let mut spec = analysis::synth::livefx::Spec::ab(6_000, 3);
    analysis::synth::livefx::generate(&a, &spec).unwrap();
    spec.seed = 2;
    analysis::synth::livefx::generate(&b, &spec).unwrap();
    let o = xrunrig(&state)
        .arg("compare")
        .args([&a, &b])
        .arg("--out")
        .arg(&out)
        .arg("--json")
        .output()
        .unwrap();
    show("compare --json", &o);
    // One run a side of two seeds of one synthetic run, no calibration: the runs'
    // spread cannot be seen, so inconclusive (4), and the document says so.
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stdout));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("compare --json parses");
    assert_eq!(doc, json_file(&out.join("compare.json")));
    assert!(
        text(&o.stderr).contains("baseline") || text(&o.stderr).contains("compare"),
        "the text went to stderr"
    );
}

/// `xrunrig run RIG ARGS --out STATE/res`: the output and the results directory.
fn run(state: &Path, rig: &str, args: &[&str]) -> (Output, PathBuf) {
    let out = state.join("res");
    let _ = std::fs::remove_dir_all(&out);
    let o = xrunrig(state)
        .args(["run", rig, "--out"])
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    show(&format!("run {rig} {args:?}"), &o);
    (o, out)
}

#[test]
fn run_json_is_summary_json_and_run_json_has_the_commit() {
    if !testkit::root() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = testkit::private_dir("cli-json");
    // An audio rig on the clock backend (bare seconds), and a thread rig.
    for (rig, args) in [
        (
            "rigs/livefx.toml",
            &[
                "--variant",
                "pi",
                "--backend",
                "clock",
                "--duration",
                "1",
                "--trials",
                "2",
            ][..],
        ),
        ("rigs/pi-inversion.toml", &["--trials", "1"][..]),
    ] {
        let mut a = args.to_vec();
        a.push("--json");
        let (o, dir) = run(&state, rig, &a);
        assert_eq!(o.status.code(), Some(0), "{rig}");
        let doc: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{rig}: run --json's stdout does not parse: {e}"));
        assert_eq!(doc, json_file(&dir.join("summary.json")), "{rig}");
        let err = text(&o.stderr);
        assert!(err.contains("results: "), "{rig}: the table went to stderr");
        // The run ends with its answer and the next command.
        assert!(
            err.contains("\nverdict:\n") && err.contains("Conclusion: "),
            "{rig}: {err}"
        );
        assert!(
            err.contains(&format!("next: xrunrig report {}", dir.display())),
            "{rig}: {err}"
        );
        if rig.contains("livefx") {
            assert!(
                err.contains("built-in clock: no sound hardware was tested"),
                "{rig}: {err}"
            );
        }
        let run = json_file(&dir.join("run.json"));
        match git_head() {
            Some(head) => assert_eq!(run["git"]["commit"], head.as_str(), "{rig}"),
            None => assert!(run["git"]["commit"].is_null(), "{rig}"),
        }
        assert!(
            run["git"]["dirty"].is_boolean() || git_head().is_none(),
            "{rig}"
        );
    }
}

#[test]
fn quiet_runs_print_only_the_verdict_or_the_document() {
    if !testkit::root() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = testkit::private_dir("cli-quiet");
    let (o, _) = run(
        &state,
        "rigs/pi-inversion.toml",
        &["--trials", "1", "--quiet"],
    );
    assert_eq!(o.status.code(), Some(0));
    // --quiet keeps the one-line verdict, and nothing else.
    let out = text(&o.stdout);
    assert_eq!(out.lines().count(), 1, "--quiet: no table, one line: {out}");
    assert!(out.starts_with("Conclusion: "), "{out}");
    assert!(o.stderr.is_empty(), "--quiet: no notes or progress");
    let (o, dir) = run(
        &state,
        "rigs/pi-inversion.toml",
        &["--trials", "1", "-q", "--json"],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stderr.is_empty(), "--quiet --json: nothing on stderr");
    let doc: Value = serde_json::from_slice(&o.stdout).expect("the document alone");
    assert_eq!(doc, json_file(&dir.join("summary.json")));
    // Errors still show.
    let (o, _) = run(&state, "rigs/no-such-rig.toml", &["-q"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("no-such-rig"),
        "the error is printed"
    );
}

#[test]
fn progress_off_a_terminal_is_plain_lines() {
    if !testkit::root() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = testkit::private_dir("cli-plain");
    // stderr is a pipe here: no bar, no live line redrawn in place.
    for (rig, args) in [
        (
            "rigs/livefx.toml",
            &[
                "--variant",
                "pi",
                "--backend",
                "clock",
                "--duration",
                "1",
                "--trials",
                "2",
            ][..],
        ),
        ("rigs/pi-inversion.toml", &["--trials", "2"][..]),
    ] {
        let (o, _) = run(&state, rig, args);
        assert_eq!(o.status.code(), Some(0), "{rig}");
        assert_plain(rig, &o.stderr);
        assert_plain(rig, &o.stdout);
        // One line per trial, each with its count.
        let err = text(&o.stderr);
        let n = err
            .lines()
            .filter(|l| l.starts_with('[') && l.contains("/") && l.contains("trial"))
            .count();
        assert!(n >= 2, "{rig}: a line per trial:\n{err}");
    }
}

#[test]
fn progress_on_a_terminal_is_a_bar_with_an_eta() {
    if !testkit::root() || !testkit::have(testkit::on_path("script"), "script (util-linux)") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = testkit::private_dir("cli-tty");
    // `script` gives the run a pseudo-terminal; what it drew lands in the typescript.
    let cmd = format!(
        "{} run rigs/pi-inversion.toml --trials 1 --out {}",
        env!("CARGO_BIN_EXE_xrunrig"),
        state.join("res").display()
    );
    let typescript = state.join("typescript");
    let o = Command::new("script")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("XRUNRIG_STATE_DIR", &state)
        .env_remove("XRUNRIG_NO_PROGRESS")
        .env("TERM", "xterm")
        .args(["-q", "-e", "-c", &cmd])
        .arg(&typescript)
        .output()
        .unwrap();
    show("run under script", &o);
    assert!(o.status.success());
    let t = std::fs::read(&typescript).unwrap();
    let s = text(&t);
    assert!(s.contains("ETA"), "the bar shows an ETA:\n{s}");
    assert!(t.contains(&0x1b), "and is redrawn in place");
    assert!(s.contains("[   2/2]"), "the trial lines stay above it");
}

/// Issue 37 item 5: an option with no effect in that combination is refused, not
/// ignored; a negative number is told about its value, not given clap's `-- -5` tip;
/// `watch --duration 0` is refused as `run --duration 0` is; a misspelt subcommand is
/// given the one meant.
#[test]
fn options_that_would_be_ignored_or_misread_are_refused_with_the_reason() {
    let state = testkit::private_dir("cli-refused");
    let err_of = |args: &[&str]| {
        let o = xrunrig(&state).args(args).output().unwrap();
        show(&format!("{args:?}"), &o);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        text(&o.stderr)
    };
    for guest_only in [
        &["--cpus", "4"][..],
        &["--memory", "1G"],
        &["--guest-watch"],
        &["--append", "quiet"],
        &["--boots", "3"],
    ] {
        let mut a = vec!["run", "rigs/livefx.toml"];
        a.extend(guest_only);
        let e = err_of(&a);
        assert!(e.contains("--kernel"), "{guest_only:?}: {e}");
    }
    for (flag, v) in [
        ("--trials", "-5"),
        ("--period", "-1"),
        ("--inject-every", "-3"),
    ] {
        let e = err_of(&["run", "rigs/livefx.toml", flag, v]);
        assert!(e.contains(&format!("invalid value '{v}'")), "{e}");
        assert!(!e.contains("-- "), "clap's tip to pass it after --: {e}");
    }
    let e = err_of(&["watch", "--duration", "0"]);
    assert!(e.contains("must be positive"), "{e}");
    let e = err_of(&["rnu"]);
    assert!(e.contains("a similar subcommand exists: 'run'"), "{e}");
    let e = err_of(&["comapre"]);
    assert!(e.contains("'compare'"), "{e}");
    std::fs::remove_dir_all(&state).unwrap();
}

/// Issue 37 item 5: `--max-time` reached is the run failing to finish in its time (exit
/// 3, said so, the bound as given), not an interruption (130, Ctrl-C's code).
#[test]
fn max_time_reached_is_said_and_is_not_ctrl_c() {
    if !testkit::root() {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = testkit::private_dir("cli-max-time");
    let (o, dir) = run(
        &state,
        "rigs/livefx.toml",
        &[
            "--backend",
            "clock",
            "--variant",
            "pi",
            "--duration",
            "5",
            "--trials",
            "2",
            "--max-time",
            "1500ms",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("time bound (1.5 s) was reached"), "{err}");
    let run = json_file(&dir.join("run.json"));
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("time bound")),
        "{}",
        run["error"]
    );
    std::fs::remove_dir_all(&state).unwrap();
}

fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

fn listing(d: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// A bug's attachment unpacked read-only is reported with `--out DIR`: the report goes
/// there, nothing is written into the results directory.
#[test]
fn report_out_writes_elsewhere_and_leaves_the_results_as_they_are() {
    use std::os::unix::fs::PermissionsExt;
    let state = testkit::private_dir("cli-report-out");
    let dir = state.join("results");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("analysis/tests/fixtures/pi-boost-synthetic"),
        &dir,
    );
    let before = listing(&dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = state.join("report-here");
    let o = xrunrig(&state)
        .arg("report")
        .arg(&dir)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    show("report --out", &o);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    for f in ["report.txt", "report.md", "report.html", "report.json"] {
        assert!(out.join(f).is_file(), "{f} not in --out");
    }
    assert!(out.join("plots").is_dir() && out.join("export").is_dir());
    assert_eq!(
        listing(&dir),
        before,
        "the results directory was written into"
    );
    // The Reproduce section names the results, not the report's directory.
    let txt = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(txt.contains("xrunrig run --from results"), "{txt}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every code a command returns is in its `--help`: bad usage (clap's 2) for each, and
/// the codes of real failures.
#[test]
fn every_exit_code_a_command_returns_is_in_its_help() {
    let state = testkit::private_dir("cli-codes");
    let help = |sub: &[&str]| {
        let o = xrunrig(&state).args(sub).arg("--help").output().unwrap();
        assert!(o.status.success(), "{sub:?}");
        text(&o.stdout)
    };
    let listed = |sub: &[&str], code: i32| {
        let h = help(sub);
        assert!(
            h.contains(&format!("\n  {code:<4} ")),
            "{sub:?} returned {code}, which its help does not list:\n{h}"
        );
    };
    let mut subs: Vec<Vec<&str>> = SUBCOMMANDS.iter().map(|s| vec![*s]).collect();
    subs.extend([
        vec!["calibrate"],
        vec!["export", "kcidb"],
        vec!["export", "lava"],
    ]);
    for sub in &subs {
        // Bad usage: clap's code.
        let o = xrunrig(&state)
            .args(sub)
            .arg("--no-such-option")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{sub:?}");
        listed(sub, 2);
    }
    let missing = state.join("nothing-here");
    let unwritable = "/proc/xrunrig-cannot-write-here";
    let m = missing.to_str().unwrap();
    for args in [
        vec!["man", "--out", unwritable],
        vec!["report", m],
        vec![
            "report",
            "analysis/tests/fixtures/pi-boost-synthetic",
            "--out",
            unwritable,
        ],
        vec!["export", "kcidb", m],
        vec!["export", "lava", m],
        vec!["check", m],
        vec!["compare", m, m],
    ] {
        let o = xrunrig(&state).args(&args).output().unwrap();
        let code = o.status.code().unwrap();
        assert_ne!(code, 0, "{args:?}");
        let sub: Vec<&str> = args
            .iter()
            .take_while(|a| !a.starts_with('-') && !a.contains('/'))
            .copied()
            .collect();
        listed(&sub, code);
    }
    // watch: a second Ctrl-C while the watch is ending stops it at once with 130.
    listed(&["watch"], 130);
}
