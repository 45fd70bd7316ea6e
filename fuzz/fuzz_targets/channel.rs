//! The guest results channel's frame (`XRUNRIG-ARCHIVE v1 rc= size= sha256=`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = xrunrig::guest::channel::parse(data);
});
