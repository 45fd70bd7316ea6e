//! The thread rig as a rig kind (`kind = "trials"`): what it does that other kinds do not.

use crate::options::AudioOptions;
use crate::output::summary::{self, Summary};
use crate::rig::{Metric, Rig};
use crate::sweep::decide::Criterion;
use crate::sweep::kind::summary_of;
use crate::sweep::{Brought, Prepared, Rebuild, RigKind};
use std::path::Path;

/// Registered in `src/kinds.rs`.
pub struct Threads;

impl RigKind for Threads {
    fn name(&self) -> &'static str {
        results::KIND_TRIALS
    }

    /// A trial at its timeout; nothing to open.
    fn per_trial_ns(&self, rig: &Rig, _: &AudioOptions) -> [u64; 3] {
        [rig.trial_timeout_ns, 0, rig.trial_gap_ns]
    }

    /// The rig's one metric with a bound.
    fn trial_verdict(&self, rig: &Rig) -> Result<Criterion, String> {
        Criterion::bounded_metric(rig)
    }

    fn run(&self, p: Prepared) -> i32 {
        super::run_main(p)
    }

    /// summary.json from the merged records: the rig's metrics, the instruments' and any
    /// the guest's instruments named that this host would not (its CPUs); the stopping
    /// rule's decisions replayed as the guest's sweep made them.
    fn rebuild(&self, r: &Rebuild) -> Result<(), String> {
        let rig = r.rig;
        let mut metrics = rig.metrics.clone();
        metrics.extend(
            crate::instruments::Instruments::from_rig(rig, r.dir)
                .metric_defs()
                .into_iter()
                .filter(|m| !rig.metrics.iter().any(|x| x.name == m.name)),
        );
        for rec in r.records {
            for k in rec.metrics.keys() {
                if !metrics.iter().any(|m| &m.name == k) {
                    metrics.push(Metric {
                        name: k.clone(),
                        from: ("instrument".into(), k.clone()),
                        to: ("instrument".into(), k.clone()),
                        bound: None,
                        unit: String::new(),
                        description: k.clone(),
                        end_early: false,
                    });
                }
            }
        }
        let rows = summary::rows(r.records, r.settings, r.variants, &metrics);
        let mut sum = Summary::new(&rig.name, rows);
        sum.until_decided = crate::sweep::decide::decided(r.until, r.records);
        crate::output::write_json(&r.dir.join(results::SUMMARY_JSON), &sum)
    }

    fn brought(&self, dir: &Path) -> Option<Brought> {
        let sm: Summary = summary_of(dir, self.name())?;
        let mut table = crate::output::table::render(&sm.rows);
        if let Some(d) = &sm.until_decided {
            table.push_str(&crate::sweep::decide::render(d));
        }
        Some(Brought {
            table,
            rows: sm.rows,
            decided: sm.until_decided,
            ..Brought::default()
        })
    }
}
