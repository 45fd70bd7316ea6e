//! The sequential test behind `xrunrig run --until-decided`: two settings' pass/fail
//! counts (e.g. timely trials) compared with Fisher's exact test after every round, the
//! repeated looks paid for with Tarone's modified Bonferroni, and a pair stopped early
//! when no outcome of its remaining trials could still decide it (curtailment).
//!
//! Why it holds its error rate: under the null hypothesis (both settings have the same
//! pass probability) Fisher's two-sided p satisfies P(p ≤ c) ≤ c at every look, so by
//! the union bound P(any look rejects) ≤ Σ over looks of P(that look rejects). A look
//! whose smallest attainable p (the most extreme table its counts allow) is above the
//! per-look level can never reject and adds nothing: only the `looks` where rejection
//! is attainable share alpha (Tarone 1990, applied to looks instead of hypotheses).
//! Curtailment stops only a pair that no remaining outcome can bring to a rejection, so
//! it changes no decision, only how many trials an undecidable pair costs.

/// Largest per-setting trial count the rule is computed for: the curtailment search is
/// over the remaining tables, and a verdict "sooner" that needs more trials than this
/// is not sooner.
pub const MAX_TRIALS: u32 = 64;

/// ln(k!) for k = 0..=n.
fn ln_factorials(n: u32) -> Vec<f64> {
    let mut v = Vec::with_capacity(n as usize + 1);
    let mut acc = 0.0f64;
    v.push(0.0);
    for k in 1..=n {
        acc += f64::from(k).ln();
        v.push(acc);
    }
    v
}

/// Fisher's exact test, two-sided: `a` passes of `n1` trials against `b` of `n2`. The
/// p-value sums the hypergeometric probabilities (the margins fixed) of every table no
/// more probable than the one observed (R's `fisher.test` convention, with its relative
/// tolerance 1e-7 for ties). 1.0 when either side has no trials.
pub fn fisher_two_sided(a: u32, n1: u32, b: u32, n2: u32) -> f64 {
    assert!(
        a <= n1 && b <= n2,
        "passes above trials: {a}/{n1}, {b}/{n2}"
    );
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let lf = ln_factorials(n1 + n2);
    fisher_with(&lf, a, n1, b, n2)
}

fn fisher_with(lf: &[f64], a: u32, n1: u32, b: u32, n2: u32) -> f64 {
    let (n, k) = ((n1 + n2) as usize, (a + b) as usize);
    let (n1, n2) = (n1 as usize, n2 as usize);
    // P(X = x): x passes in the first arm, given k passes among n trials.
    let ln_c = |m: usize, r: usize| lf[m] - lf[r] - lf[m - r];
    let denom = ln_c(n, n1);
    let pmf = |x: usize| (ln_c(k, x) + ln_c(n - k, n1 - x) - denom).exp();
    let lo = k.saturating_sub(n2);
    let hi = k.min(n1);
    let observed = pmf(a as usize);
    let mut p = 0.0;
    for x in lo..=hi {
        let q = pmf(x);
        if q <= observed * (1.0 + 1e-7) {
            p += q;
        }
    }
    p.min(1.0)
}

/// The smallest two-sided p any table with `n` trials per side can give.
pub fn min_attainable_p(n: u32) -> f64 {
    let lf = ln_factorials(2 * n);
    let mut best: f64 = 1.0;
    for a in 0..=n {
        for b in 0..=n {
            best = best.min(fisher_with(&lf, a, n, b, n));
        }
    }
    best
}

/// The rule for a run: overall `alpha`, at most `max_trials` trials per setting, and
/// what Tarone's procedure makes of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub alpha: f64,
    pub max_trials: u32,
    /// The level each look is tested at: alpha / m.
    pub per_look: f64,
    /// Trials per setting at which a look can reject at `per_look`; ascending.
    pub looks: Vec<u32>,
}

/// Tarone's procedure over the looks 1..=max_trials (a look after every round): the
/// smallest m such that at most m looks can attain p ≤ alpha / m; those looks are
/// tested at alpha / m. `looks` is empty when no look can reach even alpha (too few
/// trials to ever decide).
pub fn plan(alpha: f64, max_trials: u32) -> Plan {
    let max_trials = max_trials.min(MAX_TRIALS);
    let minp: Vec<f64> = (1..=max_trials).map(min_attainable_p).collect();
    for m in 1..=max_trials.max(1) {
        let level = alpha / f64::from(m);
        let looks: Vec<u32> = (1..=max_trials)
            .filter(|&n| minp[n as usize - 1] <= level)
            .collect();
        if looks.len() <= m as usize {
            return Plan {
                alpha,
                max_trials,
                per_look: level,
                looks,
            };
        }
    }
    unreachable!("m = max_trials admits every look")
}

/// What a look concluded about a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Keep adding trials.
    Continue,
    /// p ≤ the per-look level: the first side passes more often (`true`) or less.
    Decided { first_better: bool },
    /// The maximum is reached undecided.
    AtMaximum,
    /// No outcome of the remaining trials can decide it: stopped undecided.
    Futile,
}

impl Plan {
    /// After `n` trials per side with `a` and `b` passes: the p-value and what follows.
    pub fn look(&self, a: u32, b: u32, n: u32) -> (f64, Look) {
        let p = fisher_two_sided(a, n, b, n);
        if self.looks.contains(&n) && p <= self.per_look {
            return (
                p,
                Look::Decided {
                    first_better: a > b,
                },
            );
        }
        if n >= self.max_trials {
            return (p, Look::AtMaximum);
        }
        if self.reachable(a, b, n) {
            (p, Look::Continue)
        } else {
            (p, Look::Futile)
        }
    }

    /// Whether some outcome of the trials after the `n`th can make a later look reject.
    fn reachable(&self, a: u32, b: u32, n: u32) -> bool {
        let lf = ln_factorials(2 * self.max_trials);
        let rejects = |x: u32, y: u32, m: u32| fisher_with(&lf, x, m, y, m) <= self.per_look;
        for &m in self.looks.iter().filter(|&&m| m > n) {
            let d = m - n;
            // The most separated tables first: they nearly always decide it.
            if rejects(a + d, b, m) || rejects(a, b + d, m) {
                return true;
            }
            for x in a..=a + d {
                for y in b..=b + d {
                    if rejects(x, y, m) {
                        return true;
                    }
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64) -> bool {
        (x - y).abs() <= 1e-9 * y.max(1e-300) + 1e-12
    }

    #[test]
    fn fisher_matches_known_values() {
        // R: fisher.test(matrix(c(0,8,8,0),2))$p.value = 2/choose(16,8); 0/8 against
        // 7/8: 0.0013986 = 18/12870.
        assert!(close(fisher_two_sided(0, 8, 7, 8), 18.0 / 12870.0));
        assert!(close(fisher_two_sided(0, 8, 8, 8), 2.0 / 12870.0));
        // Lady tasting tea: fisher.test(matrix(c(3,1,1,3),2)) = 0.4857143
        assert!(close(fisher_two_sided(3, 4, 1, 4), 34.0 / 70.0));
        // R: fisher.test(matrix(c(1,9,11,3),2))$p.value = 0.002759456
        let p = fisher_two_sided(1, 12, 9, 12);
        assert!((p - 0.002_759_456).abs() < 1e-8, "{p}");
        // The seed's table: 1/17 timely before, 13/13 after: 1.1690061e-07 (the exact
        // hypergeometric sum, checked with Python's math.comb).
        let p = fisher_two_sided(1, 17, 13, 13);
        assert!((p - 1.169_006_140_2e-7).abs() < 1e-15, "{p}");
        // Identical sides: nothing to see.
        assert!(close(fisher_two_sided(4, 8, 4, 8), 1.0));
        assert_eq!(fisher_two_sided(0, 0, 3, 5), 1.0);
        // Symmetric in the sides.
        assert!(close(
            fisher_two_sided(2, 7, 6, 9),
            fisher_two_sided(6, 9, 2, 7)
        ));
    }

    #[test]
    fn smallest_p_is_the_most_separated_table() {
        for n in 1..=10u32 {
            let c = (1..=n).fold(1.0, |acc, k| acc * f64::from(n + k) / f64::from(k));
            assert!(close(min_attainable_p(n), 2.0 / c), "n = {n}");
        }
    }

    #[test]
    fn tarone_looks_for_eight_trials_at_one_percent() {
        // minimum p: n=5 0.0079, n=6 0.00216, n=7 0.00058, n=8 0.00016: at m = 3
        // exactly the looks 6, 7, 8 can reach 0.01 / 3.
        let p = plan(0.01, 8);
        assert_eq!(p.looks, vec![6, 7, 8]);
        assert!(close(p.per_look, 0.01 / 3.0));
        // Five trials: one look (the last) at the full level.
        let p = plan(0.01, 5);
        assert_eq!((p.looks.clone(), p.per_look), (vec![5], 0.01));
        // Four trials cannot reach 1 %: no look can decide.
        assert!(plan(0.01, 4).looks.is_empty());
        // The levels spent never exceed alpha.
        for max in 1..=40 {
            let p = plan(0.01, max);
            assert!(p.per_look * p.looks.len() as f64 <= 0.01 + 1e-15, "{max}");
        }
    }

    #[test]
    fn stops_when_decided_and_not_before() {
        let p = plan(0.01, 8);
        // 0/5 against 5/5: p = 0.0079, not a look: go on.
        assert_eq!(p.look(0, 5, 5).1, Look::Continue);
        // 0/6 against 6/6: p = 0.00216 ≤ 0.00333: the first side is worse.
        let (pv, l) = p.look(0, 6, 6);
        assert!(close(pv, 2.0 / 924.0));
        assert_eq!(
            l,
            Look::Decided {
                first_better: false
            }
        );
        assert_eq!(p.look(6, 0, 6).1, Look::Decided { first_better: true });
        // 1/6 against 6/6: p = 0.015; 1/7 against 7/7: p = 0.0047, still above
        // 0.0033; 1/8 against 8/8: p = 0.0014, decided at the last look.
        assert_eq!(p.look(1, 6, 6).1, Look::Continue);
        let (pv, l) = p.look(1, 7, 7);
        assert!((pv - 0.004_662_004_662).abs() < 1e-10, "{pv}");
        assert_eq!(l, Look::Continue);
        assert_eq!(
            p.look(1, 8, 8).1,
            Look::Decided {
                first_better: false
            }
        );
        // Undecided at the maximum.
        assert_eq!(p.look(2, 6, 8).1, Look::AtMaximum);
    }

    #[test]
    fn stops_a_pair_that_can_no_longer_be_decided() {
        let p = plan(0.01, 8);
        // 0/1 against 0/1: 0/8 against 7/8 (p 0.0014) is still possible.
        assert_eq!(p.look(0, 0, 1).1, Look::Continue);
        // 0/2 against 0/2: at best 0/8 against 6/8 (p 0.007 > 0.0033): stop.
        assert_eq!(p.look(0, 0, 2).1, Look::Futile);
        assert_eq!(p.look(2, 2, 2).1, Look::Futile);
        // 4/5 against 0/5 can still reach 7/8 against 0/8 (p 0.0014); 3/5 against
        // 0/5 at best 6/8 against 0/8 (p 0.007): stop.
        assert_eq!(p.look(4, 0, 5).1, Look::Continue);
        assert_eq!(p.look(3, 0, 5).1, Look::Futile);
        // 2/5 against 0/5: at best 5/8 against 0/8 (p 0.026): stop.
        assert_eq!(p.look(2, 0, 5).1, Look::Futile);
        // A longer run keeps an even pair going longer.
        assert_eq!(plan(0.01, 20).look(0, 0, 2).1, Look::Continue);
    }

    #[test]
    fn curtailment_search_agrees_with_brute_force() {
        // Every table after every round of a max-8 rule: `reachable` says yes exactly
        // when some continuation rejects at a later look (after the last, none can, even
        // for a table that rejects at it).
        let p = plan(0.01, 8);
        for n in 1..=8 {
            for a in 0..=n {
                for b in 0..=n {
                    let mut brute = false;
                    for &m in p.looks.iter().filter(|&&m| m > n) {
                        for x in a..=a + m - n {
                            for y in b..=b + m - n {
                                brute |= fisher_two_sided(x, m, y, m) <= p.per_look;
                            }
                        }
                    }
                    assert_eq!(p.reachable(a, b, n), brute, "{a}/{n} {b}/{n}");
                }
            }
        }
    }
}
