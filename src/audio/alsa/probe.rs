//! Whether an ALSA device opens: cpal lists ALSA's "default" even with no card, so
//! only opening a configuration tells.

use super::device;
use crate::audio::{Available, Probe};
use cpal::traits::DeviceTrait;

/// The device and what it opened at, or why it did not open.
pub(super) fn probe(name: &Option<String>) -> Probe {
    // alsa-lib prints its own errors to stderr while it looks for a card; the reason
    // we give is enough, so they are hidden during the probe.
    let _quiet = QuietStderr::new();
    let d = device(name)?;
    let cfg = d.default_output_config().map_err(|e| {
        format!(
            "ALSA device '{}' did not open ({e})",
            name.as_deref().unwrap_or("default")
        )
    })?;
    let device = name.as_deref().unwrap_or("default").to_string();
    Ok(Available {
        text: format!(
            "ALSA device '{device}' opened ({} Hz, {} channels)",
            cfg.sample_rate(),
            cfg.channels()
        ),
        device,
        rate: Some(cfg.sample_rate()),
        period: None,
    })
}

/// Points fd 2 at /dev/null until dropped.
struct QuietStderr(Option<i32>);

impl QuietStderr {
    fn new() -> QuietStderr {
        // SAFETY: plain fd calls; the saved fd is restored and closed in drop.
        unsafe {
            let saved = libc::dup(2);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
            if saved < 0 || null < 0 {
                if saved >= 0 {
                    libc::close(saved);
                }
                if null >= 0 {
                    libc::close(null);
                }
                return QuietStderr(None);
            }
            libc::dup2(null, 2);
            libc::close(null);
            QuietStderr(Some(saved))
        }
    }
}

impl Drop for QuietStderr {
    fn drop(&mut self) {
        if let Some(fd) = self.0 {
            // SAFETY: fd is the saved stderr from new().
            unsafe {
                libc::dup2(fd, 2);
                libc::close(fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration that makes alsa-lib see no card on any machine.
    const NO_CARD_CONF: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/alsa/no-card.conf"
    );

    /// With no card, cpal still names a default device; the probe must say it did not
    /// open. "No card" is alsa-lib configured (ALSA_CONFIG_PATH) with a default device
    /// on a card no machine has, so this runs on a workstation with a sound card too. The
    /// variable is set for a child run of this one test: the environment of a process
    /// whose other tests run in threads is not to be changed under them.
    #[test]
    fn probe_without_a_card_says_so() {
        const CHILD: &str = "XRUNRIG_TEST_ALSA_NO_CARD";
        if std::env::var_os(CHILD).is_none() {
            let name = "audio::alsa::probe::tests::probe_without_a_card_says_so";
            let o = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .env("ALSA_CONFIG_PATH", NO_CARD_CONF)
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success() && out.contains("1 passed"),
                "{out}{}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        let e = probe(&None).unwrap_err();
        assert!(
            e.contains("did not open") || e.contains("no default"),
            "{e}"
        );
    }
}
