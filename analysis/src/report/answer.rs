//! The answer a run ends with (`xrunrig run` prints it after its table): the report's
//! verdict in plain words, one line per setting and variant, with the backend named for
//! what it measured ("built-in clock: no sound hardware was tested"), and the one-line
//! conclusion `--quiet` keeps. The same sentences as report.txt's Verdict. Each kind
//! gives its own (`kind::ResultKind` `answer()`; `Answer` is in `part.rs`).

use super::part::Answer;
use crate::kind;
use std::path::Path;

/// The answer for the complete results directory `dir`.
pub fn answer(dir: &Path) -> Result<Answer, String> {
    Ok(kind::of(&kind::load(dir)?).answer())
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
