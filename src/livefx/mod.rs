//! The livefx rig: a DAW-like audio process. (Being filled in.)

use crate::run::Prepared;

pub fn run_main(_p: Prepared) -> i32 {
    eprintln!("xrunrig: livefx rigs are not implemented yet");
    2
}
