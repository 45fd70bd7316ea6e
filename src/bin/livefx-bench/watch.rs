//! `livefx-bench watch`: what `xrunrig watch` costs a session. A private dummy jackd;
//! rounds of `xrunrig run RIG --backend jack` against it, alone (side A) and with
//! `xrunrig watch` attached from before the rig starts until after it ends (side B),
//! in ABBA order (AB, BA, AB, …) so drift and other load hit both sides alike. Prints
//! per variant and side the median over rounds of the rig's callback p99 / p99.9 / max
//! and its xruns and deadline misses per minute; for B, watch's CPU time as % of one
//! core and the xruns watch counted against the rig's. Then watch alone on the idle
//! server. Figures are read from the runs' summary.json files (the `results` types).

use crate::stats::median_spread;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xrunrig::audio::jack::server as jack_server;

#[derive(clap::Args)]
pub struct Args {
    /// Rounds; each runs both sides once.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Seconds each rig trial lasts (`xrunrig run --duration`), and the idle watch.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// The private jackd's period in frames (at 48 kHz); jackd's own default is 1024.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(16..=8192))]
    period: u32,
    /// The livefx rig to run.
    #[arg(long, default_value = "rigs/livefx.toml")]
    rig: PathBuf,
    /// Run only these variants of the rig (repeatable; default: all of them).
    #[arg(long)]
    variant: Vec<String>,
    /// An argument given to every `xrunrig run` (repeatable, in order), e.g.
    /// `--run-arg=--inject-every --run-arg 1000` for an overrun a second: the xruns whose
    /// explanation watch's CPU per xrun is measured on.
    #[arg(long, allow_hyphen_values = true)]
    run_arg: Vec<String>,
}

/// The private server's name: fixed, so a killed bench's JACK registry slot is taken
/// back by the next start under the same name instead of leaking one of its 8 slots.
const SERVER: &str = "xrr-bench-watch";
const RATE: u32 = 48000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The rig alone.
    A,
    /// The rig with `xrunrig watch` beside it.
    B,
}

/// (round, side) in run order: even rounds A then B, odd rounds B then A.
fn order(rounds: u32) -> Vec<(u32, Side)> {
    (0..rounds)
        .flat_map(|r| {
            let s = if r % 2 == 0 {
                [Side::A, Side::B]
            } else {
                [Side::B, Side::A]
            };
            s.map(|side| (r, side))
        })
        .collect()
}

/// One summary.json row's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct RowFigs {
    p99: Option<f64>,
    p999: Option<f64>,
    max: Option<f64>,
    xruns: u64,
    xruns_per_min: Option<f64>,
    misses_per_min: Option<f64>,
}

fn row_figs(r: &results::livefx::Row) -> RowFigs {
    // The trials' wall time; rows without it: the audio time their cycles covered.
    let minutes = r.duration_s.or_else(|| r.audio_s()).map(|s| s / 60.0);
    let per_min = |n: u64| minutes.filter(|m| *m > 0.0).map(|m| n as f64 / m);
    RowFigs {
        p99: r.callback_us.p99,
        p999: r.callback_us.p999,
        max: r.callback_us.max,
        xruns: r.counts.xruns,
        xruns_per_min: per_min(r.counts.xruns),
        misses_per_min: per_min(r.counts.deadline_misses),
    }
}

/// Median (lowest–highest) of the values present, as text; "-" when none.
fn med(v: impl Iterator<Item = Option<f64>>, decimals: usize) -> String {
    let v: Vec<f64> = v.flatten().collect();
    match median_spread(&v) {
        Some((m, lo, hi)) => format!("{m:.decimals$} ({lo:.decimals$}–{hi:.decimals$})"),
        None => "-".into(),
    }
}

/// One side's table line for one variant, from its rounds' rows.
fn side_line(figs: &[RowFigs]) -> [String; 5] {
    [
        med(figs.iter().map(|f| f.p99), 0),
        med(figs.iter().map(|f| f.p999), 0),
        med(figs.iter().map(|f| f.max), 0),
        med(figs.iter().map(|f| f.xruns_per_min), 1),
        med(figs.iter().map(|f| f.misses_per_min), 1),
    ]
}

/// watch's CPU per xrun it counted, in ms: its CPU over the round less what it costs
/// idle over as long (`idle`'s rate), divided by the xruns. None without xruns.
fn per_xrun_ms(
    w: &results::watch::WatchSummary,
    idle: &results::watch::WatchSummary,
) -> Option<f64> {
    let idle_rate = if idle.duration_s > 0.0 {
        idle.cpu_s / idle.duration_s
    } else {
        0.0
    };
    (w.xruns > 0).then(|| 1000.0 * (w.cpu_s - idle_rate * w.duration_s) / w.xruns as f64)
}

/// watch's CPU as % of one core.
fn cpu_pct(w: &results::watch::WatchSummary) -> Option<f64> {
    (w.duration_s > 0.0).then(|| 100.0 * w.cpu_s / w.duration_s)
}

/// The private jackd, stopped (SIGTERM, then SIGKILL after 5 s) and reaped when dropped.
struct Jackd {
    child: Child,
    log: PathBuf,
}

impl Jackd {
    fn start(period: u32, log: PathBuf) -> Result<Jackd, String> {
        if !xrunrig::audio::jack::server::serving(SERVER).is_empty() {
            return Err(format!(
                "a jackd named '{SERVER}' is already running (another bench?): stop it first"
            ));
        }
        // The command line builder the guest's launcher and the tests use; the server at
        // the priority the guest launcher gives a rig whose callback wants FIFO 70.
        let args = jack_server::Command {
            name: Some(SERVER.into()),
            priority: Some(jack_server::server_priority(70)),
            driver: jack_server::Driver::Dummy {
                playback_ports: None,
                capture_ports: None,
            },
            rate: Some(RATE),
            period: Some(period),
            nperiods: None,
        }
        .args();
        let f = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(&args[0])
            .args(&args[1..])
            .env(jack_server::NO_RESERVATION_ENV, "1")
            .stdout(f.try_clone().map_err(|e| e.to_string())?)
            .stderr(f)
            .spawn()
            .map_err(|e| format!("cannot start jackd (apt-get install jackd2): {e}"))?;
        let j = Jackd { child, log };
        let wait = jack_server::wait_args(SERVER, 5);
        let ok = Command::new(&wait[0])
            .args(&wait[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!(
                "jackd '{SERVER}' did not answer within 5 s; its log:\n{}",
                j.log_text()
            ));
        }
        println!("jackd: {}", args.join(" "));
        Ok(j)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// xruns jackd2 logged so far ("JackEngine::XRun: client = … was not finished").
    fn logged_xruns(&self) -> usize {
        self.log_text().matches("JackEngine::XRun").count()
    }
}

impl Drop for Jackd {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Env {
    bin: PathBuf,
    state: PathBuf,
    rig: PathBuf,
    variants: Vec<String>,
    seconds: f64,
    run_args: Vec<String>,
}

/// `xrunrig run RIG --backend jack` into `out`; its summary.json.
fn run_rig(env: &Env, out: &Path) -> Result<results::livefx::Summary, String> {
    let mut c = Command::new(&env.bin);
    c.arg("run")
        .arg(&env.rig)
        .args(["-q", "--backend", "jack", "--duration"])
        .arg(format!("{} ms", (env.seconds * 1000.0).round() as u64))
        .arg("--out")
        .arg(out);
    for v in &env.variants {
        c.args(["--variant", v]);
    }
    c.args(&env.run_args);
    let o = c
        .env(jack_server::SERVER_ENV, SERVER)
        .env("XRUNRIG_STATE_DIR", &env.state)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", env.bin.display()))?;
    let path = out.join(results::SUMMARY_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "xrunrig run ({}) left no {}: {e}\n{}",
            o.status,
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        )
    })?;
    if !o.status.success() {
        eprintln!(
            "livefx-bench: xrunrig run exited {} ({})",
            o.status,
            out.display()
        );
    }
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `xrunrig watch --server SERVER --out out`, returned once it says it is watching.
fn start_watch(env: &Env, out: &Path) -> Result<Child, String> {
    let log = out.with_extension("log");
    let f = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = Command::new(&env.bin)
        .args(["watch", "--server", SERVER, "--out"])
        .arg(out)
        .env("XRUNRIG_STATE_DIR", &env.state)
        .stdin(Stdio::null())
        .stdout(f.try_clone().map_err(|e| e.to_string())?)
        .stderr(f)
        .spawn()
        .map_err(|e| format!("{}: {e}", env.bin.display()))?;
    let t0 = Instant::now();
    loop {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&log) {
            let _ = f.read_to_string(&mut s);
        }
        if s.contains("watching ") {
            return Ok(child);
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("xrunrig watch exited {st} before watching:\n{s}"));
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "xrunrig watch did not start watching in 20 s:\n{s}"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGINT, wait (SIGKILL after 30 s), and its summary.json.
fn stop_watch(mut child: Child, out: &Path) -> Result<results::watch::WatchSummary, String> {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let st = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("xrunrig watch did not stop within 30 s of SIGINT".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let path = out.join(results::SUMMARY_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "xrunrig watch ({st}) left no {}: {e}\n{}",
            path.display(),
            std::fs::read_to_string(out.with_extension("log")).unwrap_or_default()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The xrunrig binary: $XRUNRIG_BIN, else the one beside this binary (target/release).
fn xrunrig_bin() -> PathBuf {
    std::env::var_os("XRUNRIG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::current_exe()
                .expect("own path")
                .with_file_name("xrunrig")
        })
}

/// One round's side: the rig's rows, and (side B) watch's summary.
struct Outcome {
    side: Side,
    rows: Vec<results::livefx::Row>,
    watch: Option<results::watch::WatchSummary>,
    jackd_xruns: usize,
}

pub fn main(a: &Args) -> i32 {
    match bench(a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("livefx-bench watch: {e}");
            1
        }
    }
}

fn bench(a: &Args) -> Result<(), String> {
    if !a.seconds.is_finite() || a.seconds <= 0.0 {
        return Err("--seconds must be more than 0".into());
    }
    let bin = xrunrig_bin();
    if !bin.exists() {
        return Err(format!(
            "{} not found: cargo build --release first (or set XRUNRIG_BIN)",
            bin.display()
        ));
    }
    let base = std::env::temp_dir().join(format!("livefx-bench-watch-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt;
        // Root-only: the state directory below must be root's and private.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&base)
            .map_err(|e| format!("{}: {e}", base.display()))?;
    }
    let env = Env {
        bin,
        state: base.join("state"),
        rig: a.rig.clone(),
        variants: a.variant.clone(),
        seconds: a.seconds,
        run_args: a.run_arg.clone(),
    };
    let jackd = Jackd::start(a.period, base.join("jackd.log"))?;
    println!(
        "{} rounds × (A: the rig alone, B: with xrunrig watch), ABBA; {} s per trial, period {} at {RATE} Hz; {}; results in {}",
        a.rounds,
        a.seconds,
        a.period,
        env.rig.display(),
        base.display()
    );

    // watch alone on the idle server.
    let idle_out = base.join("idle-watch");
    let w = start_watch(&env, &idle_out)?;
    std::thread::sleep(Duration::from_secs_f64(a.seconds));
    let idle = stop_watch(w, &idle_out)?;

    let mut done: Vec<Outcome> = Vec::new();
    for (round, side) in order(a.rounds) {
        let tag = format!("r{round}-{side:?}");
        let before = jackd.logged_xruns();
        let out = base.join(&tag);
        let (summary, watch) = match side {
            Side::A => (run_rig(&env, &out)?, None),
            Side::B => {
                let wout = base.join(format!("{tag}-watch"));
                let w = start_watch(&env, &wout)?;
                let s = run_rig(&env, &out);
                let ws = stop_watch(w, &wout)?;
                (s?, Some(ws))
            }
        };
        let jackd_xruns = jackd.logged_xruns() - before;
        let rig_xruns: u64 = summary.rows.iter().map(|r| r.counts.xruns).sum();
        println!(
            "round {round} {side:?}: rig xruns {rig_xruns}, misses {}{}; jackd logged {jackd_xruns}",
            summary
                .rows
                .iter()
                .map(|r| r.counts.deadline_misses)
                .sum::<u64>(),
            watch.as_ref().map_or(String::new(), |w| format!(
                "; watch counted {} xruns, CPU {:.3} s over {:.1} s",
                w.xruns, w.cpu_s, w.duration_s
            )),
        );
        done.push(Outcome {
            side,
            rows: summary.rows,
            watch,
            jackd_xruns,
        });
    }
    drop(jackd);
    print_table(&done, &idle);
    Ok(())
}

fn print_table(done: &[Outcome], idle: &results::watch::WatchSummary) {
    let mut variants: Vec<String> = Vec::new();
    for o in done {
        for r in &o.rows {
            if !variants.contains(&r.variant) {
                variants.push(r.variant.clone());
            }
        }
    }
    println!();
    println!("median (lowest–highest) over rounds; callback in µs");
    println!(
        "{:<10} {:<5} {:>18} {:>18} {:>20} {:>18} {:>18}",
        "variant", "side", "callback p99", "p99.9", "max", "xruns/min", "misses/min"
    );
    for v in &variants {
        for side in [Side::A, Side::B] {
            let figs: Vec<RowFigs> = done
                .iter()
                .filter(|o| o.side == side)
                .flat_map(|o| o.rows.iter().filter(|r| &r.variant == v).map(row_figs))
                .collect();
            let [p99, p999, max, x, m] = side_line(&figs);
            println!(
                "{v:<10} {:<5} {p99:>18} {p999:>18} {max:>20} {x:>18} {m:>18}",
                format!("{side:?}")
            );
        }
    }
    let b: Vec<&Outcome> = done.iter().filter(|o| o.side == Side::B).collect();
    let ws: Vec<&results::watch::WatchSummary> =
        b.iter().filter_map(|o| o.watch.as_ref()).collect();
    println!(
        "B: watch's CPU, % of one core: {} (cpu_s / duration_s per round)",
        med(ws.iter().map(|w| cpu_pct(w)), 3)
    );
    println!(
        "B: watch's CPU per xrun it counted, ms: {} ((cpu_s − idle's CPU rate × duration_s) / xruns per round)",
        med(ws.iter().map(|w| per_xrun_ms(w, idle)), 2)
    );
    let counts: Vec<String> = b
        .iter()
        .map(|o| {
            format!(
                "{}/{}/{}",
                o.watch.as_ref().map_or(0, |w| w.xruns),
                o.rows.iter().map(|r| r.counts.xruns).sum::<u64>(),
                o.jackd_xruns
            )
        })
        .collect();
    println!(
        "B: xruns per round, watch / rig / jackd's log: {} (watch runs from before the rig starts until after it ends)",
        counts.join(", ")
    );
    let a_j: Vec<String> = done
        .iter()
        .filter(|o| o.side == Side::A)
        .map(|o| {
            format!(
                "{}/{}",
                o.rows.iter().map(|r| r.counts.xruns).sum::<u64>(),
                o.jackd_xruns
            )
        })
        .collect();
    println!("A: xruns per round, rig / jackd's log: {}", a_j.join(", "));
    println!(
        "idle: watch alone on the idle server for {:.1} s: CPU {} % of one core ({:.3} s), {} xruns; recorder {}",
        idle.duration_s,
        cpu_pct(idle).map_or("-".into(), |p| format!("{p:.3}")),
        idle.cpu_s,
        idle.xruns,
        idle.recorder.mode
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_abba() {
        let o: Vec<String> = order(4).iter().map(|(r, s)| format!("{r}{s:?}")).collect();
        assert_eq!(o, ["0A", "0B", "1B", "1A", "2A", "2B", "3B", "3A"]);
        // Each side runs first in half the rounds.
        let firsts = order(6).chunks(2).filter(|c| c[0].1 == Side::A).count();
        assert_eq!(firsts, 3);
    }

    #[test]
    fn rates_per_minute_and_medians() {
        let mut r = results::livefx::Row::new("as-is", "pi");
        r.duration_s = Some(30.0);
        r.counts.xruns = 3;
        r.counts.deadline_misses = 1;
        r.callback_us.p99 = Some(400.0);
        let f = row_figs(&r);
        assert_eq!(f.xruns_per_min, Some(6.0));
        assert_eq!(f.misses_per_min, Some(2.0));
        let g = RowFigs {
            p99: Some(200.0),
            xruns_per_min: Some(0.0),
            ..f
        };
        let h = RowFigs {
            p99: Some(300.0),
            ..g
        };
        let line = side_line(&[f, g, h]);
        assert_eq!(line[0], "300 (200–400)");
        assert_eq!(line[1], "-");
        assert_eq!(line[3], "0.0 (0.0–6.0)");
        // No duration: no rate rather than a division by zero.
        assert_eq!(
            row_figs(&results::livefx::Row::new("x", "y")).xruns_per_min,
            None
        );
        let w = results::watch::WatchSummary {
            cpu_s: 0.05,
            duration_s: 10.0,
            ..Default::default()
        };
        assert_eq!(cpu_pct(&w), Some(0.5));
        // 0.05 s idle over 10 s; 0.35 s over 20 s with 50 xruns: (0.35 − 0.1) / 50.
        let busy = results::watch::WatchSummary {
            cpu_s: 0.35,
            duration_s: 20.0,
            xruns: 50,
            ..Default::default()
        };
        assert!((per_xrun_ms(&busy, &w).unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(per_xrun_ms(&w, &w), None);
    }
}
