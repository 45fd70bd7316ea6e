//! Dropouts (and hangs) tested as counts.
//!
//! The model: a side's total K over its exposure S (seconds of audio, or trials) is
//! over-dispersed Poisson, Var K = D·E K, with the dispersion
//! D = φ + τ²·μ / R: φ the trials' over-dispersion within a run (at least 1), τ² the
//! runs' own multiplicative effect (a run's rate is λ·e^b, b ~ N(0, σ²_b), so
//! τ² = e^{σ²_b} − 1), μ the side's expected total at the rate both sides share if
//! nothing changed (a side with no dropouts carries the information of its exposure),
//! R its runs when they are interleaved with the other side's (their effects average
//! away), 1 when the side is one block in time (its block's effect is whole). Divided
//! by D, the two totals are Poisson-like counts of K/D over S/D: given their sum N,
//! B's share is binomial with p = ρ·S_B / (ρ·S_B + S_A) at a rate ratio ρ. The test of
//! "worse beyond the threshold" is that binomial's exact tail at ρ = 1 + θ, and the
//! interval for ρ its exact (Clopper–Pearson) interval, both through the regularised
//! incomplete beta (statrs), which also serves the non-whole counts K/D. When D is
//! itself estimated (runs' own spread, a calibration) with ν degrees of freedom, each
//! tail is read on Student's t with ν df instead of the normal (a p turned into its
//! normal quantile and back through t), so an estimated spread widens the interval.

use super::answer::quantile;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::beta::{beta_reg, inv_beta_reg};

/// Two sides' totals with their exposures and dispersions; `df` the dispersions'
/// degrees of freedom (infinite: known).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    pub ka: f64,
    pub sa: f64,
    pub da: f64,
    pub kb: f64,
    pub sb: f64,
    pub db: f64,
    pub df: f64,
}

/// A normal tail probability read on Student's t with `df` (unchanged for infinite df).
fn widen(p: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e6 || p <= 0.0 || p >= 1.0 {
        return p;
    }
    let z = Normal::standard().inverse_cdf(1.0 - p);
    StudentsT::new(0.0, 1.0, df.max(0.5)).map_or(1.0, |t| t.sf(z))
}

/// The normal tail level whose quantile is Student's t's at one-sided level `alpha`.
fn level(alpha: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e6 {
        return alpha;
    }
    Normal::standard().sf(quantile(1.0 - alpha, df))
}

impl Counts {
    /// Effective (divided by the dispersion) counts and exposures: (kA, sA, kB, sB).
    fn eff(&self) -> (f64, f64, f64, f64) {
        let (da, db) = (self.da.max(1.0), self.db.max(1.0));
        (self.ka / da, self.sa / da, self.kb / db, self.sb / db)
    }

    /// B's binomial share at rate ratio `rho`.
    fn share(&self, rho: f64) -> f64 {
        let (_, sa, _, sb) = self.eff();
        rho * sb / (rho * sb + sa)
    }

    /// One-sided p of "the ratio is above `rho0`" (H0: ratio ≤ rho0): P(X ≥ kB).
    pub fn p_above(&self, rho0: f64) -> f64 {
        let (ka, _, kb, _) = self.eff();
        if kb <= 0.0 {
            return 1.0;
        }
        widen(beta_reg(kb, ka + 1.0, self.share(rho0)), self.df)
    }

    /// One-sided p of "the ratio is below `rho0`" (H0: ratio ≥ rho0): P(X ≤ kB).
    pub fn p_below(&self, rho0: f64) -> f64 {
        let (ka, _, kb, _) = self.eff();
        if ka <= 0.0 {
            return 1.0;
        }
        widen(beta_reg(ka, kb + 1.0, 1.0 - self.share(rho0)), self.df)
    }

    /// ln of the ratio from its binomial share (∞ at 1, −∞ at 0).
    fn log_ratio(&self, p: f64) -> f64 {
        let (_, sa, _, sb) = self.eff();
        if p <= 0.0 {
            f64::NEG_INFINITY
        } else if p >= 1.0 {
            f64::INFINITY
        } else {
            (p / (1.0 - p) * sa / sb).ln()
        }
    }

    /// The exact interval for ln ρ: its lower end at one-sided level `lo_level`, its
    /// upper end at `hi_level` (the Holm-adjusted levels the answer was taken at).
    pub fn interval(&self, lo_level: f64, hi_level: f64) -> (f64, f64) {
        let (ka, _, kb, _) = self.eff();
        let lo = if kb <= 0.0 {
            0.0
        } else {
            inv_beta_reg(kb, ka + 1.0, level(lo_level, self.df))
        };
        let hi = if ka <= 0.0 {
            1.0
        } else {
            inv_beta_reg(kb + 1.0, ka, 1.0 - level(hi_level, self.df))
        };
        (self.log_ratio(lo), self.log_ratio(hi))
    }

    /// The point estimate: ln of the ratio of (K + ½)/S (a zero still has a rate).
    pub fn estimate(&self) -> f64 {
        ((self.kb + 0.5) / self.sb / ((self.ka + 0.5) / self.sa)).ln()
    }

    /// The smallest ln ratio that, with the same total, would have been called above
    /// `rho0` at one-sided level `alpha`: ∞ when no split of this total would be.
    pub fn detectable(&self, rho0: f64, alpha: f64) -> f64 {
        let (ka, sa, kb, sb) = self.eff();
        let n = ka + kb;
        let at = |k: f64| Counts {
            ka: n - k,
            sa,
            da: 1.0,
            kb: k,
            sb,
            db: 1.0,
            df: self.df,
        };
        if n <= 0.0 || at(n).p_above(rho0) >= alpha {
            return f64::INFINITY;
        }
        let (mut lo, mut hi) = (0.0, n);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if at(mid).p_above(rho0) < alpha {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        ((hi + 0.5) / sb / ((n - hi + 0.5) / sa)).ln()
    }

    /// How many times this exposure a side (its runs interleaved, the dispersion per
    /// unit unchanged) would call a change of the size seen worse at `alpha`, if the
    /// counts came out in the same proportion: None beyond 64 or when the change seen
    /// is not beyond `rho0`.
    pub fn scale_needed(&self, rho0: f64, alpha: f64) -> Option<u32> {
        let (ka, _, kb, _) = self.eff();
        if kb <= 0.0 {
            return None;
        }
        (1..=64u32).find(|&m| {
            let f = m as f64;
            Counts {
                ka: ka * f,
                sa: self.sa / self.da.max(1.0) * f,
                da: 1.0,
                kb: kb * f,
                sb: self.sb / self.db.max(1.0) * f,
                db: 1.0,
                df: self.df,
            }
            .p_above(rho0)
                < alpha
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(ka: f64, kb: f64, d: f64) -> Counts {
        Counts {
            ka,
            sa: 1.0,
            da: d,
            kb,
            sb: 1.0,
            db: d,
            df: f64::INFINITY,
        }
    }

    #[test]
    fn equal_exposure_against_the_exact_binomial() {
        // 22 against 0 at ρ0 = 1: P(X ≥ 22 | 22, ½) = 2^-22 (R: binom.test(22, 22,
        // alternative = "greater")$p.value = 2.384186e-07).
        assert!((c(0.0, 22.0, 1.0).p_above(1.0) - 2f64.powi(-22)).abs() < 1e-15);
        // Over-dispersion 2.5: 8.8 of 8.8: ½^8.8 = 0.002243.
        let p = c(0.0, 22.0, 2.5).p_above(1.0);
        assert!((p - 0.5f64.powf(8.8)).abs() < 1e-9, "{p}");
        // 3 against 10 at ρ0 = 1: P(X ≥ 10 | 13, ½) = 0.04614 (R: 1 - pbinom(9, 13, .5)).
        let p = c(3.0, 10.0, 1.0).p_above(1.0);
        assert!((p - 0.046_142_578).abs() < 1e-8, "{p}");
        assert!((c(3.0, 10.0, 1.0).p_below(1.0) - 0.988_769_531).abs() < 1e-8);
    }

    #[test]
    fn the_interval_is_clopper_pearsons() {
        // binom.test(10, 13)$conf.int: 0.4618685 0.9496189; ρ = p / (1 − p).
        let (lo, hi) = c(3.0, 10.0, 1.0).interval(0.025, 0.025);
        let r = |p: f64| (p / (1.0 - p)).ln();
        assert!((lo - r(0.461_868_5)).abs() < 1e-6, "{lo}");
        assert!((hi - r(0.949_618_9)).abs() < 1e-6, "{hi}");
        // No dropouts on B: its lower end is 0 (−∞ on the log scale); none on A: ∞ above.
        assert_eq!(c(5.0, 0.0, 1.0).interval(0.025, 0.025).0, f64::NEG_INFINITY);
        assert_eq!(c(0.0, 5.0, 1.0).interval(0.025, 0.025).1, f64::INFINITY);
    }

    #[test]
    fn the_interval_and_the_test_agree() {
        // The lower end is where the test's p crosses the level.
        let x = c(4.0, 30.0, 1.7);
        let (lo, _) = x.interval(0.01, 0.01);
        assert!((x.p_above(lo.exp()) - 0.01).abs() < 1e-9);
        let x = Counts { df: 6.0, ..x };
        let (lo, _) = x.interval(0.01, 0.01);
        assert!(
            (x.p_above(lo.exp()) - 0.01).abs() < 1e-6,
            "{}",
            x.p_above(lo.exp())
        );
    }

    #[test]
    fn an_estimated_dispersion_widens() {
        let known = c(2.0, 20.0, 1.0);
        let est = Counts { df: 4.0, ..known };
        assert!(est.p_above(1.1) > known.p_above(1.1));
        assert!(est.interval(0.025, 0.025).0 < known.interval(0.025, 0.025).0);
    }

    #[test]
    fn detectable_and_needed() {
        // 2 against 2 at equal exposure: the smallest split called above 1.1 at 2.5 %
        // with 4 in all is none (½^4·… > 0.025 even at 4 of 4: 0.524^4 = 0.075).
        assert_eq!(c(2.0, 2.0, 1.0).detectable(1.1, 0.025), f64::INFINITY);
        // 10 in all: 10 of 10 gives 0.524^10 = 0.0016: some split is.
        assert!(c(5.0, 5.0, 1.0).detectable(1.1, 0.025).is_finite());
        // 1 against 4: not called as it is; with 4× the exposure (4 against 16) it is.
        let x = c(1.0, 4.0, 1.0);
        assert!(x.p_above(1.1) > 0.025);
        let m = x.scale_needed(1.1, 0.025).unwrap();
        assert!((2..=8).contains(&m), "{m}");
        assert!(c(4.0, 1.0, 1.0).scale_needed(1.1, 0.025).is_none());
    }
}

/// Trials that hung (did not finish) on each side, of how many: tested as counts on
/// the odds of hanging, conditionally on the hangs in all (Fisher's exact test and its
/// exact interval for the odds ratio ψ, by Fisher's noncentral hypergeometric
/// distribution). No run-to-run part: a hang is not a matter of degree that a machine's
/// state moves, it is a kernel (or rig) that does not finish.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hangs {
    pub fa: u64,
    pub na: u64,
    pub fb: u64,
    pub nb: u64,
}

impl Hangs {
    /// ln of the noncentral hypergeometric pmf over B's possible hangs, unnormalised,
    /// with the support's first value.
    fn support(&self, psi: f64) -> (u64, Vec<f64>) {
        let t = self.fa + self.fb;
        let lo = t.saturating_sub(self.na);
        let hi = t.min(self.nb);
        let lnc = |n: u64, k: u64| statrs::function::factorial::ln_binomial(n, k);
        let w: Vec<f64> = (lo..=hi)
            .map(|x| lnc(self.nb, x) + lnc(self.na, t - x) + x as f64 * psi.ln())
            .collect();
        (lo, w)
    }

    /// P(X ≥ fB) (`upper`) or P(X ≤ fB) at odds ratio `psi`.
    fn tail(&self, psi: f64, upper: bool) -> f64 {
        let (lo, w) = self.support(psi);
        let m = w.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = w.iter().map(|x| (x - m).exp()).collect();
        let all: f64 = e.iter().sum();
        let at = (self.fb - lo) as usize;
        let part: f64 = if upper {
            e[at..].iter().sum()
        } else {
            e[..=at].iter().sum()
        };
        (part / all).clamp(0.0, 1.0)
    }

    pub fn p_above(&self, psi0: f64) -> f64 {
        self.tail(psi0, true)
    }

    pub fn p_below(&self, psi0: f64) -> f64 {
        self.tail(psi0, false)
    }

    /// The exact interval for ln ψ, each end at its one-sided level.
    pub fn interval(&self, lo_level: f64, hi_level: f64) -> (f64, f64) {
        let (lo, w) = self.support(1.0);
        let top = lo + w.len() as u64 - 1;
        // ln ψ where the tail crosses the level, by bisection (the tails are monotone).
        let solve = |upper: bool, level: f64| {
            let (mut a, mut b) = (-50.0f64, 50.0f64);
            for _ in 0..100 {
                let mid = 0.5 * (a + b);
                let p = self.tail(mid.exp(), upper);
                // upper tail grows with ψ; lower tail shrinks.
                if (p < level) == upper {
                    a = mid;
                } else {
                    b = mid;
                }
            }
            0.5 * (a + b)
        };
        let l = if self.fb <= lo {
            f64::NEG_INFINITY
        } else {
            solve(true, lo_level)
        };
        let h = if self.fb >= top {
            f64::INFINITY
        } else {
            solve(false, hi_level)
        };
        (l, h)
    }

    /// ln of the odds ratio of hanging, each count +½ (a zero still has odds).
    pub fn estimate(&self) -> f64 {
        let odds = |f: u64, n: u64| (f as f64 + 0.5) / ((n - f.min(n)) as f64 + 0.5);
        (odds(self.fb, self.nb) / odds(self.fa, self.na)).ln()
    }
}

#[cfg(test)]
mod hang_tests {
    use super::*;

    #[test]
    fn fisher_at_one_and_its_interval() {
        // 0 of 8 hung against 6 of 8: P(X ≥ 6) at ψ = 1 is 0.0034965 (R:
        // fisher.test(matrix(c(0,8,6,2),2), alternative = "greater")$p.value).
        let h = Hangs {
            fa: 0,
            na: 8,
            fb: 6,
            nb: 8,
        };
        assert!(
            (h.p_above(1.0) - 0.003_496_5).abs() < 1e-6,
            "{}",
            h.p_above(1.0)
        );
        let (lo, hi) = h.interval(0.025, 0.025);
        assert!(lo > 0.0 && hi == f64::INFINITY, "{lo} {hi}");
        assert!((h.p_above(lo.exp()) - 0.025).abs() < 1e-6);
        // None hung on either side: nothing to tell.
        let z = Hangs { fb: 0, ..h };
        assert_eq!(z.interval(0.025, 0.025), (f64::NEG_INFINITY, f64::INFINITY));
    }
}

/// A count's exact evidence, whichever kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exact {
    Rates(Counts),
    Hangs(Hangs),
}

impl Exact {
    pub fn interval(&self, lo_level: f64, hi_level: f64) -> (f64, f64) {
        match self {
            Exact::Rates(c) => c.interval(lo_level, hi_level),
            Exact::Hangs(h) => h.interval(lo_level, hi_level),
        }
    }
}
