//! Guest kernels built from source: `--kernel src:PATH` (a kernel tree or a tarball)
//! or `--kernel debian-src:6.12` (Debian's linux-source-6.12), with `--patch FILE`s
//! applied in order. The config is small and everything is built in (`guest.config`).
//!
//! Builds are cached outside the repository, in `kbuild/` next to the kernel cache
//! (`/var/cache/xrunrig/kbuild` as root, else `$XDG_CACHE_HOME/xrunrig/kbuild`;
//! `XRUNRIG_KBUILD_DIR` overrides): `trees/<key>/` is one variant's tree, built in
//! place, where the key hashes the source, the config and the patches in order;
//! `logs/<key>.log` is its build log. A variant with one patch more starts from a
//! copy of the cached tree with the longest prefix of its patches, so only what the
//! new patch touches is compiled again.

mod make;
pub mod patches;
pub mod repo;
mod source;
pub mod worktree;

use super::kernel::Kernel;
use crate::options::KernelSpec;
use results::kbuild::KernelBuild;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

const DONE: &str = ".xrunrig-done";
/// Patched and configured: an interrupted build resumes from here (make picks up
/// where it stopped) instead of starting from scratch.
const READY: &str = ".xrunrig-ready";
const PROVENANCE: &str = ".xrunrig-build.json";

pub fn sha256_hex(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn cache_root() -> PathBuf {
    if let Some(d) = std::env::var_os("XRUNRIG_KBUILD_DIR") {
        return PathBuf::from(d);
    }
    super::kernel::cache_dir().with_file_name("kbuild")
}

/// The build's key: the source's hash, the config's, the patches' in order.
pub fn key(source_sha: &str, config_sha: &str, patch_shas: &[&str]) -> String {
    let mut s = format!("xrunrig-kbuild-1\n{source_sha}\n{config_sha}\n");
    for p in patch_shas {
        s.push_str(p);
        s.push('\n');
    }
    sha256_hex(s.as_bytes())[..16].to_string()
}

pub fn config_sha() -> String {
    sha256_hex(format!("{}\n{}", make::RECIPE, make::FRAGMENT).as_bytes())
}

/// The label rows carry: the release, "-src" for a kernel built here, and each patch's
/// file name without its extension.
pub fn row_label(release: &str, b: &KernelBuild) -> String {
    let mut s = format!("{release}-src");
    for p in &b.patches {
        let stem = Path::new(&p.file)
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| {
                n.strip_suffix(".patch")
                    .or(n.strip_suffix(".diff"))
                    .unwrap_or(n)
            })
            .unwrap_or("patch");
        s.push('+');
        s.push_str(stem);
    }
    s
}

/// An exclusive lock on the build cache for the whole build (two runs building the
/// same tree would corrupt it).
struct Lock {
    /// Held open: the lock goes with it.
    _file: std::fs::File,
}

fn lock(dir: &Path) -> Result<Lock, String> {
    use std::os::fd::AsRawFd;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let p = dir.join("lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&p)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    // SAFETY: flock on a descriptor this File owns.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        eprintln!(
            "xrunrig: another xrunrig is building a kernel in {}; waiting for it",
            dir.display()
        );
        // SAFETY: as above, blocking this time.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!("cannot lock {}", p.display()));
        }
    }
    Ok(Lock { _file: f })
}

fn kernel_from_tree(label: &str, tree: &Path, build: KernelBuild) -> Result<Kernel, String> {
    let image = tree.join("arch/x86/boot/bzImage");
    let vmlinux = tree.join("vmlinux");
    if !image.is_file() {
        return Err(format!("{}: no bzImage after the build", tree.display()));
    }
    let release = std::fs::read_to_string(tree.join("include/config/kernel.release"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| build.version.clone().unwrap_or_default());
    // Everything is built in: the modules directory holds only modules.builtin, so
    // the guest's module list says what is built in and loads nothing.
    let mods = tree.join(".xrunrig-modules");
    let _ = std::fs::create_dir_all(&mods);
    let builtin = std::fs::read(tree.join("modules.builtin")).unwrap_or_default();
    let _ = std::fs::write(mods.join("modules.builtin"), builtin);
    let (boot, boot_note) =
        if super::bzimage::has_pvh_note(&std::fs::read(&vmlinux).unwrap_or_default()) {
            (
                vmlinux,
                "the build's vmlinux through the PVH entry".to_string(),
            )
        } else {
            (
                image.clone(),
                "bzImage through SeaBIOS (the build's vmlinux has no PVH note)".into(),
            )
        };
    Ok(Kernel {
        label: label.to_string(),
        image,
        boot,
        boot_note,
        release,
        modules: Some(mods),
        package: None,
        build: Some(build),
    })
}

/// Builds (or finds in the cache) kernel `k` (`src:…`/`debian-src:…`) with `patch_files`
/// applied in order.
pub fn resolve(k: &KernelSpec, patch_files: &[PathBuf]) -> Result<Kernel, String> {
    // Patches are read first: a missing one is refused before anything is unpacked.
    let patches: Vec<patches::Patch> = patch_files
        .iter()
        .map(|p| patches::read(p))
        .collect::<Result<_, _>>()?;
    let root = cache_root();
    let src = source::resolve(k, &root)?;
    let k = &k.to_string();
    let cfg = config_sha();
    let shas: Vec<&str> = patches.iter().map(|p| p.info.sha256.as_str()).collect();
    let key_of = |n: usize| key(&src.sha256, &cfg, &shas[..n]);
    let the_key = key_of(patches.len());
    let trees = root.join("trees");
    let logs = root.join("logs");
    std::fs::create_dir_all(&trees).map_err(|e| format!("{}: {e}", trees.display()))?;
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let _lock = lock(&root)?;
    let tree = trees.join(&the_key);
    let log_path = logs.join(format!("{the_key}.log"));
    let mut info = KernelBuild {
        source: src.given.clone(),
        source_detail: Some(src.detail.clone()),
        source_sha256: Some(src.sha256.clone()),
        patches: patches.iter().map(|p| p.info.clone()).collect(),
        config: Some(make::RECIPE.into()),
        key: Some(the_key.clone()),
        build_dir: Some(tree.display().to_string()),
        log: Some(log_path.display().to_string()),
        ..Default::default()
    };
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let (_, stamp) = crate::sys::utc_now();
    if tree.join(DONE).exists() {
        let mut b: KernelBuild = std::fs::read_to_string(tree.join(PROVENANCE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(info);
        b.cached = true;
        b.build_s = Some(0.0);
        let _ = writeln!(log, "== {stamp} cache hit: {k}, nothing built");
        eprintln!(
            "xrunrig: {k}: cached build {} (nothing to build)",
            tree.display()
        );
        return kernel_from_tree(k, &tree, b);
    }
    let _ = writeln!(
        log,
        "== {stamp} building {k} with {} patch(es) in {}",
        patches.len(),
        tree.display()
    );
    // A leftover interrupted before it was patched and configured is not trusted.
    if tree.exists() && !tree.join(READY).exists() {
        let _ = writeln!(log, "removing an unfinished build in {}", tree.display());
        std::fs::remove_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    }
    let t0 = Instant::now();
    let r = build_into(
        k, &src, &patches, &key_of, &tree, &log_path, &mut log, &mut info,
    );
    match r {
        Ok(()) => {
            info.build_s = Some((t0.elapsed().as_secs_f64() * 10.0).round() / 10.0);
            let _ = std::fs::write(
                tree.join(PROVENANCE),
                serde_json::to_string_pretty(&info).unwrap_or_default(),
            );
            std::fs::write(tree.join(DONE), b"").map_err(|e| format!("{}: {e}", tree.display()))?;
            let _ = writeln!(log, "== built in {:.1} s", t0.elapsed().as_secs_f64());
            eprintln!(
                "xrunrig: built {k} in {:.0} s ({}; log {})",
                t0.elapsed().as_secs_f64(),
                info.started_from
                    .as_ref()
                    .map_or("from scratch".to_string(), |f| format!(
                        "incrementally from {f}"
                    )),
                log_path.display()
            );
            kernel_from_tree(k, &tree, info)
        }
        Err(e) => {
            let _ = writeln!(log, "== failed: {e}");
            let _ = std::fs::remove_dir_all(&tree);
            Err(e)
        }
    }
}

/// The kernel's own objects record relative paths (an in-tree build), but the host
/// tools under tools/ (objtool) record absolute ones: in a copied tree they would
/// still name the tree copied from, and break once that one is gone.
fn repoint_tools(from: &Path, to: &Path) {
    fn walk(d: &Path, from: &str, to: &str) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, from, to);
            } else if ((name.starts_with('.') && name.ends_with(".cmd")) || name.ends_with(".d"))
                && let Ok(t) = std::fs::read_to_string(&p)
                && t.contains(from)
            {
                let _ = std::fs::write(&p, t.replace(from, to));
            }
        }
    }
    let (from, to) = (from.display().to_string(), to.display().to_string());
    walk(
        &Path::new(&to).join("tools"),
        &format!("{from}/"),
        &format!("{to}/"),
    );
}

#[allow(clippy::too_many_arguments)]
fn build_into(
    k: &str,
    src: &source::Source,
    patches: &[patches::Patch],
    key_of: &dyn Fn(usize) -> String,
    tree: &Path,
    log_path: &Path,
    log: &mut std::fs::File,
    info: &mut KernelBuild,
) -> Result<(), String> {
    if tree.join(READY).exists() {
        eprintln!(
            "xrunrig: {k}: resuming the interrupted build in {}",
            tree.display()
        );
        let _ = writeln!(
            log,
            "resuming an interrupted build (patched and configured)"
        );
        info.started_from = Some(format!(
            "{} (an interrupted build, resumed)",
            tree.display()
        ));
        return finish_build(k, tree, log_path, info);
    }
    let trees = tree.parent().expect("trees dir");
    // The cached tree with the longest prefix of these patches, if any.
    let base = (0..patches.len())
        .rev()
        .map(|n| (n, trees.join(key_of(n))))
        .find(|(_, t)| t.join(DONE).exists());
    // The first patch to apply is checked where it would apply before anything is
    // copied or unpacked, so a patch that does not apply is refused in seconds.
    let check_in = match (&base, &src.kind) {
        (Some((n, t)), _) => Some((*n, t.clone())),
        (None, source::Kind::Tree(p)) => Some((0, p.clone())),
        _ => None,
    };
    if let Some((n, dir)) = check_in
        && let Some(p) = patches.get(n)
    {
        let on = match n {
            0 => src.given.clone(),
            _ => format!("{} after {}", src.given, patches[n - 1].path.display()),
        };
        patches::check(p, &dir, &on, log)?;
    }
    let applied_from = match &base {
        Some((n, t)) => {
            eprintln!(
                "xrunrig: {k}: copying the cached build {} ({n} patch(es)) to build one patch more",
                t.display()
            );
            let _ = writeln!(log, "$ cp -a {} {}", t.display(), tree.display());
            // Copied under another name and renamed when whole: a copy cut short
            // must not look like a tree (it would carry the base's markers).
            let part = tree.with_extension("part");
            let _ = std::fs::remove_dir_all(&part);
            let o = std::process::Command::new("cp")
                .arg("-a")
                .arg(t)
                .arg(&part)
                .output()
                .map_err(|e| format!("cannot run cp: {e}"))?;
            if !o.status.success() {
                return Err(format!(
                    "cannot copy {}: {}",
                    t.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
            for m in [DONE, READY, PROVENANCE] {
                let _ = std::fs::remove_file(part.join(m));
            }
            std::fs::rename(&part, tree).map_err(|e| format!("{}: {e}", tree.display()))?;
            repoint_tools(t, tree);
            info.started_from = Some(t.display().to_string());
            *n
        }
        None => {
            eprintln!(
                "xrunrig: {k}: unpacking {} into {}",
                src.detail,
                tree.display()
            );
            let _ = writeln!(log, "unpacking {} into {}", src.detail, tree.display());
            source::materialize(src, tree)?;
            0
        }
    };
    let version = kernelversion(tree);
    info.version = version.clone();
    let label = format!("{} {}", src.given, version.as_deref().unwrap_or(""));
    for (i, p) in patches.iter().enumerate().skip(applied_from) {
        let on = if i == 0 {
            label.trim().to_string()
        } else {
            format!("{} after {}", label.trim(), patches[i - 1].path.display())
        };
        patches::apply(p, tree, &on, log)?;
    }
    if base.is_none() {
        eprintln!("xrunrig: {k}: configuring ({})", make::RECIPE);
        let miss = make::configure(tree, log).map_err(make::Failure::text)?;
        for m in &miss {
            eprintln!(
                "xrunrig: warning: the kernel's Kconfig did not take `{m}` from guest.config"
            );
            let _ = writeln!(log, "warning: not in the final .config: {m}");
        }
    }
    std::fs::write(tree.join(READY), b"").map_err(|e| format!("{}: {e}", tree.display()))?;
    finish_build(k, tree, log_path, info)
}

/// The tree's version as its Makefile says (None when make cannot tell).
fn kernelversion(tree: &Path) -> Option<String> {
    let mut c = std::process::Command::new("make");
    c.args(["-s", "kernelversion"]).current_dir(tree);
    // The tree's Makefile: as the tree's owner, as every make there.
    worktree::as_owner_of(&mut c, tree);
    c.output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The config's hash, the version, and make.
fn finish_build(
    k: &str,
    tree: &Path,
    log_path: &Path,
    info: &mut KernelBuild,
) -> Result<(), String> {
    let version = kernelversion(tree);
    info.version = version.clone();
    let cfg = std::fs::read(tree.join(".config"))
        .map_err(|e| format!("{}: .config: {e}", tree.display()))?;
    info.config_sha256 = Some(sha256_hex(&cfg));
    let what = match info.patches.len() {
        0 => format!("{k} ({})", version.as_deref().unwrap_or("?")),
        n => format!("{k} ({}, {n} patch(es))", version.as_deref().unwrap_or("?")),
    };
    make::make(tree, log_path, &what).map_err(make::Failure::text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_tree_s_tools_name_the_copy() {
        let d = crate::testkit::private_dir("kbuild-repoint");
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::create_dir_all(b.join("tools/objtool")).unwrap();
        let cmd = b.join("tools/objtool/.weak.o.cmd");
        std::fs::write(
            &cmd,
            format!("deps := {}/tools/objtool/weak.c \\\n", a.display()),
        )
        .unwrap();
        std::fs::write(b.join("tools/objtool/weak.c"), format!("{}/x", a.display())).unwrap();
        repoint_tools(&a, &b);
        let t = std::fs::read_to_string(&cmd).unwrap();
        assert!(
            t.contains(&format!("{}/tools/objtool/weak.c", b.display())),
            "{t}"
        );
        assert!(!t.contains(&format!("{}/", a.display())), "{t}");
        // Sources are left alone.
        let src = std::fs::read_to_string(b.join("tools/objtool/weak.c")).unwrap();
        assert_eq!(src, format!("{}/x", a.display()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn key_depends_on_everything_in_order() {
        let a = key("s", "c", &["p1", "p2"]);
        assert_eq!(a, key("s", "c", &["p1", "p2"]));
        assert_ne!(a, key("s", "c", &["p2", "p1"]));
        assert_ne!(a, key("s", "c", &["p1"]));
        assert_ne!(a, key("t", "c", &["p1", "p2"]));
        assert_ne!(a, key("s", "d", &["p1", "p2"]));
    }

    #[test]
    fn rows_say_which_kernel_is_patched() {
        let mut b = KernelBuild::default();
        assert_eq!(row_label("6.12.117", &b), "6.12.117-src");
        b.patches.push(results::kbuild::PatchInfo {
            file: "patches/6.12/0001-sched-rt-push-boosted-task.patch".into(),
            ..Default::default()
        });
        assert_eq!(
            row_label("6.12.117", &b),
            "6.12.117-src+0001-sched-rt-push-boosted-task"
        );
    }

    #[test]
    fn the_repository_patch_reads() {
        let p = patches::read(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/patches/6.12/0001-sched-rt-push-boosted-task.patch"
        )))
        .unwrap();
        assert_eq!(
            p.info.subject.as_deref(),
            Some("sched/rt: queue a push when a queued RT task is boosted")
        );
        assert!(
            patches::hunk(&p.text, "kernel/sched/rt.c", 1)
                .unwrap()
                .contains("+\t\t\trt_queue_push_tasks(rq);")
        );
    }
}
