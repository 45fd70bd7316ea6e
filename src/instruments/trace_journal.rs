//! The trace journal as read back: untrusted input, like the knob journal. Before the
//! restore path writes anything, a journal must parse within a size cap, be of a version
//! this xrunrig reads, name a tracefs mount that is mounted now and an instance directly
//! under its `instances/` whose name is one xrunrig gives (`xrunrig-PID`), and be from
//! this boot to unmount anything. Pure functions (no I/O), so the fuzzer feeds them.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// 2 added `boot_id`; version 1 journals are read but never unmount anything.
pub const VERSION: u32 = 2;
/// A real journal is a few hundred bytes.
pub const MAX_BYTES: usize = 16 * 1024;
/// File name prefix in the state directory: `trace-journal-PID.json` (one per tracing
/// process, so `watch` and a traced run can overlap); `trace-journal.json` is the name
/// version 1 used.
pub const PREFIX: &str = "trace-journal";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub version: u32,
    pub pid: u32,
    pub started: String,
    /// /proc/sys/kernel/random/boot_id when written; absent in version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The tracefs mount point in use.
    pub root: String,
    /// True when this run mounted tracefs there (and so must unmount it).
    pub mounted_by_us: bool,
    /// The instance directory this run created.
    pub instance: String,
}

/// What the restore path may do for a journal that passed the checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Written before the last reboot: instances and mounts did not survive it.
    OtherBoot,
    /// Its tracefs root is not mounted now: its instance went with the mount (an
    /// instance lives only inside tracefs), so there is nothing left to undo. The
    /// journal is retired and nothing is touched.
    Gone { root: PathBuf },
    /// Remove `instance` (a directory name under `root/instances`), and unmount `root`
    /// when `unmount`.
    Undo {
        root: PathBuf,
        instance: String,
        unmount: bool,
    },
}

/// Whether `name` is an instance name xrunrig gives: `xrunrig-` and a pid.
pub fn instance_name_ok(name: &str) -> bool {
    name.strip_prefix("xrunrig-")
        .is_some_and(|p| !p.is_empty() && p.len() <= 10 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a file in the state directory is a trace journal by its name.
pub fn is_journal_name(name: &str) -> bool {
    name == format!("{PREFIX}.json")
        || name
            .strip_prefix(&format!("{PREFIX}-"))
            .and_then(|r| r.strip_suffix(".json"))
            .is_some_and(|p| {
                !p.is_empty() && p.len() <= 10 && p.bytes().all(|b| b.is_ascii_digit())
            })
}

/// Parses a journal's text: size cap, then the version (so a newer journal is named as
/// such even if its shape changed), then the shape. No panics whatever the text.
pub fn parse(text: &str) -> Result<Journal, String> {
    if text.len() > MAX_BYTES {
        return Err(format!(
            "it is {} bytes, more than any trace journal ({MAX_BYTES})",
            text.len()
        ));
    }
    #[derive(Deserialize)]
    struct Head {
        version: u32,
    }
    let head: Head =
        serde_json::from_str(text).map_err(|e| format!("it is not a trace journal ({e})"))?;
    if head.version == 0 || head.version > VERSION {
        return Err(format!(
            "its version is {}, and this xrunrig reads versions 1 to {VERSION}: restore it with \
             the xrunrig that wrote it, or drop it with `xrunrig restore --discard`",
            head.version
        ));
    }
    serde_json::from_str(text).map_err(|e| format!("it is not a trace journal ({e})"))
}

/// Checks a parsed journal against the machine as it is now: `mounts` are the tracefs
/// mount points from /proc/mounts, `boot_now` this boot's id. Err says why nothing in it
/// may be touched.
pub fn check(j: &Journal, mounts: &[PathBuf], boot_now: Option<&str>) -> Result<Plan, String> {
    if let (Some(was), Some(now)) = (j.boot_id.as_deref(), boot_now)
        && was != now
    {
        return Ok(Plan::OtherBoot);
    }
    let root = Path::new(&j.root);
    if !root.is_absolute() || j.root.contains("/../") || j.root.ends_with("/..") {
        return Err(format!(
            "its tracefs root '{}' is not a plain absolute path",
            j.root
        ));
    }
    let inst = Path::new(&j.instance);
    let name = inst
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| instance_name_ok(n))
        .ok_or_else(|| {
            format!(
                "its instance '{}' is not one xrunrig names (instances/xrunrig-PID)",
                j.instance
            )
        })?;
    if inst != root.join("instances").join(name) {
        return Err(format!(
            "its instance '{}' is not under {}/instances",
            j.instance, j.root
        ));
    }
    if name != format!("xrunrig-{}", j.pid) {
        return Err(format!(
            "its instance '{}' is not its own process's (pid {}): a journal removes only the \
             instance of the process that wrote it",
            j.instance, j.pid
        ));
    }
    if !mounts.iter().any(|m| m == root) {
        // Instances left in another mount of the same tracefs are found by pid.
        return Ok(Plan::Gone {
            root: root.to_path_buf(),
        });
    }
    // A mount is ours to undo only when this boot's journal says we made it: a version 1
    // journal cannot prove its boot, and an unmount of a tracefs systemd mounted would
    // pull it from under every other tool.
    let unmount = j.mounted_by_us && j.boot_id.is_some() && boot_now.is_some();
    Ok(Plan::Undo {
        root: root.to_path_buf(),
        instance: name.to_string(),
        unmount,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal of a dead pid naming a live run's instance: refused, nothing touched.
    #[test]
    fn an_instance_is_removed_only_by_its_own_pids_journal() {
        let mut k = j();
        k.instance = "/sys/kernel/tracing/instances/xrunrig-43".into();
        let mounts = [PathBuf::from("/sys/kernel/tracing")];
        let e = check(&k, &mounts, Some("boot-a")).unwrap_err();
        assert!(e.contains("not its own process's (pid 42)"), "{e}");
        assert!(matches!(
            check(&j(), &mounts, Some("boot-a")),
            Ok(Plan::Undo { .. })
        ));
    }

    fn j() -> Journal {
        Journal {
            version: VERSION,
            pid: 42,
            started: "t".into(),
            boot_id: Some("boot-a".into()),
            root: "/sys/kernel/tracing".into(),
            mounted_by_us: true,
            instance: "/sys/kernel/tracing/instances/xrunrig-42".into(),
        }
    }

    fn mounts() -> Vec<PathBuf> {
        vec![PathBuf::from("/sys/kernel/tracing")]
    }

    #[test]
    fn a_journal_of_this_boot_undoes_its_instance_and_mount() {
        assert_eq!(
            check(&j(), &mounts(), Some("boot-a")),
            Ok(Plan::Undo {
                root: "/sys/kernel/tracing".into(),
                instance: "xrunrig-42".into(),
                unmount: true
            })
        );
    }

    #[test]
    fn another_boot_is_left_alone() {
        assert_eq!(check(&j(), &mounts(), Some("boot-b")), Ok(Plan::OtherBoot));
    }

    #[test]
    fn a_journal_without_a_boot_id_never_unmounts() {
        let v1 = Journal {
            version: 1,
            boot_id: None,
            ..j()
        };
        match check(&v1, &mounts(), Some("boot-a")) {
            Ok(Plan::Undo { unmount, .. }) => assert!(!unmount),
            other => panic!("{other:?}"),
        }
        let not_ours = Journal {
            mounted_by_us: false,
            ..j()
        };
        match check(&not_ours, &mounts(), Some("boot-a")) {
            Ok(Plan::Undo { unmount, .. }) => assert!(!unmount),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn instances_xrunrig_does_not_name_are_refused() {
        for inst in [
            "/sys/kernel/tracing/instances/foo",
            "/sys/kernel/tracing/instances/xrunrig-",
            "/sys/kernel/tracing/instances/xrunrig-12a",
            "/sys/kernel/tracing/instances/xrunrig-42/../../..",
            "/sys/kernel/tracing/xrunrig-42",
            "/etc/xrunrig-42",
            "/sys/kernel/tracing/instances/sub/xrunrig-42",
        ] {
            let f = Journal {
                instance: inst.into(),
                ..j()
            };
            assert!(check(&f, &mounts(), Some("boot-a")).is_err(), "{inst}");
        }
    }

    #[test]
    fn a_root_that_is_not_plain_is_refused() {
        for root in ["relative", "/sys/kernel/tracing/.."] {
            let f = Journal {
                root: root.into(),
                instance: format!("{root}/instances/xrunrig-42"),
                ..j()
            };
            let e = check(&f, &mounts(), Some("boot-a")).unwrap_err();
            assert!(e.contains("absolute"), "{root}: {e}");
        }
    }

    #[test]
    fn a_root_that_is_not_mounted_now_is_retired_touching_nothing() {
        let f = Journal {
            root: "/tmp/forge".into(),
            instance: "/tmp/forge/instances/xrunrig-42".into(),
            ..j()
        };
        assert_eq!(
            check(&f, &mounts(), Some("boot-a")),
            Ok(Plan::Gone {
                root: "/tmp/forge".into()
            })
        );
        // The same journal while its tracefs is mounted is undone.
        let at = vec![PathBuf::from("/tmp/forge")];
        assert!(matches!(
            check(&f, &at, Some("boot-a")),
            Ok(Plan::Undo { .. })
        ));
    }

    #[test]
    fn parse_caps_size_and_version() {
        let text = serde_json::to_string(&j()).unwrap();
        assert_eq!(parse(&text).unwrap(), j());
        let big = format!("{}{}", text, " ".repeat(MAX_BYTES));
        assert!(parse(&big).unwrap_err().contains("bytes"));
        let newer = text.replace("\"version\":2", "\"version\":3");
        assert!(parse(&newer).unwrap_err().contains("version is 3"));
        let zero = text.replace("\"version\":2", "\"version\":0");
        assert!(parse(&zero).is_err());
        assert!(parse("[]").is_err());
        assert!(parse("{\"version\":1}").is_err());
        // Version 1 (no boot id) is still read.
        let v1 = "{\"version\":1,\"pid\":5,\"started\":\"\",\"root\":\"/sys/kernel/tracing\",\
                  \"mounted_by_us\":false,\"instance\":\"/sys/kernel/tracing/instances/xrunrig-5\"}";
        assert_eq!(parse(v1).unwrap().boot_id, None);
    }

    #[test]
    fn journal_file_names() {
        assert!(is_journal_name("trace-journal.json"));
        assert!(is_journal_name("trace-journal-123.json"));
        assert!(!is_journal_name("trace-journal-.json"));
        assert!(!is_journal_name("trace-journal-1x.json"));
        assert!(!is_journal_name("journal.json"));
        assert!(instance_name_ok("xrunrig-1"));
        assert!(!instance_name_ok("xrunrig-12345678901"));
    }
}
