//! A newc ("070701") cpio writer: the format the kernel unpacks as an initramfs.
//! Parent directories are emitted before their entries because the kernel's unpacker
//! does not create missing parents.

use std::collections::BTreeSet;
use std::io::{self, Write};

pub struct CpioWriter<W: Write> {
    out: W,
    ino: u32,
    dirs: BTreeSet<String>,
    written: u64,
}

fn pad4(n: u64) -> usize {
    ((4 - (n % 4)) % 4) as usize
}

impl<W: Write> CpioWriter<W> {
    pub fn new(out: W) -> Self {
        CpioWriter {
            out,
            ino: 1,
            dirs: BTreeSet::new(),
            written: 0,
        }
    }

    fn header(&mut self, name: &str, mode: u32, size: u64) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        let hdr = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            size,
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.ino += 1;
        self.out.write_all(hdr.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        let n = 110 + name.len() as u64 + 1;
        self.out.write_all(&[0u8; 3][..pad4(n)])?;
        self.written += n + pad4(n) as u64;
        Ok(())
    }

    fn data(&mut self, data: &[u8]) -> io::Result<()> {
        self.out.write_all(data)?;
        let p = pad4(data.len() as u64);
        self.out.write_all(&[0u8; 3][..p])?;
        self.written += data.len() as u64 + p as u64;
        Ok(())
    }

    /// Creates `path` and every missing parent directory (mode 0755).
    pub fn dir(&mut self, path: &str) -> io::Result<()> {
        let path = path.trim_matches('/');
        if path.is_empty() || self.dirs.contains(path) {
            return Ok(());
        }
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent)?;
        }
        self.dirs.insert(path.to_string());
        self.header(path, 0o040755, 0)
    }

    fn parent(&mut self, path: &str) -> io::Result<()> {
        match path.trim_matches('/').rsplit_once('/') {
            Some((p, _)) => self.dir(p),
            None => Ok(()),
        }
    }

    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.parent(path)?;
        self.header(path, 0o100000 | (mode & 0o7777), data.len() as u64)?;
        self.data(data)
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        self.parent(path)?;
        self.header(path, 0o120777, target.len() as u64)?;
        self.data(target.as_bytes())
    }

    /// Writes the trailer and returns the writer and the archive's size.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.header("TRAILER!!!", 0, 0)?;
        self.out.flush()?;
        Ok((self.out, self.written))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads back (name, mode, data) entries, checking alignment on the way.
    fn parse(buf: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = vec![];
        let mut off = 0;
        loop {
            assert_eq!(off % 4, 0);
            assert_eq!(&buf[off..off + 6], b"070701");
            let field = |i: usize| {
                let s = std::str::from_utf8(&buf[off + 6 + i * 8..off + 14 + i * 8]).unwrap();
                u32::from_str_radix(s, 16).unwrap()
            };
            let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
            let name = std::str::from_utf8(&buf[off + 110..off + 110 + namesize - 1])
                .unwrap()
                .to_string();
            assert_eq!(buf[off + 110 + namesize - 1], 0);
            let mut p = off + 110 + namesize;
            p += (4 - p % 4) % 4;
            let data = buf[p..p + size].to_vec();
            p += size;
            p += (4 - p % 4) % 4;
            off = p;
            if name == "TRAILER!!!" {
                assert_eq!(off, buf.len());
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn writes_parents_files_links_and_trailer() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("/usr/lib/x/libfoo.so.1", 0o755, b"hello").unwrap();
        w.symlink("/bin/sh", "busybox").unwrap();
        w.file("/usr/lib/x/other", 0o644, b"").unwrap();
        w.dir("/proc").unwrap();
        let (buf, n) = w.finish().unwrap();
        assert_eq!(n as usize, buf.len());
        let e = parse(&buf);
        let names: Vec<&str> = e.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "usr",
                "usr/lib",
                "usr/lib/x",
                "usr/lib/x/libfoo.so.1",
                "bin",
                "bin/sh",
                "usr/lib/x/other",
                "proc"
            ]
        );
        assert_eq!(e[3].1, 0o100755);
        assert_eq!(e[3].2, b"hello");
        assert_eq!(e[5].1, 0o120777);
        assert_eq!(e[5].2, b"busybox");
        assert_eq!(e[0].1, 0o040755);
    }
}
