//! The profile parser (`xrunrig::knobs::profile::parse`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = xrunrig::knobs::profile::parse(std::path::Path::new("fuzz.toml"), text);
    }
});
