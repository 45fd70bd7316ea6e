//! One trial of a livefx sweep, as the sweep calls it: run it with the instruments,
//! explain its misses, write its events, and tally it (`tally`).

use super::config::Config;
use super::events;
use super::report::Group;
use super::tally::{self, Done};
use super::tell;
use super::trial::{self, Params};
use crate::instruments::Instruments;
use crate::knobs::profile::Setting;
use crate::output::summary::TrialRecord;
use crate::sweep::Prepared;
use results::livefx::rows::TrialRow;
use results::trials::TrialStatus;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// What the trials add up to, for the results and the exit code.
pub struct Tally {
    /// One per (setting, variant), in sweep order.
    pub groups: Vec<Group>,
    pub rows: Vec<TrialRow>,
    pub server_gone: bool,
    /// The first failed trial's detail.
    pub any_failed: Option<String>,
}

pub struct Trials<'a> {
    pub p: &'a Prepared,
    pub cfg: &'a Config,
    /// Per setting, in the order of `p.plan.settings`.
    pub params: &'a [Params],
    pub cycles_dir: &'a Path,
    pub inst: &'a mut Instruments,
    pub events: &'a mut events::Log,
    pub tally: Tally,
}

impl Trials<'_> {
    /// A group per (setting, variant) of the run, each empty.
    pub fn groups(p: &Prepared) -> Vec<Group> {
        p.plan
            .settings
            .iter()
            .flat_map(|s| {
                p.plan
                    .variants
                    .iter()
                    .map(|&v| Group::new(&s.name, &p.plan.rig.variants[v].name))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Runs trial `t` of variant `v` under setting `s`; once the JACK server has gone
    /// away, the rest are skipped.
    pub fn one(&mut self, s: &Setting, v: usize, t: u32, stop: &AtomicBool) -> TrialRecord {
        let (p, cfg) = (self.p, self.cfg);
        let var = &p.plan.rig.variants[v];
        let si = p
            .plan
            .settings
            .iter()
            .position(|x| x.name == s.name)
            .unwrap_or(0);
        let pr = &self.params[si];
        let mut rec = TrialRecord {
            setting: s.name.clone(),
            variant: var.name.clone(),
            trial: t,
            status: TrialStatus::Failed,
            detail: None,
            duration_ms: 0.0,
            metrics: BTreeMap::new(),
            censored: BTreeMap::new(),
            marks: BTreeMap::new(),
            evidence: vec![],
        };
        if self.tally.server_gone {
            rec.detail = Some("skipped: the JACK server went away earlier in this run".into());
            return rec;
        }
        let file = results::cycles_file(&s.name, &var.name, t);
        let label = format!(
            "{} / {} trial {}/{}",
            s.name,
            var.name,
            t + 1,
            p.plan.trials
        );
        let (sn, vn) = (s.name.clone(), var.name.clone());
        let inst = &mut *self.inst;
        let mut o = trial::run(
            cfg,
            &var.plan,
            pr,
            trial::Out {
                cycles: &self.cycles_dir.join(&file),
                label: &label,
                marker: inst.marker(),
            },
            stop,
            &mut |tids| inst.start_trial(&sn, &vn, t, tids),
        );
        let mut found = inst.end_trial(None);
        let period_ns = o.info.as_ref().map_or(
            pr.spec.period as u64 * 1_000_000_000 / pr.spec.rate.max(1) as u64,
            |i| i.period as u64 * 1_000_000_000 / i.rate.max(1) as u64,
        );
        let told = tell(cfg, var, &mut o, found.records.take(), period_ns);
        found.evidence.extend(told.evidence.iter().cloned());
        self.tally.server_gone |= o.server_gone;
        if o.status == TrialStatus::Failed && self.tally.any_failed.is_none() {
            self.tally.any_failed = Some(o.detail.clone().unwrap_or_default());
        }
        self.events.trial(&s.name, var, t, &o, &told, cfg);
        let done = Done::new(&o, &told, cfg.bursts.is_some());
        if let Some(g) = self
            .tally
            .groups
            .iter_mut()
            .find(|g| g.setting == s.name && g.variant == var.name)
        {
            tally::group(g, pr, &done);
        }
        let row = tally::row(&s.name, &var.name, t, &done, &found);
        self.tally.rows.push(row);
        tally::record(rec, &done, found)
    }
}
