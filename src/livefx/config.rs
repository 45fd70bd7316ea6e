//! The `[livefx]` table of a rig, as the livefx code names it. It is parsed and checked
//! once, with the rest of the rig, in `crate::rig::livefx` (so the rig parser needs
//! nothing from `crate::livefx`); a loaded `Rig` carries it as `rig.livefx`.

pub use crate::rig::livefx::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::RigError;
    use std::path::Path;

    /// The `[livefx]` table as `rig::parse` checks it with the rest of the rig.
    fn parse(text: &str) -> Result<Config, RigError> {
        crate::rig::parse(Path::new("t.toml"), text).map(|r| r.livefx.expect("[livefx]"))
    }

    /// A background thread whose marks `bursts` can name.
    const HOG: &str = "[[threads]]\nname = \"hog\"\npolicy = \"other\"\n\
                       steps = [ { mark = \"on\" }, { run = \"1 ms\" }, { mark = \"off\" } ]\n";

    const RIG: &str = r#"
name = "t"
kind = "livefx"
[locks.bus]
protocol = "inherit"
[livefx]
duration = "2 s"
period = 128
inject_every = 50
callback = { priority = 75, cpus = [1] }
loopback = { clock_latency = 256 }
[[livefx.workers]]
name = "fx"
instances = 2
priority = 60
cpus = [0, 1]
plugins = [ { run = "100 us", jitter = "20 us", lock = "bus" }, { run = "50 us" } ]
"#;

    #[test]
    fn parses_workers_plugins_and_locks() {
        let c = parse(RIG).unwrap();
        assert_eq!(c.duration_ns, 2_000_000_000);
        assert_eq!(c.period, 128);
        assert_eq!(c.rate, 48000);
        assert_eq!(c.inject_every, 50);
        assert_eq!(c.inject_factor, 1.5);
        assert_eq!(c.callback_priority, 75);
        assert!(c.loopback.enabled);
        assert_eq!(c.loopback.clock_latency, Some(256));
        assert_eq!(c.workers.len(), 2);
        assert_eq!(c.workers[0].name, "fx.0");
        assert_eq!(c.workers[1].cpus, vec![1]);
        assert_eq!(
            c.workers[0].plugins[0],
            PluginCfg {
                work_ns: 100_000,
                jitter_ns: 20_000,
                lock: Some(0)
            }
        );
        assert_eq!(c.cpus_used(), vec![0, 1]);
    }

    #[test]
    fn errors_name_line_and_column() {
        let bad = RIG.replace("lock = \"bus\"", "lock = \"mixer\"");
        let e = parse(&bad).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("t.toml:17:"), "{s}");
        assert!(s.contains("lock 'mixer' is not defined"), "{s}");
        let bad = RIG.replace("priority = 60", "priority = 0");
        let s = parse(&bad).unwrap_err().to_string();
        assert!(s.contains("t.toml:15:") && s.contains("1..=99"), "{s}");
        let bad = RIG.replace("period = 128", "perod = 128");
        let s = parse(&bad).unwrap_err().to_string();
        assert!(s.contains("perod"), "{s}");
    }

    #[test]
    fn mask_workers_and_bursts() {
        let rig = format!(
            "{RIG}bursts = {{ from = \"hog.on\", to = \"hog.off\" }}\n\
             [[livefx.workers]]\nname = \"render\"\npriority = 10\ncpus = [1, 3]\npin = \"mask\"\n\
             instances = 2\nwait = false\nplugins = [ {{ run = \"1 ms\", lock = \"bus\" }} ]\n"
        );
        // The bursts line lands after the last worker's table: put it in [livefx] instead.
        let rig = rig.replace("bursts = { from = \"hog.on\", to = \"hog.off\" }\n", "");
        let rig = rig.replace(
            "inject_every = 50\n",
            "inject_every = 50\nbursts = { from = \"hog.on\", to = \"hog.off\" }\n",
        );
        let rig = format!("{rig}{HOG}");
        let c = parse(&rig).unwrap();
        let r: Vec<_> = c
            .workers
            .iter()
            .filter(|w| w.name.starts_with("render"))
            .collect();
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|w| w.cpus == vec![1, 3] && !w.waited), "{r:?}");
        assert_eq!(
            c.bursts,
            Some(BurstsCfg {
                thread: "hog".into(),
                from: "on".into(),
                to: "off".into()
            })
        );
        // The hog takes only its "on" mark.
        let s = parse(&rig.replace("{ mark = \"off\" }", "{ run = \"1 ms\" }"))
            .unwrap_err()
            .to_string();
        assert!(s.contains("'hog.off' is not a mark"), "{s}");
        let bad = rig.replace("pin = \"mask\"", "pin = \"set\"");
        let s = parse(&bad).unwrap_err().to_string();
        assert!(s.contains("use \"each\""), "{s}");
    }
}
