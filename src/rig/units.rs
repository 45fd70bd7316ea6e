//! Durations ("1.5 s", "10 min") and bounds ("< 100 ms") as written in rig files: the
//! results format's parser (results::units), so a rig and its summary.json read a bound
//! the same way. Positions for messages are added by the rig validator.

pub use results::units::{Bound, BoundOp, parse_duration, trim_float, unit_scale};
