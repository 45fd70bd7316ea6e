//! The CSV export, written by `xrunrig report` into the results directory's export/:
//! CSV of raw samples and trials (pandas reads them as is), and cyclictest-style
//! histogram text for latency metrics. Each kind's `kind::ResultKind` `csv()` picks its
//! files: `trials()`, `livefx()`, `watch()` or `bisect()` here. The `Export` itself, `Csv`, is in
//! `mod.rs`: it looks each directory's kind up, and this file sits below `kind/`.

use crate::dist::Dist;
use crate::load::Results;
use crate::load::bisect::BisectData;
use crate::load::cycles;
use crate::load::livefx::LivefxData;
use crate::load::trials::TrialsData;
use crate::load::watch::WatchData;
use crate::out::Ctx;
use results::file_part as safe;
use std::io::BufRead;

/// export/xruns.csv (a watch directory): one row per xrun, its time on the report's
/// timeline (`t_s`), the late thread (and the thread of its process it waited for), the
/// cause and culprit, and the figures in ms.
pub const XRUNS_CSV_HEAD: [&str; 25] = [
    "index",
    "wall",
    "t_s",
    "source",
    "client",
    "cause",
    "late",
    "late_tid",
    "waited_for",
    "waited_for_tid",
    "culprit",
    "culprit_tid",
    "culprit_pid",
    "culprit_process",
    "interrupt",
    "holder",
    "boost",
    "culprit_ms",
    "running_ms",
    "runnable_ms",
    "asleep_ms",
    "interrupt_ms",
    "frame",
    "window",
    "why",
];

/// export/events.csv: the original columns first, then the newer writers' (empty when
/// the events do not carry them): clocks, the lock a missing worker waited for, the
/// cause, and the hog burst (a miss's burst, or a burst's own index; a burst's holder
/// caught, its lock and its misses).
pub const EVENTS_CSV_HEAD: [&str; 18] = [
    "setting", "variant", "trial", "kind", "cycle", "t_s", "usecs", "mono_s", "wall", "worker",
    "lock", "holder", "wait_us", "why", "stuck_ms", "burst", "caught", "misses",
];

/// export/steps.csv (a bisection): one row per tested commit in the order tested (the
/// ends first, the confirmation last), its place in history, verdict, counts, p-values,
/// times, note, its runs (space-separated) and its kernel.
pub const STEPS_CSV_HEAD: [&str; 18] = [
    "tested",
    "role",
    "position",
    "commit",
    "subject",
    "verdict",
    "passed",
    "trials",
    "pass_fraction",
    "p_vs_good",
    "p_vs_bad",
    "build_s",
    "run_s",
    "note",
    "runs",
    "kernel_version",
    "config_sha256",
    "cached",
];

/// Up to this many cycles, the raw cycles are also written as CSV.
pub const CYCLES_CSV_LIMIT: u64 = 1_000_000;
/// cyclictest's -h: rows 0..LIMIT, the rest counted as overflows.
pub const HIST_ROWS_LIMIT: u64 = 100_000;

/// A CSV document built in memory (the small exports), with the csv crate's quoting:
/// only fields holding a comma, a quote or a line break are quoted.
fn csv_doc() -> csv::Writer<Vec<u8>> {
    csv::Writer::from_writer(Vec::new())
}

fn csv_text(w: csv::Writer<Vec<u8>>) -> Result<String, String> {
    let b = w.into_inner().map_err(|e| e.to_string())?;
    String::from_utf8(b).map_err(|e| e.to_string())
}

fn csv_err(e: csv::Error) -> String {
    format!("cannot write CSV: {e}")
}

/// cyclictest -h style text: "%06d" value, then a count per column; then totals, min,
/// avg, max and overflows. Values are integers in `unit`.
type StatFn = dyn Fn(&[(u64, u64)]) -> u64;

pub fn cyclictest_hist(title: &str, unit: &str, cols: &[(String, Vec<(u64, u64)>)]) -> String {
    let mut o = format!(
        "# {title}\n# cyclictest -h style: first column the latency in {unit}, then the count per column\n# columns: {}\n# Histogram\n",
        cols.iter()
            .map(|c| c.0.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let maxv = cols
        .iter()
        .flat_map(|c| c.1.iter().map(|x| x.0))
        .max()
        .unwrap_or(0);
    let rows = (maxv + 1).min(HIST_ROWS_LIMIT);
    let mut dense: Vec<Vec<u64>> = vec![vec![0; rows as usize]; cols.len()];
    let mut over = vec![0u64; cols.len()];
    for (ci, (_, pts)) in cols.iter().enumerate() {
        for &(v, c) in pts {
            if v < rows {
                dense[ci][v as usize] += c;
            } else {
                over[ci] += c;
            }
        }
    }
    for v in 0..rows as usize {
        o += &format!("{v:06}");
        for d in &dense {
            o += &format!(" {:06}", d[v]);
        }
        o.push('\n');
    }
    let stat = |f: &StatFn| -> String {
        cols.iter()
            .map(|c| format!(" {:05}", f(&c.1)))
            .collect::<String>()
    };
    o += &format!(
        "# Total:{}\n",
        cols.iter()
            .map(|c| format!(" {:09}", c.1.iter().map(|x| x.1).sum::<u64>()))
            .collect::<String>()
    );
    o += &format!(
        "# Min Latencies:{}\n",
        stat(&|p| p.iter().filter(|x| x.1 > 0).map(|x| x.0).min().unwrap_or(0))
    );
    o += &format!(
        "# Avg Latencies:{}\n",
        stat(&|p| {
            let n: u64 = p.iter().map(|x| x.1).sum();
            if n == 0 {
                0
            } else {
                (p.iter().map(|x| x.0 as u128 * x.1 as u128).sum::<u128>() / n as u128) as u64
            }
        })
    );
    o += &format!(
        "# Max Latencies:{}\n",
        stat(&|p| p.iter().filter(|x| x.1 > 0).map(|x| x.0).max().unwrap_or(0))
    );
    o += &format!(
        "# Histogram Overflows:{}\n",
        over.iter().map(|c| format!(" {c:05}")).collect::<String>()
    );
    o
}

/// A Dist (ns) as 1-µs rows; buckets wider than 1 µs go to their midpoint's row.
pub fn hist_us_points(h: &Dist) -> Vec<(u64, u64)> {
    let mut m: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for (lo, hi, c) in h.buckets() {
        *m.entry((lo + hi) / 2 / 1000).or_insert(0) += c;
    }
    m.into_iter().collect()
}

pub fn trials(t: &TrialsData, ctx: &mut Ctx) -> Result<(), String> {
    let metrics = t.metrics();
    // samples.csv: one value per line, long format.
    // Trials that ended early add a column, `at_least`: their censored metrics are a
    // line each with no value and the point they were censored at (never a value).
    // Without them the file is as it always was.
    let censored = t.trials.iter().any(|x| !x.censored.is_empty());
    let mut s = csv_doc();
    let mut head = vec![
        "setting", "variant", "trial", "status", "metric", "unit", "value",
    ];
    if censored {
        head.push("at_least");
    }
    s.write_record(&head).map_err(csv_err)?;
    let unit_of = |m: &str| {
        metrics
            .iter()
            .find(|x| x.0 == m)
            .map_or(String::new(), |x| x.1.clone())
    };
    for tr in &t.trials {
        let lines = tr
            .metrics
            .iter()
            .flat_map(|(m, vals)| vals.iter().map(move |v| (m, v.to_string(), String::new())))
            .chain(
                tr.censored
                    .iter()
                    .map(|(m, c)| (m, String::new(), c.to_string())),
            );
        for (m, value, least) in lines {
            let mut rec = vec![
                tr.setting.clone(),
                tr.variant.clone(),
                tr.trial.to_string(),
                tr.status.to_string(),
                m.clone(),
                unit_of(m),
                value,
            ];
            if censored {
                rec.push(least);
            }
            s.write_record(&rec).map_err(csv_err)?;
        }
    }
    ctx.write("export/samples.csv", &csv_text(s)?)?;
    // trials.csv: one trial per line, a column per metric (its first value).
    let mut head: Vec<String> = ["setting", "variant", "trial", "status", "duration_ms"]
        .map(String::from)
        .to_vec();
    head.extend(metrics.iter().map(|m| format!("{}_{}", m.0, m.1)));
    head.push("detail".into());
    // As in samples.csv: a column only when some trial ended early ("wait >= 100").
    if censored {
        head.push("censored".into());
    }
    let mut s = csv_doc();
    s.write_record(&head).map_err(csv_err)?;
    for tr in &t.trials {
        let mut f = vec![
            tr.setting.clone(),
            tr.variant.clone(),
            tr.trial.to_string(),
            tr.status.to_string(),
            if tr.duration_ms.is_finite() {
                tr.duration_ms.to_string()
            } else {
                String::new()
            },
        ];
        for m in &metrics {
            f.push(
                tr.metrics
                    .get(&m.0)
                    .and_then(|v| v.first())
                    .map_or(String::new(), |v| v.to_string()),
            );
        }
        f.push(tr.detail.clone().unwrap_or_default());
        if censored {
            let c: Vec<String> = tr
                .censored
                .iter()
                .map(|(m, c)| format!("{m} >= {c}"))
                .collect();
            f.push(c.join("; "));
        }
        s.write_record(&f).map_err(csv_err)?;
    }
    ctx.write("export/trials.csv", &csv_text(s)?)?;
    // Histogram text per latency metric, a column per setting and variant.
    for (m, unit, _) in &metrics {
        if !["ns", "us", "µs", "ms", "s"].contains(&unit.as_str()) {
            continue;
        }
        let cols: Vec<(String, Vec<(u64, u64)>)> = t
            .rows
            .iter()
            .filter(|r| &r.metric == m)
            .map(|r| {
                let mut pts: std::collections::BTreeMap<u64, u64> = Default::default();
                for v in &r.values {
                    *pts.entry(v.max(0.0).round() as u64).or_insert(0) += 1;
                }
                (
                    format!("{}/{}", r.setting, r.variant),
                    pts.into_iter().collect(),
                )
            })
            .collect();
        let txt = cyclictest_hist(&format!("{}: {m}", ctx.rig), unit, &cols);
        ctx.write(&format!("export/histogram_{}.txt", safe(m)), &txt)?;
    }
    Ok(())
}

pub fn livefx(res: &Results, d: &LivefxData, ctx: &mut Ctx) -> Result<(), String> {
    let mut s = csv_doc();
    s.write_record([
        "setting",
        "variant",
        "trial",
        "cycles_file",
        "cycles",
        "xruns",
        "deadline_misses",
        "injected",
    ])
    .map_err(csv_err)?;
    for t in &d.trials {
        s.write_record([
            t.setting.clone(),
            t.variant.clone(),
            t.trial.to_string(),
            t.cycles_file.clone().unwrap_or_default(),
            t.counts.cycles.to_string(),
            t.counts.xruns.to_string(),
            t.counts.deadline_misses.to_string(),
            t.counts.injected.to_string(),
        ])
        .map_err(csv_err)?;
    }
    ctx.write("export/trials.csv", &csv_text(s)?)?;
    // events.csv, streamed.
    let ev = res.dir.join(results::EVENTS_JSONL);
    if ev.is_file() {
        let f = ctx.out.create("export/events.csv")?;
        let out_path = f.path().to_path_buf();
        // csv::Writer buffers itself.
        let mut w = csv::Writer::from_writer(f);
        let io = |e: csv::Error| format!("cannot write {}: {e}", out_path.display());
        w.write_record(EVENTS_CSV_HEAD).map_err(io)?;
        // Names and sentences pass through the redactor, like setting and variant.
        let text = |s: Option<String>| s.map_or(String::new(), |s| ctx.red.apply(&s));
        let r = std::io::BufReader::new(std::fs::File::open(&ev).map_err(|e| e.to_string())?);
        for l in r.lines() {
            let l = l.map_err(|e| e.to_string())?;
            let Ok(e) = serde_json::from_str::<crate::load::events::Event>(&l) else {
                continue;
            };
            // A burst's own index, so misses join to their burst on this column.
            let burst = e
                .burst
                .or(e.index.filter(|_| e.kind == crate::load::events::BURST))
                .map_or(String::new(), |b| b.to_string());
            w.write_record([
                ctx.red.apply(&e.setting),
                ctx.red.apply(&e.variant),
                e.trial.map_or(String::new(), |t| t.to_string()),
                e.kind,
                e.cycle.map_or(String::new(), |c| c.to_string()),
                e.t_s.map_or(String::new(), |t| t.to_string()),
                e.usecs.map_or(String::new(), |u| u.to_string()),
                e.mono_s.map_or(String::new(), |t| t.to_string()),
                e.wall.unwrap_or_default(),
                text(e.worker),
                text(e.lock),
                text(e.holder),
                e.wait_us.map_or(String::new(), |u| u.to_string()),
                text(e.why),
                e.stuck_ms.map_or(String::new(), |m| m.to_string()),
                burst,
                text(e.caught),
                e.misses.map_or(String::new(), |m| m.to_string()),
            ])
            .map_err(io)?;
        }
        w.into_inner()
            .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?
            .commit()?;
        ctx.files.push("export/events.csv".into());
    }
    // Raw cycles as CSV only while that stays small; the .bin format is documented.
    let total: u64 = d.cycle_stats.values().map(|c| c.counts.cycles).sum();
    if total > 0 && total <= CYCLES_CSV_LIMIT {
        let f = ctx.out.create("export/cycles.csv")?;
        let out_path = f.path().to_path_buf();
        let mut w = csv::Writer::from_writer(f);
        let mut err: Option<csv::Error> = None;
        w.write_record([
            "setting",
            "variant",
            "trial",
            "cycle",
            "start_ns",
            "callback_ns",
            "lateness_ns",
            "flags",
            "wake_ns",
        ])
        .map_err(csv_err)?;
        for t in &d.trials {
            let Some(cf) = &t.cycles_file else { continue };
            let p = res.dir.join(cf);
            if !p.is_file() {
                continue;
            }
            let (s, v) = (ctx.red.apply(&t.setting), ctx.red.apply(&t.variant));
            let mut i = 0u64;
            cycles::read_file(&p, |c| {
                // All integers: serialized without a String per field.
                let row = (
                    &s,
                    &v,
                    t.trial,
                    i,
                    c.start_ns,
                    c.callback_ns,
                    c.lateness_ns,
                    c.flags,
                    c.wake_ns,
                );
                if let Err(e) = w.serialize(row) {
                    err.get_or_insert(e);
                }
                i += 1;
            })?;
        }
        if let Some(e) = err {
            return Err(format!("cannot write {}: {e}", out_path.display()));
        }
        w.into_inner()
            .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?
            .commit()?;
        ctx.files.push("export/cycles.csv".into());
    }
    for ((s, v), l) in &d.latency {
        let cols = vec![
            ("callback_duration".to_string(), hist_us_points(&l.callback)),
            ("lateness".to_string(), hist_us_points(&l.lateness)),
            ("wake_latency".to_string(), hist_us_points(&l.wake)),
        ];
        let txt = cyclictest_hist(&format!("{}: {s} / {v}", ctx.rig), "us", &cols);
        ctx.write(
            &format!("export/histogram_{}__{}.txt", safe(s), safe(v)),
            &txt,
        )?;
    }
    Ok(())
}

/// export/xruns.csv for a watch directory, streamed from events.jsonl.
pub fn watch(res: &Results, d: &WatchData, ctx: &mut Ctx) -> Result<(), String> {
    let ev = res.dir.join(results::EVENTS_JSONL);
    let f = ctx.out.create("export/xruns.csv")?;
    let out_path = f.path().to_path_buf();
    let mut w = csv::Writer::from_writer(f);
    let io = |e: csv::Error| format!("cannot write {}: {e}", out_path.display());
    w.write_record(XRUNS_CSV_HEAD).map_err(io)?;
    if ev.is_file() {
        let red = ctx.red.clone();
        let text = |s: Option<&str>| s.map_or(String::new(), |s| red.apply(s));
        let ms = |ns: u64| (ns as f64 / 1e6).to_string();
        let mut i = 0usize;
        let mut err = None;
        crate::load::watch::each_xrun(&ev, |e| {
            // The same lines in the same order as the loader's times.
            let t = d
                .times
                .get(i)
                .map_or(String::new(), |t| format!("{:.6}", t.0));
            i += 1;
            let r = w.write_record([
                e.index.to_string(),
                e.wall.clone(),
                t,
                e.source.clone(),
                text(e.client.as_deref()),
                e.cause.label().to_string(),
                text(e.late.as_ref().map(|t| t.comm.as_str())),
                e.late.as_ref().map_or(String::new(), |t| t.tid.to_string()),
                text(e.waited_for.as_ref().map(|t| t.comm.as_str())),
                e.waited_for
                    .as_ref()
                    .map_or(String::new(), |t| t.tid.to_string()),
                text(e.culprit.as_ref().map(|t| t.comm.as_str())),
                e.culprit
                    .as_ref()
                    .map_or(String::new(), |t| t.tid.to_string()),
                e.culprit
                    .as_ref()
                    .and_then(|t| t.pid)
                    .map_or(String::new(), |p| p.to_string()),
                text(e.culprit.as_ref().and_then(|t| t.process.as_deref())),
                text(e.interrupt.as_deref()),
                text(e.holder.as_ref().map(|t| t.named()).as_deref()),
                e.boost.clone().unwrap_or_default(),
                e.culprit_ns.map_or(String::new(), ms),
                ms(e.running_ns),
                ms(e.runnable_ns),
                ms(e.asleep_ns),
                ms(e.interrupt_ns),
                e.frame.map_or(String::new(), |f| f.to_string()),
                e.window.clone().unwrap_or_default(),
                red.apply(&e.why),
            ]);
            if let Err(x) = r
                && err.is_none()
            {
                err = Some(x);
            }
        })?;
        if let Some(x) = err {
            return Err(io(x));
        }
    }
    w.into_inner()
        .map_err(|e| format!("cannot write {}: {e}", out_path.display()))?
        .commit()?;
    ctx.files.push("export/xruns.csv".into());
    Ok(())
}

/// A role or verdict as bisect.json spells it ("good_end", "build_failed").
fn serde_word(x: &impl serde::Serialize) -> String {
    serde_json::to_value(x)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// export/steps.csv for a bisection.
pub fn bisect(d: &BisectData, ctx: &mut Ctx) -> Result<(), String> {
    let mut w = csv_doc();
    w.write_record(STEPS_CSV_HEAD).map_err(csv_err)?;
    let num = |x: Option<f64>| {
        x.filter(|v| v.is_finite())
            .map_or(String::new(), |v| v.to_string())
    };
    for (k, s) in d.tested().enumerate() {
        let b = s.build.as_ref();
        w.write_record([
            k.to_string(),
            serde_word(&s.role),
            d.position(s).map_or(String::new(), |p| p.to_string()),
            s.commit.sha.clone(),
            s.commit.subject.clone(),
            serde_word(&s.verdict),
            s.passed.to_string(),
            s.trials.to_string(),
            num((s.trials > 0).then(|| f64::from(s.passed) / f64::from(s.trials))),
            num(s.p_vs_good),
            num(s.p_vs_bad),
            s.build_s.to_string(),
            s.run_s.to_string(),
            s.note.clone().unwrap_or_default(),
            s.runs.join(" "),
            b.and_then(|b| b.version.clone()).unwrap_or_default(),
            b.and_then(|b| b.config_sha256.clone()).unwrap_or_default(),
            b.map_or(String::new(), |b| b.cached.to_string()),
        ])
        .map_err(csv_err)?;
    }
    ctx.write("export/steps.csv", &csv_text(w)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyclictest_format() {
        let t = cyclictest_hist(
            "t",
            "us",
            &[
                ("a".into(), vec![(0, 2), (3, 1)]),
                ("b".into(), vec![(1, 5), (200_000, 1)]),
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines.contains(&"000000 000002 000000"));
        assert!(lines.contains(&"000003 000001 000000"));
        assert!(lines.contains(&"# Total: 000000003 000000006"));
        assert!(lines.contains(&"# Max Latencies: 00003 200000"));
        assert!(lines.contains(&"# Histogram Overflows: 00000 00001"));
        assert_eq!(
            lines.iter().filter(|l| !l.starts_with('#')).count(),
            100_000
        );
    }

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let mut w = csv_doc();
        w.write_record(["a,b", "x\"y", "two\nlines", "cr\r", " plain #1", ""])
            .unwrap();
        w.write_record(["1", "2", "3", "4", "5", "6"]).unwrap();
        assert_eq!(
            csv_text(w).unwrap(),
            "\"a,b\",\"x\"\"y\",\"two\nlines\",\"cr\r\", plain #1,\n1,2,3,4,5,6\n"
        );
    }
}
