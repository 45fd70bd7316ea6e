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
            let k = super::of(r.kind);
            assert_eq!(k.name(), name, "{rig}");
            // Only the audio rig gets sound cards and a JACK server in a guest.
            assert_eq!(k.plays_audio(), name == "livefx", "{rig}");
        }
    }
}

/// A kind is what `RigKind` says it is: a trivial kind handed to the plan in place of
/// the registration is what the plan estimates, decides and runs with, and nothing
/// else in the plan knows kinds (the "Where new code goes" recipe, tried).
#[cfg(test)]
mod a_new_kind {
    use crate::options::{AudioOptions, Choices};
    use crate::rig::{Kind, Rig};
    use crate::sweep::decide::Criterion;
    use crate::sweep::{Brought, Plan, Prepared, Rebuild, RigKind};
    use std::path::Path;

    struct Sleeper;

    impl RigKind for Sleeper {
        fn name(&self) -> &'static str {
            "sleeper"
        }
        fn per_trial_ns(&self, _: &Rig, _: &AudioOptions) -> [u64; 3] {
            [7_000_000_000, 1_000_000_000, 0]
        }
        fn trial_verdict(&self, rig: &Rig) -> Result<Criterion, String> {
            Err(format!("rig '{}' only sleeps", rig.name))
        }
        fn run(&self, _: Prepared) -> i32 {
            0
        }
        fn rebuild(&self, _: &Rebuild) -> Result<(), String> {
            Ok(())
        }
        fn brought(&self, _: &Path) -> Option<Brought> {
            None
        }
    }

    fn sleeper(_: Kind) -> &'static dyn RigKind {
        &Sleeper
    }

    fn pi_inversion() -> Rig {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        crate::rig::load(&root.join("rigs/pi-inversion.toml")).unwrap()
    }

    #[test]
    fn the_plan_estimates_and_decides_by_the_kind_it_is_handed() {
        let choices = Choices {
            trials: Some(3),
            ..Default::default()
        };
        let p = Plan::build(pi_inversion(), None, choices.clone(), sleeper).unwrap();
        assert_eq!(p.kind.name(), "sleeper");
        assert_eq!(p.per_trial_ns(), [7_000_000_000, 1_000_000_000, 0]);
        let variants = p.variants.len() as u64;
        assert_eq!(p.estimate_ns().unwrap(), 3 * variants * 8_000_000_000);
        let real = Plan::build(pi_inversion(), None, choices, super::of).unwrap();
        assert_eq!(real.kind.name(), "trials");
        assert_ne!(real.per_trial_ns(), p.per_trial_ns());
        // --until-decided asks the kind whether its trials pass or fail.
        let until = Choices {
            until_decided: true,
            trials: Some(8),
            ..Default::default()
        };
        let e = Plan::build(pi_inversion(), None, until, sleeper)
            .err()
            .unwrap();
        assert!(e.contains("rig 'pi-inversion' only sleeps"), "{e}");
    }
}
