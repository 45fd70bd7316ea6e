//! Exit codes of `xrunrig run`, the same whether the run is on this machine or in a
//! guest: 0 done, 2 refused before starting (bad input, machine cannot run it), 3 failed
//! during the run, 130 interrupted.

pub const EXIT_REFUSED: i32 = 2;
pub const EXIT_FAILED: i32 = 3;
pub const EXIT_INTERRUPTED: i32 = 130;
