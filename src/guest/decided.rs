//! `--until-decided --boots N` with two kernels: the boot, not the trial, is the unit
//! (each boot a run of its own), so the decision is compare's, run against run. After
//! each round of boots from the second on (A B, B A, ...: two runs a side or more, so
//! the between-run spread comes from the runs themselves), the candidate kernel's boots
//! are judged against the baseline's on the rig's criterion (a thread rig's bounded
//! metric, an audio rig's dropouts: what `--until-decided` decides on within a boot),
//! and the run stops at the first look that answers worse, better or the same. The N − 1 looks share compare's one-sided 2.5 % by
//! Bonferroni (each look at 2.5 % / (N − 1) a side, before Holm over the metrics), so
//! the chance of any wrong "worse" over the whole run is at most 2.5 %, of any wrong
//! "better" at most 2.5 %, and of a wrong "the same" at most 2.5 %.

use analysis::judge::answer::{Answer, ONE_SIDED, confidence_label};
use results::combined::{BootsDecided, BootsLook};
use std::path::{Path, PathBuf};

/// The rule of one run: how many looks at most and each look's level.
#[derive(Debug, Clone, PartialEq)]
pub struct BootsRule {
    pub boots: u32,
    /// compare's metrics the rule judges: a thread rig's bounded one ("wait"), an
    /// audio rig's "dropouts" and "trials finished" (a hung trial fails it too).
    pub metrics: Vec<String>,
}

impl BootsRule {
    /// Checked at the CLI edge's plan: two kernels, two boots or more.
    pub fn new(kernels: usize, boots: u32, metrics: Vec<String>) -> Result<BootsRule, String> {
        if kernels != 2 {
            return Err(format!(
                "--until-decided with --boots judges a candidate kernel's boots against a \
                 baseline's: give exactly two --kernel (the baseline first), not {kernels}"
            ));
        }
        if boots < 2 {
            return Err("--until-decided with --boots needs --boots 2 or more".into());
        }
        Ok(BootsRule { boots, metrics })
    }

    /// Looks after rounds 2 to N.
    pub fn looks_max(&self) -> u32 {
        self.boots - 1
    }

    pub fn one_sided(&self) -> f64 {
        ONE_SIDED / self.looks_max() as f64
    }

    /// Whether the round just finished is one to look after.
    pub fn looks_after(&self, round: u32) -> bool {
        round >= 2
    }

    pub fn describe(&self) -> String {
        format!(
            "after each round of boots from the 2nd to the {n}th (A B, B A, ...), the second \
             kernel's boots judged against the first's by compare on {metric} (each boot a \
             run; up to \
             {looks} look(s), each at {lvl:.4} a side = 2.5 %/{looks}: {conf} intervals, \
             Holm-adjusted over the metrics); stops at the first look that answers worse, \
             better or the same; over the whole run a wrong \"worse\", a wrong \"better\" and \
             a wrong \"the same\" each at most 2.5 % (Bonferroni over the looks)",
            n = self.boots,
            metric = self.metrics.join(" and "),
            looks = self.looks_max(),
            lvl = self.one_sided(),
            conf = confidence_label(self.one_sided()),
        )
    }

    pub fn record(&self) -> BootsDecided {
        BootsDecided {
            rule: self.describe(),
            one_sided_per_look: self.one_sided(),
            looks_max: self.looks_max(),
            looks: vec![],
            answer: None,
        }
    }
}

/// Judges `sides` (the baseline kernel's boot directories, the candidate's) after
/// `round`, writing the comparison into `base/until-decided/round-<round>`; records the
/// look in `d` and says whether it decided.
pub fn look(
    rule: &BootsRule,
    d: &mut BootsDecided,
    base: &Path,
    round: u32,
    sides: [Vec<PathBuf>; 2],
) -> Result<bool, String> {
    let out = base.join("until-decided").join(format!("round-{round}"));
    let r = analysis::compare::Request {
        sides: sides.to_vec(),
        threshold: analysis::judge::answer::THRESHOLD,
        out: Some(out.clone()),
        redact: false,
        calibration: None,
        one_sided: rule.one_sided(),
        only: rule.metrics.clone(),
    };
    let o = analysis::compare::outcome(&r)?;
    let summary = o
        .json
        .get("summary")
        .and_then(|s| s.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| o.answer.map_or("nothing to judge", |a| a.word()).into());
    let decided = matches!(
        o.answer,
        Some(Answer::Worse | Answer::Better | Answer::Same)
    );
    let word = o.answer.map_or("inconclusive", Answer::word).to_string();
    d.looks.push(BootsLook {
        round,
        answer: word.clone(),
        summary,
        comparison: out.display().to_string(),
    });
    if decided {
        d.answer = Some(word);
    }
    Ok(decided)
}

/// The lines under the combined table.
pub fn render(d: &BootsDecided) -> String {
    let mut s = String::new();
    for l in &d.looks {
        s.push_str(&format!(
            "after {} boots of each: {} ({})\n",
            l.round, l.answer, l.comparison
        ));
    }
    s.push_str(&match &d.answer {
        Some(a) => format!(
            "until decided across boots: {a}, after {} look(s)\n",
            d.looks.len()
        ),
        None => format!(
            "until decided across boots: undecided after {} look(s): more boots, or a longer \
             run each boot, would be needed\n",
            d.looks.len()
        ),
    });
    s.push_str(&format!("rule: {}\n", d.rule));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_looks_share_the_level_and_two_kernels_are_needed() {
        let m = || vec!["wait".to_string()];
        let r = BootsRule::new(2, 6, m()).unwrap();
        assert_eq!(r.looks_max(), 5);
        assert!((r.one_sided() * 5.0 - ONE_SIDED).abs() < 1e-15);
        assert!(!r.looks_after(1) && r.looks_after(2) && r.looks_after(6));
        assert!(r.describe().contains("99 % intervals"), "{}", r.describe());
        let e = BootsRule::new(3, 4, m()).unwrap_err();
        assert!(e.contains("exactly two --kernel"), "{e}");
        assert!(BootsRule::new(2, 1, m()).is_err());
        // Two boots: one look, compare's own level.
        assert!((BootsRule::new(2, 2, m()).unwrap().one_sided() - ONE_SIDED).abs() < 1e-15);
    }
}
