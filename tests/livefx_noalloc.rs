//! Proves the RT paths allocate nothing: a counting global allocator counts every Rust
//! allocation, and this binary's own `malloc`, `calloc`, `realloc`, `posix_memalign`,
//! `aligned_alloc` and `memalign` (interposed: the executable's definitions win over
//! libc's for every shared library, libjack and alsa-lib included) count every C one,
//! made on a thread while it is marked real-time. The livefx callback and each worker,
//! and the engine's rig threads, mark themselves through `engine::thread::RT_HOOK` when
//! they enter their RT loop (after their setup, which may allocate) and unmark when they
//! leave. A livefx run with workers, PI locks, injected overruns and the loopback check
//! (clock and JACK), the ALSA backend's playback callback and capture sink driven as
//! cpal's threads drive them (no card needed), and an engine trial using every step
//! kind must count zero. Needs root (SCHED_FIFO); the JACK case needs jackd2 (CI
//! installs it).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
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
/// C allocations on marked threads (Rust's also reach `malloc`, so they count here too).
static C_ALLOCS: AtomicU64 = AtomicU64::new(0);
static ENTERED: AtomicU64 = AtomicU64::new(0);

/// Where the first counted allocation was made, for the failure message.
static FIRST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
static CHECKED: AtomicBool = AtomicBool::new(false);

/// Keeps the first counted allocation's backtrace (unmarked while taking it: taking it
/// allocates).
fn remember() {
    // Not the self-check's own allocations.
    if CHECKED.load(Ordering::Relaxed) && FIRST.get().is_none() {
        IN_RT.with(|f| f.set(false));
        let _ = FIRST.set(std::backtrace::Backtrace::force_capture().to_string());
        IN_RT.with(|f| f.set(true));
    }
}

#[inline]
fn note() {
    if IN_RT.try_with(|f| f.get()).unwrap_or(false) {
        RT_ALLOCS.fetch_add(1, Ordering::SeqCst);
        remember();
    }
}

#[inline]
fn note_c() {
    if IN_RT.try_with(|f| f.get()).unwrap_or(false) {
        C_ALLOCS.fetch_add(1, Ordering::SeqCst);
        remember();
    }
}

/// The first counted allocation's backtrace, if any.
fn first() -> &'static str {
    FIRST.get().map_or("", String::as_str)
}

// glibc's own entry points (exported for exactly this: a program that defines malloc and
// forwards). Calling them, not dlsym(RTLD_NEXT), needs no allocation to find them.
unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(n: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
}

// SAFETY (all below): each forwards to glibc's allocator with the same contract as the
// symbol it replaces; counting touches a const thread-local Cell and an atomic only.
/// Counts, then glibc's own.
///
/// # Safety
/// As malloc(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    note_c();
    unsafe { __libc_malloc(size) }
}

/// Counts, then glibc's own.
///
/// # Safety
/// As calloc(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    note_c();
    unsafe { __libc_calloc(n, size) }
}

/// Counts, then glibc's own.
///
/// # Safety
/// As realloc(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    note_c();
    unsafe { __libc_realloc(p, size) }
}

/// Counts, then glibc's own.
///
/// # Safety
/// As memalign(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    note_c();
    unsafe { __libc_memalign(align, size) }
}

/// Counts, then glibc's own.
///
/// # Safety
/// As aligned_alloc(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    note_c();
    unsafe { __libc_memalign(align, size) }
}

/// Counts, then glibc's own.
///
/// # Safety
/// As posix_memalign(3).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    note_c();
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    let p = unsafe { __libc_memalign(align, size) };
    if p.is_null() {
        return libc::ENOMEM;
    }
    unsafe { *out = p };
    0
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

/// The counters themselves work: a Rust allocation on a marked thread is counted, and
/// so is a C one made inside a shared library (glibc's strdup calls malloc through its
/// PLT, as libjack and alsa-lib do), and nothing on an unmarked thread.
fn counter_sees_allocations() {
    let (r0, c0) = (
        RT_ALLOCS.load(Ordering::SeqCst),
        C_ALLOCS.load(Ordering::SeqCst),
    );
    std::thread::spawn(|| {
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
        drop(v);
        IN_RT.with(|f| f.set(true));
        let v: Vec<u64> = std::hint::black_box(Vec::with_capacity(16));
        drop(v);
        IN_RT.with(|f| f.set(false));
    })
    .join()
    .unwrap();
    assert_eq!(RT_ALLOCS.load(Ordering::SeqCst), r0 + 1);
    let c1 = C_ALLOCS.load(Ordering::SeqCst);
    assert!(c1 > c0, "Rust's allocation reached the C malloc");
    std::thread::spawn(|| {
        IN_RT.with(|f| f.set(true));
        // SAFETY: a valid C string; the copy is freed at once (black_box: else the
        // compiler drops the unused strdup and free as a pair).
        unsafe {
            let p = std::hint::black_box(libc::strdup(c"xrunrig".as_ptr()));
            libc::free(p.cast());
        }
        IN_RT.with(|f| f.set(false));
    })
    .join()
    .unwrap();
    assert_eq!(
        C_ALLOCS.load(Ordering::SeqCst),
        c1 + 1,
        "libc's strdup's malloc is seen"
    );
    assert_eq!(RT_ALLOCS.load(Ordering::SeqCst), r0 + 1);
    RT_ALLOCS.store(0, Ordering::SeqCst);
    C_ALLOCS.store(0, Ordering::SeqCst);
    CHECKED.store(true, Ordering::SeqCst);
}

/// (Rust, C) allocations counted on marked threads since the counters were reset.
fn counted() -> (u64, u64) {
    (
        RT_ALLOCS.load(Ordering::SeqCst),
        C_ALLOCS.load(Ordering::SeqCst),
    )
}

fn run(
    kind: BackendKind,
    device: Option<String>,
    period: u32,
) -> (trial::Outcome, (u64, u64), u64) {
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
            journal: None,
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
    (o, counted(), ENTERED.load(Ordering::SeqCst))
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
    assert_eq!(
        allocs,
        (0, 0),
        "(Rust, C) allocations on RT threads during the run; the first: {}",
        first()
    );
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
    assert_eq!(
        allocs,
        (0, 0),
        "(Rust, C) allocations on RT threads during the run; the first: {}",
        first()
    );
}

/// A process that does what a light rig does per period: a tone out, the input looked
/// at; it marks its thread RT from `rt_init` (after the backend's setup) to `end`.
struct Tone {
    phase: f32,
    cycles: std::sync::Arc<AtomicU64>,
    heard: std::sync::Arc<AtomicU64>,
    xruns: std::sync::Arc<AtomicU64>,
}

impl xrunrig::audio::Process for Tone {
    fn rt_init(&mut self) {
        hook(true);
    }
    fn cycle(&mut self, c: &mut xrunrig::audio::Cycle) -> bool {
        for o in c.output.iter_mut() {
            *o = 0.1 * self.phase.sin();
            self.phase = (self.phase + 0.06) % std::f32::consts::TAU;
        }
        if c.input.iter().any(|&x| x != 0.0) {
            self.heard.fetch_add(1, Ordering::Relaxed);
        }
        self.xruns
            .fetch_add(u64::from(c.xruns_before), Ordering::Relaxed);
        self.cycles.fetch_add(1, Ordering::Relaxed);
        true
    }
    fn end(&mut self) {
        hook(false);
    }
}

/// The ALSA backend's RT code without a card: its playback callback (in snd-dummy's
/// sample format, i16, through the integer conversion; and f32), reading the loopback
/// ring, and the capture sink filling it, each on its own thread as cpal runs them,
/// with an underrun, a callback larger than the preallocated buffer, and the stop.
#[test]
fn alsa_callback_and_capture_allocate_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = rt::RT_HOOK.set(hook);
    counter_sees_allocations();
    ENTERED.store(0, Ordering::SeqCst);
    let (channels, period) = (2u16, 256usize);
    let (cycles, heard, xruns): (
        std::sync::Arc<AtomicU64>,
        std::sync::Arc<AtomicU64>,
        std::sync::Arc<AtomicU64>,
    ) = Default::default();
    let tone = Tone {
        phase: 0.0,
        cycles: std::sync::Arc::clone(&cycles),
        heard: std::sync::Arc::clone(&heard),
        xruns: std::sync::Arc::clone(&xruns),
    };
    let sched = xrunrig::engine::thread::Sched::fifo(70, vec![]);
    let (mut cb, sink) = xrunrig::audio::alsa::parts(Box::new(tone), sched, channels, 48000, true);
    let mut sink = sink.expect("the loopback's capture side");
    const N: usize = 400;
    let capture = std::thread::spawn(move || {
        let mut frames = vec![0i16; period * channels as usize];
        for (i, x) in frames.iter_mut().enumerate() {
            *x = (i as i16 % 100) + 1;
        }
        sink.push(&frames); // the first call raises the thread: setup, not counted
        hook(true);
        for _ in 0..N {
            sink.push(&frames);
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        hook(false);
    });
    let playback = std::thread::spawn(move || {
        let mut conv = xrunrig::audio::alsa::Convert::new(
            xrunrig::rig::limits::MAX_PERIOD as usize * channels as usize,
        );
        let mut data = vec![0i16; period * channels as usize];
        let mut big = vec![0f32; 20_000 * channels as usize];
        let mut last = vec![0f32; period * channels as usize];
        for i in 0..N {
            if i == N / 2 {
                cb.xrun();
                cb.cycle(&mut big, 0);
            }
            conv.run(&mut data, 2_000_000, &mut |d: &mut [f32], q: u64| {
                cb.cycle(d, q)
            });
            std::thread::sleep(std::time::Duration::from_micros(500));
        }
        cb.stop();
        cb.cycle(&mut last, 0);
        assert!(cb.ended());
        data
    });
    capture.join().unwrap();
    let data = playback.join().unwrap();
    assert!(
        data.iter().any(|&x| x != 0),
        "the tone reached the card's buffer"
    );
    assert_eq!(cycles.load(Ordering::SeqCst), N as u64 + 1);
    assert!(
        heard.load(Ordering::SeqCst) > 0,
        "the loopback ring carried the capture"
    );
    assert_eq!(xruns.load(Ordering::SeqCst), 1);
    assert_eq!(
        ENTERED.load(Ordering::SeqCst),
        2,
        "playback and capture were marked"
    );
    assert_eq!(
        counted(),
        (0, 0),
        "(Rust, C) allocations on the ALSA RT threads; the first: {}",
        first()
    );
}

/// The engine's rig threads (src/engine/trial.rs): a trial using every step kind but the
/// migrate-disabled run (its seccomp filter is set up before the start) on PI locks.
#[test]
fn engine_thread_loops_allocate_nothing() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !root() {
        return;
    }
    let _ = rt::RT_HOOK.set(hook);
    counter_sees_allocations();
    ENTERED.store(0, Ordering::SeqCst);
    let on = xrunrig::sys::online_cpus();
    // b spins (spin_until) while a works: on another CPU.
    if !xrunrig::testkit::have(on.len() >= 2, "a second online CPU") {
        return;
    }
    let (cpu, other) = (on[on.len() - 1], on[0]);
    let rig = xrunrig::rig::parse(
        Path::new("noalloc.toml"),
        &format!(
            r#"
name = "noalloc"
trials = 1
trial_timeout = "5 s"
[locks.M]
protocol = "inherit"
[[threads]]
name = "a"
policy = "fifo"
priority = 10
cpus = [{cpu}]
steps = [
  {{ barrier = "go" }},
  {{ lock = "M" }}, {{ signal = "locked" }}, {{ run = "2 ms" }}, {{ unlock = "M" }},
  {{ repeat = 50, steps = [ {{ mark = "a" }}, {{ spin = "20 us" }}, {{ sleep = "100 us" }} ] }},
  {{ signal = "done" }},
]
[[threads]]
name = "b"
policy = "fifo"
priority = 20
cpus = [{other}]
steps = [
  {{ barrier = "go" }},
  {{ wait = "locked" }}, {{ mark = "want" }}, {{ lock = "M" }}, {{ mark = "got" }}, {{ unlock = "M" }},
  {{ spin_until = "done" }},
  {{ repeat_for = "20 ms", steps = [ {{ run = "50 us" }}, {{ sleep = "200 us" }} ] }},
]
[metrics.wait]
from = "b.want"
to = "b.got"
"#
        ),
    )
    .expect("rig");
    let r = xrunrig::engine::trial::run_trial(
        &rig.variants[0].plan,
        5_000_000_000,
        &AtomicBool::new(false),
    );
    assert!(
        matches!(r.status, xrunrig::engine::trial::TrialStatus::Ok),
        "{:?} {:?}",
        r.status,
        r.threads
    );
    assert_eq!(r.marks.iter().map(|m| m.len()).sum::<usize>(), 52);
    assert_eq!(
        ENTERED.load(Ordering::SeqCst),
        2,
        "both threads were marked"
    );
    assert_eq!(
        counted(),
        (0, 0),
        "(Rust, C) allocations on the rig threads; the first: {}",
        first()
    );
}
