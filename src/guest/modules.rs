//! Kernel modules for the guest: found by name in the modules tree, put in load
//! order from each module's own `depends=` (no modules.dep needed: Debian's package
//! does not ship one) and decompressed (6.12 ships .ko.xz) so busybox insmod can load
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What audio rigs need: ALSA with a dummy card and a loopback card.
pub const SOUND: &[&str] = &[
    "soundcore",
    "snd",
    "snd-timer",
    "snd-hrtimer",
    "snd-pcm",
    "snd-dummy",
    "snd-aloop",
];

/// The results disk (virtio-blk over PCI); built in on some kernels, modules on others
/// (Debian 6.1 has all of virtio as modules).
pub const RESULTS_DISK: &[&str] = &["virtio_pci", "virtio_blk"];

pub struct Module {
    pub name: String,
    pub data: Vec<u8>,
}

fn norm(n: &str) -> String {
    n.replace('_', "-")
}

fn module_name(file: &str) -> Option<&str> {
    [".ko", ".ko.xz", ".ko.zst", ".ko.gz"]
        .iter()
        .find_map(|s| file.strip_suffix(s))
}

fn index(dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            index(&p, out);
        } else if let Some(n) = p.file_name().and_then(|n| n.to_str()).and_then(module_name) {
            out.entry(norm(n)).or_insert(p);
        }
    }
}

fn builtin(dir: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(dir.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.rsplit('/').next().and_then(module_name).map(norm))
        .collect()
}

fn decompress(p: &Path) -> Result<Vec<u8>, String> {
    let s = p.to_string_lossy();
    let tool = if s.ends_with(".xz") {
        "xz"
    } else if s.ends_with(".zst") {
        "zstd"
    } else if s.ends_with(".gz") {
        "gzip"
    } else {
        return std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    };
    let o = Command::new(tool)
        .arg("-dc")
        .arg(p)
        .output()
        .map_err(|e| format!("cannot run {tool} to unpack {}: {e}", p.display()))?;
    if !o.status.success() {
        return Err(format!("{tool} failed on {}", p.display()));
    }
    Ok(o.stdout)
}

/// The `depends=` entry of a module's .modinfo section.
pub fn depends(data: &[u8]) -> Vec<String> {
    let key = b"depends=";
    let Some(i) = data.windows(key.len()).position(|w| w == key) else {
        return vec![];
    };
    let rest = &data[i + key.len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .filter(|s| !s.is_empty())
        .map(norm)
        .collect()
}

/// The wanted modules and their dependencies in load order; notes say what was
/// built in or missing.
pub fn collect(dir: &Path, wanted: &[&str]) -> (Vec<Module>, Vec<String>) {
    let mut idx = BTreeMap::new();
    index(dir, &mut idx);
    let builtin = builtin(dir);
    let mut out = vec![];
    let mut notes = vec![];
    let mut seen = BTreeSet::new();
    fn visit(
        n: &str,
        idx: &BTreeMap<String, PathBuf>,
        builtin: &BTreeSet<String>,
        seen: &mut BTreeSet<String>,
        out: &mut Vec<Module>,
        notes: &mut Vec<String>,
    ) {
        if !seen.insert(n.to_string()) || builtin.contains(n) {
            return;
        }
        let Some(p) = idx.get(n) else {
            notes.push(format!("module {n} not found"));
            return;
        };
        match decompress(p) {
            Ok(data) => {
                for d in depends(&data) {
                    visit(&d, idx, builtin, seen, out, notes);
                }
                out.push(Module {
                    name: n.to_string(),
                    data,
                });
            }
            Err(e) => notes.push(e),
        }
    }
    for w in wanted {
        visit(&norm(w), &idx, &builtin, &mut seen, &mut out, &mut notes);
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_depends_and_skips_builtin() {
        let d = std::env::temp_dir().join(format!("xrunrig-mods-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("kernel/sound/core")).unwrap();
        let m = |name: &str, deps: &str| {
            std::fs::write(
                d.join(format!("kernel/sound/core/{name}.ko")),
                format!("\x7fELF junk\0license=GPL\0depends={deps}\0name={name}\0"),
            )
            .unwrap();
        };
        m("snd-aloop", "snd-pcm,snd,snd-timer");
        m("snd-pcm", "snd-timer,snd");
        m("snd-timer", "snd");
        m("snd", "soundcore");
        m("soundcore", "");
        std::fs::write(d.join("modules.builtin"), "kernel/sound/soundcore.ko\n").unwrap();
        let (mods, notes) = collect(&d, &["snd_aloop", "snd-dummy"]);
        let names: Vec<&str> = mods.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["snd", "snd-timer", "snd-pcm", "snd-aloop"]);
        assert_eq!(notes, ["module snd-dummy not found"]);
        assert_eq!(depends(&mods[3].data), ["snd-pcm", "snd", "snd-timer"]);
        let _ = std::fs::remove_dir_all(&d);
    }
}
