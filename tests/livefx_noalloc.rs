//! Proves the livefx RT path allocates nothing: a counting global allocator counts every
//! allocation made on a thread while it is marked real-time. The callback thread and each
//! worker mark themselves through `livefx::rt::RT_HOOK` when they enter their RT loop
//! (after their setup, which may allocate) and unmark when they leave. A run with
//! workers, PI locks, injected overruns and the loopback check must count zero.
//! Needs root (SCHED_FIFO); the JACK case needs jackd2 (CI installs it).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use xrunrig::audio::{BackendKind, LoopbackSpec, StreamSpec};
use xrunrig::livefx::{config, rt, trial};
use xrunrig::output::summary::TrialStatus;

struct Counting;

thread_local! {
    static IN_RT: Cell<bool> = const { Cell::new(false) };
}
static RT_ALLOCS: AtomicU64 = AtomicU64::new(0);
static ENTERED: AtomicU64 = AtomicU64::new(0);

#[inline]
fn note() {
    if IN_RT.try_with(|f| f.get()).unwrap_or(false) {
        RT_ALLOCS.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn hook(on: bool) {
    IN_RT.with(|f| f.set(on));
    if on {
        ENTERED.fetch_add(1, Ordering::SeqCst);
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

/// livefx needs SCHED_FIFO: root, or a visible skip (see `xrunrig::testkit`).
fn root() -> bool {
    xrunrig::testkit::root()
}

/// The counter itself works: an allocation on a marked thread is counted.
fn counter_sees_allocations() {
    let before = RT_ALLOCS.load(Ordering::SeqCst);
    std::thread::spawn(|| {
        IN_RT.with(|f| f.set(true));
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
        drop(v);
        IN_RT.with(|f| f.set(false));
    })
    .join()
    .unwrap();
    assert_eq!(RT_ALLOCS.load(Ordering::SeqCst), before + 1);
    RT_ALLOCS.store(0, Ordering::SeqCst);
}

fn run(kind: BackendKind, device: Option<String>, period: u32) -> (trial::Outcome, u64, u64) {
    let _ = rt::RT_HOOK.set(hook);
    counter_sees_allocations();
    ENTERED.store(0, Ordering::SeqCst);
    let root_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rig = xrunrig::rig::load(&root_dir.join("rigs/livefx.toml")).expect("rig");
    let mut cfg = rig.livefx.expect("livefx table");
    cfg.duration_ns = 3_000_000_000;
    // The render-ahead kind of livefx-push-ipi.toml too: a worker on a CPU mask that
    // the callback does not wait for, contending for the bus (the path that publishes
    // the holder and records lock holds).
    let bus = cfg.workers[0]
        .plugins
        .iter()
        .find_map(|p| p.lock)
        .expect("a plugin with a lock");
    cfg.workers.push(config::WorkerCfg {
        name: "render".into(),
        priority: 10,
        cpus: xrunrig::sys::online_cpus(),
        waited: false,
        plugins: vec![
            config::PluginCfg {
                work_ns: 400_000,
                jitter_ns: 0,
                lock: Some(bus),
            };
            4
        ],
    });
    let params = trial::Params {
        kind,
        why: "test".into(),
        spec: StreamSpec {
            period,
            rate: 48000,
            nperiods: 2,
            device,
            priority: 70,
            cpus: vec![],
            period_explicit: false,
            loopback: Some(LoopbackSpec {
                playback: None,
                capture: None,
                clock_latency: 2 * period,
            }),
        },
        duration_ns: cfg.duration_ns,
        inject_every: 40,
        inject_factor: 1.5,
        loopback: true,
        progress: false,
    };
    let path = std::env::temp_dir().join(format!(
        "xrr-noalloc-{}-{}.bin",
        kind.name(),
        std::process::id()
    ));
    let o = trial::run(
        &cfg,
        &rig.variants[0].plan,
        &params,
        xrunrig::livefx::trial::Out {
            cycles: &path,
            label: "noalloc",
            marker: None,
        },
        &AtomicBool::new(false),
        &mut |_| {},
    );
    let _ = std::fs::remove_file(&path);
    (
        o,
        RT_ALLOCS.load(Ordering::SeqCst),
        ENTERED.load(Ordering::SeqCst),
    )
}

#[test]
fn clock_rt_path_allocates_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let (o, allocs, entered) = run(BackendKind::Clock, None, 256);
    assert_eq!(o.status, TrialStatus::Ok, "{:?}", o.detail);
    assert!(
        o.stats.counts.cycles > 400,
        "cycles: {}",
        o.stats.counts.cycles
    );
    assert!(
        o.stats.counts.injected > 5 && o.stats.counts.deadline_misses >= o.stats.counts.injected
    );
    assert_eq!(
        entered, 4,
        "the callback, both workers and render entered their RT loops"
    );
    assert_eq!(allocs, 0, "allocations on RT threads during the run");
}

#[test]
fn jack_rt_path_allocates_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let Some(j) = support::jackd::PrivateJackd::start("noalloc", 256) else {
        return;
    };
    let (o, allocs, entered) = run(BackendKind::Jack, Some(j.name.clone()), 256);
    drop(j);
    assert_eq!(o.status, TrialStatus::Ok, "{:?}", o.detail);
    assert!(
        o.stats.counts.cycles > 400,
        "cycles: {}",
        o.stats.counts.cycles
    );
    assert!(o.xruns > 0, "injected overruns show as JACK xruns");
    assert_eq!(
        entered, 4,
        "JACK's process thread, both workers and render entered their RT loops"
    );
    assert_eq!(allocs, 0, "allocations on RT threads during the run");
}
