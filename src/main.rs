use analysis::export::{kcidb, lava::Lava};
use xrunrig::cli::{Cli, Cmd, ExportCmd};
use xrunrig::output::console;

fn main() {
    let cli = Cli::parse_args();
    console::set(cli.cmd.json(), cli.quiet);
    let code = match cli.cmd {
        Cmd::Run(a) => match xrunrig::rerun::resolve(*a) {
            Ok(a) => xrunrig::run::main(&a.into_options()),
            Err(e) => {
                eprintln!("xrunrig run: {e}");
                xrunrig::exit::EXIT_REFUSED
            }
        },
        Cmd::Check(a) => xrunrig::check::main(&a.into_options()),
        Cmd::Restore(a) => xrunrig::check::restore_main(a.discard),
        Cmd::Doctor(a) => xrunrig::doctor::main(&a.into_options()),
        Cmd::Watch(a) => xrunrig::watch::main(&a.into_options()),
        Cmd::Report(a) => match analysis::report_main(&a.dir, a.out.as_deref(), a.redact) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("xrunrig report: {e}");
                2
            }
        },
        Cmd::Compare(a) => match analysis::compare_outcome(&a.request()) {
            Ok(o) => {
                console::report(&o.text);
                console::document(&o.json);
                o.exit_code()
            }
            Err(e) => {
                eprintln!("xrunrig compare: {e}");
                2
            }
        },
        Cmd::Calibrate(mut a) => match xrunrig::rerun::resolve(a.run.clone()) {
            Ok(r) => {
                a.run = r;
                xrunrig::calibrate::main(&a.into_options())
            }
            Err(e) => {
                eprintln!("xrunrig calibrate: {e}");
                xrunrig::exit::EXIT_REFUSED
            }
        },
        Cmd::Export(ExportCmd::Kcidb(a)) => {
            let opts = kcidb::Options {
                origin: a.origin,
                url_base: a.url_base,
            };
            match kcidb::Kcidb::new(opts).and_then(|k| analysis::export::main(&k, &a.dirs)) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("xrunrig export kcidb: {e}");
                    2
                }
            }
        }
        Cmd::Export(ExportCmd::Lava(a)) => match analysis::export::main(&Lava, &a.dirs) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("xrunrig export lava: {e}");
                2
            }
        },
        Cmd::Completions(a) => xrunrig::shell::completions_main(a.shell),
        Cmd::Man(a) => xrunrig::shell::man_main(a.out.as_deref()),
        Cmd::RunPlan(a) => xrunrig::run::plan_main(&a.plan, &a.out),
        Cmd::Bisect(a) => xrunrig::bisect::main(&a.into_options()),
    };
    std::process::exit(code);
}
