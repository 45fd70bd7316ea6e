//! `--backend auto`: JACK if a server answers, else ALSA if a real device opens, else the
//! clock. cpal lists an ALSA "default" device even with no card, so ALSA counts only when
//! a configuration opens. The choice comes with the reasons, for the table and run.json.

use super::{BackendChoice, BackendKind};

#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub kind: BackendKind,
    pub why: String,
}

/// The decision, with the probes passed in (so it can be tested without hardware).
pub fn choose(
    choice: BackendChoice,
    jack: &dyn Fn() -> Result<String, String>,
    alsa: &dyn Fn() -> Result<String, String>,
) -> Selected {
    if let BackendChoice::Fixed(k) = choice {
        return Selected {
            kind: k,
            why: format!("--backend {}", k.name()),
        };
    }
    let j = match jack() {
        Ok(s) => {
            return Selected {
                kind: BackendKind::Jack,
                why: format!("auto: {s}"),
            };
        }
        Err(e) => e,
    };
    let a = match alsa() {
        Ok(s) => {
            return Selected {
                kind: BackendKind::Alsa,
                why: format!("auto: {j}; {s}"),
            };
        }
        Err(e) => e,
    };
    Selected {
        kind: BackendKind::Clock,
        why: format!("auto: {j}; {a}; so the built-in clock"),
    }
}

/// Probes this machine.
pub fn select(choice: BackendChoice, device: &Option<String>) -> Selected {
    choose(choice, &|| super::jack::probe(device), &|| {
        super::alsa::probe(device)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &'static str) -> impl Fn() -> Result<String, String> {
        move || Ok(s.to_string())
    }
    fn no(s: &'static str) -> impl Fn() -> Result<String, String> {
        move || Err(s.to_string())
    }

    #[test]
    fn auto_prefers_jack_then_alsa_then_clock() {
        let s = choose(BackendChoice::Auto, &ok("jack up"), &ok("alsa up"));
        assert_eq!(s.kind, BackendKind::Jack);
        let s = choose(BackendChoice::Auto, &no("no jack"), &ok("hw:0 opened"));
        assert_eq!(s.kind, BackendKind::Alsa);
        assert!(s.why.contains("no jack") && s.why.contains("hw:0 opened"));
        let s = choose(BackendChoice::Auto, &no("no jack"), &no("no card"));
        assert_eq!(s.kind, BackendKind::Clock);
        assert!(
            s.why.contains("no jack") && s.why.contains("no card"),
            "{}",
            s.why
        );
    }

    #[test]
    fn fixed_choice_does_not_probe() {
        let s = choose(
            BackendChoice::Fixed(BackendKind::Clock),
            &|| panic!("probed jack"),
            &|| panic!("probed alsa"),
        );
        assert_eq!(s.kind, BackendKind::Clock);
    }
}
