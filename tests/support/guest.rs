//! What a guest test needs before it boots: root, QEMU and a Debian 6.12 kernel package
//! in the cache (`.ci/fetch-kernel`). A missing one FAILS the test (no skip: these
//! tests are the only proof of the guest paths).

#![allow(dead_code)]

use std::path::Path;

pub fn prerequisites() {
    super::run::assert_root("the guest tests run the rig's FIFO threads in the guest's xrunrig");
    let qemu = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").is_file()))
        .unwrap_or(false);
    assert!(
        qemu,
        "qemu-system-x86_64 is not installed: apt-get install qemu-system-x86"
    );
    let cache = Path::new("/var/cache/xrunrig/kernels");
    let has = std::fs::read_dir(cache)
        .map(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("linux-image-6.12.") && n.ends_with(".deb")
            })
        })
        .unwrap_or(false);
    assert!(
        has,
        "no Debian 6.12 kernel package in {}: run .ci/fetch-kernel (or apt-get download linux-image-6.12.117+deb12-amd64-unsigned into it)",
        cache.display()
    );
}

/// False (a visible skip through `xrunrig::testkit`, a failure under
/// XRUNRIG_REQUIRE_ALL=1) only when XRUNRIG_SKIP_GUEST=1; a missing tool fails the test
/// with `install` said.
#[track_caller]
pub fn enabled(what: &str, tools: &[&str], install: &str) -> bool {
    if std::env::var("XRUNRIG_SKIP_GUEST").as_deref() == Ok("1") {
        xrunrig::testkit::skip(&format!("{what} (XRUNRIG_SKIP_GUEST=1 was set)"));
        return false;
    }
    for tool in tools {
        assert!(
            xrunrig::testkit::on_path(tool),
            "{tool} is not installed, so the {what} tests cannot run: {install}, or set \
             XRUNRIG_SKIP_GUEST=1 to skip them"
        );
    }
    true
}

/// The pi-boost rigs' `wait` row in a summary: (within bound, n).
pub fn wait_row(sum: &serde_json::Value, setting: &str, variant: &str) -> (u64, u64) {
    let r = sum["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["setting"] == setting && r["variant"] == variant && r["metric"] == "wait")
        .unwrap_or_else(|| panic!("no row {setting}/{variant}/wait in {sum}"));
    (
        r["within_bound"].as_u64().unwrap(),
        r["n"].as_u64().unwrap(),
    )
}
