//! Progress while a run goes: on a terminal, an `indicatif` bar with the elapsed time and
//! an ETA (sweeps and guest runs), whose message is the live line of a livefx trial
//! (cycles, xruns and misses so far); anywhere else (a pipe, a file, a CI log, a guest's
//! serial console) plain lines without escape codes or carriage returns: one per trial,
//! and for a long livefx trial one every `PLAIN_EVERY`. `--quiet` shows none of it.
//!
//! Notes printed while a bar is drawn go through `println` so they land above the bar
//! instead of through it.

use super::console::{bar, quiet, set_bar};
use indicatif::{HumanDuration, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How progress shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A bar redrawn in place (stderr is a terminal).
    Bar,
    /// Plain lines (stderr is not a terminal, or `XRUNRIG_NO_PROGRESS` is set).
    Plain,
    /// Nothing (`--quiet`).
    Off,
}

/// Set by the guest's /init (its console is a terminal the host reads by lines) and by
/// tests: plain lines, and no periodic live lines.
const NO_PROGRESS_ENV: &str = "XRUNRIG_NO_PROGRESS";

/// A plain live line at most this often: CI logs stay short.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);

pub fn style() -> Style {
    if quiet() {
        Style::Off
    } else if std::io::stderr().is_terminal() && std::env::var_os(NO_PROGRESS_ENV).is_none() {
        Style::Bar
    } else {
        Style::Plain
    }
}

/// Progress over a known number of steps (trials): drawn while it lives, cleared when
/// dropped.
pub struct Progress {
    bar: Option<ProgressBar>,
    style: Style,
}

impl Progress {
    /// `len` steps; `prefix` names what runs (empty: nothing before the time);
    /// `per_step` the expected time of one step when known, for an ETA before the first
    /// step is done (after it, indicatif's from the steps' pace).
    pub fn new(len: u64, prefix: &str, per_step: Option<Duration>) -> Progress {
        let style = style();
        let bar = (style == Style::Bar).then(|| {
            let head = if prefix.is_empty() { "" } else { "{prefix} " };
            let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
                .with_style(
                    ProgressStyle::with_template(&format!(
                        "{head}{{elapsed_precise}} [{{bar:20}}] {{pos}}/{{len}} ETA {{eta_hint}} {{wide_msg}}"
                    ))
                    .expect("a valid template")
                    .with_key("eta_hint", move |st: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{}", eta(st.pos(), st.len(), st.elapsed(), st.eta(), per_step));
                    })
                    .progress_chars("=> "),
                );
            b.set_prefix(prefix.to_string());
            // Elapsed keeps moving while a trial or a guest boot runs; the ticker sleeps
            // between ticks and runs only on a terminal.
            b.enable_steady_tick(Duration::from_millis(500));
            b
        });
        if let Some(b) = &bar {
            set_bar(Some(b.clone()));
        }
        Progress { bar, style }
    }

    /// One step done, said by `line` (kept above the bar, or printed plainly).
    pub fn step(&self, line: &str) {
        match (&self.bar, self.style) {
            (Some(b), _) => {
                b.println(line);
                b.inc(1);
            }
            (None, Style::Plain) => eprintln!("{line}"),
            _ => {}
        }
    }

    /// Steps already done (a guest run resumed after `n` trials).
    pub fn set_position(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.set_position(n);
        }
    }

    /// The number of steps changed (--until-decided stopped a variant early).
    pub fn set_length(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.set_length(n);
        }
    }

    /// What is going on now, after the ETA (bar only).
    pub fn set_message(&self, m: &str) {
        if let Some(b) = &self.bar {
            b.set_message(m.to_string());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
            set_bar(None);
        }
    }
}

/// The ETA shown: indicatif's once a step is done; before that, `per_step` × the steps
/// less the time gone, or "?" when nothing is known yet.
fn eta(
    pos: u64,
    len: Option<u64>,
    elapsed: Duration,
    measured: Duration,
    per_step: Option<Duration>,
) -> String {
    let left = match (pos, len, per_step) {
        (0, Some(n), Some(d)) => d
            .saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))
            .saturating_sub(elapsed),
        (0, _, _) => return "?".into(),
        _ => measured,
    };
    format!("{:#}", HumanDuration(left))
}

/// A line of a guest's console relayed to the user; a guest's per-trial line also moves
/// the current bar on by one.
pub fn relay(line: &str) {
    if quiet() {
        return;
    }
    let text = format!("  guest| {line}");
    match bar() {
        Some(b) => {
            b.println(text);
            if is_trial_line(line) {
                b.inc(1);
            }
        }
        None => eprintln!("{text}"),
    }
}

/// The sweep's per-trial line: `[   3/12] setting / variant trial 1/2: ...`.
pub fn is_trial_line(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix('[') else {
        return false;
    };
    let Some((count, _)) = rest.split_once(']') else {
        return false;
    };
    let Some((a, b)) = count.trim().split_once('/') else {
        return false;
    };
    !a.is_empty()
        && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit())
}

/// The live line of one running trial: the bar's message on a terminal, a plain line
/// every `PLAIN_EVERY` elsewhere (none in a guest). Cleared when dropped.
pub struct Live {
    style: Style,
    periodic: bool,
    t0: Instant,
    /// When the next plain line is due, from `t0`.
    next: Duration,
}

impl Live {
    pub fn new() -> Live {
        Live {
            style: style(),
            periodic: std::env::var_os(NO_PROGRESS_ENV).is_none(),
            t0: Instant::now(),
            next: PLAIN_EVERY,
        }
    }

    /// Whether `update` shows anything now: callers skip formatting the line otherwise.
    pub fn due(&self) -> bool {
        match self.style {
            Style::Bar => true,
            Style::Plain => self.periodic && self.t0.elapsed() >= self.next,
            Style::Off => false,
        }
    }

    pub fn update(&mut self, text: &str) {
        if !self.due() {
            return;
        }
        match self.style {
            // Outside a sweep (none today) there is no bar to carry it: a bar-less
            // line would need \r, so nothing is shown.
            Style::Bar => {
                if let Some(b) = bar() {
                    b.set_message(text.to_string());
                }
            }
            Style::Plain => {
                // From now, not from the missed due time: after a stall, one line.
                self.next = self.t0.elapsed() + PLAIN_EVERY;
                eprintln!("{text}");
            }
            Style::Off => {}
        }
    }
}

impl Default for Live {
    fn default() -> Self {
        Live::new()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if self.style == Style::Bar
            && let Some(b) = bar()
        {
            b.set_message("");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eta_before_the_first_step_comes_from_the_estimate() {
        let s = Duration::from_secs;
        assert_eq!(eta(0, Some(4), s(0), s(0), None), "?");
        assert_eq!(eta(0, Some(4), s(5), s(0), Some(s(10))), "35s");
        assert_eq!(eta(0, Some(1), s(50), s(0), Some(s(10))), "0s");
        assert_eq!(eta(2, Some(4), s(20), s(20), Some(s(1))), "20s");
    }

    #[test]
    fn trial_lines_are_recognised() {
        assert!(is_trial_line("[   3/12] A / v trial 1/2: cycles 9"));
        assert!(is_trial_line("[1/1] x"));
        assert!(!is_trial_line("[ok] x"));
        assert!(!is_trial_line("[ /3] x"));
        assert!(!is_trial_line("xrunrig: [1/2]"));
        assert!(!is_trial_line("[1/2 x"));
    }

    #[test]
    fn plain_live_lines_come_every_interval_not_more() {
        let mut l = Live {
            style: Style::Plain,
            periodic: true,
            t0: Instant::now(),
            next: PLAIN_EVERY,
        };
        assert!(!l.due(), "none at the start");
        // As if 25 s had passed with no line (a stall): one line, then quiet again.
        l.t0 -= Duration::from_secs(25);
        assert!(l.due());
        l.update("x");
        assert!(!l.due());
        l.periodic = false;
        l.t0 -= Duration::from_secs(60);
        assert!(!l.due(), "XRUNRIG_NO_PROGRESS: none");
    }
}
