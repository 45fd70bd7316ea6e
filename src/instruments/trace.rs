//! One trial's sched trace: per-event filters on the rig's tids, the instance's
//! trace_pipe copied to a file by a normal-priority thread (non-blocking reads, so the
//! run never waits on it), and a clean stop that drains what is left.

use super::tracefs::write_file;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `sched_switch` -> `sched/sched_switch`; `ipi/ipi_send_cpu` stays.
pub fn event_dir(name: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else if name.starts_with("ipi_") {
        format!("ipi/{name}")
    } else {
        format!("sched/{name}")
    }
}

/// The filter that keeps an event only when it is about one of `tids`, chosen from
/// the event's fields. Filtering on the event's subject, not on the current task
/// (which is what set_event_pid does), keeps a migration or wakeup of a rig thread
/// that another CPU's task or the idle task carried out.
pub fn filter_for(format: &str, tids: &[i32]) -> Option<String> {
    let has = |f: &str| format.contains(&format!(" {f};"));
    let any = |field: &str| {
        tids.iter()
            .map(|t| format!("{field} == {t}"))
            .collect::<Vec<_>>()
            .join(" || ")
    };
    if tids.is_empty() {
        return None;
    }
    if has("prev_pid") && has("next_pid") {
        Some(format!("{} || {}", any("prev_pid"), any("next_pid")))
    } else if has("pid") {
        Some(any("pid"))
    } else {
        None
    }
}

pub struct Capture {
    instance: PathBuf,
    /// Events counted in the kernel by a hist trigger instead of traced: (event, trigger).
    hists: Vec<(String, String)>,
    stop: Arc<AtomicBool>,
    /// The instance's overrun count when this trial began: the count is cumulative
    /// since the buffer was last reset, which is once per run.
    overruns_before: u64,
    reader: Option<std::thread::JoinHandle<Result<u64, String>>>,
    pub path: PathBuf,
    /// Events with no field to filter on: traced for every task.
    pub unfiltered: Vec<String>,
}

impl Capture {
    /// Sets filters and enables `events` (filtered to `tids`) and
    /// `unfiltered_events`, starts the reader writing to `out`, then turns tracing on.
    pub fn start(
        instance: &Path,
        events: &[String],
        unfiltered_events: &[String],
        tids: &[i32],
        out: PathBuf,
        cpu: Option<usize>,
    ) -> Result<Capture, String> {
        // No buffer reset here: the previous trial's `stop` drained the pipe after
        // tracing went off, and a fresh instance starts empty. Resetting per trial, and
        // flipping events on and off per trial (each flip patches kernel text on every
        // CPU), is what a 32-trial traced run on 6.1 under TCG was doing when it
        // soft-locked; events now stay on for the run and `tracing_on` gates them.
        write_file(&instance.join("tracing_on"), "0")?;
        let overruns_before = overruns(instance);
        let mut enabled = Vec::new();
        let mut unfiltered = Vec::new();
        for ev in events {
            let dir = instance.join("events").join(event_dir(ev));
            let fmt = std::fs::read_to_string(dir.join("format")).map_err(|e| {
                format!(
                    "trace event '{ev}' is not available on this kernel ({}: {e})",
                    dir.display()
                )
            })?;
            match filter_for(&fmt, tids) {
                Some(f) => write_file(&dir.join("filter"), &f)?,
                None => unfiltered.push(ev.clone()),
            }
            enabled.push(dir);
        }
        let mut hists = Vec::new();
        for ev in unfiltered_events {
            let dir = instance.join("events").join(event_dir(ev));
            if !dir.join("enable").exists() {
                continue;
            }
            // Where the kernel has hist triggers, count IPIs by target and callback in
            // the kernel: a storm is 10^4 events a second, too many to copy as text.
            if dir.join("hist").exists() {
                let t = hist_trigger(ev);
                write_file(&dir.join("trigger"), &t)?;
                hists.push((ev.clone(), t));
            } else {
                unfiltered.push(ev.clone());
                enabled.push(dir);
            }
        }
        for d in &enabled {
            if !is_enabled(d) {
                write_file(&d.join("enable"), "1")?;
            }
        }
        let pipe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(instance.join("trace_pipe"))
            .map_err(|e| format!("cannot open trace_pipe: {e}"))?;
        if let Some(d) = out.parent() {
            std::fs::create_dir_all(d)
                .map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        }
        let file = std::fs::File::create(&out)
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let reader = std::thread::Builder::new()
            .name("xrunrig-trace".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    // Off the rig's CPUs, so reading the trace does not perturb it.
                    let _ = crate::engine::thread::set_affinity(0, &[c]);
                }
                copy_pipe(pipe, file, &st)
            })
            .map_err(|e| format!("cannot start the trace reader: {e}"))?;
        let mut c = Capture {
            instance: instance.to_path_buf(),
            hists,
            stop,
            overruns_before,
            reader: Some(reader),
            path: out,
            unfiltered,
        };
        if let Err(e) = write_file(&instance.join("tracing_on"), "1") {
            let _ = c.stop();
            return Err(e);
        }
        Ok(c)
    }

    /// The hist triggers' counts so far: (event, hist file text).
    pub fn hist_texts(&self) -> Vec<(String, String)> {
        self.hists
            .iter()
            .filter_map(|(ev, _)| {
                let p = self
                    .instance
                    .join("events")
                    .join(event_dir(ev))
                    .join("hist");
                std::fs::read_to_string(p).ok().map(|t| (ev.clone(), t))
            })
            .collect()
    }

    /// Tracing off, triggers cleared, the reader drained and joined. Events stay
    /// enabled (with `tracing_on` 0 they record nothing) until the session removes the
    /// instance. Returns bytes captured and events the ring buffer dropped (overrun)
    /// during this trial.
    pub fn stop(&mut self) -> Result<(u64, u64), String> {
        let _ = write_file(&self.instance.join("tracing_on"), "0");
        for (ev, t) in std::mem::take(&mut self.hists) {
            let d = self.instance.join("events").join(event_dir(&ev));
            let _ = std::fs::write(d.join("trigger"), format!("!{t}"));
        }
        self.stop.store(true, Ordering::SeqCst);
        let bytes = match self.reader.take() {
            Some(h) => h
                .join()
                .map_err(|_| "the trace reader panicked".to_string())??,
            None => 0,
        };
        let lost = overruns(&self.instance).saturating_sub(self.overruns_before);
        Ok((bytes, lost))
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.stop();
        }
    }
}

fn is_enabled(event_dir: &Path) -> bool {
    std::fs::read_to_string(event_dir.join("enable")).is_ok_and(|s| s.trim_start().starts_with('1'))
}

/// The hist trigger that counts an ipi event by target CPU (where it has one) and
/// callback symbol.
pub fn hist_trigger(ev: &str) -> String {
    if ev.ends_with("ipi_send_cpu") {
        "hist:keys=cpu,callsite.sym,callback.sym:size=4096".into()
    } else if ev.ends_with("csd_queue_cpu") {
        "hist:keys=cpu,func.sym:size=4096".into()
    } else {
        "hist:keys=callsite.sym,callback.sym:size=4096".into()
    }
}

/// One hist entry: its keys (`cpu` -> "1", `func` -> "rto_push_irq_work_func") and hits.
pub type HistEntry = (std::collections::BTreeMap<String, String>, u64);

/// Parses a hist file's entries. Entry lines read
/// `{ cpu:  1, func: [ffffffff81234560] rto_push_irq_work_func  } hitcount:  41474`;
/// symbols lose their address and offset.
pub fn parse_hist(text: &str) -> Vec<HistEntry> {
    let mut out = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        let Some(body) = l.strip_prefix('{') else {
            continue;
        };
        let Some((keys, hits)) = body.split_once("hitcount:") else {
            continue;
        };
        let Ok(hits) = hits.trim().parse::<u64>() else {
            continue;
        };
        let keys = keys.trim().trim_end_matches('}');
        let mut m = std::collections::BTreeMap::new();
        for part in keys.split(',') {
            let Some((k, v)) = part.split_once(':') else {
                continue;
            };
            let v = v.trim();
            // "[ffffffff81234560] name+0x0/0x50" or a plain value.
            let v = v.rsplit_once(']').map_or(v, |(_, n)| n).trim();
            let v = v.split('+').next().unwrap_or(v);
            m.insert(k.trim().to_string(), v.to_string());
        }
        out.push((m, hits));
    }
    out
}

/// Events lost because the buffer was full, summed over CPUs.
fn overruns(instance: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(instance.join("per_cpu")) else {
        return 0;
    };
    rd.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stats")).ok())
        .flat_map(|s| {
            s.lines()
                .filter_map(|l| {
                    l.strip_prefix("overrun:")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .collect::<Vec<_>>()
        })
        .sum()
}

/// Copies trace_pipe to `out` until `stop` is set and the pipe is empty.
fn copy_pipe(
    mut pipe: std::fs::File,
    out: std::fs::File,
    stop: &AtomicBool,
) -> Result<u64, String> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        // Read after seeing the flag: an empty read then means tracing was already off
        // and everything it wrote has been copied.
        let stopping = stop.load(Ordering::SeqCst);
        match pipe.read(&mut buf) {
            Ok(0) => {
                if stopping {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(n) => {
                w.write_all(&buf[..n])
                    .map_err(|e| format!("cannot write the trace: {e}"))?;
                total += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stopping {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read trace_pipe: {e}")),
        }
    }
    w.flush()
        .map_err(|e| format!("cannot write the trace: {e}"))?;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_follow_the_fields() {
        let sw = "\tfield:pid_t prev_pid;\toffset:24;\n\tfield:pid_t next_pid;\toffset:56;\n";
        assert_eq!(
            filter_for(sw, &[5, 6]).unwrap(),
            "prev_pid == 5 || prev_pid == 6 || next_pid == 5 || next_pid == 6"
        );
        let mg = "\tfield:pid_t pid;\toffset:12;\n";
        assert_eq!(filter_for(mg, &[7]).unwrap(), "pid == 7");
        assert_eq!(filter_for("\tfield:unsigned int cpu;\n", &[7]), None);
        assert_eq!(event_dir("sched_switch"), "sched/sched_switch");
        assert_eq!(event_dir("ipi_send_cpu"), "ipi/ipi_send_cpu");
    }

    /// The buffer is reset once per run, so its overrun count is cumulative: a trial
    /// reports only what it added. (A plain directory stands in for the instance.)
    #[test]
    fn a_trial_reports_only_its_own_overruns() {
        let d = std::env::temp_dir().join(format!("xrunrig-inst-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for c in ["cpu0", "cpu1"] {
            std::fs::create_dir_all(d.join("per_cpu").join(c)).unwrap();
        }
        let stats = |c: &str, n: u64| {
            std::fs::write(
                d.join("per_cpu").join(c).join("stats"),
                format!("entries: 10\noverrun: {n}\ncommit overrun: 0\n"),
            )
            .unwrap()
        };
        stats("cpu0", 5);
        stats("cpu1", 0);
        std::fs::write(d.join("trace_pipe"), b"").unwrap();
        let out = d.join("out.txt");
        let mut c = Capture::start(&d, &[], &[], &[1], out.clone(), None).unwrap();
        stats("cpu0", 12);
        stats("cpu1", 3);
        assert_eq!(c.stop().unwrap(), (0, 10));
        // The next trial starts from 15 and adds nothing.
        let mut c = Capture::start(&d, &[], &[], &[1], out, None).unwrap();
        assert_eq!(c.stop().unwrap(), (0, 0));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn hist_entries() {
        let h = "# event histogram\n#\n# trigger info: hist:keys=cpu,func.sym:vals=hitcount:sort=hitcount:size=4096 [active]\n#\n\n\
{ cpu:          1, func: [ffffffff8113e2b0] rto_push_irq_work_func                              } hitcount:      41474\n\
{ cpu:          0, func: [ffffffff811b5a40] sched_ttwu_pending+0x0/0x20         } hitcount:         12\n\
\nTotals:\n    Hits: 41486\n    Entries: 2\n    Dropped: 0\n";
        let v = parse_hist(h);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0["cpu"], "1");
        assert_eq!(v[0].0["func"], "rto_push_irq_work_func");
        assert_eq!(v[0].1, 41474);
        assert_eq!(v[1].0["func"], "sched_ttwu_pending");
        let m = parse_hist(
            "{ cpu: 2, callsite: [ffffffff81000000] resched_curr+0x5/0x9, callback: [0000000000000000] 0x0 } hitcount: 3\n",
        );
        assert_eq!(m[0].0["callsite"], "resched_curr");
        assert_eq!(m[0].0["callback"], "0x0");
        assert_eq!(m[0].0["cpu"], "2");
    }
}
