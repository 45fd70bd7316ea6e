//! Audio rigs (`kind = "livefx"`): per-cycle records, rows per setting and variant.

use super::ResultKind;
use crate::export::figure::{self, Figure};
use crate::load::{Input, LivefxData, Results};
use crate::out::Ctx;
use crate::report::part::{Answer, Part};
use crate::sample::{Key, Sample};
use std::any::Any;

impl ResultKind for LivefxData {
    fn load(i: &Input, warnings: &mut Vec<String>) -> Result<Self, String> {
        crate::load::livefx::load(&i.dir, &i.summary, warnings)
    }
    fn keys(&self) -> Vec<(String, String)> {
        LivefxData::keys(self)
    }
    fn verdict(&self) -> (Vec<String>, String) {
        crate::report::livefx::verdict(&crate::report::livefx::cases(self))
    }
    fn answer(&self) -> Answer {
        crate::report::livefx::answer(self)
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
    fn kcidb_figures(&self) -> Vec<Figure> {
        figure::livefx_tests(self)
    }
    fn differs(&self, other: &dyn ResultKind, label: &str) -> Option<String> {
        let other = (other as &dyn Any).downcast_ref::<LivefxData>()?;
        crate::compare::sample::audio_differs(self, other, label)
    }
}
