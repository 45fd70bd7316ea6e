//! The sequential test behind `xrunrig run --until-decided`: two settings' pass/fail
//! counts (e.g. timely trials) compared with Fisher's exact test after every round, and a
//! pair stopped early when no outcome of its remaining trials could still decide it
//! (curtailment).
//!
//! The levels: the first look that can decide at all (the first n at which n/n against
//! 0/n reaches alpha: 5 trials per setting at 1 %) decides only that most extreme table;
//! every later look shares one level, the largest (at most alpha) that keeps the rule's
//! overall error rate at most alpha. That rate is not bounded but computed
//! (`Plan::error_rate`): under the null hypothesis both settings pass with one
//! probability q, trials independent, and the chance that any look rejects is summed
//! exactly over every outcome by dynamic programming, then maximised over q. The looks
//! see the same growing data, so their rejections overlap, and Fisher's test is
//! conservative on small discrete tables: the exact rate is far below the union bound
//! that Tarone's modified Bonferroni (this module's earlier rule: alpha over the number of
//! looks that can reach it) pays for, and the looks get a level much closer to alpha.
//! Curtailment stops only a pair that no remaining outcome can bring to a rejection, so
//! it changes no decision and not the error rate, only how many trials an undecidable
//! pair costs.

/// Largest per-setting trial count the rule is computed for: the curtailment search is
/// over the remaining tables, and a verdict "sooner" that needs more trials than this
/// is not sooner.
pub const MAX_TRIALS: u32 = 64;

/// The error rate is maximised first on q = i / GRID, i = 0..=GRID.
const GRID: u32 = 2000;

/// Two computed p-values this close (relative) are one: the same rational summed in
/// another order. A level is never put between them.
const SAME_P: f64 = 1e-9;

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
    let (lo, pmf) = hypergeometric(lf, n1, n2, a + b);
    p_of(&pmf, (a - lo) as usize)
}

/// P(X = x) for x = lo..=hi passes in the first arm, given `k` passes among `n1 + n2`
/// trials; and lo.
fn hypergeometric(lf: &[f64], n1: u32, n2: u32, k: u32) -> (u32, Vec<f64>) {
    let n = (n1 + n2) as usize;
    let (n1u, k) = (n1 as usize, k as usize);
    let ln_c = |m: usize, r: usize| lf[m] - lf[r] - lf[m - r];
    let denom = ln_c(n, n1u);
    let lo = k.saturating_sub(n2 as usize);
    let hi = k.min(n1u);
    let pmf = (lo..=hi)
        .map(|x| (ln_c(k, x) + ln_c(n - k, n1u - x) - denom).exp())
        .collect();
    (lo as u32, pmf)
}

/// The two-sided p of the table at `pmf[i]`. Every p-value here (`fisher_two_sided`,
/// the plan's tables) is this one sum, in this order, so a level compares them alike.
fn p_of(pmf: &[f64], i: usize) -> f64 {
    let observed = pmf[i];
    let mut p = 0.0;
    for &q in pmf {
        if q <= observed * (1.0 + 1e-7) {
            p += q;
        }
    }
    p.min(1.0)
}

/// Fisher's p of every table with `n` trials per side, at `a * (n + 1) + b`.
fn tables(lf: &[f64], n: u32) -> Vec<f64> {
    let w = n as usize + 1;
    let mut t = vec![1.0; w * w];
    for k in 0..=2 * n {
        let (lo, pmf) = hypergeometric(lf, n, n, k);
        for i in 0..pmf.len() {
            let a = lo as usize + i;
            t[a * w + (k as usize - a)] = p_of(&pmf, i);
        }
    }
    t
}

/// The smallest two-sided p any table with `n` trials per side can give.
pub fn min_attainable_p(n: u32) -> f64 {
    let lf = ln_factorials(2 * n);
    tables(&lf, n).into_iter().fold(1.0, f64::min)
}

/// The overall error rate's maximum over the shared pass probability q, and a q where
/// it is attained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Worst {
    pub error: f64,
    pub q: f64,
}

/// The rule for a run: overall `alpha`, at most `max_trials` trials per setting, the
/// looks that can decide and each one's level.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub alpha: f64,
    pub max_trials: u32,
    /// Trials per setting at which a look can reject at its level; ascending.
    pub looks: Vec<u32>,
    /// The level each of `looks` is tested at, in the same order: p ≤ level decides.
    /// The first decides only n/n against 0/n; the others share one level.
    pub levels: Vec<f64>,
    /// `error_rate()`, computed when the plan was made.
    pub exact: Worst,
}

/// The rule over the looks 1..=max_trials (a look after every round): the first look
/// whose most extreme table reaches alpha is tested at that table's p (it decides only
/// n/n against 0/n); the looks after it share the largest level c ≤ alpha at which the
/// exact overall error rate, maximised over q, is at most alpha. `looks` is empty when
/// no look can reach alpha (too few trials to ever decide).
pub fn plan(alpha: f64, max_trials: u32) -> Plan {
    let max_trials = max_trials.min(MAX_TRIALS);
    let lf = ln_factorials(2 * max_trials);
    let tables: Vec<Vec<f64>> = (1..=max_trials).map(|n| tables(&lf, n)).collect();
    let smallest = |n: u32| tables[n as usize - 1].iter().copied().fold(1.0, f64::min);
    let with = |looks: Vec<u32>, levels: Vec<f64>| {
        let mut p = Plan {
            alpha,
            max_trials,
            looks,
            levels,
            exact: Worst { error: 0.0, q: 0.5 },
        };
        p.exact = p.poly(&tables, false).max();
        p
    };
    let Some(first) = (1..=max_trials).find(|&n| smallest(n) <= alpha) else {
        return with(vec![], vec![]);
    };
    // The most extreme tables' p, and any computed a hair above the same value.
    let least = smallest(first);
    let first_level = tables[first as usize - 1]
        .iter()
        .copied()
        .filter(|&p| p <= least * (1.0 + SAME_P))
        .fold(least, f64::max);
    let shared = |c: f64| {
        let mut looks = vec![first];
        looks.extend((first + 1..=max_trials).filter(|&n| smallest(n) <= c));
        let mut levels = vec![c; looks.len()];
        levels[0] = first_level;
        with(looks, levels)
    };
    let all = shared(alpha);
    if all.exact.error <= alpha {
        return all;
    }
    // The rule only changes where c crosses a p the later looks can attain: those (at
    // most alpha, equal ones as one) are the candidates. The error rate only grows with
    // c (a larger rejection region at every look rejects every outcome it rejected
    // before, at the same look or sooner), so bisect for the largest that keeps it.
    let mut ps: Vec<f64> = tables[first as usize..]
        .iter()
        .flatten()
        .copied()
        .filter(|&p| p <= alpha)
        .collect();
    ps.sort_by(f64::total_cmp);
    let mut candidates: Vec<f64> = vec![];
    for p in ps {
        match candidates.last_mut() {
            Some(c) if p <= *c * (1.0 + SAME_P) => *c = p,
            _ => candidates.push(p),
        }
    }
    // candidates[..lo] keep it, candidates[hi..] do not (the last one's rule is `all`'s).
    let (mut lo, mut hi) = (0, candidates.len());
    let mut best = with(vec![first], vec![first_level]);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let p = shared(candidates[mid]);
        if p.exact.error <= alpha {
            lo = mid + 1;
            best = p;
        } else {
            hi = mid;
        }
    }
    best
}

/// What a look concluded about a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// Keep adding trials.
    Continue,
    /// p ≤ the look's level: the first side passes more often (`true`) or less.
    Decided { first_better: bool },
    /// The maximum is reached undecided.
    AtMaximum,
    /// No outcome of the remaining trials can decide it: stopped undecided.
    Futile,
}

impl Plan {
    /// The level of the look after `n` trials per side; None when it cannot decide.
    pub fn level(&self, n: u32) -> Option<f64> {
        let i = self.looks.iter().position(|&m| m == n)?;
        Some(self.levels[i])
    }

    /// The level the looks after the first share; None with one look or none.
    pub fn later_level(&self) -> Option<f64> {
        self.levels.get(1).copied()
    }

    /// After `n` trials per side with `a` and `b` passes: the p-value and what follows.
    pub fn look(&self, a: u32, b: u32, n: u32) -> (f64, Look) {
        let p = fisher_two_sided(a, n, b, n);
        if self.level(n).is_some_and(|l| p <= l) {
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
        let later = self.looks.iter().zip(&self.levels).filter(|l| *l.0 > n);
        for (&m, &level) in later {
            let rejects = |x: u32, y: u32| fisher_with(&lf, x, m, y, m) <= level;
            let d = m - n;
            // The most separated tables first: they nearly always decide it.
            if rejects(a + d, b) || rejects(a, b + d) {
                return true;
            }
            for x in a..=a + d {
                for y in b..=b + d {
                    if rejects(x, y) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// The overall error rate at shared pass probability `q`: the chance, when both
    /// settings pass each trial with probability q independently, that some look decides.
    pub fn error_at(&self, q: f64) -> f64 {
        self.poly(&self.tables(), false).at(q)
    }

    /// The overall error rate maximised over q in [0, 1], computed exactly over all
    /// outcomes (see `absorbed`, and `Poly::max` for the maximisation).
    pub fn error_rate(&self) -> Worst {
        self.poly(&self.tables(), false).max()
    }

    fn tables(&self) -> Vec<Vec<f64>> {
        let lf = ln_factorials(2 * self.max_trials);
        (1..=self.max_trials).map(|n| tables(&lf, n)).collect()
    }

    /// Under the null, the outcomes each look rejects first, counted: `[n - 1][s]` is the
    /// number of sequences of the first n trials per side, s passes in all, that look n
    /// rejects and no look before it did. Each has probability q^s (1-q)^(2n-s) whatever
    /// the order of its passes, so the counts give the error rate at every q at once.
    /// The state after each round: how many sequences still going reach each pair of
    /// pass counts (a, b); a look's rejected tables leave it. With `curtail`, so do the
    /// tables `look` calls futile: none of their continuations rejects (no path from
    /// them reaches a rejecting table, and a table any path from them reaches is futile
    /// itself), so the counts must come out the same to the last bit (a test checks).
    fn absorbed(&self, tables: &[Vec<f64>], curtail: bool) -> Vec<Vec<f64>> {
        let big = self.max_trials as usize;
        let w = big + 1;
        let mut going = vec![0.0f64; w * w];
        going[0] = 1.0;
        let mut out = Vec::with_capacity(big);
        for n in 1..=big {
            // A round: each sequence goes on four ways (pass or fail on each side). In
            // place from the top down, so every cell still reads the last round's.
            for a in (0..=n).rev() {
                for b in (0..=n).rev() {
                    let mut v = going[a * w + b];
                    if a > 0 {
                        v += going[(a - 1) * w + b];
                    }
                    if b > 0 {
                        v += going[a * w + b - 1];
                    }
                    if a > 0 && b > 0 {
                        v += going[(a - 1) * w + b - 1];
                    }
                    going[a * w + b] = v;
                }
            }
            let mut hit = vec![0.0; 2 * n + 1];
            let level = self.level(n as u32);
            let t = &tables[n - 1];
            for a in 0..=n {
                for b in 0..=n {
                    let g = &mut going[a * w + b];
                    if *g == 0.0 {
                        continue;
                    }
                    if level.is_some_and(|l| t[a * (n + 1) + b] <= l) {
                        hit[a + b] += *g;
                        *g = 0.0;
                    } else if curtail && n < big && !self.reachable(a as u32, b as u32, n as u32) {
                        *g = 0.0;
                    }
                }
            }
            out.push(hit);
        }
        out
    }

    fn poly(&self, tables: &[Vec<f64>], curtail: bool) -> Poly {
        Poly::of(&self.absorbed(tables, curtail))
    }
}

/// The error rate as a polynomial in q of degree d = 2 max_trials, in Bernstein form:
/// Σ_k coef[k] q^k (1-q)^(d-k). All coefficients are counts, ≥ 0: no cancellation.
struct Poly {
    coef: Vec<f64>,
}

impl Poly {
    /// Look n's counts times q^s (1-q)^(2n-s), brought to degree d by multiplying with
    /// (q + 1 - q)^(d-2n) = 1: the sequences of all d trials that start with them.
    fn of(absorbed: &[Vec<f64>]) -> Poly {
        let d = 2 * absorbed.len();
        let mut choose = vec![vec![1.0f64]];
        for r in 1..=d {
            let prev = &choose[r - 1];
            let row: Vec<f64> = (0..=r)
                .map(|j| {
                    let left = if j > 0 { prev[j - 1] } else { 0.0 };
                    left + prev.get(j).copied().unwrap_or(0.0)
                })
                .collect();
            choose.push(row);
        }
        let mut coef = vec![0.0; d + 1];
        for (i, hit) in absorbed.iter().enumerate() {
            let rest = &choose[d - 2 * (i + 1)];
            for (s, &c) in hit.iter().enumerate().filter(|h| *h.1 != 0.0) {
                for (j, &r) in rest.iter().enumerate() {
                    coef[s + j] += c * r;
                }
            }
        }
        Poly { coef }
    }

    /// Horner's rule in q/(1-q) (or (1-q)/q above 1/2: no ratio above 1, no overflow).
    fn at(&self, q: f64) -> f64 {
        let d = self.coef.len() as i32 - 1;
        if q <= 0.5 {
            let t = q / (1.0 - q);
            let s = self.coef.iter().rev().fold(0.0, |acc, &c| acc * t + c);
            s * (1.0 - q).powi(d)
        } else {
            let u = (1.0 - q) / q;
            let s = self.coef.iter().fold(0.0, |acc, &c| acc * u + c);
            s * q.powi(d)
        }
    }

    /// The maximum over q in [0, 1]. A grid first, q = i/2000: each look adds bumps as
    /// wide as a binomial's spread over its trials, sqrt(q(1-q)/2n) (0.044 at q = 1/2 for
    /// n = 64, still 0.009 at q = 0.01), so a step of 0.0005 cannot pass over a peak.
    /// Then every grid point that is a local maximum within 10 % of the grid's best (a
    /// step that fine gains a peak far less than that) is refined by golden-section
    /// search over the two grid steps around it, where the polynomial is smooth and
    /// has the one peak, down to about 1e-14 in q.
    fn max(&self) -> Worst {
        let g = f64::from(GRID);
        let ys: Vec<f64> = (0..=GRID).map(|i| self.at(f64::from(i) / g)).collect();
        let top = ys.iter().copied().fold(0.0, f64::max);
        let mut best = Worst { error: 0.0, q: 0.5 };
        for (i, &y) in ys.iter().enumerate() {
            if y > best.error {
                best = Worst {
                    error: y,
                    q: i as f64 / g,
                };
            }
        }
        let last = GRID as usize;
        for i in 0..=last {
            let (left, right) = (i.saturating_sub(1), (i + 1).min(last));
            if ys[i] <= 0.0 || ys[i] < 0.9 * top || ys[i] < ys[left] || ys[i] < ys[right] {
                continue;
            }
            let w = self.golden(left as f64 / g, right as f64 / g);
            if w.error > best.error {
                best = w;
            }
        }
        best
    }

    fn golden(&self, mut lo: f64, mut hi: f64) -> Worst {
        let r = (5f64.sqrt() - 1.0) / 2.0;
        let (mut x1, mut x2) = (hi - r * (hi - lo), lo + r * (hi - lo));
        let (mut f1, mut f2) = (self.at(x1), self.at(x2));
        for _ in 0..64 {
            if f1 < f2 {
                lo = x1;
                (x1, f1) = (x2, f2);
                x2 = lo + r * (hi - lo);
                f2 = self.at(x2);
            } else {
                hi = x2;
                (x2, f2) = (x1, f1);
                x1 = hi - r * (hi - lo);
                f1 = self.at(x1);
            }
        }
        if f1 >= f2 {
            Worst { error: f1, q: x1 }
        } else {
            Worst { error: f2, q: x2 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64) -> bool {
        (x - y).abs() <= 1e-9 * y.max(1e-300) + 1e-12
    }

    /// A plan with the given looks and levels, as a test states it.
    fn rule(max_trials: u32, looks: &[u32], levels: &[f64]) -> Plan {
        Plan {
            alpha: 1.0,
            max_trials,
            looks: looks.to_vec(),
            levels: levels.to_vec(),
            exact: Worst { error: 0.0, q: 0.5 },
        }
    }

    /// This module's earlier rule, Tarone's modified Bonferroni over the looks: the
    /// smallest m such that at most m looks can attain p ≤ alpha / m; those looks are
    /// tested at alpha / m.
    fn tarone(alpha: f64, max_trials: u32) -> Plan {
        let minp: Vec<f64> = (1..=max_trials).map(min_attainable_p).collect();
        for m in 1..=max_trials.max(1) {
            let level = alpha / f64::from(m);
            let looks: Vec<u32> = (1..=max_trials)
                .filter(|&n| minp[n as usize - 1] <= level)
                .collect();
            if looks.len() <= m as usize {
                return rule(max_trials, &looks, &vec![level; looks.len()]);
            }
        }
        unreachable!("m = max_trials admits every look")
    }

    /// The error rate at `q` by brute force: every sequence of all 2 max_trials outcomes
    /// (bit 2i: the first side's trial i passes, bit 2i + 1: the second's), run through
    /// `look` round by round until it stops; the probability of those a look decides.
    fn brute_error(p: &Plan, q: f64) -> f64 {
        let big = p.max_trials;
        let w = big as usize + 1;
        // `look` once per table (its curtailment search is the slow part).
        let looks: Vec<Vec<Look>> = (1..=big)
            .map(|n| {
                (0..w * w)
                    .map(|i| {
                        let (a, b) = ((i / w) as u32, (i % w) as u32);
                        if a <= n && b <= n {
                            p.look(a, b, n).1
                        } else {
                            Look::Continue
                        }
                    })
                    .collect()
            })
            .collect();
        let mut total = 0.0;
        for seq in 0u64..1 << (2 * big) {
            let (mut a, mut b) = (0usize, 0usize);
            for n in 1..=big as usize {
                a += (seq >> (2 * (n - 1))) as usize & 1;
                b += (seq >> (2 * (n - 1) + 1)) as usize & 1;
                match looks[n - 1][a * w + b] {
                    Look::Continue => continue,
                    Look::Decided { .. } => {
                        let passes = seq.count_ones() as i32;
                        total += q.powi(passes) * (1.0 - q).powi(2 * big as i32 - passes);
                    }
                    Look::AtMaximum | Look::Futile => {}
                }
                break;
            }
        }
        total
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
    fn the_plans_tables_are_the_tests_p_values_to_the_bit() {
        // The error rate counts the tables a level rejects; `look` compares
        // `fisher_two_sided` with the same level: they must be the same numbers.
        for n in 1..=20u32 {
            let t = tables(&ln_factorials(2 * n), n);
            for a in 0..=n {
                for b in 0..=n {
                    let p = fisher_two_sided(a, n, b, n);
                    let i = (a * (n + 1) + b) as usize;
                    assert_eq!(t[i].to_bits(), p.to_bits(), "{a}/{n} {b}/{n}");
                }
            }
        }
    }

    #[test]
    fn smallest_p_is_the_most_separated_table() {
        for n in 1..=10u32 {
            let c = (1..=n).fold(1.0, |acc, k| acc * f64::from(n + k) / f64::from(k));
            assert!(close(min_attainable_p(n), 2.0 / c), "n = {n}");
        }
    }

    #[test]
    fn the_first_look_is_at_five_and_decides_only_five_of_five_against_none() {
        for max in [5, 6, 7, 8, 10, 16, 32, 64] {
            let p = plan(0.01, max);
            // 5/5 against 0/5: p = 2 / C(10, 5) = 2/252 = 0.0079365.
            assert_eq!(p.looks[0], 5, "{max}");
            assert!(close(p.levels[0], 2.0 / 252.0), "{max}: {:?}", p.levels);
            assert_eq!(p.level(5), Some(p.levels[0]));
            let (pv, l) = p.look(5, 0, 5);
            assert!(close(pv, 2.0 / 252.0));
            assert_eq!(l, Look::Decided { first_better: true }, "{max}");
            assert_eq!(
                p.look(0, 5, 5).1,
                Look::Decided {
                    first_better: false
                }
            );
            // 4/5 against 0/5 (p = 12/252 = 0.048) is not decided at 5: with 6 trials
            // at most, 5/6 against 0/6 (p = 0.015) cannot decide either; 6/7 against
            // 0/7 (p = 0.0047) can.
            let next = match max {
                5 => Look::AtMaximum,
                6 => Look::Futile,
                _ => Look::Continue,
            };
            assert_eq!(p.look(4, 0, 5).1, next, "{max}");
            assert_eq!(p.look(0, 4, 5).1, next, "{max}");
            // Nothing before 5 can decide.
            assert!((1..5).all(|n| p.level(n).is_none()));
        }
        // At 5 % the first look is at 4: 4/4 against 0/4, p = 2/70.
        let p = plan(0.05, 8);
        assert_eq!(p.looks[0], 4);
        assert!(close(p.levels[0], 2.0 / 70.0));
    }

    #[test]
    fn the_looks_for_eight_trials_at_one_percent() {
        // After the first look the error rate stays far enough below 1 % that the looks
        // at 6, 7 and 8 get the whole 1 % each (Tarone gave them 0.01/3, from 6 on).
        let p = plan(0.01, 8);
        assert_eq!(p.looks, vec![5, 6, 7, 8]);
        assert_eq!(&p.levels[1..], &[0.01; 3]);
        assert_eq!(p.later_level(), Some(0.01));
        // 2 q^5 (1-q)^5 at q = 1/2 from the first look: 1/512; each later look adds
        // only what did not reject before it.
        assert!(close(plan(0.01, 5).exact.error, 2.0 / 1024.0));
        assert!(p.exact.error > 2.0 / 1024.0 && p.exact.error <= 0.01);
        // Five trials: one look (the last), the most extreme tables only.
        let p = plan(0.01, 5);
        assert_eq!(p.looks, vec![5]);
        assert_eq!(p.later_level(), None);
        // Four trials cannot reach 1 %: no look can decide.
        let p = plan(0.01, 4);
        assert!(p.looks.is_empty() && p.levels.is_empty());
        assert_eq!(p.exact.error, 0.0);
        // More looks leave each less: the later level shrinks (not below Tarone's).
        let p = plan(0.01, 64);
        let c = p.later_level().unwrap();
        assert!(c < 0.01 && c >= tarone(0.01, 64).levels[0], "{c}");
        assert_eq!(p.looks.len(), p.levels.len());
        for (&n, &l) in p.looks.iter().zip(&p.levels) {
            assert!(min_attainable_p(n) <= l, "look {n} cannot reach {l}");
        }
    }

    #[test]
    fn the_exact_error_of_every_plan_is_within_alpha() {
        for alpha in [0.01, 0.05] {
            for max in [5, 6, 8, 10, 16, 32, 64] {
                let p = plan(alpha, max);
                let w = p.error_rate();
                assert!(w.error <= alpha, "alpha {alpha}, {max} trials: {w:?}");
                assert_eq!(w, p.exact);
                assert!(close(p.error_at(w.q), w.error));
                // No q of a grid ten times finer than the search's is worse.
                let poly = p.poly(&p.tables(), false);
                for i in 0..=20_000 {
                    let e = poly.at(f64::from(i) / 20_000.0);
                    assert!(e <= w.error * (1.0 + 1e-12), "{max}: {e} at {i}: {w:?}");
                }
                // The rule is symmetric in pass and fail: so is its error rate.
                for q in [0.1, 0.3, 0.45] {
                    assert!(close(p.error_at(q), p.error_at(1.0 - q)), "{max} {q}");
                }
                // The later level is the largest: the next p the later looks can
                // attain, as their level, breaks alpha (unless the level is alpha).
                let Some(c) = p.later_level() else {
                    continue;
                };
                if c == alpha {
                    continue;
                }
                let first = p.looks[0];
                let ps: Vec<f64> = (first + 1..=max)
                    .flat_map(|n| tables(&ln_factorials(2 * n), n))
                    .collect();
                let above = ps
                    .iter()
                    .copied()
                    .filter(|&x| x > c * (1.0 + SAME_P) && x <= alpha)
                    .fold(f64::INFINITY, f64::min);
                // With its mirror images: the same p, computed a hair apart.
                let next = ps
                    .iter()
                    .copied()
                    .filter(|&x| x <= above * (1.0 + SAME_P))
                    .fold(above, f64::max);
                let mut looks = vec![first];
                looks.extend((first + 1..=max).filter(|&n| min_attainable_p(n) <= next));
                let mut levels = vec![next; looks.len()];
                levels[0] = p.levels[0];
                let e = rule(max, &looks, &levels).error_rate().error;
                assert!(e > alpha, "alpha {alpha}, {max}: level {next} keeps {e}");
            }
        }
    }

    #[test]
    fn the_error_rate_is_every_outcome_enumerated() {
        // All 2^(2n) outcome sequences through `look` (curtailment included) against
        // the dynamic programme, at several q.
        let cases = [
            rule(4, &[2, 3, 4], &[0.34, 0.1, 0.1]),
            rule(4, &[3, 4], &[0.1, 0.03]),
            plan(0.05, 4),
            plan(0.2, 4),
            plan(0.05, 6),
            plan(0.01, 8),
            plan(0.05, 8),
        ];
        for p in &cases {
            for q in [0.5, 0.3, 0.77, 0.05] {
                let (dp, brute) = (p.error_at(q), brute_error(p, q));
                assert!(
                    (dp - brute).abs() <= 1e-14 && brute > 0.0,
                    "{p:?} at {q}: {dp} against {brute}"
                );
            }
        }
    }

    #[test]
    fn one_look_alone_is_a_binomial_sum() {
        // One look at 6 of 9 trials per side: P(the table at 6 rejects), summed directly.
        let level = 0.016;
        let p = rule(9, &[6], &[level]);
        let c =
            |n: i32, k: i32| (1..=k).fold(1.0, |acc, i| acc * f64::from(n - k + i) / f64::from(i));
        for q in [0.2f64, 0.5, 0.9] {
            let mut want = 0.0;
            for a in 0..=6 {
                for b in 0..=6 {
                    if fisher_two_sided(a as u32, 6, b as u32, 6) <= level {
                        want += c(6, a) * c(6, b) * q.powi(a + b) * (1.0 - q).powi(12 - a - b);
                    }
                }
            }
            assert!(want > 0.0 && close(p.error_at(q), want), "{q}");
        }
    }

    #[test]
    fn dropping_the_futile_outcomes_changes_nothing() {
        for (alpha, max) in [(0.01, 5), (0.01, 8), (0.01, 10), (0.01, 16), (0.05, 12)] {
            let p = plan(alpha, max);
            let t = p.tables();
            assert_eq!(p.absorbed(&t, true), p.absorbed(&t, false), "{alpha} {max}");
            // Not vacuous: some pairs are stopped as futile.
            let futile = (1..max)
                .any(|n| (0..=n).any(|a| (0..=n).any(|b| p.look(a, b, n).1 == Look::Futile)));
            assert!(futile || max == 5, "{alpha} {max}");
        }
    }

    #[test]
    fn tarones_plan_is_within_its_union_bound() {
        // The earlier rule, through the same computation: the union bound it paid for
        // (its level times its looks, at most alpha) is above the exact rate.
        for alpha in [0.01, 0.05] {
            for max in [5, 6, 8, 10, 16, 32, 64] {
                let t = tarone(alpha, max);
                let e = t.error_rate().error;
                let bound = t.levels[0] * t.looks.len() as f64;
                assert!(
                    e > 0.0 && e <= bound && bound <= alpha * (1.0 + 1e-12),
                    "{max}: {e}"
                );
                // The new rule looks sooner, each later look at a level no stricter.
                let p = plan(alpha, max);
                assert!(p.looks[0] <= t.looks[0], "{max}");
                if let Some(c) = p.later_level() {
                    assert!(c >= t.levels[0], "{max}: {c} against {}", t.levels[0]);
                }
            }
        }
    }

    #[test]
    fn stops_when_decided_and_not_before() {
        let p = plan(0.01, 8);
        // 0/6 against 6/6: p = 0.00216: the first side is worse.
        let (pv, l) = p.look(0, 6, 6);
        assert!(close(pv, 2.0 / 924.0));
        assert_eq!(
            l,
            Look::Decided {
                first_better: false
            }
        );
        assert_eq!(p.look(6, 0, 6).1, Look::Decided { first_better: true });
        // 1/6 against 6/6: p = 0.015, above 0.01; 1/7 against 7/7: p = 0.0047,
        // decided.
        assert!((fisher_two_sided(1, 6, 6, 6) - 0.015_151_515).abs() < 1e-8);
        assert_eq!(p.look(1, 6, 6).1, Look::Continue);
        let (pv, l) = p.look(1, 7, 7);
        assert!((pv - 0.004_662_004_662).abs() < 1e-10, "{pv}");
        assert_eq!(
            l,
            Look::Decided {
                first_better: false
            }
        );
        // 2/8 against 8/8: p = 90/12870 = 0.007: decided at the last look.
        assert_eq!(
            p.look(2, 8, 8).1,
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
        // 0/2 against 0/2: 0/8 against 6/8 (p 0.007) is still possible.
        assert_eq!(p.look(0, 0, 2).1, Look::Continue);
        assert_eq!(p.look(2, 2, 2).1, Look::Continue);
        // 0/3 against 0/3: at best 0/8 against 5/8 (p 0.026): stop.
        assert_eq!(p.look(0, 0, 3).1, Look::Futile);
        assert_eq!(p.look(3, 3, 3).1, Look::Futile);
        // 3/5 against 0/5 can still reach 6/8 against 0/8 (p 0.007); 2/5 against 0/5
        // at best 5/8 against 0/8 (p 0.026): stop.
        assert_eq!(p.look(3, 0, 5).1, Look::Continue);
        assert_eq!(p.look(2, 0, 5).1, Look::Futile);
        // A longer run keeps an even pair going longer.
        assert_eq!(plan(0.01, 20).look(0, 0, 3).1, Look::Continue);
    }

    #[test]
    fn curtailment_search_agrees_with_brute_force() {
        // Every table after every round: `reachable` says yes exactly when some
        // continuation rejects at a later look, at that look's level (after the last,
        // none can, even for a table that rejects at it).
        for p in [plan(0.01, 8), plan(0.01, 16), plan(0.05, 10)] {
            for n in 1..=p.max_trials {
                for a in 0..=n {
                    for b in 0..=n {
                        let mut brute = false;
                        for (&m, &l) in p.looks.iter().zip(&p.levels).filter(|x| *x.0 > n) {
                            for x in a..=a + m - n {
                                for y in b..=b + m - n {
                                    brute |= fisher_two_sided(x, m, y, m) <= l;
                                }
                            }
                        }
                        assert_eq!(p.reachable(a, b, n), brute, "{a}/{n} {b}/{n}");
                    }
                }
            }
        }
    }

    #[test]
    fn prints_the_plans_and_how_long_they_take() {
        // Printed, not asserted (run with --nocapture): plan() runs once per run.
        for (alpha, max) in [(0.01, 8), (0.01, 16), (0.01, 64), (0.05, 64)] {
            let t = std::time::Instant::now();
            let p = plan(alpha, max);
            let took = t.elapsed();
            eprintln!(
                "plan({alpha}, {max}): first look at {} trials per setting, level {:.7}; \
                 later looks {:?} at {:?}; exact overall error {:.7} at q = {:.6}; \
                 plan() took {took:?}",
                p.looks[0],
                p.levels[0],
                &p.looks[1..],
                p.later_level(),
                p.exact.error,
                p.exact.q
            );
            let t = tarone(alpha, max);
            eprintln!(
                "  Tarone's plan: looks {:?} at {:.7}; exact overall error {:.7}",
                t.looks,
                t.levels[0],
                t.error_rate().error
            );
        }
    }
}
