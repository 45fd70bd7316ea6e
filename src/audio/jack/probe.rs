//! Does a JACK server answer? A client connects without starting a server and reads
//! the server's rate and period. Used by `--backend auto`, by a run that names JACK
//! (before anything is changed) and by the doctor (bounded in time).

use super::server::{DEFAULT_SERVER, Identity, SERVER_ENV, identify, loaded_library};
use crate::audio::{Available, Probe, ProbeSpec};
use jack::{Client, ClientOptions};

/// The probe's client name unless the spec names one.
pub const PROBE_CLIENT: &str = "xrunrig-probe";

/// Points this process at a named server (the way jack_* tools take `-s NAME`).
pub(crate) fn select_server(device: &Option<String>) {
    if let Some(name) = device {
        // SAFETY: called while the process has no other thread reading the environment
        // concurrently (before any JACK client exists; libjack reads it at open).
        unsafe { std::env::set_var(SERVER_ENV, name) };
    }
}

/// The server a client connects to: the one named, else `$JACK_DEFAULT_SERVER`, else
/// "default".
pub fn server_name(device: &Option<String>) -> String {
    device
        .clone()
        .or_else(|| std::env::var(SERVER_ENV).ok())
        .unwrap_or_else(|| DEFAULT_SERVER.into())
}

/// Without libjack the jack crate's first call panics inside jack-sys: ask first.
pub(crate) fn library() -> Result<(), String> {
    jack::jack_sys::library()
        .map(|_| ())
        .map_err(|e| format!("no JACK client library ({e}): JACK is not installed"))
}

/// Which server implementation this process's libjack talks to (jackd2 or PipeWire),
/// from `jack_get_version_string` (which the jack crate does not wrap) and the library
/// file mapped; None when libjack is not loaded.
pub fn identity() -> Option<Identity> {
    let lib = jack::jack_sys::library().ok()?;
    // SAFETY: the symbol has this signature in every libjack (jack/jack.h); it returns a
    // static string.
    let text = unsafe {
        let f = lib
            .get::<unsafe extern "C" fn() -> *const std::ffi::c_char>(b"jack_get_version_string")
            .ok()?;
        let p = f();
        if p.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    Some(identify(&text, loaded_library(&maps)))
}

pub(super) fn probe(spec: &ProbeSpec) -> Probe {
    select_server(&spec.device);
    let server = server_name(&spec.device);
    library()?;
    let name = spec.client.unwrap_or(PROBE_CLIENT);
    let connect = move || {
        // libjack's "cannot connect" lines while it looks: the reason we give is enough.
        jack::set_logger(jack::LoggerType::None);
        Client::new(name, ClientOptions::NO_START_SERVER)
            .map(|(c, _)| (c.sample_rate(), c.buffer_size()))
            .map_err(|e| e.to_string())
    };
    let answer = match spec.limit {
        None => connect(),
        // A client that hangs is left to the process exit after `limit`.
        Some(limit) => {
            // Room for the answer: a late thread's send does not block it.
            let (tx, rx) = crossbeam::channel::bounded(1);
            std::thread::Builder::new()
                .name("xr-probe-jack".into())
                .spawn(move || {
                    let _ = tx.send(connect());
                })
                .map_err(|e| format!("cannot start a probe thread: {e}"))?;
            rx.recv_timeout(limit).map_err(|_| {
                format!(
                    "JACK server '{server}' did not answer within {} s",
                    limit.as_secs()
                )
            })?
        }
    };
    match answer {
        Ok((rate, period)) => Ok(Available {
            text: format!(
                "JACK server '{server}' answered ({}{rate} Hz, period {period})",
                identity().map_or(String::new(), |i| format!("{}, ", i.describe()))
            ),
            device: server,
            rate: Some(rate),
            period: Some(period),
        }),
        Err(e) => Err(format!("no JACK server '{server}' answered ({e})")),
    }
}
