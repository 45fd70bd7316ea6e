//! The trace journal as read back: `instruments::trace_journal::parse` (size cap, version)
//! and `check` (instance names, the tracefs mount, boot id), the checks the restore
//! path applies before it touches anything a journal names.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use xrunrig::instruments::trace_journal::{Plan, check, instance_name_ok, parse};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(j) = parse(text) else {
        return;
    };
    let mounts = [PathBuf::from("/sys/kernel/tracing"), PathBuf::from(&j.root)];
    for boot in [None, Some("b"), j.boot_id.as_deref()] {
        if let Ok(Plan::Undo { root, instance, .. }) = check(&j, &mounts, boot) {
            // Whatever passes names an xrunrig instance directly under a mount's instances/.
            assert!(instance_name_ok(&instance));
            assert!(mounts.contains(&root));
            assert_eq!(root.join("instances").join(&instance), PathBuf::from(&j.instance));
        }
    }
});
