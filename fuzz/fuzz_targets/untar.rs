//! The guest results channel's tar reader (the `tar` crate and the path check around
//! it), into a scratch directory that is emptied after each input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dest = std::env::temp_dir().join(format!("xrunrig-fuzz-untar-{}", std::process::id()));
    let _ = xrunrig::guest::channel::untar(data, &dest.join("out"));
    let _ = std::fs::remove_dir_all(&dest);
});
