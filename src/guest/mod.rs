//! Running a rig inside a guest kernel under QEMU: `xrunrig run RIG --kernel K …`.
//!
//! The host decides the run (`sweep::Plan`; statically: the guest provides the CPUs),
//! never touches its own knobs, builds an initramfs holding its own xrunrig binary and
//! the plan as a file, boots K, and the guest runs that plan with the ordinary sweep
//! (`xrunrig run-plan`: profiles, the journal and restore all apply there). Results
//! come back on a raw virtio-blk disk (or a second serial port where the kernel has no
//! virtio-blk; see channel.rs) and land in
//! the host's results directory with run.json's "guest" provenance added.

mod boot;
pub mod build;
pub mod bzimage;
pub mod channel;
pub mod cpio;
pub mod crash;
pub mod decided;
pub mod initramfs;
pub mod jack;
pub mod kernel;
mod kernel_run;
pub mod modules;
pub mod qemu;
mod record;
pub mod resume;
mod run_ctx;
mod tables;

use crate::audio::BackendChoice;
use crate::exit::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_REFUSED};
use crate::options::{GuestOptions, KernelChoice, RunOptions};
use crate::sweep::{Plan, PlanFile};
use kernel::Kernel;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Kernel command line for every guest. Not `nowatchdog`: the soft-lockup watchdog is
/// part of the kernel under test (it rescues stuck tasks now and then); profiles turn
/// it off at run time with kernel.watchdog = 0, and --append adds anything else.
/// earlyprintk lets a failing boot decompressor say so ("-- System halted") instead
/// of hanging silently until the boot bound. tsc=reliable: a 150 s storm run on 6.12
/// under multi-threaded TCG oopsed in sched_clock_cpu without it and ran clean with it.
pub const BASE_CMDLINE: &str =
    "console=ttyS0 earlyprintk=serial,ttyS0,115200 panic=-1 quiet mitigations=off tsc=reliable";

/// loops_per_jiffy from the host's clock (Debian kernels run at HZ = 250): given on
/// the command line it spares each emulated secondary CPU its delay-loop calibration,
/// which under TCG fails slowly ("calibrate_delay_direct() failed …"): measured
/// 0.5 s of a 3.5–4 s boot. With a TSC, udelay does not use it.
fn lpj() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = info
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    (mhz > 100.0).then(|| (mhz * 1e6 / 250.0) as u64)
}

/// Everything decided on the host before any guest boots.
pub struct HostPlan {
    /// The run, decided once (`sweep::Plan`): each boot's guest is given it whole, or
    /// narrowed to what a resumed boot has left, as a plan file (`plan_for`), and
    /// builds the same plan from it.
    pub plan: Plan,
    /// The whole run's command in the guest (its first boot's).
    pub command: Vec<String>,
    /// What the run sweeps, in the guest sweep's order: a resumed boot starts after
    /// the trials that came home.
    pub order: resume::Order,
    /// Where the plan file puts the rig and profile in the guest (named in its records).
    rig_guest: PathBuf,
    profile_guest: PathBuf,
    jack: Option<jack::Server>,
    /// Test-only: a fault the first boot makes on purpose (XRUNRIG_GUEST_TEST_INJECT).
    pub inject: initramfs::Inject,
    /// Guest CPUs the rig does not use: the shipping of each trial's results runs there.
    pub ship_cpus: Vec<usize>,
    pub cpus: u32,
    pub memory: String,
    pub cmdline: String,
    pub audio: bool,
    /// Bound on one guest's whole run, boot included.
    pub run_bound: Duration,
    pub boot_bound: Duration,
    /// Bound on a ready guest's silence: past it, its timers stopped (an emulator
    /// fault, `crash::silence`).
    pub quiet_bound: Duration,
    /// `--until-decided --boots N`: the kernels' boots judged against each other after
    /// each round (`decided`), the guests running their trials whole.
    pub across_boots: Option<decided::BootsRule>,
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file.toml".into())
}

fn env_secs(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()?
        .parse::<f64>()
        .ok()
        .map(Duration::from_secs_f64)
}

/// Decides the run on the host (`sweep::Plan`: the guest decides nothing else) and
/// checks what the guest machine needs.
pub fn plan(a: &RunOptions, g: &GuestOptions) -> Result<HostPlan, String> {
    // With --boots the boot is the unit: the host decides across boots, and each guest
    // runs its trials whole (no within-boot rule, so one setting is enough).
    let across = g.boots > 1 && a.choices.until_decided;
    let whole;
    let a = if across {
        let mut c = a.clone();
        c.choices.until_decided = false;
        whole = c;
        &whole
    } else {
        a
    };
    let plan = Plan::new(a, crate::kinds::of)?;
    let across_boots = if across {
        // compare's name of what the rig's criterion bounds.
        let metrics = match crate::sweep::decide::criterion(&plan)? {
            crate::sweep::decide::Criterion::Bound(m) => vec![m.name],
            crate::sweep::decide::Criterion::Misses(_) => {
                vec!["dropouts".to_string(), "trials finished".to_string()]
            }
        };
        Some(decided::BootsRule::new(g.kernels.len(), g.boots, metrics)?)
    } else {
        None
    };
    let rig = &plan.rig;
    let need = rig.cpus_used().iter().max().map_or(1, |m| *m as u32 + 1);
    let cpus = g.cpus.unwrap_or(need.max(4));
    if cpus < need {
        return Err(format!(
            "rig '{}' uses CPUs up to {}: give the guest at least --cpus {need}",
            rig.name,
            need - 1
        ));
    }
    let memory = g.memory.clone().unwrap_or_else(|| "1G".into());
    // A guest has no running JACK server: start one on the snd-aloop card, as the first
    // setting that asks for JACK asks for it (the plan's audio: the command line over
    // the setting over the rig).
    let asked_jack = plan
        .audio
        .iter()
        .flatten()
        .find(|a| a.backend == BackendChoice::Jack);
    let jack = match (&rig.livefx, asked_jack) {
        (Some(cfg), Some(a)) => Some(jack::Server {
            name: a.device.clone().unwrap_or_else(|| jack::SERVER.into()),
            rate: a.rate,
            period: a.period,
            nperiods: a.nperiods,
            callback_priority: cfg.callback_priority,
            driver: g.jack,
            watch: g.watch,
        }),
        _ => None,
    };
    if g.watch && jack.is_none() {
        return Err(
            "--guest-watch watches the guest's JACK session: give --backend jack (or a rig whose \
             [livefx] backend is jack)"
                .into(),
        );
    }
    let order = resume::Order::of(&plan);
    let inject = test_inject()?;
    // The guest's own bound (its watchdog) is the plan's; the host allows that plus
    // boot and shipping, so the guest normally ends itself first.
    let inner = plan.bound_ns()?;
    let boot_bound = env_secs("XRUNRIG_GUEST_BOOT_TIMEOUT").unwrap_or(Duration::from_secs(90));
    let run_bound = boot_bound + Duration::from_nanos(inner) + Duration::from_secs(60);
    // A ready guest prints a line per trial (and /init one per shipped frame): one
    // trial's own watchdog bound (its estimate × 2 + 60 s) without a byte means its
    // timers stopped, not that the trial is long.
    let quiet_bound = Duration::from_nanos(plan.one_trial_bound_ns()?);
    let mut cmdline = BASE_CMDLINE.to_string();
    if let Some(l) = lpj() {
        cmdline.push_str(&format!(" lpj={l}"));
    }
    if let Some(x) = &g.append {
        cmdline.push(' ');
        cmdline.push_str(x);
    }
    let mut used = rig.cpus_used();
    if let Some(l) = &rig.livefx {
        used.extend(l.cpus_used());
    }
    let ship_cpus = (0..cpus as usize).filter(|c| !used.contains(c)).collect();
    let rig_guest = Path::new("/xrunrig/rig").join(file_name(&a.rig));
    let profile_guest = Path::new("/xrunrig/profile").join(
        a.profile
            .as_deref()
            .map(file_name)
            .unwrap_or_else(|| "profile.toml".into()),
    );
    let mut p = HostPlan {
        ship_cpus,
        audio: plan.kind.plays_audio(),
        plan,
        command: vec![],
        order,
        rig_guest,
        profile_guest,
        jack,
        inject,
        cpus,
        memory,
        cmdline,
        run_bound,
        boot_bound,
        quiet_bound,
        across_boots,
    };
    p.command = p.command_for(0);
    Ok(p)
}

/// XRUNRIG_GUEST_TEST_INJECT=crash:K, int3:K, stall:K or hold:K (tests only): the first
/// boot crashes its kernel, prints the emulator's int3 Oops and stops, prints the RCU
/// stall of stopped timers and goes quiet, or just waits, once K trials are home;
/// kill:SEED runs the kill -9 matrix before the run (`initramfs::Inject::Kill`).
fn test_inject() -> Result<initramfs::Inject, String> {
    let Ok(v) = std::env::var("XRUNRIG_GUEST_TEST_INJECT") else {
        return Ok(initramfs::Inject::None);
    };
    let bad = || {
        format!("XRUNRIG_GUEST_TEST_INJECT={v}: give crash:K, int3:K, stall:K, hold:K or kill:SEED")
    };
    let (kind, k) = v.split_once(':').ok_or_else(bad)?;
    let after: u64 = k.parse().map_err(|_| bad())?;
    match kind {
        "crash" => Ok(initramfs::Inject::Crash { after }),
        "int3" => Ok(initramfs::Inject::Int3 { after }),
        "stall" => Ok(initramfs::Inject::Stall { after }),
        "hold" => Ok(initramfs::Inject::Hold { after }),
        "kill" => Ok(initramfs::Inject::Kill { seed: after }),
        _ => Err(bad()),
    }
}

impl HostPlan {
    /// What a fresh boot runs after the `done` trials `boots` brought home: the rest of
    /// the order; under --until-decided the rest of the variants still undecided (their
    /// records are a prefix of the order narrowed to them: a variant that stops never
    /// gets a trial again). Empty when nothing is left.
    pub fn parts_left(&self, boots: &[resume::Boot], done: u64) -> Vec<resume::Part> {
        let Some(rule) = &self.plan.until else {
            return resume::parts_from(&self.order, done);
        };
        let records: Vec<_> = boots
            .iter()
            .flat_map(|b| {
                b.parts
                    .iter()
                    .enumerate()
                    .flat_map(|(i, p)| resume::part_records(&b.part_dir(i), p))
            })
            .collect();
        let open = crate::sweep::decide::evaluate(rule, &records).open;
        let narrowed = resume::Order {
            variants: self
                .order
                .variants
                .iter()
                .filter(|v| open.contains(v))
                .cloned()
                .collect(),
            ..self.order.clone()
        };
        let done = records.iter().filter(|r| open.contains(&r.variant)).count() as u64;
        resume::parts_from(&narrowed, done)
    }

    /// The part that is the whole run.
    pub fn whole(&self) -> resume::Part {
        resume::Part {
            round0: 0,
            trials: self.order.trials,
            settings: self.order.settings.clone(),
            variants: self.order.variants.clone(),
        }
    }

    /// The plan a boot's part of the sweep is given: the run's own for the whole run,
    /// else with its trials, settings and variants narrowed to the part's.
    pub fn plan_for(&self, part: &resume::Part) -> PlanFile {
        let mut c = self.plan.choices.clone();
        if *part == self.whole() {
            return self.plan.file(&self.rig_guest, &self.profile_guest, c);
        }
        c.trials = Some(part.trials);
        c.variants = part.variants.clone();
        // Under --settings-as-is the one "as-is" setting is no profile name to give:
        // the user's own filter stays, and the plan replaces it again.
        if !c.settings_as_is {
            c.settings = part.settings.clone();
        }
        // The guest decides from its own trials: only a part that is the whole run has
        // them all. A resumed boot's parts run the undecided variants' remaining rounds
        // in full (`parts_left`), and the merge replays every record through the rule.
        c.until_decided = false;
        self.plan.file(&self.rig_guest, &self.profile_guest, c)
    }

    /// Where the boot's `i`th part's plan file goes in the guest.
    pub fn plan_path(i: usize) -> String {
        format!("/xrunrig/plan/p{i}.json")
    }

    /// The guest's command for the boot's `i`th part: `xrunrig run-plan` of its plan
    /// file (`plan_for`) into /results/x/p`i`, under the guest's jackd when it has one.
    pub fn command_for(&self, i: usize) -> Vec<String> {
        let c: Vec<String> = vec![
            "/bin/xrunrig".into(),
            "run-plan".into(),
            HostPlan::plan_path(i),
            "--out".into(),
            format!("/results/x/p{i}"),
        ];
        match &self.jack {
            Some(j) => j.wrap(&c),
            None => c,
        }
    }
}

pub use kernel_run::{blame, run_kernel};
pub use run_ctx::{Blame, Ctx, KernelRun};

/// The results directory for each kernel.
/// The order of the boots: `boots` rounds over the kernels, every other round reversed
/// (A B, B A, A B, ...), so that a drift of the machine over the session falls on every
/// kernel alike. Each entry: (kernel index, boot number from 1).
fn boot_order(kernels: usize, boots: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(kernels * boots);
    for round in 0..boots {
        let ks: Vec<usize> = if round % 2 == 0 {
            (0..kernels).collect()
        } else {
            (0..kernels).rev().collect()
        };
        out.extend(ks.into_iter().map(|k| (k, round + 1)));
    }
    out
}

/// Where each boot's results go, in the order they run (`boot_order`): one kernel booted
/// once is its own directory; several kernels (or boots) share a base, each kernel a
/// folder, each boot `boot-<n>` inside it when there are several.
fn result_dirs(
    a: &RunOptions,
    rig: &str,
    kernels: &[Kernel],
    boots: usize,
) -> (Option<PathBuf>, Vec<(usize, usize, PathBuf)>) {
    let (_, stamp) = crate::sys::utc_now();
    if kernels.len() == 1 && boots == 1 {
        let d = a.out.clone().unwrap_or_else(|| {
            PathBuf::from("results").join(format!("{rig}-{stamp}-{}", kernels[0].name()))
        });
        return (None, vec![(0, 1, d)]);
    }
    let base = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{rig}-{stamp}-kernels")));
    let mut names: Vec<PathBuf> = vec![];
    for k in kernels {
        let mut d = base.join(k.name());
        let mut i = 2;
        while names.contains(&d) {
            d = base.join(format!("{}-{i}", k.name()));
            i += 1;
        }
        names.push(d);
    }
    let dirs = boot_order(kernels.len(), boots)
        .into_iter()
        .map(|(k, n)| {
            let d = if boots == 1 {
                names[k].clone()
            } else {
                names[k].join(format!("boot-{n}"))
            };
            (k, n, d)
        })
        .collect();
    (Some(base), dirs)
}

/// The rule of `--patch`: it applies to the `--kernel` written just before it, which
/// must be built from source. Err names the rule and the patch that breaks it.
pub fn check_patches(g: &GuestOptions) -> Result<(), String> {
    const RULE: &str = "each --patch applies to the --kernel written just before it, which \
                        must be built from source (src:PATH or debian-src:6.12), e.g. \
                        --kernel debian-src:6.12 --kernel debian-src:6.12 --patch fix.patch";
    if let Some(p) = g.stray_patches.first() {
        return Err(format!(
            "--patch {} comes before any --kernel: {RULE}",
            p.display()
        ));
    }
    for k in &g.kernels {
        if let Some(p) = k.patches.first()
            && !k.spec.is_source()
        {
            return Err(format!(
                "--patch {} follows --kernel {}, which is not built from source: {RULE}",
                p.display(),
                k.spec
            ));
        }
    }
    Ok(())
}

/// The order to build or fetch the kernels in: fewest patches first (stable), so that a
/// patched build of a tree also built without the patch starts from a copy of that
/// build (`build::resolve`) instead of compiling the whole kernel twice. The runs keep
/// the order typed.
fn resolve_order(kernels: &[KernelChoice]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    order.sort_by_key(|&i| kernels[i].patches.len());
    order
}

pub fn run_main(a: &RunOptions, g: &GuestOptions) -> i32 {
    let plan = match plan(a, g) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_REFUSED;
        }
    };
    let qemu_bin = match qemu::qemu_binary() {
        Ok(q) => q,
        Err(e) => {
            eprintln!("xrunrig: {e}");
            return EXIT_REFUSED;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    if let Err(e) = crate::engine::watchdog::install_signal_flag(&stop) {
        eprintln!("xrunrig: cannot install signal handlers: {e}");
        return EXIT_REFUSED;
    }
    // Each --patch binds to the --kernel written just before it.
    if let Err(e) = check_patches(g) {
        eprintln!("xrunrig: {e}");
        return EXIT_REFUSED;
    }
    let mut resolved_at: Vec<Option<_>> = g.kernels.iter().map(|_| None).collect();
    for i in resolve_order(&g.kernels) {
        let k = &g.kernels[i];
        let resolved = if k.spec.is_source() {
            build::resolve(&k.spec, &k.patches)
        } else {
            kernel::resolve(&k.spec, g.modules.as_deref())
        };
        match resolved {
            Ok(x) => resolved_at[i] = Some(x),
            Err(e) => {
                eprintln!("xrunrig: {e}");
                return EXIT_REFUSED;
            }
        }
        if stop.load(Ordering::SeqCst) {
            return EXIT_INTERRUPTED;
        }
    }
    // Run in the order typed, whatever order they were built in.
    let kernels: Vec<_> = resolved_at.into_iter().flatten().collect();
    let boots = g.boots.max(1) as usize;
    let (base, dirs) = result_dirs(a, &plan.plan.rig.name, &kernels, boots);
    for (_, _, d) in &dirs {
        if let Err(e) = crate::output::create_results_dir(d) {
            eprintln!("xrunrig: {e}");
            return EXIT_REFUSED;
        }
    }
    let xrunrig_bin = match std::env::var_os("XRUNRIG_GUEST_BIN")
        .map(PathBuf::from)
        .map(Ok)
        .unwrap_or_else(std::env::current_exe)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("xrunrig: cannot find this program's binary to put in the guest: {e}");
            return EXIT_REFUSED;
        }
    };
    let qemu_version = qemu::version(&qemu_bin);
    let mut runs: Vec<KernelRun> = vec![];
    let total = dirs.len();
    let mut across = plan.across_boots.clone().map(|r| {
        let d = r.record();
        (r, d)
    });
    let mut unrun: Vec<PathBuf> = vec![];
    // Each run's kernel, by its index in `kernels` (the baseline is 0).
    let mut of_kernel: Vec<usize> = vec![];
    for (place, (ki, n, dir)) in dirs.into_iter().enumerate() {
        if stop.load(Ordering::SeqCst) || across.as_ref().is_some_and(|(_, d)| d.answer.is_some()) {
            unrun.push(dir);
            continue;
        }
        let ctx = run_ctx::Ctx {
            plan: &plan,
            args: a,
            guest: g,
            qemu: &qemu_bin,
            qemu_version: &qemu_version,
            xrunrig: &xrunrig_bin,
            stop: &stop,
            place: (boots > 1).then_some(results::run::BootPlace {
                place: place as u32 + 1,
                of: total as u32,
                boot: n as u32,
                boots: boots as u32,
            }),
        };
        let r = kernel_run::run_kernel(&ctx, kernels[ki].clone(), dir);
        if let Some(e) = &r.error {
            eprintln!("xrunrig: {}: {e}", r.kernel.label);
        }
        runs.push(r);
        of_kernel.push(ki);
        // A round ends when every kernel has booted n times.
        if let (Some((rule, d)), Some(base)) = (across.as_mut(), base.as_deref())
            && (place + 1) % kernels.len() == 0
            && rule.looks_after(n as u32)
        {
            let side = |k: usize| -> Vec<PathBuf> {
                runs.iter()
                    .zip(&of_kernel)
                    .filter(|(r, i)| r.error.is_none() && **i == k)
                    .map(|(r, _)| r.dir.clone())
                    .collect()
            };
            let sides = [side(0), side(1)];
            if sides.iter().all(|s| s.len() >= 2) {
                match decided::look(rule, d, base, n as u32, sides) {
                    Ok(true) => eprintln!(
                        "xrunrig: until decided across boots: {} after {n} boots of each",
                        d.answer.as_deref().unwrap_or("?")
                    ),
                    Ok(false) => {}
                    Err(e) => eprintln!("xrunrig: until decided across boots: round {n}: {e}"),
                }
            }
        }
    }
    // Boots a decision made unneeded (or an interrupt): their directories, made before
    // the first boot so a bad --out is refused early, go again (only when empty).
    for d in &unrun {
        let _ = std::fs::remove_dir(d);
    }
    let boots_decided = across.map(|(_, d)| d);
    match (base, runs.as_slice()) {
        (Some(base), _) => {
            tables::combined(&plan.plan.rig.name, &base, &runs, boots_decided.as_ref())
        }
        (None, [one]) => tables::document(&one.dir),
        _ => {}
    }
    if stop.load(Ordering::SeqCst) {
        eprintln!("xrunrig: interrupted; the guest was stopped");
        return EXIT_INTERRUPTED;
    }
    if runs.iter().any(|r| r.error.is_some()) {
        return EXIT_FAILED;
    }
    runs.iter().map(|r| r.code).find(|&c| c != 0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::RunArgs;
    use clap::Parser;

    /// A patched build typed before the unpatched one of the same tree is built after
    /// it, so it can start from its copy (else a cold cache compiles the kernel twice).
    #[test]
    fn kernels_with_fewer_patches_are_built_first_in_typed_order() {
        let k = |spec: &str, n: usize| KernelChoice {
            spec: crate::options::KernelSpec::parse(spec).unwrap(),
            patches: (0..n).map(|i| PathBuf::from(format!("p{i}"))).collect(),
        };
        let ks = [
            k("debian-src:6.12", 2),
            k("debian-src:6.12", 1),
            k("debian:6.1", 0),
            k("debian-src:6.12", 0),
        ];
        assert_eq!(resolve_order(&ks), [2, 3, 1, 0]);
    }

    #[derive(Parser)]
    struct W {
        #[command(flatten)]
        a: RunArgs,
    }

    /// The command line as a user gives it, through the CLI edge (each --patch bound
    /// to its --kernel, as `Cli::try_parse_args` does).
    fn try_opts(v: &[&str]) -> Result<RunOptions, String> {
        use clap::{CommandFactory, FromArgMatches};
        let mut all = vec!["x"];
        all.extend(v);
        let m = W::command()
            .try_get_matches_from(all)
            .map_err(|e| e.to_string())?;
        let mut w = W::from_arg_matches(&m).map_err(|e| e.to_string())?;
        w.a.bind_patches(&m);
        Ok(w.a.into_options())
    }

    fn plan_of(v: &[&str]) -> Result<HostPlan, String> {
        let o = try_opts(v)?;
        let g = o.guest.clone().expect("a --kernel");
        plan(&o, &g)
    }

    fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec![concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/rigs/pi-boost-affinity.toml"
        )];
        v.extend(extra);
        v
    }

    /// `--kernel A --patch p1 --kernel B --patch p2` means what it says: p1 for A, p2
    /// for B (before, both went to B and A ran unpatched). A patch before any kernel,
    /// or after one not built from source, is refused with the rule named.
    #[test]
    fn each_patch_binds_to_the_kernel_before_it() {
        let g = |v: &[&str]| try_opts(&args(v)).unwrap().guest.unwrap();
        let two = g(&[
            "--kernel",
            "debian-src:6.12",
            "--patch",
            "p1.patch",
            "--kernel",
            "src:/tmp/linux",
            "--patch",
            "p2.patch",
            "--patch",
            "p3.patch",
        ]);
        let got: Vec<(String, Vec<&str>)> = two
            .kernels
            .iter()
            .map(|k| {
                (
                    k.spec.to_string(),
                    k.patches.iter().map(|p| p.to_str().unwrap()).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("debian-src:6.12".to_string(), vec!["p1.patch"]),
                ("src:/tmp/linux".to_string(), vec!["p2.patch", "p3.patch"])
            ]
        );
        assert!(check_patches(&two).is_ok());
        // The form docs/measured.md shows: the second of two identical kernels is the patched one.
        let ab = g(&[
            "--kernel",
            "debian-src:6.12",
            "--kernel",
            "debian-src:6.12",
            "--patch",
            "fix.patch",
        ]);
        assert!(ab.kernels[0].patches.is_empty());
        assert_eq!(ab.kernels[1].patches, vec![PathBuf::from("fix.patch")]);
        // Before any kernel: refused, the rule named.
        let stray = g(&["--patch", "p1.patch", "--kernel", "debian-src:6.12"]);
        let e = check_patches(&stray).unwrap_err();
        assert!(
            e.contains("--patch p1.patch comes before any --kernel")
                && e.contains("each --patch applies to the --kernel written just before it"),
            "{e}"
        );
        // After a packaged kernel: refused.
        let pkg = g(&[
            "--kernel",
            "debian-src:6.12",
            "--kernel",
            "debian:6.12",
            "--patch",
            "p1.patch",
        ]);
        let e = check_patches(&pkg).unwrap_err();
        assert!(
            e.contains(
                "--patch p1.patch follows --kernel debian:6.12, which is not built from source"
            ),
            "{e}"
        );
    }

    /// A plan file as the guest reads it: written, read back through `Plan::from_file`.
    fn guest_reads(f: &PlanFile) -> Plan {
        // One directory a call: tests run in parallel, and one's cleanup must not take
        // another's file away.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = crate::testkit::private_dir(&format!("plan-file-{n}"));
        let path = d.join("p0.json");
        std::fs::write(&path, serde_json::to_vec(f).unwrap()).unwrap();
        let p = Plan::from_file(&path, crate::kinds::of).unwrap();
        let _ = std::fs::remove_dir_all(&d);
        p
    }

    #[test]
    fn plan_builds_guest_command_and_cpus() {
        let prof = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/rt-push-ipi.toml");
        let p = plan_of(&args(&[
            "--profile",
            prof,
            "--kernel",
            "debian:6.12",
            "--trials",
            "8",
            "--variant",
            "pi",
        ]))
        .unwrap();
        assert_eq!(p.cpus, 4);
        assert_eq!(
            p.command.join(" "),
            "/bin/xrunrig run-plan /xrunrig/plan/p0.json --out /results/x/p0"
        );
        // The whole run's plan file: the rig and profile where the guest has them, and
        // the guest's plan the host's.
        let f = p.plan_for(&p.whole());
        assert_eq!(f.rig.path, Path::new("/xrunrig/rig/pi-boost-affinity.toml"));
        assert_eq!(f.rig.text, p.plan.rig.text);
        let fp = f.profile.as_ref().unwrap();
        assert_eq!(fp.path, Path::new("/xrunrig/profile/rt-push-ipi.toml"));
        let g = guest_reads(&f);
        assert_eq!(g.setting_names(), p.order.settings);
        assert_eq!(g.variant_names(), ["pi"]);
        assert_eq!(g.trials, 8);
        assert_eq!(g.estimate_ns().unwrap(), p.plan.estimate_ns().unwrap());
        // The sweep's order as the guest runs it, and a resumed boot's parts narrowed
        // to what is left: after 3 of 16 (round 1's second setting, then rounds 2..7).
        assert_eq!(p.order.total(), 16);
        let parts = resume::parts_from(&p.order, 3);
        assert_eq!(parts.len(), 2, "{parts:?}");
        let s1 = &p.order.settings[1];
        let g0 = guest_reads(&p.plan_for(&parts[0]));
        assert_eq!((g0.trials, g0.setting_names()), (1, vec![s1.clone()]));
        assert_eq!(g0.variant_names(), ["pi"]);
        let g1 = guest_reads(&p.plan_for(&parts[1]));
        assert_eq!(
            (g1.trials, g1.setting_names()),
            (6, p.order.settings.clone())
        );
        assert_eq!(
            p.command_for(1).join(" "),
            "/bin/xrunrig run-plan /xrunrig/plan/p1.json --out /results/x/p1"
        );
        assert!(!p.audio);
        assert!(p.cmdline.contains("console=ttyS0") && !p.cmdline.contains("nowatchdog"));
        // 8 trials × 2 settings × 1 variant × 4.2 s, doubled, + 60 s, + boot and shipping.
        assert!(
            p.run_bound > Duration::from_secs(67 + 60) && p.run_bound < Duration::from_secs(600)
        );
        // Silence: one trial's bound (4 s + 0.2 s gap), doubled, + 60 s; not the run's.
        assert_eq!(p.quiet_bound, Duration::from_millis(2 * 4200 + 60_000));
        // An audio trial's: its length, 5 s to open and close the stream and the rig's
        // 300 ms gap, doubled, + 60 s: the estimate the guest's own watchdog uses.
        let lf = plan_of(&[
            concat!(env!("CARGO_MANIFEST_DIR"), "/rigs/livefx.toml"),
            "--kernel",
            "debian:6.12",
            "--duration",
            "10 s",
            "--trials",
            "50",
        ])
        .unwrap();
        assert_eq!(lf.quiet_bound, Duration::from_millis(2 * 15_300 + 60_000));
        assert!(
            lf.run_bound > Duration::from_secs(50 * 30),
            "{:?}",
            lf.run_bound
        );
        // Without a profile the guest gets none.
        let np = plan_of(&args(&["--kernel", "debian:6.12"])).unwrap();
        assert!(np.plan_for(&np.whole()).profile.is_none());
    }

    /// Issue 26: a setting filter given once reaches the guest as the host decided it,
    /// through the plan file (no command line rebuilt): the same settings, variants,
    /// trials and rule; and --settings-as-is too.
    #[test]
    fn the_guest_runs_the_plan_the_host_decided() {
        let prof = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/rt-push-ipi.toml");
        let p = plan_of(&args(&[
            "--profile",
            prof,
            "--kernel",
            "debian:6.12",
            "--setting",
            "NO_RT_PUSH_IPI",
            "--trials",
            "3",
        ]))
        .unwrap();
        assert_eq!(p.order.settings, ["NO_RT_PUSH_IPI"]);
        let g = guest_reads(&p.plan_for(&p.whole()));
        assert_eq!(g.setting_names(), p.plan.setting_names());
        assert_eq!(g.variant_names(), p.plan.variant_names());
        assert_eq!(g.trials, p.plan.trials);
        assert_eq!(g.choices, p.plan.choices);
        assert!(g.until.is_none());
        // --settings-as-is: one "as-is" setting on both sides, the note said.
        let p = plan_of(&args(&[
            "--profile",
            prof,
            "--kernel",
            "debian:6.12",
            "--settings-as-is",
        ]))
        .unwrap();
        assert_eq!(p.order.settings, ["as-is"]);
        let g = guest_reads(&p.plan_for(&p.whole()));
        assert_eq!(g.setting_names(), ["as-is"]);
        assert!(g.settings_note.unwrap().contains("NOT in force"));
        let parts = resume::parts_from(&p.order, 1);
        let g = guest_reads(&p.plan_for(&parts[0]));
        assert_eq!(g.setting_names(), ["as-is"]);
    }

    #[test]
    fn until_decided_goes_to_the_whole_run_and_resumes_the_undecided() {
        let prof = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/rt-push-ipi.toml");
        let p = plan_of(&args(&[
            "--profile",
            prof,
            "--kernel",
            "debian:6.12",
            "--until-decided",
        ]))
        .unwrap();
        let whole = p.plan_for(&p.whole());
        assert!(whole.choices.until_decided);
        let g = guest_reads(&whole);
        assert_eq!(g.trials, 8);
        assert!(g.until.is_some());
        // A resumed part runs its remaining rounds in full: the merge decides.
        let later = resume::parts_from(&p.order, 5);
        assert!(!p.plan_for(&later[0]).choices.until_decided);
        // Boot 1 brought 3 rounds home: "pi" 3/3 vs 0/3 (open), the others 0/3 vs 0/3
        // (undecidable), then round 4's first trial. What is left: "pi" alone, from
        // round 4's second setting on.
        let dir = crate::testkit::private_dir("until-resume");
        let part = p.whole();
        let (s0, s1) = (&p.order.settings[0], &p.order.settings[1]);
        let mut lines = String::new();
        let mut add = |s: &str, v: &str, t: u32, w: f64| {
            let r = crate::sweep::decide::tests::rec(s, v, t, Some(w));
            lines.push_str(&serde_json::to_string(&r).unwrap());
            lines.push('\n');
        };
        let (good, bad) = if s0 == "RT_PUSH_IPI" {
            (1.0, 1500.0)
        } else {
            (1500.0, 1.0)
        };
        for t in 0..3 {
            for v in &p.order.variants {
                add(s0, v, t, if v == "pi" { good } else { 1500.0 });
            }
            for v in &p.order.variants {
                add(s1, v, t, if v == "pi" { bad } else { 1500.0 });
            }
        }
        add(s0, "pi", 3, good);
        std::fs::create_dir_all(dir.join("p0")).unwrap();
        std::fs::write(dir.join("p0").join(results::SAMPLES_JSONL), lines).unwrap();
        let boots = vec![resume::Boot {
            dir: dir.clone(),
            parts: vec![part],
        }];
        let left = p.parts_left(&boots, boots[0].finished());
        assert_eq!(
            left,
            vec![
                resume::Part {
                    round0: 3,
                    trials: 1,
                    settings: vec![s1.clone()],
                    variants: vec!["pi".into()],
                },
                resume::Part {
                    round0: 4,
                    trials: 4,
                    settings: p.order.settings.clone(),
                    variants: vec!["pi".into()],
                },
            ]
        );
        // A livefx rig is refused before anything boots.
        let lf = concat!(env!("CARGO_MANIFEST_DIR"), "/rigs/livefx.toml");
        let e = plan_of(&[lf, "--kernel", "debian:6.12", "--until-decided"])
            .err()
            .unwrap();
        assert!(e.contains("livefx"), "{e}");
    }

    #[test]
    fn jack_livefx_runs_under_a_jackd_on_the_loopback_card() {
        let rig = concat!(env!("CARGO_MANIFEST_DIR"), "/rigs/livefx-loopback.toml");
        let a = |extra: &[&str]| {
            let mut v = vec![rig, "--kernel", "debian:6.12"];
            v.extend(extra);
            plan_of(&v)
        };
        let p = a(&["--backend", "jack", "--period", "512"]).unwrap();
        assert!(p.audio);
        assert_eq!(&p.command[..2], &["/bin/sh".to_string(), "-c".to_string()]);
        let s = &p.command[2];
        assert!(
            s.contains("-P hw:Loopback,0 -C hw:Loopback,1 -r 48000 -p 512 -n 2"),
            "{s}"
        );
        assert!(
            s.contains(
                "JACK_DEFAULT_SERVER=xrunrig /bin/xrunrig run-plan /xrunrig/plan/p0.json --out /results/x/p0"
            ),
            "{s}"
        );
        // The server is started as the plan asks: here the first setting's period.
        let periods = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/audio-periods.toml");
        let p = a(&["--profile", periods, "--backend", "jack"]).unwrap();
        assert!(
            p.command[2].contains("-r 48000 -p 128 -n 2"),
            "{:?}",
            p.command
        );
        // Other backends run as they are; the duration reaches the guest exactly.
        let p = a(&["--backend", "clock", "--duration", "1.5"]).unwrap();
        assert_eq!(p.command[0], "/bin/xrunrig");
        let g = guest_reads(&p.plan_for(&p.whole()));
        assert_eq!(g.choices.audio.duration_ns, Some(1_500_000_000));
        assert_eq!(g.choices.audio.backend, Some(BackendChoice::Clock));
    }

    #[test]
    fn plan_refuses_bad_input() {
        let e = plan_of(&args(&["--kernel", "debian:6.12", "--cpus", "2"]))
            .err()
            .unwrap();
        assert!(e.contains("--cpus 4"), "{e}");
        let e = plan_of(&args(&["--kernel", "debian:6.12", "--variant", "nope"]))
            .err()
            .unwrap();
        assert!(e.contains("no variant 'nope'"), "{e}");
        // Refused at the edge, before any plan is made.
        for (flag, bad) in [
            ("--memory", "lots"),
            ("--accel", "hvf"),
            ("--cpus", "65"),
            ("--trials", "0"),
            ("--max-time", "10 parsecs"),
            ("--backend", "pulse"),
            ("--boots", "0"),
            ("--boots", "51"),
        ] {
            let e = try_opts(&args(&["--kernel", "debian:6.12", flag, bad])).unwrap_err();
            assert!(e.contains(flag) && e.contains(bad), "{flag} {bad}: {e}");
        }
    }

    /// Boots interleave A B, B A, A B: a drift of the machine falls on both kernels
    /// alike; each boot its own directory, `<kernel>/boot-<n>`.
    #[test]
    fn boots_run_interleaved_each_in_its_own_directory() {
        assert_eq!(
            boot_order(2, 3),
            vec![(0, 1), (1, 1), (1, 2), (0, 2), (0, 3), (1, 3)]
        );
        assert_eq!(boot_order(1, 3), vec![(0, 1), (0, 2), (0, 3)]);
        assert_eq!(boot_order(3, 1), vec![(0, 1), (1, 1), (2, 1)]);
        let o = try_opts(&args(&[
            "--kernel",
            "debian:6.12",
            "--kernel",
            "debian:6.1",
            "--boots",
            "2",
            "--out",
            "/tmp/b",
        ]))
        .unwrap();
        assert_eq!(o.guest.as_ref().unwrap().boots, 2);
        let k = |r: &str| kernel::Kernel {
            label: r.into(),
            image: PathBuf::new(),
            boot: PathBuf::new(),
            boot_note: String::new(),
            release: r.into(),
            modules: None,
            package: None,
            build: None,
        };
        let (base, dirs) = result_dirs(&o, "rig", &[k("6.12.1"), k("6.1.2")], 2);
        assert_eq!(base, Some(PathBuf::from("/tmp/b")));
        let got: Vec<(usize, usize, String)> = dirs
            .into_iter()
            .map(|(k, n, d)| (k, n, d.display().to_string()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 1, "/tmp/b/6.12.1/boot-1".to_string()),
                (1, 1, "/tmp/b/6.1.2/boot-1".to_string()),
                (1, 2, "/tmp/b/6.1.2/boot-2".to_string()),
                (0, 2, "/tmp/b/6.12.1/boot-2".to_string()),
            ]
        );
        // One boot each: the kernels' directories as before.
        let (_, dirs) = result_dirs(&o, "rig", &[k("6.12.1"), k("6.12.1")], 1);
        let got: Vec<String> = dirs.iter().map(|d| d.2.display().to_string()).collect();
        assert_eq!(got, ["/tmp/b/6.12.1", "/tmp/b/6.12.1-2"]);
        // --until-decided with --boots decides across the boots of two kernels: one
        // kernel is refused, saying so; two are planned with the guests' own rule off
        // (each boot runs its trials whole), one setting being enough.
        let until_of = |rig: &'static str, kernels: &[&'static str], boots: &'static str| {
            let mut v = vec![rig];
            for k in kernels {
                v.extend(["--kernel", k]);
            }
            v.extend([
                "--boots",
                boots,
                "--until-decided",
                "--profile",
                concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/rt-push-ipi.toml"),
                "--setting",
                "NO_RT_PUSH_IPI",
                "--variant",
                "pi",
            ]);
            plan_of(&v)
        };
        let until = |kernels: &[&'static str]| {
            until_of(
                concat!(env!("CARGO_MANIFEST_DIR"), "/rigs/pi-boost-affinity.toml"),
                kernels,
                "3",
            )
        };
        let e = until(&["debian:6.12"]).err().unwrap();
        assert!(
            e.contains("--until-decided with --boots") && e.contains("exactly two --kernel"),
            "{e}"
        );
        let p = until(&["debian:6.12", "debian:6.12"]).unwrap();
        assert_eq!(
            p.across_boots
                .as_ref()
                .map(|r| (r.looks_max(), r.metrics.clone())),
            Some((2, vec!["wait".to_string()]))
        );
        assert!(!p.plan.choices.until_decided && p.plan.until.is_none());
        assert!(!p.plan_for(&p.whole()).choices.until_decided);
        // An audio rig's criterion (no deadline miss): compare's dropouts and the
        // trials that finished (a hung trial fails it too).
        let p = until_of(
            concat!(env!("CARGO_MANIFEST_DIR"), "/rigs/livefx-push-ipi.toml"),
            &["debian:6.12", "debian:6.12"],
            "2",
        )
        .unwrap();
        assert_eq!(
            p.across_boots.map(|r| r.metrics),
            Some(vec!["dropouts".to_string(), "trials finished".to_string()])
        );
    }
}
