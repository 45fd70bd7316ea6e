//! `xrunrig bisect`'s directory (kind "bisect", told by its bisect.json): the steps and
//! the first bad commit. Exported as one KCIDB checkout, build and test per tested
//! commit; not compared (its steps were each compared with the ends already).

use super::ResultKind;
use crate::export::figure::{self, Figure};
use crate::load::{BisectData, Input, Results};
use crate::out::Ctx;
use crate::report::part::Part;
use crate::sample::{Key, Sample};
use std::path::Path;

impl ResultKind for BisectData {
    fn load(i: &Input, _warnings: &mut Vec<String>) -> Result<Self, String> {
        crate::load::bisect::load(i)
    }
    /// One setting and variant at every step.
    fn keys(&self) -> Vec<(String, String)> {
        let i = &self.doc.inputs;
        vec![(i.setting.clone(), i.variant.clone())]
    }
    fn verdict(&self) -> (Vec<String>, String) {
        crate::report::bisect::verdict(self)
    }
    fn part(&self, res: &Results, ctx: &mut Ctx) -> Result<Part, String> {
        crate::report::bisect::part(res, self, ctx)
    }
    fn csv(&self, _res: &Results, ctx: &mut Ctx) -> Result<(), String> {
        crate::export::csv::bisect(self, ctx)
    }
    fn not_compared(&self, dir: &Path) -> Option<String> {
        let d = dir.display();
        Some(format!(
            "{d} is an `xrunrig bisect` directory: each of its steps was already compared \
             with its two ends (Fisher's exact test), and two bisections are not runs of one \
             experiment; read it with `xrunrig report {d}`, or compare two of its runs, \
             which are ordinary results directories (e.g. `xrunrig compare {d}/runs/good-b1 \
             {d}/runs/bad-b1`)"
        ))
    }
    /// A bisection has no trial samples of its own: its runs do.
    fn samples(&self) -> Vec<(Key, Sample)> {
        vec![]
    }
    fn kcidb_figures(&self) -> Vec<Figure> {
        figure::bisect_figures(self)
    }
}
