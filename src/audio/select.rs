//! `--backend auto`: each backend's probe in `AUTO_ORDER`, the first that answers wins:
//! JACK if a server answers, else ALSA if a real device opens (cpal lists an ALSA
//! "default" device even with no card, so ALSA counts only when a configuration opens),
//! else the clock, which always can. The choice comes with the reasons, for the table
//! and run.json.

use super::{Backend, BackendChoice, BackendKind, ProbeSpec};

/// Tried in this order by auto; the last is the fallback and always answers.
pub const AUTO_ORDER: [BackendKind; 3] = [BackendKind::Jack, BackendKind::Alsa, BackendKind::Clock];

#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub kind: BackendKind,
    pub why: String,
}

/// The decision among `order` (so it can be tested with stand-in backends). A backend
/// asked for by name is not probed here.
pub fn choose(choice: BackendChoice, order: &[&dyn Backend], spec: &ProbeSpec) -> Selected {
    if let Some(k) = choice.fixed() {
        return Selected {
            kind: k,
            why: format!("--backend {}", k.name()),
        };
    }
    let mut why_not: Vec<String> = Vec::new();
    for (i, b) in order.iter().enumerate() {
        match b.probe(spec) {
            Ok(a) => {
                // The fallback is taken because the others were not there: "so" it.
                let found = if i + 1 == order.len() && !why_not.is_empty() {
                    format!("so {}", a.text)
                } else {
                    a.text
                };
                why_not.push(found);
                return Selected {
                    kind: b.kind(),
                    why: format!("auto: {}", why_not.join("; ")),
                };
            }
            Err(e) => why_not.push(e),
        }
    }
    // Only when the list holds no fallback (AUTO_ORDER ends with the clock).
    Selected {
        kind: BackendKind::Clock,
        why: format!("auto: {}; so the built-in clock", why_not.join("; ")),
    }
}

/// Probes this machine.
pub fn select(choice: BackendChoice, device: &Option<String>) -> Selected {
    let order = AUTO_ORDER.map(BackendKind::backend);
    choose(choice, &order, &ProbeSpec::device(device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::{Available, Notes, Probe, Process, Stream, StreamSpec};
    use std::sync::Arc;

    /// A backend whose probe gives a fixed answer.
    struct Fake(BackendKind, Result<&'static str, &'static str>);

    impl Backend for Fake {
        fn kind(&self) -> BackendKind {
            self.0
        }
        fn probe(&self, _: &ProbeSpec) -> Probe {
            match self.1 {
                Ok(s) => Ok(Available {
                    device: "x".into(),
                    rate: None,
                    period: None,
                    text: s.into(),
                }),
                Err(e) => Err(e.into()),
            }
        }
        fn open(
            &self,
            _: &StreamSpec,
            _: Box<dyn Process>,
            _: Arc<Notes>,
        ) -> Result<Box<dyn Stream>, String> {
            Err("a stand-in".into())
        }
    }

    fn pick(
        jack: Result<&'static str, &'static str>,
        alsa: Result<&'static str, &'static str>,
    ) -> Selected {
        let (j, a) = (Fake(BackendKind::Jack, jack), Fake(BackendKind::Alsa, alsa));
        choose(
            BackendChoice::Auto,
            &[&j, &a, BackendKind::Clock.backend()],
            &ProbeSpec::default(),
        )
    }

    #[test]
    fn auto_prefers_jack_then_alsa_then_clock() {
        let s = pick(Ok("jack up"), Ok("alsa up"));
        assert_eq!(s.kind, BackendKind::Jack);
        assert_eq!(s.why, "auto: jack up");
        let s = pick(Err("no jack"), Ok("hw:0 opened"));
        assert_eq!(s.kind, BackendKind::Alsa);
        assert_eq!(s.why, "auto: no jack; hw:0 opened");
        let s = pick(Err("no jack"), Err("no card"));
        assert_eq!(s.kind, BackendKind::Clock);
        assert_eq!(s.why, "auto: no jack; no card; so the built-in clock");
    }

    /// choose() relies on the last of the order always answering.
    #[test]
    fn auto_ends_with_a_fallback_that_always_answers() {
        let last = AUTO_ORDER[AUTO_ORDER.len() - 1];
        assert_eq!(last, BackendKind::Clock);
        assert!(last.backend().probe(&ProbeSpec::default()).is_ok());
    }

    #[test]
    fn fixed_choice_does_not_probe() {
        struct Panics;
        impl Backend for Panics {
            fn kind(&self) -> BackendKind {
                BackendKind::Jack
            }
            fn probe(&self, _: &ProbeSpec) -> Probe {
                panic!("probed")
            }
            fn open(
                &self,
                _: &StreamSpec,
                _: Box<dyn Process>,
                _: Arc<Notes>,
            ) -> Result<Box<dyn Stream>, String> {
                panic!("opened")
            }
        }
        let s = choose(BackendChoice::Clock, &[&Panics], &ProbeSpec::default());
        assert_eq!(s.kind, BackendKind::Clock);
        assert_eq!(s.why, "--backend clock");
    }
}
