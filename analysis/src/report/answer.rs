//! The answer a run ends with (`xrunrig run` prints it after its table): the report's
//! verdict in plain words, one line per setting and variant, with the backend named for
//! what it measured ("built-in clock: no sound hardware was tested"), and the one-line
//! conclusion `--quiet` keeps. The same sentences as report.txt's Verdict.

use crate::load::{self, LivefxData};
use std::path::Path;

pub struct Answer {
    /// The verdict, one line per setting and variant (and each comparison between them).
    pub lines: Vec<String>,
    /// One line: the conclusion and what the backend measured.
    pub one_line: String,
}

/// What a backend (as summary.json names it) measured, in words.
pub fn backend_words(backend: &str) -> String {
    match backend {
        "clock" => "built-in clock: no sound hardware was tested (timers only; a card's \
                    interrupts and driver are not in these numbers)"
            .into(),
        "jack" => "JACK: the server's own sound card and driver were exercised".into(),
        "alsa" => "ALSA: a sound card's driver was exercised".into(),
        other => format!("backend {other}"),
    }
}

/// The answer for the complete results directory `dir`.
pub fn answer(dir: &Path) -> Result<Answer, String> {
    Ok(load::load(dir)?.kind.answer())
}

/// A livefx run's answer: the verdict, with each backend named for what it measured.
pub fn livefx(d: &LivefxData) -> Answer {
    let cs = super::livefx::cases(d);
    let (lines, conclusion) = super::livefx::verdict(&cs);
    let mut backends: Vec<&str> = Vec::new();
    for r in &d.rows {
        if !backends.contains(&r.backend.as_str()) {
            backends.push(&r.backend);
        }
    }
    let words: Vec<String> = backends.iter().map(|b| backend_words(b)).collect();
    let backend = if words.is_empty() {
        String::new()
    } else {
        format!(" Backend: {}.", words.join("; "))
    };
    Answer {
        lines,
        one_line: format!("{conclusion}{backend}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_run_says_no_sound_hardware_was_tested() {
        let d = std::env::temp_dir().join(format!("analysis-answer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let mut spec = crate::synth::livefx::Spec::ab(4_000, 2);
        spec.settings[1].stall_every = 0;
        // The synthetic rows are the clock backend's.
        crate::synth::livefx::generate(&d, &spec).unwrap();
        let a = answer(&d).unwrap();
        assert!(
            a.one_line
                .contains("built-in clock: no sound hardware was tested"),
            "{}",
            a.one_line
        );
        assert!(a.one_line.starts_with("Conclusion: "), "{}", a.one_line);
        assert!(
            a.lines.iter().any(
                |l| l.starts_with("RT_PUSH_IPI: no xruns and no deadline misses")
                    && l.contains("Too short a run")
            ),
            "{:?}",
            a.lines
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
