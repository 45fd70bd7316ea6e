//! Where a guest kernel built from source came from (`xrunrig run --kernel src:…`):
//! the source, its version, the patches applied in order with their hashes, the
//! config's hash, and the build's cache key. Written into run.json's `guest` section
//! and combined.json's kernel entries; absent for kernels not built by xrunrig.

use crate::lenient;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KernelBuild {
    /// The source as given ("debian-src:6.12", a tree or a tarball path).
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub source: String,
    /// What the source resolved to (the tarball or tree used, the Debian package).
    #[serde(default, deserialize_with = "lenient::text")]
    pub source_detail: Option<String>,
    /// The source's hash (tarball: sha256 of the file; tree: sha256 of its file list
    /// with sizes and times).
    #[serde(default, deserialize_with = "lenient::text")]
    pub source_sha256: Option<String>,
    /// `make kernelversion` of the tree.
    #[serde(default, deserialize_with = "lenient::text")]
    pub version: Option<String>,
    /// Applied in this order.
    #[serde(default, deserialize_with = "lenient::or_default")]
    pub patches: Vec<PatchInfo>,
    /// sha256 of the .config the kernel was built with.
    #[serde(default, deserialize_with = "lenient::text")]
    pub config_sha256: Option<String>,
    /// How the config was made ("x86_64_defconfig + kvm_guest.config + xrunrig guest.config").
    #[serde(default, deserialize_with = "lenient::text")]
    pub config: Option<String>,
    /// The cache key (source, config and patch hashes) and the build directory.
    #[serde(default, deserialize_with = "lenient::text")]
    pub key: Option<String>,
    #[serde(default, deserialize_with = "lenient::text")]
    pub build_dir: Option<String>,
    /// True when this run found the build in the cache and built nothing.
    #[serde(default, deserialize_with = "lenient::flag")]
    pub cached: bool,
    /// The tree an incremental build started from (a cached build with fewer patches).
    #[serde(default, deserialize_with = "lenient::text")]
    pub started_from: Option<String>,
    /// Seconds spent building in this run (0 on a cache hit).
    #[serde(default, deserialize_with = "lenient::number")]
    pub build_s: Option<f64>,
    /// The build's log.
    #[serde(default, deserialize_with = "lenient::text")]
    pub log: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PatchInfo {
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub file: String,
    #[serde(default, deserialize_with = "lenient::text_or_empty")]
    pub sha256: String,
    /// The patch's Subject line, when it has one.
    #[serde(default, deserialize_with = "lenient::text")]
    pub subject: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_and_tolerates_missing_fields() {
        let b = KernelBuild {
            source: "debian-src:6.12".into(),
            version: Some("6.12.117".into()),
            patches: vec![PatchInfo {
                file: "p.patch".into(),
                sha256: "ab".into(),
                subject: None,
            }],
            cached: true,
            ..Default::default()
        };
        let t = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<KernelBuild>(&t).unwrap(), b);
        // Wrong shapes read as absent, not as a failed file.
        let old: KernelBuild =
            serde_json::from_str(r#"{"patches": "x", "cached": "yes", "build_s": "fast"}"#)
                .unwrap();
        assert_eq!(old.source, "");
        assert!(old.patches.is_empty());
        assert!(!old.cached);
        assert_eq!(old.build_s, None);
    }
}
