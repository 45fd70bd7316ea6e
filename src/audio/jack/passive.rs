//! A passive JACK client for `xrunrig watch`: no ports, a process callback that only
//! stamps each cycle (frames, the server's frame time, period start, next deadline, when
//! the callback woke) into an `rtrb` ring, and the server's xrun notifications into
//! `Notes`. It adds next to nothing to the graph it watches: no port, no connection,
//! no allocation, lock or I/O on the process thread. Under PipeWire it also works 40 µs
//! in about half the cycles, a signature that ties PipeWire's profiler rows to these
//! cycles (`watch::pipewire`).

use super::probe::{identity, library, select_server, server_name};
use super::server::{Identity, Implementation};
use super::stream::{Notif, clock_offset, to_mono};
use crate::audio::Notes;
use crate::sys::now_ns;
use jack::{Client, ClientOptions, Control, ProcessScope};
use std::sync::Arc;

/// The client's name on the graph.
pub const WATCH_CLIENT: &str = "xrunrig-watch";

/// The passive client's extra work under PipeWire (µs): well above the few µs its
/// callback takes, so a row shows it, and a sliver of a period.
pub const SIGNATURE_US: u64 = 40;

/// Whether cycle `index` of the passive client carries the signature: a bit of
/// splitmix64's output, so a run of 48 cycles or more matches no other shift's.
pub fn signature_bit(index: u64) -> bool {
    let mut z = index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & 1 == 1
}

/// One cycle as the passive client saw it (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stamp {
    pub index: u64,
    pub frames: u32,
    /// The server's frame time at the period start (`current_frames`).
    pub frame_time: u32,
    pub start_ns: u64,
    pub deadline_ns: u64,
    /// When this client's callback ran.
    pub wake_ns: u64,
}

struct Stamper {
    tx: rtrb::Producer<Stamp>,
    offset_ns: i64,
    index: u64,
    /// Cycles whose stamp did not fit the ring (the reader fell behind).
    dropped: Arc<std::sync::atomic::AtomicU64>,
    /// Under PipeWire: work a little longer in the cycles `signature_bit` picks, so the
    /// profiler's rows (which carry no time) can be tied to these cycles.
    signature: bool,
}

impl jack::ProcessHandler for Stamper {
    fn process(&mut self, _: &Client, ps: &ProcessScope) -> Control {
        let wake = now_ns();
        let frames = ps.n_frames();
        let s = match ps.cycle_times() {
            Ok(t) => Stamp {
                index: self.index,
                frames,
                frame_time: t.current_frames,
                start_ns: to_mono(t.current_usecs, self.offset_ns),
                deadline_ns: to_mono(t.next_usecs, self.offset_ns),
                wake_ns: wake,
            },
            Err(_) => Stamp {
                index: self.index,
                frames,
                wake_ns: wake,
                ..Default::default()
            },
        };
        if self.signature && signature_bit(self.index) {
            let until = now_ns() + SIGNATURE_US * 1000;
            while now_ns() < until {
                std::hint::spin_loop();
            }
        }
        self.index += 1;
        if self.tx.push(s).is_err() {
            self.dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Control::Continue
    }
}

/// The attached client.
pub struct Passive {
    client: Option<jack::AsyncClient<Notif, Stamper>>,
    rx: rtrb::Consumer<Stamp>,
    pub notes: Arc<Notes>,
    pub dropped: Arc<std::sync::atomic::AtomicU64>,
    pub server: String,
    pub identity: Option<Identity>,
    pub rate: u32,
    pub period: u32,
    pub offset_ns: i64,
}

impl Passive {
    /// Connects to the running server (`server` by name, else `$JACK_DEFAULT_SERVER`,
    /// else the default one) without starting one; `ring` cycles of room between reads.
    pub fn attach(server: &Option<String>, ring: usize) -> Result<Passive, String> {
        select_server(server);
        library()?;
        let name = server_name(server);
        let (client, _) = Client::new(WATCH_CLIENT, ClientOptions::NO_START_SERVER).map_err(|e| {
            format!(
                "cannot connect to the JACK server '{name}': {e}. `xrunrig watch` watches a server \
                 that is already running (yours, or PipeWire's JACK): start your session first, \
                 or name the server with --server NAME"
            )
        })?;
        let offset_ns = clock_offset(&client);
        let (tx, rx) = rtrb::RingBuffer::new(ring);
        let dropped = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let notes = Arc::new(Notes::default());
        let rate = client.sample_rate();
        let period = client.buffer_size();
        let identity = identity();
        let signature = identity
            .as_ref()
            .is_some_and(|i| i.implementation == Implementation::PipeWire);
        let active = client
            .activate_async(
                Notif {
                    notes: notes.clone(),
                },
                Stamper {
                    tx,
                    offset_ns,
                    index: 0,
                    dropped: dropped.clone(),
                    signature,
                },
            )
            .map_err(|e| format!("JACK: cannot activate the watch client: {e}"))?;
        Ok(Passive {
            client: Some(active),
            rx,
            notes,
            dropped,
            server: name,
            identity,
            rate,
            period,
            offset_ns,
        })
    }

    pub fn is_pipewire(&self) -> bool {
        self.identity
            .as_ref()
            .is_some_and(|i| i.implementation == Implementation::PipeWire)
    }

    /// The stamps since the last call, appended to `out`.
    pub fn drain(&mut self, out: &mut Vec<Stamp>) {
        while let Ok(s) = self.rx.pop() {
            out.push(s);
        }
    }

    /// The server's period now (it may change while watching).
    pub fn period_now(&self) -> u32 {
        self.client
            .as_ref()
            .map_or(self.period, |c| c.as_client().buffer_size())
    }

    /// The clients on the graph (from their ports: a client without ports is not listed
    /// by JACK), each with its pid where the server gives it.
    pub fn clients(&self) -> Vec<(String, Option<i32>)> {
        let Some(c) = self.client.as_ref() else {
            return vec![];
        };
        let c = c.as_client();
        let mut names: Vec<String> = c
            .ports(None, None, jack::PortFlags::empty())
            .into_iter()
            .filter_map(|p| p.split_once(':').map(|(n, _)| n.to_string()))
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let pid = client_pid(&n);
                (n, pid)
            })
            .collect()
    }

    /// Deactivates and closes the client.
    pub fn close(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = c.deactivate();
        }
    }
}

impl Drop for Passive {
    fn drop(&mut self) {
        self.close();
    }
}

/// `jack_get_client_pid` (jackd2 has it; other libjacks may not): None when the symbol
/// is missing or the server does not know.
fn client_pid(name: &str) -> Option<i32> {
    let lib = jack::jack_sys::library().ok()?;
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: the symbol has this signature where it exists (jack/jack.h).
    let pid = unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(*const std::ffi::c_char) -> std::ffi::c_int>(
                b"jack_get_client_pid",
            )
            .ok()?;
        f(cname.as_ptr())
    };
    (pid > 0).then_some(pid)
}
