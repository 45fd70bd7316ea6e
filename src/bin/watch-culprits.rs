//! Known causes of xruns, each logging its own windows as ground truth, for checking
//! `xrunrig watch` on a machine (tests/watch.rs uses it; a user can too): a small JACK
//! client that is not xrunrig's rig (fixed work per cycle, an optional overrun, an
//! optional process-shared PI mutex), a SCHED_FIFO spinner, and a PI-lock holder that a
//! FIFO hog keeps off its CPU while it holds the lock. Each writes JSON lines
//! `{"kind", "start_ns", "end_ns", "tid", ...}` (CLOCK_MONOTONIC) to its --log.
//!
//!   watch-culprits client  --server S --cpu 1 --work-us 300 [--overrun-every 50 --overrun-us 30000] [--lock /dev/shm/x]
//!   watch-culprits spinner --cpu 1 --prio 99 --every-ms 700 --burst-ms 40
//!   watch-culprits holder  --cpu 0 --prio 10 --lock /dev/shm/x --every-ms 700 --hog-prio 90 --hog-ms 40

use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use xrunrig::engine::thread::{Sched, apply_current};
use xrunrig::sys::{gettid, now_ns};

#[derive(Parser)]
#[command(
    name = "watch-culprits",
    about = "Known causes of xruns, with ground truth"
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// Ground truth, one JSON line per window.
    #[arg(long, global = true, default_value = "/dev/stdout")]
    log: PathBuf,
    /// Seconds to run.
    #[arg(long, global = true, default_value_t = 10.0)]
    duration: f64,
}

#[derive(Subcommand)]
enum Cmd {
    /// A JACK client doing fixed work per cycle on one CPU.
    Client {
        #[arg(long)]
        server: Option<String>,
        #[arg(long, default_value = "victim")]
        name: String,
        #[arg(long, default_value_t = 1)]
        cpu: usize,
        #[arg(long, default_value_t = 200)]
        work_us: u64,
        /// Every Nth cycle works --overrun-us instead (0: never).
        #[arg(long, default_value_t = 0)]
        overrun_every: u64,
        #[arg(long, default_value_t = 0)]
        overrun_us: u64,
        /// A process-shared PI mutex (made by `holder`) taken around the work each cycle.
        #[arg(long)]
        lock: Option<PathBuf>,
    },
    /// A SCHED_FIFO thread that spins in bursts on one CPU.
    Spinner {
        #[arg(long, default_value_t = 1)]
        cpu: usize,
        #[arg(long, default_value_t = 99)]
        prio: i32,
        #[arg(long, default_value_t = 700)]
        every_ms: u64,
        #[arg(long, default_value_t = 40)]
        burst_ms: u64,
    },
    /// Holds a PI mutex while a FIFO hog takes its CPU.
    Holder {
        #[arg(long, default_value_t = 0)]
        cpu: usize,
        #[arg(long, default_value_t = 10)]
        prio: i32,
        #[arg(long)]
        lock: PathBuf,
        #[arg(long, default_value_t = 700)]
        every_ms: u64,
        #[arg(long, default_value_t = 90)]
        hog_prio: i32,
        #[arg(long, default_value_t = 40)]
        hog_ms: u64,
    },
}

/// A window of ground truth.
struct Window {
    kind: &'static str,
    start_ns: u64,
    end_ns: u64,
    tid: i32,
    other_tid: i32,
}

fn log_line(out: &mut impl Write, w: &Window) {
    let _ = writeln!(
        out,
        "{{\"kind\":\"{}\",\"start_ns\":{},\"end_ns\":{},\"tid\":{},\"other_tid\":{}}}",
        w.kind, w.start_ns, w.end_ns, w.tid, w.other_tid
    );
    let _ = out.flush();
}

fn spin_until(t_ns: u64) {
    while now_ns() < t_ns {
        std::hint::spin_loop();
    }
}

/// A pthread mutex in a shared file, PI and process-shared.
struct SharedMutex {
    ptr: *mut libc::pthread_mutex_t,
}

// SAFETY: the mutex is process-shared by construction; the pointer is to a mapping
// that lives as long as this value.
unsafe impl Send for SharedMutex {}
unsafe impl Sync for SharedMutex {}

impl SharedMutex {
    fn map(path: &PathBuf, create: bool) -> SharedMutex {
        let size = std::mem::size_of::<libc::pthread_mutex_t>();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        f.set_len(size as u64).expect("size the mutex file");
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of a file of that size.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert!(
            p != libc::MAP_FAILED,
            "mmap: {}",
            std::io::Error::last_os_error()
        );
        let ptr = p as *mut libc::pthread_mutex_t;
        if create {
            // SAFETY: attr and the mapped mutex are valid storage; each call checked.
            unsafe {
                let mut a: libc::pthread_mutexattr_t = std::mem::zeroed();
                assert_eq!(libc::pthread_mutexattr_init(&mut a), 0);
                assert_eq!(
                    libc::pthread_mutexattr_setpshared(&mut a, libc::PTHREAD_PROCESS_SHARED),
                    0
                );
                assert_eq!(
                    libc::pthread_mutexattr_setprotocol(&mut a, libc::PTHREAD_PRIO_INHERIT),
                    0
                );
                assert_eq!(libc::pthread_mutex_init(ptr, &a), 0);
                libc::pthread_mutexattr_destroy(&mut a);
            }
        }
        SharedMutex { ptr }
    }
    fn lock(&self) {
        // SAFETY: an initialised process-shared mutex.
        unsafe { libc::pthread_mutex_lock(self.ptr) };
    }
    fn unlock(&self) {
        // SAFETY: as above, locked by this thread.
        unsafe { libc::pthread_mutex_unlock(self.ptr) };
    }
}

struct Proc {
    cpu: usize,
    work_ns: u64,
    overrun_every: u64,
    overrun_ns: u64,
    lock: Option<SharedMutex>,
    n: u64,
    pinned: bool,
    tx: rtrb::Producer<(u64, u64, i32)>,
    /// Set before deactivation: return at once, so libjack never has to cancel a thread
    /// still inside the callback (a forced unwind through Rust aborts the process).
    ending: Arc<AtomicBool>,
}

impl jack::ProcessHandler for Proc {
    fn process(&mut self, _: &jack::Client, _ps: &jack::ProcessScope) -> jack::Control {
        if !self.pinned {
            self.pinned = true;
            let _ = xrunrig::engine::thread::set_affinity(0, &[self.cpu]);
        }
        if self.ending.load(Ordering::Relaxed) {
            return jack::Control::Continue;
        }
        let t0 = now_ns();
        self.n += 1;
        let over = self.overrun_every > 0 && self.n.is_multiple_of(self.overrun_every);
        let work = if over { self.overrun_ns } else { self.work_ns };
        if let Some(m) = &self.lock {
            m.lock();
            spin_until(t0 + work);
            m.unlock();
        } else {
            spin_until(t0 + work);
        }
        if over {
            let _ = self.tx.push((t0, now_ns(), gettid()));
        }
        jack::Control::Continue
    }
}

fn main() {
    let a = Args::parse();
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.log)
        .unwrap_or_else(|e| panic!("{}: {e}", a.log.display()));
    let end = Instant::now() + Duration::from_secs_f64(a.duration);
    let stop = Arc::new(AtomicBool::new(false));
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(s, stop.clone()).expect("signal handler");
    }
    let running = || Instant::now() < end && !stop.load(Ordering::SeqCst);
    match a.cmd {
        Cmd::Client {
            server,
            name,
            cpu,
            work_us,
            overrun_every,
            overrun_us,
            lock,
        } => {
            if let Some(s) = server {
                // SAFETY: no other thread reads the environment yet.
                unsafe { std::env::set_var("JACK_DEFAULT_SERVER", s) };
            }
            let (client, _) = jack::Client::new(&name, jack::ClientOptions::NO_START_SERVER)
                .expect("connect to JACK");
            // A port, so the server lists this client (and its pid).
            let _port = client
                .register_port("out", jack::AudioOut::default())
                .expect("port");
            let (tx, mut rx) = rtrb::RingBuffer::new(4096);
            let ending = Arc::new(AtomicBool::new(false));
            let p = Proc {
                ending: ending.clone(),
                cpu,
                work_ns: work_us * 1000,
                overrun_every,
                overrun_ns: overrun_us * 1000,
                lock: lock.as_ref().map(|l| SharedMutex::map(l, false)),
                n: 0,
                pinned: false,
                tx,
            };
            let active = client.activate_async((), p).expect("activate");
            while running() {
                std::thread::sleep(Duration::from_millis(20));
                while let Ok((s, e, tid)) = rx.pop() {
                    log_line(
                        &mut out,
                        &Window {
                            kind: "overrun",
                            start_ns: s,
                            end_ns: e,
                            tid,
                            other_tid: 0,
                        },
                    );
                }
            }
            ending.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(200));
            let _ = active.deactivate();
        }
        Cmd::Spinner {
            cpu,
            prio,
            every_ms,
            burst_ms,
        } => {
            apply_current(&Sched::fifo(prio, vec![cpu])).expect("FIFO spinner");
            let tid = gettid();
            while running() {
                std::thread::sleep(Duration::from_millis(every_ms));
                let s = now_ns();
                spin_until(s + burst_ms * 1_000_000);
                log_line(
                    &mut out,
                    &Window {
                        kind: "spin",
                        start_ns: s,
                        end_ns: now_ns(),
                        tid,
                        other_tid: 0,
                    },
                );
            }
        }
        Cmd::Holder {
            cpu,
            prio,
            lock,
            every_ms,
            hog_prio,
            hog_ms,
        } => {
            let m = Arc::new(SharedMutex::map(&lock, true));
            // The hog: woken by the holder once it holds the lock, spins, sleeps again.
            let (go_tx, go_rx) = crossbeam::channel::bounded::<()>(1);
            let (done_tx, done_rx) = crossbeam::channel::bounded::<(u64, u64, i32)>(1);
            std::thread::Builder::new()
                .name("fifo-hog".into())
                .spawn(move || {
                    apply_current(&Sched::fifo(hog_prio, vec![cpu])).expect("FIFO hog");
                    let tid = gettid();
                    while go_rx.recv().is_ok() {
                        let s = now_ns();
                        spin_until(s + hog_ms * 1_000_000);
                        let _ = done_tx.send((s, now_ns(), tid));
                    }
                })
                .expect("hog thread");
            apply_current(&Sched::fifo(prio, vec![cpu])).expect("FIFO holder");
            let tid = gettid();
            while running() {
                std::thread::sleep(Duration::from_millis(every_ms));
                m.lock();
                let held = now_ns();
                // The hog preempts this thread at once (same CPU, higher priority) and
                // runs while the lock is held; this thread stays runnable (it spins, it
                // does not wait for the hog), so it is queued behind the hog.
                let _ = go_tx.send(());
                spin_until(held + hog_ms * 1_000_000 + 2_000_000);
                m.unlock();
                let (s, e, hog) = done_rx.recv().expect("hog");
                log_line(
                    &mut out,
                    &Window {
                        kind: "hog",
                        start_ns: s,
                        end_ns: e,
                        tid,
                        other_tid: hog,
                    },
                );
            }
            drop(go_tx);
            let _ = std::fs::remove_file(&lock);
        }
    }
}
