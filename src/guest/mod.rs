//! Running a rig inside a guest kernel under QEMU. (Being filled in.)

use crate::cli::RunArgs;

pub fn run_main(_a: &RunArgs) -> i32 {
    eprintln!("xrunrig: --kernel is not implemented yet");
    2
}
