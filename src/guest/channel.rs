//! Results come home on a raw virtio-blk disk that only the init script writes
//! (a sparse file on the host), or, when the guest kernel has no virtio-blk, on the
//! guest's second serial port (ttyS1); the kernel's console stays on ttyS0. Under TCG
//! the serial port carries about 45 KB/s, too slow for a 16 MB trace, and a PREEMPT_RT
//! kernel once disabled its IRQ mid-transfer; the disk takes seconds.
//!
//! On the disk the guest appends a log of frames as the run goes: one after each
//! finished trial (the files changed since the last frame) and a final one (the whole
//! results directory), each at a 4 KiB boundary, each one header line
//! `XRUNRIG-FRAME v1 seq=<n> kind=<trial|final> rc=<exit> size=<bytes> sha256=<hex>`
//! and a tar; a guest that dies mid-run leaves every frame it finished, and a torn
//! last frame fails its checksum and is dropped. The serial channel carries only the
//! final archive, `XRUNRIG-ARCHIVE v1 rc=<exit> size=<bytes> sha256=<hex>` and a tar.

use sha2::{Digest, Sha256};
use std::path::{Component, Path};

pub const MAGIC: &str = "XRUNRIG-ARCHIVE v1";

/// A frame of the disk's log.
pub const FRAME_MAGIC: &str = "XRUNRIG-FRAME v1";

/// Frames start at multiples of this, so a frame never shares a block with the next.
pub const FRAME_ALIGN: u64 = 4096;

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

/// One frame of the disk's log.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub seq: u64,
    /// The final frame holds the whole results directory and the run's exit code.
    pub last: bool,
    pub rc: i32,
    pub tar: Vec<u8>,
}

/// What the disk's log held: every whole frame in order, and what was wrong with the
/// one after them, when there was one (cut short or corrupt: the guest died writing it).
#[derive(Debug, Default)]
pub struct Log {
    pub frames: Vec<Frame>,
    pub torn: Option<String>,
}

fn header_field<'a>(head: &'a str, k: &str) -> Option<&'a str> {
    head.split_whitespace()
        .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Reads the frame log from anything seekable (the results disk). Stops at the first
/// place without a frame header; a frame whose body is short or fails its checksum
/// ends the log as `torn`.
pub fn read_log<R: std::io::Read + std::io::Seek>(mut r: R) -> Result<Log, String> {
    use std::io::{Read, SeekFrom};
    let mut log = Log::default();
    let mut off = 0u64;
    loop {
        if off >= DISK_BYTES {
            break;
        }
        r.seek(SeekFrom::Start(off)).map_err(|e| e.to_string())?;
        let mut head = vec![0u8; 512];
        let n = read_full(&mut r, &mut head).map_err(|e| e.to_string())?;
        head.truncate(n);
        if !head.starts_with(FRAME_MAGIC.as_bytes()) {
            break;
        }
        let Some(nl) = head.iter().position(|&b| b == b'\n') else {
            log.torn = Some(format!(
                "frame {} at byte {off}: header cut short",
                log.frames.len()
            ));
            break;
        };
        let h = String::from_utf8_lossy(&head[..nl]).into_owned();
        let parsed = (|| {
            Some((
                header_field(&h, "seq")?.parse::<u64>().ok()?,
                header_field(&h, "kind")? == "final",
                header_field(&h, "rc")?.parse::<i32>().ok()?,
                header_field(&h, "size")?.parse::<u64>().ok()?,
                header_field(&h, "sha256")?.to_string(),
            ))
        })();
        let Some((seq, last, rc, size, sum)) = parsed else {
            log.torn = Some(format!("frame at byte {off}: bad header '{h}'"));
            break;
        };
        if off + nl as u64 + 1 + size > DISK_BYTES {
            log.torn = Some(format!("frame {seq}: header claims {size} bytes"));
            break;
        }
        r.seek(SeekFrom::Start(off + nl as u64 + 1))
            .map_err(|e| e.to_string())?;
        let mut tar = Vec::new();
        (&mut r)
            .take(size)
            .read_to_end(&mut tar)
            .map_err(|e| e.to_string())?;
        if (tar.len() as u64) < size {
            log.torn = Some(format!(
                "frame {seq} was cut short: {} of {size} bytes",
                tar.len()
            ));
            break;
        }
        if sha256_hex(&tar) != sum {
            log.torn = Some(format!("frame {seq} is torn or corrupt (sha256 differs)"));
            break;
        }
        log.frames.push(Frame { seq, last, rc, tar });
        off = (off + nl as u64 + 1 + size).div_ceil(FRAME_ALIGN) * FRAME_ALIGN;
        if last {
            break;
        }
    }
    Ok(log)
}

/// The results disk's frame log.
pub fn read_disk_log(path: &Path) -> Result<Log, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_log(f).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_full(f: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
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

/// Unpacks the regular files and directories of a tar (ustar, GNU, pax: the `tar`
/// crate reads them) into `dest`; a name that would leave `dest` (`..`, an absolute
/// path) refuses the whole archive, where `tar::Entry::unpack_in` would skip it
/// silently. Links and devices are skipped: a results directory has none. Returns the
/// files written.
pub fn untar(tar: &[u8], dest: &Path) -> Result<Vec<String>, String> {
    let bad = |e: std::io::Error| format!("the results archive is not a readable tar: {e}");
    let mut archive = tar::Archive::new(tar);
    let mut files = vec![];
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let raw = entry.path().map_err(bad)?.into_owned();
        let name = raw.to_string_lossy().into_owned();
        // `./x` is x; anything but plain names after that is refused.
        let mut rel = std::path::PathBuf::new();
        for c in raw.components() {
            match c {
                Component::Normal(p) => rel.push(p),
                Component::CurDir => {}
                _ => {
                    return Err(format!(
                        "tar entry '{name}' would leave the results directory"
                    ));
                }
            }
        }
        if rel.as_os_str().is_empty() {
            continue;
        }
        let path = dest.join(&rel);
        let kind = entry.header().entry_type();
        if kind.is_file() {
            let mut data = Vec::with_capacity(entry.size().min(tar.len() as u64) as usize);
            std::io::Read::read_to_end(&mut entry, &mut data).map_err(bad)?;
            // The reader stops quietly at the archive's end: a short entry is an error.
            if data.len() as u64 != entry.size() {
                return Err(format!("tar entry '{name}' runs past the archive's end"));
            }
            if let Some(p) = path.parent() {
                std::fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()))?;
            }
            std::fs::write(&path, data).map_err(|e| format!("{}: {e}", path.display()))?;
            files.push(rel.to_string_lossy().into_owned());
        } else if kind.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
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

    /// A frame as the guest's init script writes it, padded to the next frame.
    fn frame(seq: u64, last: bool, tar: &[u8]) -> Vec<u8> {
        let kind = if last { "final" } else { "trial" };
        let mut f = format!(
            "{FRAME_MAGIC} seq={seq} kind={kind} rc=0 size={} sha256={}\n",
            tar.len(),
            sha256_hex(tar)
        )
        .into_bytes();
        f.extend_from_slice(tar);
        f.resize(f.len().div_ceil(4096) * 4096, 0);
        f
    }

    #[test]
    fn frame_log_keeps_whole_frames_and_drops_a_torn_last_one() {
        let a: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let b = b"second".to_vec();
        let c: Vec<u8> = vec![9u8; 5000];
        let mut disk = frame(0, false, &a);
        disk.extend(frame(1, false, &b));
        let whole = disk.len();
        disk.extend(frame(2, true, &c));
        // All three, the last final.
        let log = read_log(std::io::Cursor::new(&disk)).unwrap();
        assert_eq!(log.frames.len(), 3);
        assert_eq!(
            (log.frames[0].tar.clone(), log.frames[1].tar.clone()),
            (a.clone(), b.clone())
        );
        assert!(log.frames[2].last && log.torn.is_none());
        // The guest died writing the third: cut mid-body (zeros after, as on the
        // sparse disk), or a block of it never written.
        let mut cut = disk[..whole + 3000].to_vec();
        cut.resize(disk.len() + 8192, 0);
        let log = read_log(std::io::Cursor::new(&cut)).unwrap();
        assert_eq!(log.frames.len(), 2, "{log:?}");
        assert!(log.torn.as_deref().unwrap().contains("frame 2"), "{log:?}");
        let mut short = disk[..whole + 100].to_vec();
        short.truncate(whole + 100);
        let log = read_log(std::io::Cursor::new(&short)).unwrap();
        assert_eq!(log.frames.len(), 2);
        assert!(
            log.torn.as_deref().unwrap().contains("cut short"),
            "{log:?}"
        );
        // Nothing written: an empty log, nothing torn.
        let log = read_log(std::io::Cursor::new(vec![0u8; 8192])).unwrap();
        assert!(log.frames.is_empty() && log.torn.is_none());
    }

    #[test]
    fn frame_log_reads_the_sparse_disk() {
        let d = std::env::temp_dir().join(format!("xrunrig-disk-{}", std::process::id()));
        create_disk(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().len(), DISK_BYTES);
        assert!(read_disk_log(&d).unwrap().frames.is_empty());
        let tar: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&d).unwrap();
            f.write_all(&frame(0, false, &tar)).unwrap();
            f.write_all(&frame(1, true, b"x")).unwrap();
        }
        let log = read_disk_log(&d).unwrap();
        assert_eq!(log.frames.len(), 2);
        assert_eq!(log.frames[0].tar, tar);
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

    /// A one-entry tar whose name is written raw into the header, as a hostile or
    /// broken guest could (tar::Builder itself refuses such names).
    fn raw_tar(name: &str) -> Vec<u8> {
        let mut h = tar::Header::new_ustar();
        h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        h.set_size(1);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_cksum();
        let mut t = h.as_bytes().to_vec();
        t.extend(b"x");
        t.resize(1024, 0);
        t.extend(vec![0u8; 1024]);
        t
    }

    #[test]
    fn refuses_escaping_names() {
        let base = std::env::temp_dir().join(format!("xrunrig-escape-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dest = base.join("dest");
        for name in ["../x", "/x", "/tmp/x", "a/../../x", "./../x"] {
            let e = untar(&raw_tar(name), &dest).unwrap_err();
            assert!(e.contains("would leave") && e.contains(name), "{name}: {e}");
        }
        // Nothing written anywhere: not beside dest, not at the absolute path.
        assert!(!base.join("x").exists() && !Path::new("/x").exists());
        // A plain name in the same hand-built form is unpacked: the refusal is the name.
        assert_eq!(untar(&raw_tar("./ok"), &dest).unwrap(), ["ok"]);
        assert_eq!(std::fs::read(dest.join("ok")).unwrap(), b"x");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn refuses_a_tar_cut_short() {
        let mut t = raw_tar("ok");
        t.truncate(512); // header only: the entry's byte is missing
        let e = untar(&t, &std::env::temp_dir().join("xrunrig-never")).unwrap_err();
        assert!(e.contains("past the archive's end"), "{e}");
    }
}
