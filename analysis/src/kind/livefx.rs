//! Audio rigs (`kind = "livefx"`): per-cycle records, rows per setting and variant.

use super::{Input, ResultKind};
use crate::compare::sample::{Key, Sample};
use crate::export::kcidb;
use crate::load::{LivefxData, Results};
use crate::out::Ctx;
use crate::report::Part;
use crate::report::answer::Answer;
use std::any::Any;

pub fn load(i: &Input, warnings: &mut Vec<String>) -> Result<Box<dyn ResultKind>, String> {
    Ok(Box::new(crate::load::livefx::load(
        i.dir, i.summary, warnings,
    )?))
}

impl ResultKind for LivefxData {
    fn name(&self) -> &'static str {
        results::KIND_LIVEFX
    }
    fn keys(&self) -> Vec<(String, String)> {
        LivefxData::keys(self)
    }
    fn verdict(&self) -> (Vec<String>, String) {
        crate::report::livefx::verdict(&crate::report::livefx::cases(self))
    }
    fn answer(&self) -> Answer {
        crate::report::answer::livefx(self)
    }
    fn part(&self, res: &Results, ctx: &mut Ctx) -> Result<Part, String> {
        crate::report::livefx::part(res, self, ctx)
    }
    fn csv(&self, res: &Results, ctx: &mut Ctx) -> Result<(), String> {
        crate::export::csv::livefx(res, self, ctx)
    }
    fn samples(&self) -> Vec<(Key, Sample)> {
        crate::compare::sample::livefx_samples(self)
    }
    fn kcidb_figures(&self) -> Vec<kcidb::Figure> {
        kcidb::livefx_tests(self)
    }
    fn differs(&self, other: &dyn ResultKind, label: &str) -> Option<String> {
        let other = (other as &dyn Any).downcast_ref::<LivefxData>()?;
        crate::compare::load::audio_differs(self, other, label)
    }
}
