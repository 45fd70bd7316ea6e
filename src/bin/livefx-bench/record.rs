//! The measurements `livefx-bench calibrate` keeps: one JSON line per pair of sides,
//! appended (and synced) as soon as the pair is judged, so a measurement stopped after
//! 40 minutes keeps every pair it finished and the next one adds to the same file.
//! `livefx-bench table` rebuilds the table from every line recorded and writes it
//! between the markers of docs/verdicts.md (README.md links to it).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The file the measurements are appended to, relative to the repository.
pub const DEFAULT_DATA: &str = "docs/measurements/compare-pairs.jsonl";

/// What every pair of one configuration shares: pairs are pooled only when all of it
/// is equal (a different rig, trial length, order or culprit is another row).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Setup {
    /// The rig file, as given.
    pub rig: String,
    /// Every `xrunrig run` argument after the rig (backend, trials, duration, --arg's).
    pub run_args: Vec<String>,
    /// How a pair's runs followed each other: "interleaved" or "blocked".
    pub order: String,
    /// Runs on each side of a pair.
    pub runs_a_side: u32,
    /// The A/A pairs of the calibration the "calibrated" answers used (0: none).
    pub calibrate_pairs: u32,
    /// What B of an A/B pair ran beside or with, in words.
    pub culprit: String,
    /// What else the machine was doing, as the person measuring said it
    /// (`--condition`): a quiet machine and one compiling beside the runs are two rows.
    #[serde(default)]
    pub condition: String,
    /// What compare tested dropouts as: "dropouts and episodes" (each a count; in an
    /// episode, dropouts closer than 50 ms are one, `results::livefx::EPISODE_GAP_NS`);
    /// empty in lines judged before episodes were counted, when only each dropout was a
    /// count. Another model is another row.
    #[serde(default)]
    pub tested: String,
}

/// One pair of sides, judged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pair {
    pub setup: Setup,
    /// "aa" (nothing differs) or "ab" (B beside the culprit).
    pub kind: String,
    /// When the pair finished (seconds since the epoch).
    pub unix_time: u64,
    /// Which measurement session it belongs to (its start, seconds since the epoch).
    pub part: u64,
    /// `xrunrig --version` of the binary that ran and judged it.
    pub xrunrig: String,
    /// `uname -r`, and the host's name.
    pub kernel: String,
    pub host: String,
    /// /proc/loadavg's first three fields when the pair began.
    pub load: String,
    /// Each run's dropouts (xruns or misses, summed over its rows), A's then B's.
    pub dropouts_a: Vec<u64>,
    pub dropouts_b: Vec<u64>,
    /// Each run's dropout episodes, beside the dropouts (empty in older lines).
    #[serde(default)]
    pub episodes_a: Vec<u64>,
    #[serde(default)]
    pub episodes_b: Vec<u64>,
    /// Each run's wall time in seconds, in the order they ran.
    pub run_seconds: Vec<f64>,
    /// compare's answers: one run a side calibrated, one run a side with no
    /// calibration, every run a side.
    pub one_calibrated: String,
    pub one_uncalibrated: String,
    pub all: String,
}

/// Appends `p` as one line and syncs it: a killed measurement loses at most the pair
/// it was running.
pub fn append<T: Serialize>(path: &Path, p: &T) -> Result<(), String> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let mut line = serde_json::to_string(p).map_err(|e| e.to_string())?;
    line.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    f.write_all(line.as_bytes())
        .and_then(|()| f.sync_data())
        .map_err(|e| format!("cannot append to {}: {e}", path.display()))
}

/// Every line recorded in `path`; a line that does not parse is an error naming it.
pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// One way of judging, counted over a row's pairs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    pub pairs: u32,
    pub worse: u32,
    pub better: u32,
    pub same: u32,
    pub inconclusive: u32,
    pub failed: u32,
}

impl Count {
    fn add(&mut self, answer: &str) {
        self.pairs += 1;
        match answer {
            "worse" => self.worse += 1,
            "better" => self.better += 1,
            "same" => self.same += 1,
            "inconclusive" => self.inconclusive += 1,
            _ => self.failed += 1,
        }
    }
}

/// A row of the table: one setup, one way of judging.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub setup: Setup,
    /// How many runs a side this way judged (1, or the setup's runs a side).
    pub runs: u32,
    pub calibrated: bool,
    pub aa: Count,
    pub ab: Count,
    /// Mean wall minutes of the runs one decision of this way needs (2 × runs).
    pub minutes: f64,
    /// The xrunrig versions and hosts the pairs came from.
    pub versions: Vec<String>,
    pub parts: usize,
}

/// Which of a pair's answers a row counts.
type Answer = fn(&Pair) -> &str;

/// The rows of every setup recorded: per setup, one run a side calibrated (when it
/// was), one run a side uncalibrated, and every run a side (when more than one).
pub fn rows(pairs: &[Pair]) -> Vec<Row> {
    let mut by: BTreeMap<&Setup, Vec<&Pair>> = BTreeMap::new();
    for p in pairs {
        by.entry(&p.setup).or_default().push(p);
    }
    let mut out = Vec::new();
    for (setup, ps) in by {
        let run_s: Vec<f64> = ps
            .iter()
            .flat_map(|p| p.run_seconds.iter().copied())
            .collect();
        let per_run = run_s.iter().sum::<f64>() / run_s.len().max(1) as f64;
        let mut versions: Vec<String> = ps
            .iter()
            .map(|p| format!("{} on {} ({})", p.xrunrig, p.host, p.kernel))
            .collect();
        versions.sort();
        versions.dedup();
        let mut parts: Vec<u64> = ps.iter().map(|p| p.part).collect();
        parts.sort_unstable();
        parts.dedup();
        let ways: Vec<(u32, bool, Answer)> = [
            (setup.calibrate_pairs > 0).then_some((
                1,
                true,
                (|p: &Pair| p.one_calibrated.as_str()) as Answer,
            )),
            Some((1, false, |p: &Pair| p.one_uncalibrated.as_str())),
            (setup.runs_a_side > 1).then_some((
                setup.runs_a_side,
                setup.calibrate_pairs > 0,
                |p: &Pair| p.all.as_str(),
            )),
        ]
        .into_iter()
        .flatten()
        .collect();
        for (runs, calibrated, answer) in ways {
            let (mut aa, mut ab) = (Count::default(), Count::default());
            for p in &ps {
                match p.kind.as_str() {
                    "aa" => aa.add(answer(p)),
                    _ => ab.add(answer(p)),
                }
            }
            out.push(Row {
                setup: setup.clone(),
                runs,
                calibrated,
                aa,
                ab,
                minutes: 2.0 * runs as f64 * per_run / 60.0,
                versions: versions.clone(),
                parts: parts.len(),
            });
        }
    }
    out
}

fn share(k: u32, n: u32) -> String {
    if n == 0 {
        "–".into()
    } else {
        format!("{k}/{n} ({:.0} %)", 100.0 * k as f64 / n as f64)
    }
}

/// The table in Markdown, with what each row measured said under it.
pub fn markdown(rows: &[Row], data: &Path) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        s.push_str(&format!(
            "Nothing measured yet: `livefx-bench calibrate` appends to `{}`.\n",
            data.display()
        ));
        return s;
    }
    s.push_str("| rig, run, machine | runs a side | A/A worse | A/A inconclusive | culprit caught (worse) | culprit inconclusive | minutes a decision |\n|---|---|---|---|---|---|---|\n");
    for r in rows {
        let how = format!(
            "{}{}",
            if r.runs > 1 {
                format!("{}, ", r.setup.order)
            } else {
                String::new()
            },
            if r.calibrated {
                format!("calibrated ({} pairs)", r.setup.calibrate_pairs)
            } else {
                "no calibration".into()
            }
        );
        s.push_str(&format!(
            "| `{} {}`, {}, {} | {} ({how}) | {} | {} | {} | {} | {:.1} |\n",
            r.setup.rig,
            r.setup.run_args.join(" "),
            if r.setup.tested.is_empty() {
                "each dropout a count"
            } else {
                "dropouts and their episodes tested"
            },
            if r.setup.condition.is_empty() {
                "machine's load not stated"
            } else {
                r.setup.condition.as_str()
            },
            r.runs,
            share(r.aa.worse, r.aa.pairs),
            share(r.aa.inconclusive, r.aa.pairs),
            share(r.ab.worse, r.ab.pairs),
            share(r.ab.inconclusive, r.ab.pairs),
            r.minutes
        ));
    }
    let mut setups: Vec<&Row> = rows.iter().collect();
    setups.dedup_by(|a, b| a.setup == b.setup);
    for r in setups {
        s.push_str(&format!(
            "\nCulprit of `{} {}`: {}; {} part(s), by {}.\n",
            r.setup.rig,
            r.setup.run_args.join(" "),
            r.setup.culprit,
            r.parts,
            r.versions.join("; ")
        ));
    }
    s.push_str(&format!(
        "\nEach pair: a line of `{}`; the table: `livefx-bench table`.\n",
        data.display()
    ));
    s
}

pub const BEGIN: &str = "<!-- measured: compare-pairs (livefx-bench table) -->";
pub const END: &str = "<!-- end measured -->";

/// `text` with what lies between BEGIN and END replaced by `table`; an error when the
/// markers are missing or out of order.
pub fn splice(text: &str, table: &str) -> Result<String, String> {
    splice_at(text, BEGIN, table)
}

/// `text` with what lies between `begin` and the END after it replaced by `table`.
pub fn splice_at(text: &str, begin: &str, table: &str) -> Result<String, String> {
    let b = text.find(begin).ok_or("no begin marker")?;
    let e = text[b..]
        .find(END)
        .ok_or("no end marker after the begin marker")?
        + b;
    Ok(format!("{}{begin}\n{table}{}", &text[..b], &text[e..]))
}

#[derive(clap::Args)]
pub struct TableArgs {
    /// The measurements.
    #[arg(long, default_value = DEFAULT_DATA)]
    data: PathBuf,
    /// A file whose marked block is replaced by the table (repeatable).
    #[arg(long)]
    write: Vec<PathBuf>,
    /// The boots measurements (`livefx-bench boots`): their table replaces the block
    /// marked for it, in each --write file that has one.
    #[arg(long, default_value = crate::boots::DEFAULT_DATA)]
    boots_data: PathBuf,
}

pub fn table_main(a: &TableArgs) -> i32 {
    let pairs: Vec<Pair> = match read(&a.data) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("livefx-bench table: {e}");
            return 2;
        }
    };
    let table = markdown(&rows(&pairs), &a.data);
    // Written through an error-returning call: a closed pipe (`| head`) must not stop
    // the --write files from being written.
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{table}");
    let boots = match crate::boots::lines(&a.boots_data) {
        Ok(l) => crate::boots::markdown(&l, &a.boots_data),
        Err(e) => {
            eprintln!("livefx-bench table: {e}");
            return 2;
        }
    };
    let _ = write!(stdout, "\n{boots}");
    for f in &a.write {
        let done = std::fs::read_to_string(f)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                if t.contains(BEGIN) || t.contains(crate::boots::BEGIN) {
                    Ok(t)
                } else {
                    Err("it holds no table's markers".to_string())
                }
            })
            // Each table where the file has its markers (README has only the boots').
            .and_then(|t| {
                if t.contains(BEGIN) {
                    splice(&t, &table)
                } else {
                    Ok(t)
                }
            })
            .and_then(|t| {
                if t.contains(crate::boots::BEGIN) {
                    splice_at(&t, crate::boots::BEGIN, &boots)
                } else {
                    Ok(t)
                }
            })
            .and_then(|t| std::fs::write(f, t).map_err(|e| e.to_string()));
        if let Err(e) = done {
            eprintln!(
                "livefx-bench table: {}: {e} (it needs a line {BEGIN} and, after it, {END})",
                f.display()
            );
            return 2;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(kind: &str, one: &str, all: &str) -> Pair {
        Pair {
            setup: Setup {
                rig: "rigs/livefx.toml".into(),
                run_args: vec!["--backend".into(), "clock".into()],
                order: "interleaved".into(),
                runs_a_side: 3,
                calibrate_pairs: 10,
                culprit: "FIFO 80".into(),
                condition: "quiet".into(),
                tested: "dropouts and episodes".into(),
            },
            kind: kind.into(),
            unix_time: 1,
            part: 7,
            xrunrig: "x".into(),
            kernel: "k".into(),
            host: "h".into(),
            load: String::new(),
            dropouts_a: vec![0; 3],
            dropouts_b: vec![0; 3],
            episodes_a: vec![0; 3],
            episodes_b: vec![0; 3],
            run_seconds: vec![15.0; 6],
            one_calibrated: one.into(),
            one_uncalibrated: "inconclusive".into(),
            all: all.into(),
        }
    }

    #[test]
    fn rows_count_each_way_apart_and_appended_lines_read_back() {
        let dir = std::env::temp_dir().join(format!("lb-record-{}", std::process::id()));
        let f = dir.join("m.jsonl");
        let _ = std::fs::remove_dir_all(&dir);
        for p in [
            pair("aa", "worse", "same"),
            pair("aa", "inconclusive", "inconclusive"),
            pair("ab", "worse", "inconclusive"),
        ] {
            append(&f, &p).unwrap();
        }
        let back: Vec<Pair> = read(&f).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let r = rows(&back);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].runs, r[0].calibrated), (1, true));
        assert_eq!(
            (r[0].aa.worse, r[0].aa.inconclusive, r[0].ab.worse),
            (1, 1, 1)
        );
        assert_eq!((r[1].aa.inconclusive, r[1].ab.worse), (2, 0));
        assert_eq!((r[2].runs, r[2].aa.same, r[2].ab.inconclusive), (3, 1, 1));
        assert!((r[0].minutes - 0.5).abs() < 1e-9 && (r[2].minutes - 1.5).abs() < 1e-9);
    }

    #[test]
    fn splice_replaces_only_the_marked_block_and_refuses_without_markers() {
        let t = format!("a\n{BEGIN}\nold\n{END}\nb\n");
        assert_eq!(
            splice(&t, "new\n").unwrap(),
            format!("a\n{BEGIN}\nnew\n{END}\nb\n")
        );
        assert!(splice("a\nb\n", "x").is_err());
    }
}
