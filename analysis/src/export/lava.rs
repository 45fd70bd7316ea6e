//! `xrunrig export lava DIR…`: the KCIDB export's tests as LAVA test cases, one line
//! each, `NAME RESULT [MEASUREMENT UNITS]`, for lava/xrunrig-lava.sh to hand to
//! `lava-test-case` (no JSON parser needed on the board).

use super::kcidb::{self, Io, Options, Status};
use super::{Export, Out};
use crate::load::Results;

/// A LAVA test case (`lava-test-case NAME --result R --measurement M --units U`) made
/// from a KCIDB test: the same path without the leading `xrunrig.` (a bisection's step:
/// and its role and commit, so each step is a case of its own), PASS and DONE as pass,
/// FAIL as fail, SKIP as skip, MISS and ERROR as unknown.
#[derive(Debug, Clone, PartialEq)]
pub struct LavaCase {
    pub name: String,
    pub result: &'static str,
    pub measurement: Option<f64>,
    /// The number's unit; "count" for a count (LAVA shows a unit beside every number).
    pub units: String,
}

pub fn lava_cases(io: &Io) -> Vec<LavaCase> {
    io.tests
        .iter()
        .map(|t| LavaCase {
            name: {
                let p = t.path.strip_prefix("xrunrig.").unwrap_or(&t.path);
                match &t.instance {
                    Some(i) => format!("{p}.{}", kcidb::path_part(i)),
                    None => p.to_string(),
                }
            },
            result: match t.status {
                Status::Pass | Status::Done => "pass",
                Status::Fail => "fail",
                Status::Skip => "skip",
                Status::Miss | Status::Error => "unknown",
            },
            measurement: t.number.as_ref().map(|n| n.value),
            units: t
                .number
                .as_ref()
                .and_then(|n| n.unit.clone())
                .unwrap_or_else(|| "count".into()),
        })
        .collect()
}

/// `xrunrig export lava`: the test cases of the KCIDB export with its default options.
pub struct Lava;

impl Export for Lava {
    fn name(&self) -> &'static str {
        "lava"
    }
    fn writes(&self) -> &'static str {
        "LAVA test cases, one line each: NAME RESULT [MEASUREMENT UNITS]"
    }
    fn accepts(&self, res: &Results) -> Result<(), String> {
        kcidb::rig_ran(res)
    }
    fn export(&self, res: &[Results], out: &mut Out) -> Result<(), String> {
        let io = kcidb::io(res, &Options::default())?;
        let mut text = String::new();
        for c in lava_cases(&io) {
            text += &match c.measurement {
                Some(m) => format!("{} {} {m} {}\n", c.name, c.result, c.units),
                None => format!("{} {}\n", c.name, c.result),
            };
        }
        out.write("lava.txt", &text)
    }
}
