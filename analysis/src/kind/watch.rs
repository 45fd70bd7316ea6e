//! `xrunrig watch` beside a JACK or PipeWire session (`kind = "watch"`): no rig ran, so
//! nothing to compare or export as tests.

use super::ResultKind;
use crate::export::figure::Figure;
use crate::load::{Input, Results, WatchData};
use crate::out::Ctx;
use crate::report::part::Part;
use crate::sample::{Key, Sample};
use std::path::Path;

impl ResultKind for WatchData {
    fn load(i: &Input, warnings: &mut Vec<String>) -> Result<Self, String> {
        crate::load::watch::load(&i.dir, &i.summary, &i.run, warnings)
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
    fn not_compared(&self, dir: &Path) -> Option<String> {
        Some(format!(
            "{} is an `xrunrig watch` directory: compare sets rig runs (trials, livefx) side \
             by side; read a watch with `xrunrig report {}`",
            dir.display(),
            dir.display()
        ))
    }
    fn samples(&self) -> Vec<(Key, Sample)> {
        vec![]
    }
    fn kcidb_figures(&self) -> Vec<Figure> {
        vec![]
    }
}
