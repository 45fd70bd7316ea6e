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
