//! The rig parser and validator (`xrunrig::rig::parse`), on any text: it returns a rig
//! or positioned problems, never panics, never allocates without bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = xrunrig::rig::parse(std::path::Path::new("fuzz.toml"), text);
    }
});
