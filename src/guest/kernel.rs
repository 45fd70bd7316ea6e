//! Resolving `--kernel K` to an image QEMU can boot and the modules that go with it:
//! a vmlinuz/bzImage path, a Debian linux-image .deb, a Debian package name fetched
//! with `apt-get download`, or a short form (debian:6.12, debian:6.12-rt, debian:6.1)
//! naming the newest such package apt knows.

use super::bzimage;
use crate::options::KernelSpec;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone)]
pub struct Kernel {
    /// What the user gave as K.
    pub label: String,
    /// The vmlinuz/bzImage (or ELF) file.
    pub image: PathBuf,
    /// What QEMU boots: the unpacked vmlinux when that worked, else `image`.
    pub boot: PathBuf,
    /// How it boots and, when not through PVH, why.
    pub boot_note: String,
    pub release: String,
    /// The matching lib/modules/<release> directory, when there is one.
    pub modules: Option<PathBuf>,
    pub package: Option<String>,
    /// Set when xrunrig built it from source (`--kernel src:…`): where it came from.
    pub build: Option<results::kbuild::KernelBuild>,
}

impl Kernel {
    /// What tables, combined.json and results directories call it: the release, and
    /// for a kernel built here what was applied (two builds of one tree differ).
    pub fn name(&self) -> String {
        match &self.build {
            Some(b) => super::build::row_label(&self.release, b),
            None => self.release.clone(),
        }
    }
}

/// Where fetched packages and unpacked kernels are kept: `kernels/` in the cache
/// (`analysis::cache::root`).
pub fn cache_dir() -> PathBuf {
    analysis::cache::root().join("kernels")
}

/// "6.1.0-57-amd64" → ("6.1.0-57", "amd64"): the version ends at the first '-'
/// followed by a letter.
fn split_flavour(rest: &str) -> Option<(&str, &str)> {
    let b = rest.as_bytes();
    (0..b.len().saturating_sub(1))
        .find(|&i| b[i] == b'-' && b[i + 1].is_ascii_alphabetic())
        .map(|i| (&rest[..i], &rest[i + 1..]))
}

fn version_key(v: &str) -> Vec<u64> {
    v.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(0))
        .collect()
}

/// Picks the newest `linux-image-<ver>…-<flavour>-unsigned` (or, without any, the
/// signed `linux-image-<ver>…-<flavour>`) from package names.
pub fn pick_debian<'a>(
    names: impl Iterator<Item = &'a str>,
    ver: &str,
    flavour: &str,
) -> Option<String> {
    let mut best: Option<(bool, Vec<u64>, String)> = None;
    for n in names {
        let Some(rest) = n.strip_prefix("linux-image-") else {
            continue;
        };
        let (rest, unsigned) = match rest.strip_suffix("-unsigned") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let Some((v, f)) = split_flavour(rest) else {
            continue;
        };
        let matches_ver = v == ver
            || v.strip_prefix(ver)
                .is_some_and(|t| t.starts_with(['.', '+', '-']));
        if f != flavour || !matches_ver {
            continue;
        }
        let key = (unsigned, version_key(v), n.to_string());
        if best.as_ref().is_none_or(|b| (key.0, &key.1) > (b.0, &b.1)) {
            best = Some(key);
        }
    }
    best.map(|b| b.2)
}

fn apt_names() -> Result<Vec<String>, String> {
    let o = Command::new("apt-cache")
        .args(["pkgnames", "linux-image-"])
        .output()
        .map_err(|e| {
            format!(
                "cannot run apt-cache (a Debian-family host is needed for debian:… kernels): {e}"
            )
        })?;
    Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

fn resolve_short(k: &str, ver: &str, flavour: &str) -> Result<String, String> {
    let names = apt_names()?;
    if let Some(p) = pick_debian(names.iter().map(String::as_str), ver, flavour) {
        return Ok(p);
    }
    crate::note!("xrunrig: no package for {k} in apt's lists; running apt-get update");
    let st = Command::new("apt-get")
        .args(["update", "-qq"])
        .status()
        .map_err(|e| format!("cannot run apt-get update: {e}"))?;
    if !st.success() {
        return Err(format!(
            "{k}: apt knows no linux-image-{ver}*-{flavour} package and apt-get update failed (run it as root)"
        ));
    }
    let names = apt_names()?;
    pick_debian(names.iter().map(String::as_str), ver, flavour).ok_or_else(|| {
        format!(
            "{k}: apt knows no linux-image-{ver}*-{flavour}[-unsigned] package; \
             list candidates with `apt-cache pkgnames linux-image-{ver}`"
        )
    })
}

fn find_deb(dir: &Path, pkg: &str) -> Option<PathBuf> {
    let prefix = format!("{pkg}_");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".deb"))
        })
        .collect();
    v.sort();
    v.pop()
}

fn deb_ok(deb: &Path) -> bool {
    Command::new("dpkg-deb")
        .arg("-f")
        .arg(deb)
        .arg("Package")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The package's .deb in the cache, downloaded with `apt-get download` when missing.
pub fn fetch_package(pkg: &str) -> Result<PathBuf, String> {
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the kernel cache {}: {e}", dir.display()))?;
    if let Some(d) = find_deb(&dir, pkg) {
        if deb_ok(&d) {
            return Ok(d);
        }
        let _ = std::fs::remove_file(&d);
    }
    crate::note!("xrunrig: fetching {pkg} into {}", dir.display());
    let o = Command::new("apt-get")
        .args(["download", "-qq", pkg])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("cannot run apt-get download: {e}"))?;
    match find_deb(&dir, pkg) {
        Some(d) if o.status.success() && deb_ok(&d) => Ok(d),
        _ => Err(format!(
            "apt-get download {pkg} failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
    }
}

const COMPLETE: &str = ".complete-2";

/// Unpacks the kernel image, the sound and virtio modules and modules.builtin from a
/// .deb into the cache (once).
fn unpack_deb(deb: &Path) -> Result<PathBuf, String> {
    let stem = deb
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("bad .deb file name")?;
    let dest = cache_dir().join(format!("{stem}.d"));
    // The marker's name changes when the unpacked set does (2: the virtio modules
    // for the results disk), so an older cache is unpacked again.
    if dest.join(COMPLETE).exists() {
        return Ok(dest);
    }
    let tmp = cache_dir().join(format!("{stem}.d.part{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards \
        './boot/vmlinuz-*' './lib/modules/*/kernel/sound/*' './lib/modules/*/modules.builtin' \
        './lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/drivers/block/virtio_blk*' \
        './usr/lib/modules/*/kernel/sound/*' './usr/lib/modules/*/modules.builtin' \
        './usr/lib/modules/*/kernel/drivers/virtio/*' './usr/lib/modules/*/kernel/drivers/block/virtio_blk*' \
        2>/dev/null; true";
    let st = Command::new("sh")
        .args(["-c", script, "sh"])
        .arg(deb)
        .arg(&tmp)
        .status()
        .map_err(|e| format!("cannot run dpkg-deb/tar: {e}"))?;
    let has_image = std::fs::read_dir(tmp.join("boot"))
        .map(|mut d| d.next().is_some())
        .unwrap_or(false);
    if !st.success() || !has_image {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(format!(
            "{}: no boot/vmlinuz-* inside (is this a linux-image package? dpkg-deb must be installed)",
            deb.display()
        ));
    }
    std::fs::write(tmp.join(COMPLETE), b"").map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&tmp, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    Ok(dest)
}

fn from_unpacked(label: &str, dir: &Path, package: Option<String>) -> Result<Kernel, String> {
    let img = std::fs::read_dir(dir.join("boot"))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .ok_or_else(|| format!("no vmlinuz in {}", dir.display()))?;
    let release = img.file_name().unwrap().to_string_lossy()["vmlinuz-".len()..].to_string();
    let modules = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|m| dir.join(m).join(&release))
        .find(|p| p.is_dir());
    let (boot, boot_note) = unpack_vmlinux(&img, &dir.join("vmlinux"));
    Ok(Kernel {
        label: label.into(),
        image: img,
        boot,
        boot_note,
        release,
        modules,
        package,
        build: None,
    })
}

/// Unpacks the vmlinux next to the image (cached), falling back to the image itself.
fn unpack_vmlinux(img: &Path, out: &Path) -> (PathBuf, String) {
    if out.exists() {
        return (
            out.to_path_buf(),
            "uncompressed vmlinux through the PVH entry".into(),
        );
    }
    let d = match std::fs::read(img) {
        Ok(d) => d,
        Err(e) => return (img.to_path_buf(), format!("image as given ({e})")),
    };
    if bzimage::has_pvh_note(&d) {
        return (img.to_path_buf(), "ELF image through the PVH entry".into());
    }
    if let Some(p) = out.parent() {
        let _ = std::fs::create_dir_all(p);
    }
    match bzimage::extract_vmlinux(&d, out) {
        Ok(()) => (
            out.to_path_buf(),
            "uncompressed vmlinux through the PVH entry".into(),
        ),
        Err(e) => (
            img.to_path_buf(),
            format!("image as given through SeaBIOS (no vmlinux: {e})"),
        ),
    }
}

fn from_image(label: &str, img: &Path, modules: Option<&Path>) -> Result<Kernel, String> {
    let d = std::fs::read(img)
        .map_err(|e| format!("{}: cannot read the kernel image: {e}", img.display()))?;
    let release = bzimage::release(&d).unwrap_or_else(|| "unknown".into());
    let sum: String = Sha256::digest(&d)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    drop(d);
    let (boot, boot_note) = unpack_vmlinux(
        img,
        &cache_dir().join("vmlinux").join(format!("{sum}.vmlinux")),
    );
    let modules = match modules {
        Some(m) => {
            if !m.is_dir() {
                return Err(format!("--modules {}: not a directory", m.display()));
            }
            Some(m.to_path_buf())
        }
        None => Some(PathBuf::from("/lib/modules").join(&release)).filter(|p| p.is_dir()),
    };
    Ok(Kernel {
        label: label.into(),
        image: img.to_path_buf(),
        boot,
        boot_note,
        release,
        modules,
        package: None,
        build: None,
    })
}

/// Resolves `k`, a kernel not built here (fetching and unpacking as needed).
pub fn resolve(k: &KernelSpec, modules: Option<&Path>) -> Result<Kernel, String> {
    let given = k.to_string();
    let pkg = match k {
        KernelSpec::File(p) => {
            if p.extension().is_some_and(|e| e == "deb") {
                let dir = unpack_deb(p)?;
                return from_unpacked(&given, &dir, None);
            }
            return from_image(&given, p, modules);
        }
        KernelSpec::Debian { version, flavour } => resolve_short(&given, version, flavour)?,
        KernelSpec::Package(p) => p.clone(),
        KernelSpec::SourcePath(_) | KernelSpec::DebianSource(_) => {
            return Err(format!(
                "--kernel {given} is built from source (guest::build)"
            ));
        }
    };
    let deb = fetch_package(&pkg)?;
    let dir = unpack_deb(&deb)?;
    from_unpacked(&given, &dir, Some(pkg))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &[
        "linux-image-6.1.0-9-amd64-unsigned",
        "linux-image-6.1.0-57-amd64-unsigned",
        "linux-image-6.1.0-57-amd64",
        "linux-image-6.1.0-57-rt-amd64-unsigned",
        "linux-image-6.1.0-57-amd64-dbg",
        "linux-image-6.12.9+deb12-amd64-unsigned",
        "linux-image-6.12.117+deb12-amd64-unsigned",
        "linux-image-6.12.115+deb12-amd64-unsigned",
        "linux-image-6.12.117+deb12-rt-amd64-unsigned",
        "linux-image-6.12.117+deb12-cloud-amd64",
        "linux-image-amd64",
    ];

    #[test]
    fn picks_newest_of_flavour() {
        let it = || NAMES.iter().copied();
        assert_eq!(
            pick_debian(it(), "6.1", "amd64").as_deref(),
            Some("linux-image-6.1.0-57-amd64-unsigned")
        );
        assert_eq!(
            pick_debian(it(), "6.12", "amd64").as_deref(),
            Some("linux-image-6.12.117+deb12-amd64-unsigned")
        );
        assert_eq!(
            pick_debian(it(), "6.12", "rt-amd64").as_deref(),
            Some("linux-image-6.12.117+deb12-rt-amd64-unsigned")
        );
        // Only a signed package: taken.
        assert_eq!(
            pick_debian(it(), "6.12", "cloud-amd64").as_deref(),
            Some("linux-image-6.12.117+deb12-cloud-amd64")
        );
        assert_eq!(
            pick_debian(it(), "6.12.115", "amd64").as_deref(),
            Some("linux-image-6.12.115+deb12-amd64-unsigned")
        );
        assert_eq!(pick_debian(it(), "6.2", "amd64"), None);
    }
}
