//! A JACK server's period, read and set as a client: how a period a run changed and
//! journaled (`knobs::JackPeriodJournal`) is put back by the next start or
//! `xrunrig restore` after the run was killed. Bounded in time: a server that hangs is
//! an error, not a hang.

use super::probe::library;
use super::server::{DEFAULT_SERVER, SERVER_ENV};
use jack::{Client, ClientOptions};
use std::io;
use std::time::Duration;

/// The client name on the graph while the period is read or set.
pub const RESTORE_CLIENT: &str = "xrunrig-restore";

/// Connects to server `server` (never starting one) and runs `f` with the client.
/// NotFound when no server of that name answers.
fn with_client<T: Send + 'static>(
    server: &str,
    f: impl FnOnce(&Client) -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    library().map_err(io::Error::other)?;
    // Set only when it would change which server libjack picks: the emergency path
    // runs this beside other threads, where changing the environment is a race.
    let current = std::env::var(SERVER_ENV).ok();
    let picks = current.as_deref().unwrap_or(DEFAULT_SERVER);
    if picks != server {
        // SAFETY: libjack reads the variable at client open; this runs before the run's
        // own clients (at start, or from the stream that already named this server).
        unsafe { std::env::set_var(SERVER_ENV, server) };
    }
    let name = server.to_string();
    // Room for the answer: a thread that answers after the timeout still exits.
    let (tx, rx) = crossbeam::channel::bounded(1);
    std::thread::Builder::new()
        .name("xr-jack-period".into())
        .spawn(move || {
            jack::set_logger(jack::LoggerType::None);
            let r = match Client::new(RESTORE_CLIENT, ClientOptions::NO_START_SERVER) {
                Ok((c, _)) => f(&c),
                Err(e) => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no JACK server '{name}' answered ({e})"),
                )),
            };
            let _ = tx.send(r);
        })?;
    rx.recv_timeout(Duration::from_secs(10)).map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("JACK server '{server}' did not answer within 10 s"),
        )
    })?
}

/// The server's period (frames).
pub fn server_period(server: &str) -> io::Result<u32> {
    with_client(server, |c| Ok(c.buffer_size()))
}

/// Sets the server's period and reads it back.
pub fn set_server_period(server: &str, frames: u32) -> io::Result<()> {
    with_client(server, move |c| {
        c.set_buffer_size(frames).map_err(io::Error::other)?;
        let back = c.buffer_size();
        if back == frames {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "set the period to {frames} but it reads {back}"
            )))
        }
    })
}
