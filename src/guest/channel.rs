//! Results come home on a raw virtio-blk disk that only the init script writes
//! (a sparse file on the host), or, when the guest kernel has no virtio-blk, on the
//! guest's second serial port (ttyS1); the kernel's console stays on ttyS0. Under TCG
//! the serial port carries about 45 KB/s, too slow for a 16 MB trace, and a PREEMPT_RT
//! kernel once disabled its IRQ mid-transfer; the disk takes seconds. The frame is
//! one header line, `XRUNRIG-ARCHIVE v1 rc=<exit> size=<bytes> sha256=<hex>`, then a
//! tar of the guest's results directory; the checksum proves it arrived whole.

use sha2::{Digest, Sha256};
use std::path::{Component, Path};

pub const MAGIC: &str = "XRUNRIG-ARCHIVE v1";

/// The results disk as the guest sees it (the only virtio-blk device).
pub const GUEST_DISK: &str = "/dev/vda";

/// Size of the sparse results disk: far above any guest's memory, so any archive
/// the guest could build fits; unwritten blocks take no space on the host.
pub const DISK_BYTES: u64 = 4 << 30;

/// Creates (or empties) the sparse results disk.
pub fn create_disk(path: &Path) -> std::io::Result<()> {
    let f = std::fs::File::create(path)?;
    f.set_len(DISK_BYTES)
}

/// The frame at the start of the results disk, read no further than its header says.
/// `Err` when the guest wrote nothing there.
pub fn read_disk(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = vec![0u8; 4096];
    let n = read_full(&mut f, &mut head).map_err(|e| format!("{}: {e}", path.display()))?;
    head.truncate(n);
    if !head.starts_with(MAGIC.as_bytes()) {
        return Err("the guest wrote no results archive on the results disk".into());
    }
    let nl = head
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("the results disk's header is cut short")?;
    let size: usize = String::from_utf8_lossy(&head[..nl])
        .split_whitespace()
        .find_map(|w| w.strip_prefix("size="))
        .and_then(|v| v.parse().ok())
        .ok_or("the results disk's header has no size")?;
    let want = nl + 1 + size;
    if (want as u64) > DISK_BYTES {
        return Err(format!("the results disk's header claims {size} bytes"));
    }
    let mut buf = head;
    if buf.len() < want {
        let mut rest = Vec::with_capacity(want - buf.len());
        f.take((want - buf.len()) as u64)
            .read_to_end(&mut rest)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        buf.extend_from_slice(&rest);
    } else {
        buf.truncate(want);
    }
    Ok(buf)
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[derive(Debug)]
pub struct Archive {
    /// The guest run's exit code.
    pub rc: i32,
    pub tar: Vec<u8>,
}

/// Parses the channel's bytes. `Err` says what is wrong (nothing sent, cut short,
/// corrupted).
pub fn parse(buf: &[u8]) -> Result<Archive, String> {
    let start = buf
        .windows(MAGIC.len())
        .position(|w| w == MAGIC.as_bytes())
        .ok_or("the guest sent no results archive")?;
    let buf = &buf[start..];
    let nl = buf
        .iter()
        .position(|&b| b == b'\n')
        .ok_or("the results archive's header was cut short")?;
    let head = String::from_utf8_lossy(&buf[..nl])
        .trim_end_matches('\r')
        .to_string();
    let field = |k: &str| {
        head.split_whitespace()
            .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .map(str::to_string)
    };
    let rc: i32 = field("rc")
        .and_then(|v| v.parse().ok())
        .ok_or("archive header: no rc")?;
    let size: usize = field("size")
        .and_then(|v| v.parse().ok())
        .ok_or("archive header: no size")?;
    let sum = field("sha256").ok_or("archive header: no sha256")?;
    let body = &buf[nl + 1..];
    if body.len() < size {
        return Err(format!(
            "the results archive was cut short: {} of {size} bytes arrived",
            body.len()
        ));
    }
    let tar = body[..size].to_vec();
    let got: String = Sha256::digest(&tar)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got != sum {
        return Err(format!(
            "the results archive is corrupt: sha256 {got}, header says {sum}"
        ));
    }
    Ok(Archive { rc, tar })
}

fn octal(f: &[u8]) -> u64 {
    let s = String::from_utf8_lossy(f);
    u64::from_str_radix(s.trim_matches(|c: char| c == '\0' || c == ' '), 8).unwrap_or(0)
}

fn cstr(f: &[u8]) -> String {
    let end = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    String::from_utf8_lossy(&f[..end]).into_owned()
}

/// Unpacks regular files and directories of a ustar/GNU tar into `dest`; names that
/// would leave `dest` are refused. Returns the files written.
pub fn untar(tar: &[u8], dest: &Path) -> Result<Vec<String>, String> {
    let mut off = 0;
    let mut long_name: Option<String> = None;
    let mut files = vec![];
    while off + 512 <= tar.len() {
        let h = &tar[off..off + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let size = octal(&h[124..136]) as usize;
        let kind = h[156];
        let data = tar
            .get(off + 512..off + 512 + size)
            .ok_or("tar entry runs past the archive's end")?;
        off += 512 + size.div_ceil(512) * 512;
        let mut name = match long_name.take() {
            Some(n) => n,
            None => {
                let prefix = if &h[257..262] == b"ustar" {
                    cstr(&h[345..500])
                } else {
                    String::new()
                };
                let n = cstr(&h[0..100]);
                if prefix.is_empty() {
                    n
                } else {
                    format!("{prefix}/{n}")
                }
            }
        };
        if kind == b'L' {
            long_name = Some(cstr(data));
            continue;
        }
        name = name
            .trim_start_matches("./")
            .trim_end_matches('/')
            .to_string();
        if name.is_empty() || name == "." {
            continue;
        }
        let rel = Path::new(&name);
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(format!(
                "tar entry '{name}' would leave the results directory"
            ));
        }
        let path = dest.join(rel);
        match kind {
            b'0' | 0 => {
                if let Some(p) = path.parent() {
                    std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
                }
                std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
                files.push(name);
            }
            b'5' => {
                std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?
            }
            _ => {} // links, devices: a results directory has none
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn frame_checks_size_and_checksum() {
        let tar = b"0123456789".to_vec();
        let sum: String = Sha256::digest(&tar)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut buf = format!("noise\n{MAGIC} rc=3 size=10 sha256={sum}\n").into_bytes();
        buf.extend_from_slice(&tar);
        let a = parse(&buf).unwrap();
        assert_eq!((a.rc, a.tar), (3, tar.clone()));
        assert!(
            parse(&buf[..buf.len() - 1])
                .unwrap_err()
                .contains("cut short")
        );
        let mut bad = buf.clone();
        *bad.last_mut().unwrap() = b'x';
        assert!(parse(&bad).unwrap_err().contains("corrupt"));
        assert!(
            parse(b"console noise only")
                .unwrap_err()
                .contains("no results")
        );
    }

    #[test]
    fn disk_frame_is_read_to_its_size_and_an_empty_disk_says_so() {
        let d = std::env::temp_dir().join(format!("xrunrig-disk-{}", std::process::id()));
        create_disk(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().len(), DISK_BYTES);
        assert!(read_disk(&d).unwrap_err().contains("no results archive"));
        // An archive larger than the first read, written over the sparse file as the
        // guest's `cat >/dev/vda` does.
        let tar: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let sum: String = Sha256::digest(&tar)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut frame = format!("{MAGIC} rc=0 size={} sha256={sum}\n", tar.len()).into_bytes();
        frame.extend_from_slice(&tar);
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&d).unwrap();
            f.write_all(&frame).unwrap();
        }
        let got = read_disk(&d).unwrap();
        assert_eq!(got.len(), frame.len());
        assert_eq!(parse(&got).unwrap().tar, tar);
        let _ = std::fs::remove_file(&d);
    }

    #[test]
    fn untars_what_tar_writes() {
        let base = std::env::temp_dir().join(format!("xrunrig-untar-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let src = base.join("src");
        std::fs::create_dir_all(src.join("cycles")).unwrap();
        std::fs::write(src.join("summary.json"), "{}\n").unwrap();
        let long = format!("cycles/{}.bin", "x".repeat(120));
        std::fs::write(src.join(&long), vec![7u8; 1000]).unwrap();
        let tarf = base.join("r.tar");
        let st = Command::new("tar")
            .arg("-cf")
            .arg(&tarf)
            .arg("-C")
            .arg(&src)
            .arg(".")
            .status()
            .unwrap();
        assert!(st.success());
        let dest = base.join("dest");
        let mut files = untar(&std::fs::read(&tarf).unwrap(), &dest).unwrap();
        files.sort();
        assert_eq!(files, [long.clone(), "summary.json".to_string()]);
        assert_eq!(std::fs::read(dest.join(&long)).unwrap(), vec![7u8; 1000]);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn refuses_escaping_names() {
        let mut h = vec![0u8; 1024];
        h[..9].copy_from_slice(b"../evil\0\0");
        h[124..135].copy_from_slice(b"00000000000");
        h[156] = b'0';
        let mut t = h.clone();
        t.extend(vec![0u8; 1024]);
        assert!(
            untar(&t, Path::new("/tmp/never"))
                .unwrap_err()
                .contains("leave")
        );
    }
}
