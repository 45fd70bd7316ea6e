//! Benchmark (printed, not asserted): how often `xrunrig bisect` calls a step wrongly,
//! computed exactly by enumerating every outcome, not sampled.
//!
//!   cargo run --release -p analysis --bin bisect-bench [-- --batch 5 --trials 15]
//!
//! The model: each trial passes with its kernel's probability, independently (the boot
//! adds nothing: `docs/verdicts.md` says where that was measured). The ends get
//! `StepRule::end_trials()` trials each and the bisection goes on only when Fisher's
//! exact test (two-sided) puts them apart at 1 % with the good end passing more often
//! (bisect's own ends rule looks sequentially, at the same overall 1 %); each step then
//! gets batches until `bisect::classify` (the very function bisect uses) calls it. For a
//! pair of pass probabilities (good end, bad end) it prints, given that the bisection
//! started: the chance that a step exactly like the good end is called bad, that one
//! like the bad end is called good (the false steps), and how often each is left
//! undecided (skipped, a cost, not an error); and, for a history where nothing changes
//! (both ends alike), the chance that the bisection starts at all.

use analysis::bisect::{Class, StepRule, classify};
use analysis::sequential::fisher_two_sided;
use clap::Parser;

#[derive(Parser)]
#[command(name = "bisect-bench")]
struct Args {
    /// A step's error rate (bisect's ALPHA).
    #[arg(long, default_value_t = 0.01)]
    alpha: f64,
    /// Trials a boot (bisect --batch).
    #[arg(long, default_value_t = 5)]
    batch: u32,
    /// Most trials a step gets (bisect --trials).
    #[arg(long, default_value_t = 15)]
    trials: u32,
}

fn binom(n: u32, q: f64) -> Vec<f64> {
    let mut out = vec![0.0; n as usize + 1];
    let mut c = 1.0f64;
    for k in 0..=n {
        if k > 0 {
            c = c * f64::from(n - k + 1) / f64::from(k);
        }
        out[k as usize] = c * q.powi(k as i32) * (1.0 - q).powi((n - k) as i32);
    }
    out
}

/// A step passing with `q`, against ends of `good` and `bad` passes in `n` each: the
/// chance it ends good, bad, undecided.
fn step(rule: &StepRule, q: f64, good: u32, bad: u32, n: u32) -> (f64, f64, f64) {
    let (mut pg, mut pb, mut pu) = (0.0, 0.0, 0.0);
    // Distribution of passes among the trials so far, of paths not yet stopped.
    let mut alive = vec![1.0f64];
    let mut m = 0u32;
    while m < rule.max_trials {
        let add = rule.batch.min(rule.max_trials - m);
        let b = binom(add, q);
        let mut next = vec![0.0; alive.len() + add as usize];
        for (s, &p) in alive.iter().enumerate() {
            for (k, &pk) in b.iter().enumerate() {
                next[s + k] += p * pk;
            }
        }
        m += add;
        for (s, p) in next.iter_mut().enumerate() {
            match classify(rule, s as u32, m, (good, n), (bad, n)).0 {
                Class::Good => {
                    pg += *p;
                    *p = 0.0;
                }
                Class::Bad => {
                    pb += *p;
                    *p = 0.0;
                }
                Class::Undecided => {
                    pu += *p;
                    *p = 0.0;
                }
                Class::More => {}
            }
        }
        alive = next;
    }
    pu += alive.iter().sum::<f64>();
    (pg, pb, pu)
}

fn main() {
    let a = Args::parse();
    let rule = StepRule::new(a.alpha, a.batch, a.trials);
    let n = rule.end_trials();
    let alpha_ends = 0.01;
    println!(
        "bisect's step rule: looks after {:?} trials, each at p ≤ {:.2e}; the ends {n} trials each, apart at Fisher p ≤ {alpha_ends}",
        rule.looks, rule.per_look
    );
    println!(
        "{:>7} {:>7} {:>9} {:>14} {:>14} {:>16} {:>16}",
        "q good",
        "q bad",
        "P(start)",
        "like good:bad",
        "like bad:good",
        "like good:skip",
        "like bad:skip"
    );
    // The measured rates of the seed's rig first (docs/verdicts.md: 100 of 100 trials of
    // the fix within the bound, 2 of 500 of the tarball's kernel), then harder ones.
    let pairs = [
        (1.0, 0.004),
        (0.99, 0.01),
        (0.95, 0.05),
        (0.9, 0.1),
        (0.8, 0.2),
        (0.7, 0.3),
        (0.6, 0.4),
    ];
    for (qg, qb) in pairs {
        let (bg, bb) = (binom(n, qg), binom(n, qb));
        let (mut start, mut bad_of_good, mut good_of_bad, mut skip_g, mut skip_b) =
            (0.0, 0.0, 0.0, 0.0, 0.0);
        for g in 0..=n {
            for b in 0..=n {
                let w = bg[g as usize] * bb[b as usize];
                if w == 0.0 || g <= b || fisher_two_sided(g, n, b, n) > alpha_ends {
                    continue;
                }
                start += w;
                let (_, bad, u) = step(&rule, qg, g, b, n);
                bad_of_good += w * bad;
                skip_g += w * u;
                let (good, _, u) = step(&rule, qb, g, b, n);
                good_of_bad += w * good;
                skip_b += w * u;
            }
        }
        let of = |x: f64| if start > 0.0 { x / start } else { f64::NAN };
        println!(
            "{qg:>7.3} {qb:>7.3} {start:>9.4} {:>14.2e} {:>14.2e} {:>16.4} {:>16.4}",
            of(bad_of_good),
            of(good_of_bad),
            of(skip_g),
            of(skip_b)
        );
    }
    println!(
        "\na history where nothing changes (both ends pass with q): the chance the ends are put apart, so that the bisection starts"
    );
    for q in [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99] {
        let b = binom(n, q);
        let mut start = 0.0;
        for g in 0..=n {
            for x in 0..=n {
                if g > x && fisher_two_sided(g, n, x, n) <= alpha_ends {
                    start += b[g as usize] * b[x as usize];
                }
            }
        }
        println!("  q {q:.2}: {start:.2e}");
    }
}
