//! `livefx-bench boots`: `--until-decided --boots` repeated in a 6.12 guest, the seed's
//! fix against the tarball's kernel (it should be called better) and the same kernel
//! twice (it should never be called worse), alternating which goes first. Each run is
//! appended to docs/measurements/boots-decided.jsonl as soon as it ends, so a
//! measurement stopped part-way keeps every run it finished; `livefx-bench table`
//! rebuilds the table from every line.

use crate::record::{append, read};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

pub const DEFAULT_DATA: &str = "docs/measurements/boots-decided.jsonl";
pub const BEGIN: &str = "<!-- measured: boots-decided (livefx-bench table) -->";
const PATCH: &str = "patches/6.12/0001-sched-rt-push-boosted-task.patch";

#[derive(clap::Args)]
pub struct Args {
    /// The xrunrig binary.
    #[arg(long, default_value = "target/release/xrunrig")]
    xrunrig: PathBuf,
    /// Repetitions (each: one run of the fix, one of the same kernel twice).
    #[arg(long, default_value_t = 10)]
    reps: u32,
    /// Boots of each kernel at most.
    #[arg(long, default_value_t = 4)]
    boots: u32,
    /// Trials a boot.
    #[arg(long, default_value_t = 5)]
    trials: u32,
    /// End after the repetition that passes this many minutes (0: no limit).
    #[arg(long, default_value_t = 38)]
    minutes: u64,
    /// What else the machine was doing, in words.
    #[arg(long)]
    condition: String,
    #[arg(long, default_value = DEFAULT_DATA)]
    data: PathBuf,
    /// Where the runs' results go (each run a directory).
    #[arg(long, default_value = "/tmp/livefx-bench-boots")]
    out: PathBuf,
}

/// One `xrunrig run … --boots N --until-decided`, as it ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Line {
    /// "fix" (the seed's fix against the tarball's kernel) or "same" (that kernel twice).
    pub pair: String,
    /// Every `xrunrig run` argument.
    pub run_args: Vec<String>,
    pub condition: String,
    /// combined.json's `boots_decided.answer`: "better", "worse", "same"; None undecided.
    pub answer: Option<String>,
    /// The round of the last look (boots of each kernel run).
    pub rounds: u32,
    pub exit: Option<i32>,
    pub seconds: f64,
    pub unix_time: u64,
    pub xrunrig: String,
    pub host: String,
}

fn args(pair: &str, a: &Args, out: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "run",
        "rigs/pi-boost-affinity.toml",
        "--profile",
        "profiles/rt-push-ipi.toml",
        "--setting",
        "NO_RT_PUSH_IPI",
        "--variant",
        "pi",
        "--until-decided",
        "--kernel",
        "debian-src:6.12",
        "--kernel",
        "debian-src:6.12",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if pair == "fix" {
        v.extend(["--patch".into(), PATCH.into()]);
    }
    v.extend([
        "--trials".into(),
        a.trials.to_string(),
        "--boots".into(),
        a.boots.to_string(),
        "--out".into(),
        out.display().to_string(),
    ]);
    v
}

fn stdout_of(c: &mut Command) -> String {
    c.output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn one(pair: &str, a: &Args, n: u32, version: &str, host: &str) -> Result<Line, String> {
    let out = a.out.join(format!("{pair}-{n}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let v = args(pair, a, &out);
    let t0 = Instant::now();
    let st = Command::new(&a.xrunrig)
        .args(&v)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", a.xrunrig.display()))?;
    let seconds = t0.elapsed().as_secs_f64();
    let c: results::combined::Combined = serde_json::from_str(
        &std::fs::read_to_string(out.join(results::combined::COMBINED_JSON))
            .map_err(|e| format!("{}: {e}", out.display()))?,
    )
    .map_err(|e| format!("{}: {e}", out.display()))?;
    let d = c
        .boots_decided
        .ok_or_else(|| format!("{}: no boots_decided", out.display()))?;
    let mut run_args = v;
    // The results' place is no part of the setup.
    run_args.truncate(run_args.len() - 2);
    Ok(Line {
        pair: pair.into(),
        run_args: run_args[1..].to_vec(),
        condition: a.condition.clone(),
        answer: d.answer,
        rounds: d.looks.last().map_or(0, |l| l.round),
        exit: st.code(),
        seconds,
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        xrunrig: version.into(),
        host: host.into(),
    })
}

pub fn main(a: &Args) -> i32 {
    let version = stdout_of(Command::new(&a.xrunrig).arg("--version"));
    let host = stdout_of(Command::new("uname").arg("-n"));
    let t0 = Instant::now();
    for n in 0..a.reps {
        // Which goes first alternates, so a drift of the machine falls on both alike.
        let order = if n % 2 == 0 {
            ["fix", "same"]
        } else {
            ["same", "fix"]
        };
        for pair in order {
            match one(pair, a, n, &version, &host) {
                Ok(l) => {
                    println!(
                        "{pair}: {} after {} round(s), {:.0} s",
                        l.answer.as_deref().unwrap_or("undecided"),
                        l.rounds,
                        l.seconds
                    );
                    if let Err(e) = append(&a.data, &l) {
                        eprintln!("livefx-bench boots: {e}");
                        return 3;
                    }
                }
                Err(e) => {
                    eprintln!("livefx-bench boots: {pair}: {e}");
                    return 3;
                }
            }
        }
        if a.minutes > 0 && t0.elapsed().as_secs() >= a.minutes * 60 {
            println!(
                "{} minute(s) passed: ending after {} repetition(s)",
                a.minutes,
                n + 1
            );
            break;
        }
    }
    0
}

/// The table of every line recorded: a row per pair and setup.
pub fn markdown(lines: &[Line], data: &Path) -> String {
    use std::collections::BTreeMap;
    let mut rows: BTreeMap<(String, String, String), Vec<&Line>> = BTreeMap::new();
    for l in lines {
        rows.entry((l.pair.clone(), l.run_args.join(" "), l.condition.clone()))
            .or_default()
            .push(l);
    }
    let mut s = String::from(
        "| kernels | runs | better | worse | the same | undecided | boots of each (median) | minutes a run (median) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for ((pair, args, cond), ls) in &rows {
        let n = ls.len();
        let count = |w: Option<&str>| ls.iter().filter(|l| l.answer.as_deref() == w).count();
        let median = |v: Vec<f64>| crate::stats::median_spread(&v).map_or(f64::NAN, |m| m.0);
        let what = if pair == "fix" {
            "6.12 against 6.12 with the seed's fix"
        } else {
            "6.12 against 6.12 (the same kernel twice)"
        };
        s += &format!(
            "| {what}: `{args}`, {cond} | {n} | {} | {} | {} | {} | {} | {:.1} |\n",
            count(Some("better")),
            count(Some("worse")),
            count(Some("same")),
            count(None),
            median(ls.iter().map(|l| l.rounds as f64).collect()),
            median(ls.iter().map(|l| l.seconds / 60.0).collect()),
        );
    }
    s += &format!(
        "\nEach run: a line of `{}`; the table: `livefx-bench table`.\n",
        data.display()
    );
    s
}

/// The lines recorded in `data` (none yet: an empty list).
pub fn lines(data: &Path) -> Result<Vec<Line>, String> {
    read(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pair: &str, answer: Option<&str>, rounds: u32) -> Line {
        Line {
            pair: pair.into(),
            run_args: vec!["rig".into()],
            condition: "quiet".into(),
            answer: answer.map(str::to_string),
            rounds,
            exit: Some(0),
            seconds: 60.0,
            unix_time: 0,
            xrunrig: "x".into(),
            host: "h".into(),
        }
    }

    #[test]
    fn the_table_counts_each_answer_per_pair_and_lines_read_back() {
        let d = std::env::temp_dir().join(format!("boots-bench-{}.jsonl", std::process::id()));
        let _ = std::fs::remove_file(&d);
        for l in [
            line("fix", Some("better"), 2),
            line("fix", Some("better"), 3),
            line("fix", None, 4),
            line("same", None, 4),
            line("same", Some("worse"), 2),
        ] {
            append(&d, &l).unwrap();
        }
        let back = lines(&d).unwrap();
        assert_eq!(back.len(), 5);
        let t = markdown(&back, &d);
        assert!(
            t.contains("the seed's fix: `rig`, quiet | 3 | 2 | 0 | 0 | 1 | 3 | 1.0 |"),
            "{t}"
        );
        assert!(
            t.contains("twice): `rig`, quiet | 2 | 0 | 1 | 0 | 1 | 3 | 1.0 |"),
            "{t}"
        );
        let _ = std::fs::remove_file(&d);
    }
}
