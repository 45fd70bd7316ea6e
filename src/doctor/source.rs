//! Where the doctor's checks read from: the live machine, or a recorded copy of its
//! /proc and /sys files (tests/fixtures/doctor/<machine>/) so every check can be
//! tested on inputs from machines we are not on. Paths are always absolute machine
//! paths ("/proc/cmdline"); a recorded source maps them under its root.

pub use super::probe::JackAnswer;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Why a probe gave no answer. A recorded machine that has no result for a probe makes
/// its check n/a; a probe that ran and failed is a finding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// A recorded machine has no result for this probe (what it probes is named).
    #[error("{0}: not recorded for this machine")]
    NotRecorded(&'static str),
    /// The probe ran and failed: why, said for a reader.
    #[error("{0}")]
    Failed(String),
}

/// What the checks may read or try. Everything is read-only: the probes that act
/// (SCHED_FIFO, PI futex) do so on a short-lived thread of this process only.
pub trait Source {
    fn read(&self, path: &str) -> io::Result<String>;
    fn read_bytes(&self, path: &str) -> io::Result<Vec<u8>>;
    /// Names in a directory, sorted.
    fn list(&self, dir: &str) -> io::Result<Vec<String>>;
    /// Opens for writing without writing, to learn whether a write would be allowed.
    fn probe_write(&self, path: &str) -> io::Result<()>;
    /// Sets SCHED_FIFO at `prio` on a short-lived thread and back; Err says why not.
    fn try_fifo(&self, prio: i32) -> Result<(), ProbeError>;
    /// Takes a PTHREAD_PRIO_INHERIT mutex contended, so the kernel's PI futex path runs.
    fn pi_futex(&self) -> Result<String, ProbeError>;
    /// clock_getres(CLOCK_MONOTONIC) in ns.
    fn clock_res_ns(&self) -> Result<u64, ProbeError>;
    /// The kernel log (dmesg), for the lockdown line printed at boot.
    fn kernel_log(&self) -> Result<String, ProbeError>;
    /// Connects to the default JACK server without starting one, bounded in time.
    fn jack(&self) -> Result<JackAnswer, ProbeError>;
    /// `pw-dump` of the PipeWire this process would reach (JSON text).
    fn pipewire_dump(&self) -> Result<String, ProbeError> {
        Err(ProbeError::NotRecorded("pw-dump"))
    }
}

/// Reads a small file, trimmed; the error is a one-line reason for an "n/a".
pub fn read_trim(src: &dyn Source, path: &str) -> Result<String, String> {
    src.read(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| describe_err(path, &e))
}

/// "cannot read PATH: REASON", naming the common cases plainly.
pub fn describe_err(path: &str, e: &io::Error) -> String {
    let why = match (e.kind(), e.raw_os_error()) {
        (io::ErrorKind::NotFound, _) => "does not exist".to_string(),
        (_, Some(libc::EPERM)) => "Operation not permitted (EPERM)".to_string(),
        (_, Some(libc::EACCES)) => "Permission denied (EACCES)".to_string(),
        _ => e.to_string(),
    };
    format!("{path}: {why}")
}

/// The live machine: files under `root` (normally "/"), probes on this process.
pub struct Live {
    pub root: PathBuf,
}

impl Live {
    pub fn new() -> Live {
        Live { root: "/".into() }
    }
    fn p(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

impl Default for Live {
    fn default() -> Self {
        Live::new()
    }
}

impl Source for Live {
    fn read(&self, path: &str) -> io::Result<String> {
        let b = std::fs::read(self.p(path))?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }
    fn read_bytes(&self, path: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.p(path))
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut v: Vec<String> = std::fs::read_dir(self.p(dir))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        Ok(v)
    }
    fn probe_write(&self, path: &str) -> io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.p(path))
            .map(|_| ())
    }
    fn try_fifo(&self, prio: i32) -> Result<(), ProbeError> {
        super::probe::try_fifo(prio).map_err(ProbeError::Failed)
    }
    fn pi_futex(&self) -> Result<String, ProbeError> {
        super::probe::pi_futex().map_err(ProbeError::Failed)
    }
    fn clock_res_ns(&self) -> Result<u64, ProbeError> {
        super::probe::clock_res_ns().map_err(ProbeError::Failed)
    }
    fn kernel_log(&self) -> Result<String, ProbeError> {
        super::probe::kernel_log().map_err(ProbeError::Failed)
    }
    fn jack(&self) -> Result<JackAnswer, ProbeError> {
        super::probe::jack(std::time::Duration::from_secs(2)).map_err(ProbeError::Failed)
    }
    fn pipewire_dump(&self) -> Result<String, ProbeError> {
        super::probe::pw_dump_live(std::time::Duration::from_secs(3)).map_err(ProbeError::Failed)
    }
}

/// One recorded file: its content or the errno reading it gave.
#[derive(Debug, Clone)]
enum Entry {
    Text(Vec<u8>),
    Err(i32),
}

/// A recorded machine: a fixture directory (with `inherit` to fall back to another)
/// and/or files held in memory (unit tests). `PATH.err` / `PATH.werr` files hold an
/// errno name that reading / write-probing PATH fails with; `probes.json` holds the
/// probe results; `probes/dmesg` the kernel log. Missing probes answer "not recorded".
#[derive(Default)]
pub struct Recorded {
    dirs: Vec<PathBuf>,
    mem: BTreeMap<String, Entry>,
    werr: BTreeMap<String, i32>,
    probes: serde_json::Value,
    /// Every path read, so tests can feed garbage to each one in turn.
    pub log: std::cell::RefCell<Vec<String>>,
}

fn errno_of(name: &str) -> i32 {
    match name.trim() {
        "EPERM" => libc::EPERM,
        "EACCES" => libc::EACCES,
        "ENOENT" => libc::ENOENT,
        "EINVAL" => libc::EINVAL,
        "ENODEV" => libc::ENODEV,
        "EBUSY" => libc::EBUSY,
        "EROFS" => libc::EROFS,
        _ => libc::EIO,
    }
}

impl Recorded {
    /// An empty machine: every file missing, no probe recorded.
    pub fn empty() -> Recorded {
        Recorded::default()
    }

    /// A fixture directory; follows its `inherit` chain.
    pub fn dir(root: &Path) -> Recorded {
        let mut dirs = vec![root.to_path_buf()];
        let mut cur = root.to_path_buf();
        while let Ok(s) = std::fs::read_to_string(cur.join("inherit")) {
            let next = cur.join(s.trim());
            if dirs.contains(&next) || dirs.len() > 8 {
                break;
            }
            dirs.push(next.clone());
            cur = next;
        }
        let probes = dirs
            .iter()
            .find_map(|d| std::fs::read_to_string(d.join("probes.json")).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::Value::Null);
        Recorded {
            dirs,
            probes,
            ..Default::default()
        }
    }

    /// Sets a file's content (in memory, over the directory).
    pub fn file(mut self, path: &str, text: &str) -> Recorded {
        self.mem
            .insert(path.to_string(), Entry::Text(text.as_bytes().to_vec()));
        self
    }
    pub fn set(&mut self, path: &str, text: &[u8]) {
        self.mem
            .insert(path.to_string(), Entry::Text(text.to_vec()));
    }
    /// Makes reading `path` fail with `errno`.
    pub fn err(mut self, path: &str, errno: i32) -> Recorded {
        self.mem.insert(path.to_string(), Entry::Err(errno));
        self
    }
    pub fn set_err(&mut self, path: &str, errno: i32) {
        self.mem.insert(path.to_string(), Entry::Err(errno));
    }
    /// Makes a write probe of `path` fail with `errno`.
    pub fn write_err(mut self, path: &str, errno: i32) -> Recorded {
        self.werr.insert(path.to_string(), errno);
        self
    }
    /// Sets probe results: the text of a probes.json.
    pub fn probes(mut self, json: &str) -> Recorded {
        self.probes = serde_json::from_str(json).expect("probes are JSON");
        self
    }

    fn on_disk(&self, path: &str) -> Vec<PathBuf> {
        let rel = path.trim_start_matches('/');
        self.dirs.iter().map(|d| d.join(rel)).collect()
    }

    fn entry(&self, path: &str) -> Option<Entry> {
        self.log.borrow_mut().push(path.to_string());
        if let Some(e) = self.mem.get(path) {
            return Some(e.clone());
        }
        for p in self.on_disk(path) {
            let mut err = p.clone().into_os_string();
            err.push(".err");
            if let Ok(s) = std::fs::read_to_string(&err) {
                return Some(Entry::Err(errno_of(&s)));
            }
            if p.is_file()
                && let Ok(b) = std::fs::read(&p)
            {
                return Some(Entry::Text(b));
            }
            if p.exists() {
                return None;
            }
        }
        None
    }

    fn probe(&self, key: &str) -> Option<&serde_json::Value> {
        self.probes.get(key)
    }
}

impl Source for Recorded {
    fn read(&self, path: &str) -> io::Result<String> {
        self.read_bytes(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }
    fn read_bytes(&self, path: &str) -> io::Result<Vec<u8>> {
        match self.entry(path) {
            Some(Entry::Text(b)) => Ok(b),
            Some(Entry::Err(e)) => Err(io::Error::from_raw_os_error(e)),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        if let Some(Entry::Err(e)) = self.mem.get(dir) {
            return Err(io::Error::from_raw_os_error(*e));
        }
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let mut names: Vec<String> = self
            .mem
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter_map(|r| r.split('/').next())
            .map(str::to_string)
            .collect();
        let mut found = !names.is_empty();
        for p in self.on_disk(dir) {
            if let Ok(rd) = std::fs::read_dir(&p) {
                found = true;
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let n = n
                        .strip_suffix(".err")
                        .or_else(|| n.strip_suffix(".werr"))
                        .unwrap_or(&n)
                        .to_string();
                    names.push(n);
                }
            }
        }
        if !found {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        names.sort();
        names.dedup();
        Ok(names)
    }
    fn probe_write(&self, path: &str) -> io::Result<()> {
        if let Some(e) = self.werr.get(path) {
            return Err(io::Error::from_raw_os_error(*e));
        }
        for p in self.on_disk(path) {
            let mut w = p.into_os_string();
            w.push(".werr");
            if let Ok(s) = std::fs::read_to_string(&w) {
                return Err(io::Error::from_raw_os_error(errno_of(&s)));
            }
        }
        self.read_bytes(path).map(|_| ())
    }
    fn try_fifo(&self, prio: i32) -> Result<(), ProbeError> {
        let p = self
            .probe("sched_fifo")
            .ok_or(ProbeError::NotRecorded("SCHED_FIFO"))?;
        if let Some(e) = p.get("error").and_then(|e| e.as_str()) {
            return Err(ProbeError::Failed(e.to_string()));
        }
        match p.get("max_ok").and_then(|m| m.as_i64()) {
            Some(m) if i64::from(prio) <= m => Ok(()),
            Some(_) => Err(ProbeError::Failed("Operation not permitted (EPERM)".into())),
            None => Err(ProbeError::NotRecorded("SCHED_FIFO")),
        }
    }
    fn pi_futex(&self) -> Result<String, ProbeError> {
        recorded_result(self.probe("pi_futex"), "PI futex")
    }
    fn clock_res_ns(&self) -> Result<u64, ProbeError> {
        self.probe("clock_res_ns")
            .and_then(|v| v.as_u64())
            .ok_or(ProbeError::NotRecorded("clock resolution"))
    }
    fn kernel_log(&self) -> Result<String, ProbeError> {
        self.read("/probes/dmesg")
            .map_err(|_| ProbeError::NotRecorded("kernel log"))
    }
    fn jack(&self) -> Result<JackAnswer, ProbeError> {
        let p = self.probe("jack").ok_or(ProbeError::NotRecorded("JACK"))?;
        if let Some(e) = p.get("error").and_then(|e| e.as_str()) {
            return Err(ProbeError::Failed(e.to_string()));
        }
        let num = |k: &str| p.get(k).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        Ok(JackAnswer {
            server: p
                .get("server")
                .and_then(|v| v.as_str())
                .unwrap_or("default")
                .to_string(),
            rate: num("rate"),
            period: num("period"),
            kind: p.get("kind").and_then(|v| v.as_str()).map(str::to_string),
            implementation: p
                .get("implementation")
                .and_then(|v| v.as_str())
                .map(str::to_string),
        })
    }
    fn pipewire_dump(&self) -> Result<String, ProbeError> {
        let p = self
            .probe("pipewire_dump")
            .ok_or(ProbeError::NotRecorded("pw-dump"))?;
        Ok(p.to_string())
    }
}

fn recorded_result(
    v: Option<&serde_json::Value>,
    what: &'static str,
) -> Result<String, ProbeError> {
    let v = v.ok_or(ProbeError::NotRecorded(what))?;
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        return Err(ProbeError::Failed(e.to_string()));
    }
    v.get("ok")
        .and_then(|e| e.as_str())
        .map(str::to_string)
        .ok_or(ProbeError::NotRecorded(what))
}
