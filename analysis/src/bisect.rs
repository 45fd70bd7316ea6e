//! How `xrunrig bisect` decides a step: the step's pass count against each end's, with
//! Fisher's exact two-sided test, looked at after every batch of trials.
//!
//! A step is **bad** when it differs from the good end (p ≤ the per-look level) in the
//! bad end's direction and does not differ from the bad end; **good** the other way
//! round. Anything else gets another batch, and at its maximum is **undecided**
//! (skipped, as `git bisect skip`: a wrong verdict would send the bisection astray,
//! a skip only costs a step).
//!
//! Its error rate: a step whose pass probability equals the good end's is called bad
//! only if some look's test against the good end rejects; Fisher's p satisfies
//! P(p ≤ c) ≤ c under that null at every look, so over L looks at level alpha/L the
//! chance is at most alpha (Bonferroni over the looks). The same holds for a step
//! like the bad end called good. A bisection of K decided steps is wrong somewhere
//! with probability at most K × alpha, plus the ends' own comparison's.

use crate::sequential::fisher_two_sided;

/// The rule of every step of one bisection.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRule {
    /// A step's error rate (either wrong call), at most.
    pub alpha: f64,
    /// Trials per look (one guest boot).
    pub batch: u32,
    pub max_trials: u32,
    /// Trials at which it looks: batch, 2 × batch, … up to max_trials.
    pub looks: Vec<u32>,
    /// alpha / looks.len().
    pub per_look: f64,
}

impl StepRule {
    pub fn new(alpha: f64, batch: u32, max_trials: u32) -> StepRule {
        let batch = batch.max(1);
        let mut looks: Vec<u32> = (1..)
            .map(|k| k * batch)
            .take_while(|&n| n <= max_trials)
            .collect();
        if looks.last() != Some(&max_trials) && max_trials > 0 {
            looks.push(max_trials);
        }
        let per_look = alpha / looks.len().max(1) as f64;
        StepRule {
            alpha,
            batch,
            max_trials,
            looks,
            per_look,
        }
    }

    /// Trials the ends need each so that a step's first look can decide at all: the
    /// most extreme step table (all or none of `batch` passing) against an end of n
    /// trials has p = 1 / C(batch + n, batch); n is the smallest multiple of the
    /// batch where that is at most half the per-look level (half: an end is rarely
    /// all-pass or all-fail).
    pub fn end_trials(&self) -> u32 {
        let b = self.batch;
        (1..=64)
            .map(|k| k * b)
            .find(|&n| fisher_two_sided(b, b, 0, n) <= self.per_look / 2.0)
            .unwrap_or(64 * b)
            .max(b)
    }
}

/// What a look concluded about a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Good,
    Bad,
    /// Give it another batch.
    More,
    /// At its maximum, neither: skipped.
    Undecided,
}

/// A step with `s` passes in `m` trials, against the good end's `g` of `ng` and the
/// bad end's `b` of `nb` (the good end passing more often): the class and the two
/// p-values.
pub fn classify(
    rule: &StepRule,
    s: u32,
    m: u32,
    good: (u32, u32),
    bad: (u32, u32),
) -> (Class, f64, f64) {
    let p_good = fisher_two_sided(s, m, good.0, good.1);
    let p_bad = fisher_two_sided(s, m, bad.0, bad.1);
    let rate = |x: u32, n: u32| f64::from(x) / f64::from(n.max(1));
    let (r, rg, rb) = (rate(s, m), rate(good.0, good.1), rate(bad.0, bad.1));
    let level = rule.per_look;
    let at_look = rule.looks.contains(&m);
    let class = if at_look && p_good <= level && p_bad > level && r < rg {
        Class::Bad
    } else if at_look && p_bad <= level && p_good > level && r > rb {
        Class::Good
    } else if m >= rule.max_trials {
        Class::Undecided
    } else {
        Class::More
    };
    (class, p_good, p_bad)
}

/// The rule in words, for bisect.json and the printed report.
pub fn describe(rule: &StepRule, criterion: &str, alpha_ends: f64) -> String {
    let looks: Vec<String> = rule.looks.iter().map(u32::to_string).collect();
    format!(
        "each trial passes when {criterion}; the ends are measured first ({} trials or more \
         each) and must differ (Fisher's exact test, sequential, overall alpha {alpha_ends}); \
         a step is bad when its pass count differs from the good end's (Fisher's exact \
         two-sided p ≤ {:.2e}) toward the bad end's and not from the bad end's, good the \
         other way round; looks after {} trials; a step's chance of a wrong call is at most \
         {} (Bonferroni over its {} looks); undecided at {} trials: skipped",
        rule.end_trials(),
        rule.per_look,
        looks.join(", "),
        rule.alpha,
        rule.looks.len(),
        rule.max_trials
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_are_batches_up_to_the_maximum() {
        let r = StepRule::new(0.01, 5, 15);
        assert_eq!(r.looks, [5, 10, 15]);
        assert!((r.per_look - 0.01 / 3.0).abs() < 1e-15);
        let r = StepRule::new(0.01, 5, 12);
        assert_eq!(r.looks, [5, 10, 12]);
        let r = StepRule::new(0.01, 4, 4);
        assert_eq!(r.looks, [4]);
    }

    #[test]
    fn the_ends_get_enough_trials_for_a_first_look_to_decide() {
        let r = StepRule::new(0.01, 5, 15);
        let n = r.end_trials();
        // 5/5 against 0/n must reject at the per-look level; at n - 5 it would not.
        assert!(fisher_two_sided(5, 5, 0, n) <= r.per_look / 2.0, "{n}");
        assert!(fisher_two_sided(5, 5, 0, n - 5) > r.per_look / 2.0, "{n}");
        assert_eq!(n % 5, 0);
    }

    #[test]
    fn a_step_like_one_end_takes_its_side() {
        let r = StepRule::new(0.01, 5, 15);
        let (good, bad) = ((10, 10), (0, 10));
        assert_eq!(classify(&r, 0, 5, good, bad).0, Class::Bad);
        assert_eq!(classify(&r, 5, 5, good, bad).0, Class::Good);
        // In between: more trials, then undecided.
        assert_eq!(classify(&r, 3, 5, good, bad).0, Class::More);
        assert_eq!(classify(&r, 8, 15, good, bad).0, Class::Undecided);
        // Not at a look: no call, whatever the counts.
        assert_eq!(classify(&r, 0, 6, good, bad).0, Class::More);
    }

    #[test]
    fn a_step_unlike_both_ends_is_not_called() {
        let r = StepRule::new(0.05, 20, 40);
        // Ends 40/40 and 0/40; a step at 20/40 differs from both.
        let (c, pg, pb) = classify(&r, 20, 40, (40, 40), (0, 40));
        assert!(pg <= r.per_look && pb <= r.per_look, "{pg} {pb}");
        assert_eq!(c, Class::Undecided);
    }

    /// The error rate the module states, checked exactly: a step whose trials pass
    /// with the good end's probability q, against ends of fixed counts, is called bad
    /// with probability at most alpha, summed over every outcome of its looks.
    #[test]
    fn a_step_like_the_good_end_is_called_bad_rarely() {
        let r = StepRule::new(0.01, 5, 15);
        // Every path of 15 Bernoulli(q) trials, looked at after 5, 10 and 15, with the
        // ends as measured: worst over the good end's counts near q.
        for (g, ng) in [(10u32, 10u32), (9, 10), (7, 10), (5, 10)] {
            let q = f64::from(g) / f64::from(ng);
            let mut wrong = 0.0;
            // The number of passes after each batch is a sum of binomials: enumerate
            // (x1, x2, x3) passes per batch.
            let binom = |k: u32, n: u32| {
                let c = (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1));
                c * q.powi(k as i32) * (1.0 - q).powi((n - k) as i32)
            };
            for x1 in 0..=5 {
                let (c1, ..) = classify(&r, x1, 5, (g, ng), (0, 10));
                if c1 == Class::Bad {
                    wrong += binom(x1, 5);
                    continue;
                }
                if c1 != Class::More {
                    continue;
                }
                for x2 in 0..=5 {
                    let (c2, ..) = classify(&r, x1 + x2, 10, (g, ng), (0, 10));
                    let p12 = binom(x1, 5) * binom(x2, 5);
                    if c2 == Class::Bad {
                        wrong += p12;
                        continue;
                    }
                    if c2 != Class::More {
                        continue;
                    }
                    for x3 in 0..=5 {
                        if classify(&r, x1 + x2 + x3, 15, (g, ng), (0, 10)).0 == Class::Bad {
                            wrong += p12 * binom(x3, 5);
                        }
                    }
                }
            }
            assert!(wrong <= r.alpha, "good end {g}/{ng}: {wrong}");
        }
    }
}
