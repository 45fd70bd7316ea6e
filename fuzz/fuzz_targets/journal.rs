//! The restore journal as read back. Until `knobs::parse_journal` (the journal's own
//! checked reader) is merged, this is the serde reader the restore path uses.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = serde_json::from_str::<xrunrig::knobs::Journal>(text);
    }
});
