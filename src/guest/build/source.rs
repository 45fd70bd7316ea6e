//! Kernel sources: a tree (a directory with a top Makefile), a tarball, or Debian's
//! `linux-source-X` package (`debian-src:6.12`, fetched with `apt-get download` and
//! its tarball taken out once), each with a hash that keys the builds made from it.

use super::sha256_hex;
use crate::options::KernelSpec;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone)]
pub enum Kind {
    Tree(PathBuf),
    Tarball(PathBuf),
}

#[derive(Debug, Clone)]
pub struct Source {
    /// As given: "debian-src:6.12", "src:/usr/src/linux".
    pub given: String,
    pub kind: Kind,
    /// What it resolved to, for provenance.
    pub detail: String,
    pub sha256: String,
}

fn is_tarball(p: &Path) -> bool {
    let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    [".tar", ".tar.xz", ".tar.gz", ".tgz", ".tar.bz2", ".tar.zst"]
        .iter()
        .any(|s| n.ends_with(s))
}

/// A tree's hash: its file list with sizes and modification times (reading 1.5 GB of
/// sources every run would cost more than the check is worth); `.git` is left out.
fn tree_hash(root: &Path) -> Result<String, String> {
    let mut lines = vec![];
    fn walk(root: &Path, d: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        for e in std::fs::read_dir(d)? {
            let e = e?;
            let p = e.path();
            let ft = e.file_type()?;
            if ft.is_dir() {
                if e.file_name() == ".git" {
                    continue;
                }
                walk(root, &p, out)?;
            } else {
                let m = e.metadata()?;
                let t = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                let rel = p.strip_prefix(root).unwrap_or(&p);
                out.push(format!("{} {} {t}", rel.display(), m.len()));
            }
        }
        Ok(())
    }
    walk(root, root, &mut lines).map_err(|e| format!("{}: {e}", root.display()))?;
    lines.sort();
    Ok(sha256_hex(lines.join("\n").as_bytes()))
}

fn file_hash(p: &Path) -> Result<String, String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Debian's linux-source-X tarball, taken out of the package once into `dir`.
fn debian_tarball(ver: &str, dir: &Path) -> Result<(PathBuf, String), String> {
    let pkg = format!("linux-source-{ver}");
    let deb = crate::guest::kernel::fetch_package(&pkg).map_err(|e| {
        format!("{e}\n(debian-src:{ver} needs apt's lists to know {pkg}: apt-get update)")
    })?;
    let stem = deb
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("bad .deb file name")?
        .to_string();
    let out = dir.join(format!("{stem}.tar.xz"));
    if !out.is_file() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let part = dir.join(format!("{stem}.tar.xz.part{}", std::process::id()));
        let f = std::fs::File::create(&part).map_err(|e| format!("{}: {e}", part.display()))?;
        let st = Command::new("sh")
            .args([
                "-c",
                "dpkg-deb --fsys-tarfile \"$1\" | tar -xO --wildcards './usr/src/linux-source-*.tar.*'",
                "sh",
            ])
            .arg(&deb)
            .stdout(f)
            .status()
            .map_err(|e| format!("cannot run dpkg-deb/tar: {e}"))?;
        let size = std::fs::metadata(&part).map(|m| m.len()).unwrap_or(0);
        if !st.success() || size == 0 {
            let _ = std::fs::remove_file(&part);
            return Err(format!(
                "{}: no usr/src/linux-source-*.tar.* inside (is it a linux-source package?)",
                deb.display()
            ));
        }
        std::fs::rename(&part, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok((out, format!("{pkg} ({})", deb.display())))
}

pub fn resolve(k: &KernelSpec, cache: &Path) -> Result<Source, String> {
    let given = k.to_string();
    let (kind, detail) = match k {
        KernelSpec::DebianSource(v) => {
            let (t, d) = debian_tarball(v, &cache.join("src"))?;
            (Kind::Tarball(t), d)
        }
        KernelSpec::SourcePath(p) => {
            let p = std::fs::canonicalize(p).map_err(|e| {
                format!(
                    "--kernel {given}: {e} (give a kernel tree or a tarball, or debian-src:6.12)"
                )
            })?;
            if p.is_dir() {
                if !p.join("Makefile").is_file() || !p.join("kernel/sched").is_dir() {
                    return Err(format!(
                        "--kernel {given}: {} has no top Makefile and kernel/sched: not a Linux kernel tree",
                        p.display()
                    ));
                }
                (Kind::Tree(p.clone()), format!("tree {}", p.display()))
            } else if is_tarball(&p) {
                (Kind::Tarball(p.clone()), format!("tarball {}", p.display()))
            } else {
                return Err(format!(
                    "--kernel {given}: {} is neither a directory nor a .tar[.xz|.gz|.bz2|.zst] tarball",
                    p.display()
                ));
            }
        }
        _ => return Err(format!("--kernel {given}: not a kernel to build here")),
    };
    let sha256 = match &kind {
        Kind::Tree(p) => tree_hash(p)?,
        Kind::Tarball(p) => file_hash(p)?,
    };
    Ok(Source {
        given: given.to_string(),
        kind,
        detail,
        sha256,
    })
}

/// The source's files into `dest` (which does not exist yet): the tarball unpacked
/// with its top directory stripped, or the tree copied.
pub fn materialize(s: &Source, dest: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let out = match &s.kind {
        Kind::Tarball(t) => Command::new("tar")
            .arg("-xf")
            .arg(t)
            .arg("-C")
            .arg(dest)
            .arg("--strip-components=1")
            .output(),
        Kind::Tree(p) => Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", p.display()))
            .arg(dest)
            .output(),
    }
    .map_err(|e| format!("cannot run tar/cp: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot unpack {}: {}",
            s.detail,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if !dest.join("Makefile").is_file() {
        return Err(format!(
            "{}: no top Makefile after unpacking (a tarball must hold one kernel tree)",
            s.detail
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_hash_changes_with_a_file() {
        let d = crate::testkit::private_dir("kbuild-tree-hash");
        std::fs::create_dir_all(d.join("kernel/sched")).unwrap();
        std::fs::write(d.join("Makefile"), "VERSION = 6\n").unwrap();
        std::fs::write(d.join("kernel/sched/rt.c"), "a").unwrap();
        let a = tree_hash(&d).unwrap();
        assert_eq!(a, tree_hash(&d).unwrap());
        std::fs::write(d.join("kernel/sched/rt.c"), "ab").unwrap();
        assert_ne!(a, tree_hash(&d).unwrap());
        let _ = std::fs::remove_dir_all(&d);
    }
}
