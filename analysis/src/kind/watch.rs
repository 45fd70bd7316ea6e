//! `xrunrig watch` beside a JACK or PipeWire session (`kind = "watch"`): no rig ran, so
//! nothing to compare or export as tests.

use super::{Input, ResultKind};
use crate::compare::sample::{Key, Sample};
use crate::export::kcidb;
use crate::load::{Results, WatchData};
use crate::out::Ctx;
use crate::report::Part;

pub fn load(i: &Input, warnings: &mut Vec<String>) -> Result<Box<dyn ResultKind>, String> {
    Ok(Box::new(crate::load::watch::load(
        i.dir, i.summary, i.run, warnings,
    )?))
}

impl ResultKind for WatchData {
    fn name(&self) -> &'static str {
        results::watch::KIND_WATCH
    }
    /// One session watched: no settings or variants.
    fn keys(&self) -> Vec<(String, String)> {
        vec![]
    }
    fn title(&self) -> Option<String> {
        Some(WatchData::title(self))
    }
    fn verdict(&self) -> (Vec<String>, String) {
        crate::report::watch::verdict(self)
    }
    fn part(&self, res: &Results, ctx: &mut Ctx) -> Result<Part, String> {
        crate::report::watch::part(res, self, ctx)
    }
    fn csv(&self, res: &Results, ctx: &mut Ctx) -> Result<(), String> {
        crate::export::csv::watch(res, self, ctx)
    }
    fn rig_ran(&self) -> bool {
        false
    }
    fn samples(&self) -> Vec<(Key, Sample)> {
        vec![]
    }
    fn kcidb_figures(&self) -> Vec<kcidb::Figure> {
        vec![]
    }
}
