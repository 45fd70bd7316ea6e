//! `xrunrig run`: the dispatcher. It takes the machine's run lock, then a run goes into
//! guest kernels (`guest`), or is prepared (`sweep::prepare`) and handed to its rig
//! kind (`sweep::RigKind`): `livefx` or `trials`. `xrunrig run-plan` is the same for a
//! plan file, as a guest kernel's run is given its plan.

use crate::exit::EXIT_REFUSED;
use crate::knobs::lock::RunLock;
use crate::options::RunOptions;
use crate::sweep::Prepared;
use std::path::Path;

pub fn main(args: &RunOptions) -> i32 {
    // One run at a time per machine, with or without a profile, guest runs included:
    // taken before recovery and every check, held until this returns (or the process
    // dies: the kernel drops it).
    let _lock = match lock() {
        Ok(l) => l,
        Err(code) => return code,
    };
    if let Some(g) = &args.guest {
        return crate::guest::run_main(args, g);
    }
    dispatch(crate::sweep::prepare(args, crate::kinds::of))
}

/// `xrunrig run-plan PLAN --out DIR`: the plan file's run, as `main` runs one.
pub fn plan_main(plan: &Path, out: &Path) -> i32 {
    let _lock = match lock() {
        Ok(l) => l,
        Err(code) => return code,
    };
    dispatch(crate::sweep::prepare_file(plan, out, crate::kinds::of))
}

fn lock() -> Result<RunLock, i32> {
    RunLock::for_run().map_err(|e| {
        eprintln!("xrunrig: {e}");
        EXIT_REFUSED
    })
}

fn dispatch(prepared: Result<Prepared, String>) -> i32 {
    match prepared {
        Err(e) => {
            eprintln!("xrunrig: {e}");
            EXIT_REFUSED
        }
        // The plan's kind runs it (`crate::kinds::of`, the one registration).
        Ok(p) => {
            let kind = p.plan.kind;
            kind.run(p)
        }
    }
}
