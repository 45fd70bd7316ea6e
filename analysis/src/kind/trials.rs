//! Thread rigs (`kind = "trials"`): one engine trial per record.

use super::ResultKind;
use crate::export::figure::{self, Figure};
use crate::load::{Input, Results, TrialsData};
use crate::out::Ctx;
use crate::report::part::Part;
use crate::sample::{Key, Sample};

impl ResultKind for TrialsData {
    fn load(i: &Input, warnings: &mut Vec<String>) -> Result<Self, String> {
        crate::load::trials::load(&i.dir, &i.summary, warnings)
    }
    fn keys(&self) -> Vec<(String, String)> {
        TrialsData::keys(self)
    }
    fn verdict(&self) -> (Vec<String>, String) {
        crate::report::trials::verdict(self)
    }
    fn part(&self, res: &Results, ctx: &mut Ctx) -> Result<Part, String> {
        crate::report::trials::part(res, self, ctx)
    }
    fn csv(&self, _res: &Results, ctx: &mut Ctx) -> Result<(), String> {
        crate::export::csv::trials(self, ctx)
    }
    fn samples(&self) -> Vec<(Key, Sample)> {
        crate::sample::trial_samples(self)
    }
    fn kcidb_figures(&self) -> Vec<Figure> {
        figure::trial_figures(self)
    }
}
