//! The `[livefx]` table: the fuzzed text goes inside it (with the rig's other tables
//! after it, as TOML allows), through the whole rig parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(body) = std::str::from_utf8(data) {
        let text = format!("kind = \"livefx\"\n[livefx]\n{body}");
        let _ = xrunrig::rig::parse(std::path::Path::new("fuzz.toml"), &text);
    }
});
