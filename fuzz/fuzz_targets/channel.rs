//! The guest results channel: the frame log the host reads off the results disk after
//! each trial (`read_log`: headers, sizes, checksums, a torn last frame), and the serial
//! port's one archive frame (`parse`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = xrunrig::guest::channel::read_log(std::io::Cursor::new(data));
    let _ = xrunrig::guest::channel::parse(data);
});
