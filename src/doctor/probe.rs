//! Live probes: facts that are not in a file. Each acts only on a short-lived thread
//! of this process (or a client connection) and leaves nothing behind.

use crate::audio::jack::Jack;
use crate::audio::{Backend, ProbeSpec};
use crate::engine::pimutex::{LockError, PiMutex};
use crate::rig::Protocol;
use std::time::Duration;

/// A JACK server's answer to a client that connected (audio.jack's data).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JackAnswer {
    pub server: String,
    pub rate: u32,
    pub period: u32,
    /// Which implementation answered ("jackd2", "pipewire", "jack") and its description
    /// ("PipeWire 0.3.65 (libjack ...)"), from the libjack this process loaded.
    pub kind: Option<String>,
    pub implementation: Option<String>,
}

fn errno_text(e: i32) -> String {
    let name = match e {
        libc::EPERM => " (EPERM)",
        libc::EINVAL => " (EINVAL)",
        libc::EAGAIN => " (EAGAIN)",
        _ => "",
    };
    format!("{}{name}", std::io::Error::from_raw_os_error(e))
}

/// Sets SCHED_FIFO `prio` on a new thread, reads it back, and sets SCHED_OTHER again
/// before the thread ends, so no RT thread ever outlives the probe.
pub fn try_fifo(prio: i32) -> Result<(), String> {
    let h = std::thread::Builder::new()
        .name("xr-doctor-fifo".into())
        .spawn(move || {
            let sp = libc::sched_param {
                sched_priority: prio,
            };
            // SAFETY: pid 0 is the calling thread; sp is a valid sched_param.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp) } != 0 {
                return Err(errno_text(
                    std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
                ));
            }
            // SAFETY: as above.
            let got = unsafe { libc::sched_getscheduler(0) };
            let back = libc::sched_param { sched_priority: 0 };
            // SAFETY: lowering to SCHED_OTHER is always allowed.
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &back) };
            if got == libc::SCHED_FIFO {
                Ok(())
            } else {
                Err(format!("set without error but reads back policy {got}"))
            }
        })
        .map_err(|e| format!("cannot start a probe thread: {e}"))?;
    h.join()
        .unwrap_or_else(|_| Err("the probe thread panicked".into()))
}

/// A PI mutex held by this thread while another thread waits for it with a short
/// deadline: the wait goes through the kernel (FUTEX_LOCK_PI) and must time out; then
/// the mutex must lock and unlock normally.
pub fn pi_futex() -> Result<String, String> {
    let m = PiMutex::new(Protocol::Inherit).map_err(|e| {
        format!("cannot create a PTHREAD_PRIO_INHERIT mutex: {e} (kernel without CONFIG_FUTEX_PI?)")
    })?;
    let held = m
        .lock()
        .map_err(|e| format!("cannot lock an uncontended PI mutex: {e:?}"))?;
    let waited = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("xr-doctor-pi".into())
            .spawn_scoped(s, || {
                m.lock_until(crate::sys::now_ns() + 20_000_000).map(|_| ())
            })
            .map_err(|e| format!("cannot start a probe thread: {e}"))?
            .join()
            .map_err(|_| "the probe thread panicked".to_string())
    })?;
    drop(held);
    match waited {
        Err(LockError::TimedOut) => {}
        Ok(()) => return Err("a second thread got a PI mutex that was held".into()),
        Err(LockError::Os(e)) => {
            return Err(format!(
                "waiting for a held PI mutex failed: {} (the kernel's PI futex path does not work)",
                errno_text(e)
            ));
        }
    }
    m.lock()
        .map(|_| {
            "a PTHREAD_PRIO_INHERIT mutex timed out in the kernel (FUTEX_LOCK_PI) while held \
             by another thread, then locked"
                .to_string()
        })
        .map_err(|e| format!("cannot lock the PI mutex after release: {e:?}"))
}

pub fn clock_res_ns() -> Result<u64, String> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The kernel log ring buffer, read without clearing it (SYSLOG_ACTION_READ_ALL).
pub fn kernel_log() -> Result<String, String> {
    const READ_ALL: i32 = 3;
    const SIZE_BUFFER: i32 = 10;
    // SAFETY: SIZE_BUFFER ignores the buffer arguments.
    let n = unsafe { libc::klogctl(SIZE_BUFFER, std::ptr::null_mut(), 0) };
    if n <= 0 {
        return Err(format!(
            "cannot read the kernel log: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut buf = vec![0u8; n as usize];
    // SAFETY: buf has n writable bytes.
    let got = unsafe { libc::klogctl(READ_ALL, buf.as_mut_ptr().cast(), n) };
    if got < 0 {
        return Err(format!(
            "cannot read the kernel log: {}",
            std::io::Error::last_os_error()
        ));
    }
    buf.truncate(got as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Connects to the default JACK server (`JACK_DEFAULT_SERVER` or "default") without
/// starting one, through the JACK backend's own probe. A client that hangs is left to
/// the process exit after `limit`.
pub fn jack(limit: Duration) -> Result<JackAnswer, String> {
    let spec = ProbeSpec {
        device: None,
        limit: Some(limit),
        client: Some("xrunrig-doctor"),
    };
    let a = Jack.probe(&spec)?;
    let who = crate::audio::jack::identity();
    Ok(JackAnswer {
        server: a.device,
        rate: a.rate.unwrap_or(0),
        period: a.period.unwrap_or(0),
        kind: who.as_ref().map(|i| i.implementation.name().to_string()),
        implementation: who.map(|i| i.describe()),
    })
}

/// Runs `pw-dump` (it connects to the PipeWire of $XDG_RUNTIME_DIR or
/// $PIPEWIRE_RUNTIME_DIR), killed after `limit`.
pub fn pw_dump_live(limit: std::time::Duration) -> Result<String, String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("pw-dump")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run pw-dump ({e}): install pipewire-bin"))?;
    let mut out = child.stdout.take().ok_or("pw-dump: no output")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let t0 = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if t0.elapsed() < limit => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "pw-dump did not finish within {} s",
                    limit.as_secs()
                ));
            }
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() || text.trim().is_empty() {
        return Err("pw-dump found no PipeWire to talk to".into());
    }
    Ok(text)
}
