//! The cache directory's root, one place for everything xrunrig keeps between runs that
//! it can make again: guest kernels and their builds (the engine's), calibrations
//! (`compare::calibration`). `$XRUNRIG_CACHE_DIR`, else /var/cache/xrunrig for root,
//! else `$XDG_CACHE_HOME/xrunrig` (`~/.cache/xrunrig`).

use std::path::PathBuf;

pub fn root() -> PathBuf {
    if let Some(d) = std::env::var_os("XRUNRIG_CACHE_DIR") {
        return PathBuf::from(d);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/cache/xrunrig");
    }
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"))
        .join("xrunrig")
}
