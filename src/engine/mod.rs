//! The engine: RT threads, PI mutexes, futex events, migrate-disabled runs, trials and
//! the watchdog.

pub mod migrate_disable;
pub mod pimutex;
pub mod sync;
pub mod thread;
pub mod trial;
pub mod watchdog;

/// Serialises tests that run RT threads on the same CPUs, so they do not disturb
/// each other's timing.
#[cfg(test)]
pub fn test_lock() -> std::sync::MutexGuard<'static, ()> {
    static L: std::sync::Mutex<()> = std::sync::Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}
