//! The restore journal as read back: `knobs::parse_journal`, the checked reader the
//! restore path uses (size cap, version check) before any entry is written back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = xrunrig::knobs::parse_journal(text);
    }
});
