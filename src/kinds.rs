//! The rig kinds' one registration: each `rig::Kind` and the implementation of
//! `sweep::RigKind` that runs it. A new kind is a variant of `src/rig/plan.rs` `Kind`
//! (named in `src/rig/validate.rs`), its implementation, and a line here.

use crate::rig::Kind;
use crate::sweep::RigKind;

/// The implementation of `kind` (handed to `sweep::Plan` as its `Kinds`).
pub fn of(kind: Kind) -> &'static dyn RigKind {
    match kind {
        Kind::Trials => &crate::trials::Threads,
        Kind::Livefx => &crate::livefx::Livefx,
    }
}

#[cfg(test)]
mod tests {
    /// Each kind's implementation answers to the name rigs give it.
    #[test]
    fn every_kind_has_its_own_implementation() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for (rig, name) in [
            ("rigs/livefx.toml", "livefx"),
            ("rigs/pi-inversion.toml", "trials"),
        ] {
            let r = crate::rig::load(&root.join(rig)).unwrap();
            assert_eq!(super::of(r.kind).name(), name, "{rig}");
        }
    }
}
