//! ALSA device names as `--device` takes them, matched against the devices cpal lists.
//! cpal 0.18.2 opens only devices in its own list, where cards' devices are written
//! `hw:CARD=Loopback,DEV=0` (from ALSA's hints) and `hw:CARD=1,DEV=0` (by index); ALSA's
//! short forms (`hw:Loopback,0`, `hw:1,0`, `hw:CARD=Dummy`) name the same devices. A
//! subdevice (`hw:Loopback,0,2`) is in no cpal list, so it cannot be opened through cpal.

/// A card's PCM device named the way ALSA's `hw`/`plughw` take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct HwName {
    pub prefix: String,
    pub card: String,
    pub dev: u32,
    pub subdev: Option<u32>,
}

impl HwName {
    /// The name in cpal's list (no subdevice: cpal lists none).
    pub fn id(&self) -> String {
        format!("{}:CARD={},DEV={}", self.prefix, self.card, self.dev)
    }
}

/// `hw:CARD[,DEV[,SUBDEV]]` in positional or `KEY=value` form (also `plughw:`); None for
/// any other name (`default`, `sysdefault:CARD=x`, a plugin).
pub(super) fn parse_hw(name: &str) -> Option<HwName> {
    let (prefix, rest) = name.split_once(':')?;
    if prefix != "hw" && prefix != "plughw" {
        return None;
    }
    let (mut card, mut dev, mut subdev) = (None, None, None);
    for (i, part) in rest.split(',').map(str::trim).enumerate() {
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_uppercase(), v.trim()),
            None => (["CARD", "DEV", "SUBDEV"].get(i)?.to_string(), part),
        };
        let value = value.trim_matches('"');
        if value.is_empty() {
            return None;
        }
        match key.as_str() {
            "CARD" => card = Some(value.to_string()),
            "DEV" => dev = Some(value.parse().ok()?),
            "SUBDEV" => subdev = Some(value.parse().ok()?),
            _ => return None,
        }
    }
    Some(HwName {
        prefix: prefix.to_string(),
        card: card?,
        dev: dev.unwrap_or(0),
        subdev,
    })
}

/// Which of cpal's device `ids` `name` means: itself, else its `hw:CARD=..,DEV=..` form;
/// otherwise an error that lists what cpal sees.
pub(super) fn match_device(name: &str, ids: &[String]) -> Result<usize, String> {
    if let Some(i) = ids.iter().position(|d| d == name) {
        return Ok(i);
    }
    let hw = parse_hw(name);
    if let Some(h) = &hw {
        if h.subdev.is_some() {
            return Err(format!(
                "ALSA device '{name}' names a subdevice: cpal 0.18.2 opens cards' devices only \
                 as {} (ALSA then takes the first free subdevice; on an idle card, 0)",
                h.id()
            ));
        }
        if let Some(i) = ids.iter().position(|d| *d == h.id()) {
            return Ok(i);
        }
    }
    let mut cards: Vec<&str> = ids
        .iter()
        .filter(|d| d.starts_with("hw:"))
        .map(String::as_str)
        .collect();
    let others = ids.len() - cards.len();
    let listed = if cards.is_empty() {
        "no card's hw: device (is the driver loaded? `cat /proc/asound/cards`)".to_string()
    } else {
        cards.sort_unstable();
        cards.join(", ")
    };
    Err(format!(
        "no ALSA device '{name}'{}: cpal lists {listed}{} — name one of those (hw:CARD,DEV \
         short forms such as hw:Loopback,0 or hw:1,0 match them)",
        hw.as_ref()
            .map_or(String::new(), |h| format!(" (looked for {})", h.id())),
        if others > 0 {
            format!(
                ", and {others} other name{} ({}{})",
                if others == 1 { "" } else { "s" },
                ids.iter()
                    .filter(|d| !d.starts_with("hw:"))
                    .take(8)
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
                if others > 8 { ", ..." } else { "" }
            )
        } else {
            String::new()
        }
    ))
}

/// The capture side of an snd-aloop cable: what is played on `hw:Loopback,0,N` comes
/// back on `hw:Loopback,1,N` and the other way round. `card_id` says a card index's
/// ALSA id (`/proc/asound/cardN/id`). None when `playback` is not on an aloop card.
pub(super) fn aloop_capture(
    playback: &str,
    card_id: impl Fn(&str) -> Option<String>,
) -> Option<HwName> {
    let h = parse_hw(playback)?;
    let id = if h.card.chars().all(|c| c.is_ascii_digit()) {
        card_id(&h.card)?
    } else {
        h.card.clone()
    };
    if !id.starts_with("Loopback") || h.dev > 1 {
        return None;
    }
    Some(HwName {
        dev: 1 - h.dev,
        ..h
    })
}

/// A card index's ALSA id, as `/proc/asound/cardN/id` says it.
pub(super) fn proc_card_id(index: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/asound/card{index}/id"))
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hw_short_forms_parse() {
        let h = parse_hw("hw:Loopback,0").unwrap();
        assert_eq!(h.id(), "hw:CARD=Loopback,DEV=0");
        assert_eq!(h.subdev, None);
        assert_eq!(
            parse_hw("hw:CARD=Dummy").unwrap().id(),
            "hw:CARD=Dummy,DEV=0"
        );
        assert_eq!(parse_hw("hw:1").unwrap().id(), "hw:CARD=1,DEV=0");
        assert_eq!(
            parse_hw("plughw:CARD=\"Loopback\",DEV=1").unwrap().id(),
            "plughw:CARD=Loopback,DEV=1"
        );
        let h = parse_hw("hw:Loopback,1,3").unwrap();
        assert_eq!((h.dev, h.subdev), (1, Some(3)));
        for bad in [
            "default",
            "sysdefault:CARD=x",
            "hw:",
            "hw:x,y",
            "hw:a,0,0,0",
            "dmix:x",
        ] {
            assert_eq!(parse_hw(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_match_cpals_list() {
        let list = ids(&[
            "default",
            "sysdefault:CARD=Loopback",
            "hw:CARD=Loopback,DEV=0",
            "hw:CARD=Loopback,DEV=1",
            "hw:CARD=Dummy,DEV=0",
            "hw:CARD=0,DEV=0",
        ]);
        assert_eq!(match_device("default", &list), Ok(0));
        assert_eq!(match_device("sysdefault:CARD=Loopback", &list), Ok(1));
        assert_eq!(match_device("hw:Loopback,0", &list), Ok(2));
        assert_eq!(match_device("hw:CARD=Loopback,DEV=1", &list), Ok(3));
        assert_eq!(match_device("hw:CARD=Dummy", &list), Ok(4));
        assert_eq!(match_device("hw:Dummy,0", &list), Ok(4));
        assert_eq!(match_device("hw:0", &list), Ok(5));
    }

    /// A name that matches nothing says what cpal does list, cards' hw: devices first.
    #[test]
    fn an_unknown_name_lists_the_devices() {
        let list = ids(&["null", "default", "hw:CARD=Dummy,DEV=0", "hw:CARD=0,DEV=0"]);
        let e = match_device("hw:Nope,0", &list).unwrap_err();
        assert!(e.contains("no ALSA device 'hw:Nope,0'"), "{e}");
        assert!(e.contains("looked for hw:CARD=Nope,DEV=0"), "{e}");
        assert!(
            e.contains("cpal lists hw:CARD=0,DEV=0, hw:CARD=Dummy,DEV=0"),
            "{e}"
        );
        assert!(e.contains("2 other names (null, default)"), "{e}");
        let e = match_device("pulse", &ids(&["null", "default"])).unwrap_err();
        assert!(e.contains("no card's hw: device"), "{e}");
        let e = match_device("hw:Loopback,0,1", &list).unwrap_err();
        assert!(e.contains("subdevice"), "{e}");
    }

    #[test]
    fn aloop_cables_pair_0_with_1() {
        let none = |_: &str| None;
        let c = aloop_capture("hw:Loopback,0", none).unwrap();
        assert_eq!(c.id(), "hw:CARD=Loopback,DEV=1");
        let c = aloop_capture("hw:CARD=Loopback,DEV=1,SUBDEV=2", none).unwrap();
        assert_eq!(
            (c.id().as_str(), c.subdev),
            ("hw:CARD=Loopback,DEV=0", Some(2))
        );
        let by_index = |i: &str| (i == "2").then(|| "Loopback".to_string());
        assert_eq!(
            aloop_capture("hw:2,0", by_index).unwrap().id(),
            "hw:CARD=2,DEV=1"
        );
        assert_eq!(aloop_capture("hw:3,0", by_index), None);
        assert_eq!(aloop_capture("hw:Dummy,0", none), None);
        assert_eq!(aloop_capture("hw:Loopback,2", none), None);
        assert_eq!(aloop_capture("default", none), None);
    }
}
