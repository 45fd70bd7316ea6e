//! The rig's `[instruments]` table (rigs/INSTRUMENTS.md), as the instruments name it.
//! It is parsed and checked once, with the rest of the rig, in `crate::rig::instruments`;
//! a loaded `Rig` carries it as `rig.instruments`.

pub use crate::rig::instruments::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The `[instruments]` table as `rig::parse` checks it, in a rig with `threads`.
    fn parse(text: &str, threads: &[&str]) -> Result<Config, String> {
        let mut rig = text.to_string();
        for n in threads {
            rig += &format!(
                "[[threads]]\nname = \"{n}\"\npolicy = \"other\"\nsteps = [ {{ run = \"1 ms\" }} ]\n"
            );
        }
        crate::rig::parse(Path::new("t.toml"), &rig)
            .map(|r| r.instruments.expect("[instruments]"))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_metrics() {
        let c = parse(
            r#"
name = "x"
[instruments]
ipi = { interval = "1 s", cpus = [2, 1] }
[instruments.trace]
distribution = ["a"]
metrics.long = { of = "intervals_above", thread = "a", above = "8 ms" }
metrics.p99 = { of = "interval_p99" }
"#,
            &["a", "b"],
        )
        .unwrap();
        let ipi = c.ipi.unwrap();
        assert_eq!(ipi.interval_ns, 1_000_000_000);
        assert_eq!(ipi.cpus, vec![1, 2]);
        assert_eq!(ipi.counters, vec!["IWI", "RES", "CAL"]);
        let t = c.trace.unwrap();
        assert_eq!(t.events.len(), 4);
        assert_eq!(t.metrics[0].of, Of::IntervalsAbove(8_000_000));
        assert_eq!(t.metrics[1].of, Of::IntervalQuantile(0.99));
        assert_eq!(t.metrics[1].of.unit(), "ms");
    }

    #[test]
    fn problems_have_positions() {
        let e = parse(
            "[instruments.trace]\nmetrics.m = { of = \"intervals_above\", thread = \"zz\" }\n",
            &["a"],
        )
        .unwrap_err();
        assert!(
            e.contains("2:") && e.contains("no thread 'zz'") && e.contains("needs above"),
            "{e}"
        );
        let e = parse("[instruments]\nipi = { intervall = \"5 s\" }\n", &["a"]).unwrap_err();
        assert!(e.starts_with("t.toml:2:") && e.contains("intervall"), "{e}");
        let e = parse(
            "[instruments]\nipi = { interval = \"5 parsecs\" }\n",
            &["a"],
        )
        .unwrap_err();
        assert!(e.starts_with("t.toml:2:"), "{e}");
    }
}
