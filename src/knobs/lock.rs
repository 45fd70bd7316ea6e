//! One run at a time per machine: an advisory lock (flock) on `run.lock` in the state
//! directory, taken before anything else a run or `xrunrig restore` does and held until
//! the process ends (the kernel drops it then, even on SIGKILL). Who holds it is written
//! beside it, in `run.lock.info`, for the error a second run gets.

use super::state::StateDir;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::os::fd::AsRawFd;

pub const LOCK_FILE: &str = "run.lock";
pub const LOCK_INFO: &str = "run.lock.info";

/// The holder of the lock, as it wrote itself down.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    pub command: String,
    pub started: String,
}

/// The lock, held while this lives.
pub struct RunLock {
    _file: File,
    dir: StateDir,
}

impl RunLock {
    /// Takes the lock on the (checked) state directory for a run or a restore.
    pub fn for_run() -> Result<RunLock, String> {
        RunLock::acquire(&super::state()?)
    }

    /// Takes the lock in `dir`. Err names the holder when another has it.
    pub fn acquire(dir: &StateDir) -> Result<RunLock, String> {
        let path = dir.join(LOCK_FILE);
        let file = dir
            .open_rw(LOCK_FILE)
            .map_err(|e| format!("cannot open the run lock {}: {e}", path.display()))?;
        loop {
            // SAFETY: flock on a descriptor this File owns.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r == 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => return Err(held_message(dir)),
                _ => return Err(format!("cannot lock {}: {e}", path.display())),
            }
        }
        let me = Holder {
            pid: std::process::id(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started: crate::sys::utc_now().0,
        };
        let text = serde_json::to_string(&me).map_err(|e| e.to_string())?;
        dir.write_atomic(LOCK_INFO, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", dir.join(LOCK_INFO).display()))?;
        Ok(RunLock {
            _file: file,
            dir: dir.clone(),
        })
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while still held, so a later holder's info is never removed.
        let _ = self.dir.remove(LOCK_INFO);
    }
}

/// Who holds the lock, read from the info file (the holder may be between taking the
/// lock and writing it: a few tries).
pub fn holder(dir: &StateDir) -> Option<Holder> {
    for _ in 0..10 {
        if let Ok(Some(t)) = dir.read(LOCK_INFO)
            && let Ok(h) = serde_json::from_str::<Holder>(&String::from_utf8_lossy(&t))
        {
            return Some(h);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

fn held_message(dir: &StateDir) -> String {
    let (who, stop) = match holder(dir) {
        Some(h) => (
            format!(
                "pid {}, started {}: {}",
                h.pid,
                h.started,
                h.command.chars().take(300).collect::<String>()
            ),
            format!("or stop it (kill -INT {})", h.pid),
        ),
        None => (
            "its pid is not written down yet".to_string(),
            "or stop it".to_string(),
        ),
    };
    format!(
        "another xrunrig run holds {} ({who}). Runs take the machine one at a time, so \
         this one changed nothing and did not start: wait for that run to finish, {stop}",
        dir.join(LOCK_FILE).display()
    )
}
