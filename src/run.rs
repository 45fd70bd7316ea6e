//! `xrunrig run`: the dispatcher. It takes the machine's run lock, then a run goes into
//! guest kernels (`guest`), or is prepared (`sweep::prepare`) and handed to its rig
//! kind: `livefx` or `trials`.

use crate::exit::EXIT_REFUSED;
use crate::options::RunOptions;
use crate::rig::Kind;

pub fn main(args: &RunOptions) -> i32 {
    // One run at a time per machine, with or without a profile, guest runs included:
    // taken before recovery and every check, held until this returns (or the process
    // dies: the kernel drops it).
    let _lock = match crate::knobs::lock::RunLock::for_run() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_REFUSED;
        }
    };
    if let Some(g) = &args.guest {
        return crate::guest::run_main(args, g);
    }
    match crate::sweep::prepare(args) {
        Err(e) => {
            eprintln!("xrunrig: {e}");
            EXIT_REFUSED
        }
        Ok(p) => match p.rig.kind {
            Kind::Livefx => crate::livefx::run_main(p),
            Kind::Trials => crate::trials::run_main(p),
        },
    }
}
