//! One problem in a rig file, as every table's checker (`validate`, `livefx`,
//! `instruments`) collects them: the checkers below `validate` report through it.

use std::ops::Range;

/// One problem in a rig file: a byte span and what is wrong.
#[derive(Debug, Clone)]
pub struct Problem {
    pub span: Range<usize>,
    pub msg: String,
}
