//! Benchmarks for livefx, printed, not asserted (needs root for SCHED_FIFO).
//!
//!   livefx-bench wake   the clock backend's wake-up latency against Debian's cyclictest,
//!                       interleaved in short slices (A B A B …) on one CPU, priority and
//!                       interval; `--trace` splits each wake-up with tracefs
//!   livefx-bench floor  the cost of one livefx cycle with N workers and no plugin work
//!   livefx-bench rss    resident memory of a long livefx run on the clock backend
//!   livefx-bench watch  what `xrunrig watch` costs the livefx rig on a private jackd
//!   livefx-bench calibrate  `xrunrig compare` on ≥ 60 A/A pairs of sides (how many it
//!                       calls different) and on A/B pairs with a real disturbance
//!   livefx-bench spread every metric's between-run spread over a calibrate's A/A runs
//!   livefx-bench boots  `--until-decided --boots` repeated in a 6.12 guest: the seed's
//!                       fix (called better?) and the same kernel twice (never worse?)
//!   livefx-bench table  the A/A and A/B table, rebuilt from every pair calibrate kept
//!                       in docs/measurements/, and the boots table from every run
//!                       boots kept (written into README.md and docs/verdicts.md with
//!                       --write)
//!
//! `livefx-bench help SUBCOMMAND` lists the options.

mod boots;
mod calibrate;
mod cyclic;
mod floor;
mod pmqos;
mod record;
mod rss;
mod spread;
mod stats;
mod trace;
mod wake;
mod watch;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "livefx-bench",
    about = "Benchmarks for livefx (printed, not asserted)"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Clock backend vs cyclictest wake-up latency, interleaved in slices.
    Wake(wake::Args),
    /// One livefx cycle's cost with N workers and no plugin work.
    Floor(floor::Args),
    /// Resident memory over a long livefx run on the clock backend.
    Rss(rss::Args),
    /// The livefx rig on a private jackd with and without `xrunrig watch`, ABBA.
    Watch(watch::Args),
    /// `xrunrig compare` on A/A pairs (false calls) and A/B pairs (caught or not).
    Calibrate(calibrate::Args),
    /// `--until-decided --boots` repeated: the seed's fix, and the same kernel twice.
    Boots(boots::Args),
    /// Every metric's between-run spread over all the A/A runs a calibrate left.
    Spread(spread::Args),
    /// The A/A and A/B table rebuilt from every pair calibrate recorded.
    Table(record::TableArgs),
}

fn main() {
    let code = match Cli::parse().cmd {
        Cmd::Wake(a) => wake::main(&a),
        Cmd::Floor(a) => floor::main(&a),
        Cmd::Rss(a) => rss::main(&a),
        Cmd::Watch(a) => watch::main(&a),
        Cmd::Calibrate(a) => calibrate::main(&a),
        Cmd::Spread(a) => spread::main(&a),
        Cmd::Boots(a) => boots::main(&a),
        Cmd::Table(a) => record::table_main(&a),
    };
    std::process::exit(code);
}
