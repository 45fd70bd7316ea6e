//! What a kind gives the report (`Part`) and the answer a run ends with (`Answer`):
//! below `kind/`, whose trait returns them, and below the report that lays them out.

use crate::doc::Block;

/// What one kind of results contributes to the report; `build` lays it out the same
/// way for every kind.
pub struct Part {
    pub conclusion: String,
    pub verdict: Vec<String>,
    pub table: Vec<Block>,
    /// "What ran".
    pub what_ran: Block,
    /// "Kernel", when the kind says it (a bisection: a kernel per commit); None: the
    /// kernel run.json names.
    pub kernel: Option<Vec<Block>>,
    /// Sections after "Results", in order.
    pub sections: Vec<(String, Vec<Block>)>,
    pub plots: Vec<Block>,
}

pub struct Answer {
    /// The verdict, one line per setting and variant (and each comparison between them).
    pub lines: Vec<String>,
    /// One line: the conclusion and what the backend measured.
    pub one_line: String,
}
