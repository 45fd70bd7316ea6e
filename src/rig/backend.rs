//! The audio backends' names: what `--backend`, a rig's `[livefx] backend` and a
//! profile setting's `audio.backend` take, parsed once where they are read. The
//! backends themselves are `audio::backend` (below the rig, a name is all it needs).

/// One audio backend by name (`audio::backend` gives each its implementation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Jack,
    Alsa,
    Clock,
}

impl BackendKind {
    pub const ALL: [BackendKind; 3] = [BackendKind::Jack, BackendKind::Alsa, BackendKind::Clock];

    /// The backend a recorded name names (results files keep the name).
    pub fn named(name: &str) -> Option<BackendKind> {
        BackendKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Jack => "jack",
            BackendKind::Alsa => "alsa",
            BackendKind::Clock => "clock",
        }
    }
}

/// A `--backend` value: auto, or one backend by name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// JACK if a server answers, else ALSA, else the clock.
    Auto,
    Jack,
    Alsa,
    Clock,
}

impl BackendChoice {
    pub fn parse(s: &str) -> Result<BackendChoice, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "jack" => Ok(BackendChoice::Jack),
            "alsa" => Ok(BackendChoice::Alsa),
            "clock" => Ok(BackendChoice::Clock),
            o => Err(format!(
                "unknown backend '{o}': use auto, jack, alsa or clock"
            )),
        }
    }
    /// The name `--backend` takes (what `parse` reads back).
    pub fn name(self) -> &'static str {
        self.fixed().map_or("auto", BackendKind::name)
    }
    /// The backend asked for by name; None for auto.
    pub fn fixed(self) -> Option<BackendKind> {
        match self {
            BackendChoice::Auto => None,
            BackendChoice::Jack => Some(BackendKind::Jack),
            BackendChoice::Alsa => Some(BackendKind::Alsa),
            BackendChoice::Clock => Some(BackendKind::Clock),
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<BackendChoice, String> {
        BackendChoice::parse(s)
    }
}

impl std::fmt::Display for BackendChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<BackendKind> for BackendChoice {
    fn from(k: BackendKind) -> BackendChoice {
        match k {
            BackendKind::Jack => BackendChoice::Jack,
            BackendKind::Alsa => BackendChoice::Alsa,
            BackendKind::Clock => BackendChoice::Clock,
        }
    }
}
