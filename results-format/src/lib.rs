//! The on-disk results format of xrunrig, in one place: the engine writes these types
//! and `analysis` reads them back through the same types, so a field renamed on one side
//! cannot silently break the other.

pub mod livefx;
pub mod run;
pub mod trials;
pub mod units;

/// The results format version written into run.json and summary.json. Results without
/// a version field were written before the format had one (format 0) and still load.
pub const FORMAT_VERSION: u32 = 1;
