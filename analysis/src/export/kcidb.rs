//! `xrunrig export kcidb DIR…`: results directories as KCIDB I/O JSON, the format
//! KernelCI's common report database takes from every lab (`kcidb-submit`).
//!
//! Targets I/O schema v5.3, the newest that `kcidb-io` 141 (PyPI, November 2026)
//! validates (`kcidb_io.schema.LATEST`); tests/kcidb.rs has that package validate what
//! this writes. One results directory gives:
//! - a checkout and a build for the kernel it ran on (run.json: release, `uname -v`,
//!   machine, preemption, and for a guest run the Debian package it came from); the same
//!   kernel from several directories is one checkout and one build;
//! - a test per summary row, path `xrunrig.<rig>.<setting>.<variant>.<metric>`. A trial
//!   rig's row is one metric: PASS when every trial met its bound, FAIL when one did not,
//!   DONE when the row has no bound. A livefx row gives one test per count (xruns,
//!   deadline misses not injected on purpose, loopback discontinuities: PASS at 0, the
//!   report's rule for "suitable for real-time audio") and per latency (p99 and max of
//!   the callback, its lateness and wake-up: DONE).
//!
//! - for a bisection (`xrunrig bisect`), a checkout, a build and a test per tested
//!   commit instead (`figure.rs` `bisect_figures()`): the checkout is the commit (with
//!   the first bad commit reverted, for the confirmation), the build its kernel (its
//!   config and build time; FAIL when it did not build), the test
//!   `xrunrig.bisect.<rig>.<setting>.<variant>` with the step's verdict (PASS good, FAIL
//!   bad, SKIP skipped, ERROR a failed run) and its pass count and p-values in `misc`.
//!
//! Everything is read through `crate::load` (the `results` types); nothing here parses
//! results JSON by hand. What each kind exports is its `kind::ResultKind`
//! `kcidb_figures()`, made from `trial_figures()`, `livefx_tests()` or
//! `bisect_figures()` in `figure.rs`; a figure measured on a kernel of its own says so
//! (`Figure::at`), and gets that kernel's checkout and build.

use super::figure::{AtCommit, Revision, put};
use super::{Export, Out};
use crate::kind;
use crate::load::Results;
use crate::report::common::emulated_note;
use serde::Serialize;
use serde_json::{Map, Value, json};

// Defined below `kind/` (each kind's figures are made there); named here too, where the
// rest of the I/O data is.
pub use super::figure::{Figure, Number, Status, livefx_figures, trial_row_status};

/// The schema version written (`version` of the I/O data).
pub const SCHEMA_MAJOR: u32 = 5;
pub const SCHEMA_MINOR: u32 = 3;

/// The origin when none is given.
pub const DEFAULT_ORIGIN: &str = "xrunrig";

/// The schema's cap on a log excerpt, in characters.
const LOG_EXCERPT_MAX: usize = 16384;

/// Files of a results directory listed as a test's outputs when present: the report
/// `xrunrig report` writes (report.txt first: it becomes `log_url`) and the run's own.
const OUTPUT_FILES: &[&str] = &[
    "report.txt",
    "report.html",
    "report.md",
    "report.json",
    results::SUMMARY_JSON,
    results::RUN_JSON,
    results::bisect::BISECT_JSON,
    results::bisect::BISECT_LOG,
];

/// How the export names and links things.
#[derive(Debug, Clone)]
pub struct Options {
    /// The submitting CI system (the lab): lower-case letters, digits and `_`.
    pub origin: String,
    /// Where the results directories are published (`BASE/<dir name>/report.txt`);
    /// None: `file://` URLs of the local directories.
    pub url_base: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            origin: DEFAULT_ORIGIN.into(),
            url_base: None,
        }
    }
}

/// KCIDB I/O data: what one submission holds.
#[derive(Debug, Clone, Serialize)]
pub struct Io {
    pub version: SchemaVersion,
    pub checkouts: Vec<Checkout>,
    pub builds: Vec<Build>,
    pub tests: Vec<Test>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SchemaVersion {
    pub major: u32,
    pub minor: u32,
}

/// The kernel's source: a Debian package or an image, by release and `uname -v`.
#[derive(Debug, Clone, Serialize)]
pub struct Checkout {
    pub id: String,
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_name: Option<String>,
    /// Only an https:// URL is taken: a local tree's path goes in `misc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_repository_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_commit_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    pub valid: bool,
    pub misc: Map<String, Value>,
}

/// The kernel as built: architecture and preemption model.
#[derive(Debug, Clone, Serialize)]
pub struct Build {
    pub id: String,
    pub checkout_id: String,
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Seconds spent building it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    /// Why it did not build.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_excerpt: Option<String>,
    /// It booted and ran the rig (a bisection's: it built).
    pub status: Status,
    pub misc: Map<String, Value>,
}

/// One measured figure of one summary row.
#[derive(Debug, Clone, Serialize)]
pub struct Test {
    pub id: String,
    pub build_id: String,
    pub origin: String,
    pub path: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    pub environment: Environment,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_url: Option<String>,
    pub log_excerpt: String,
    pub output_files: Vec<Resource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    pub misc: Map<String, Value>,
    /// What tells it from the other tests of its path in this submission (a
    /// bisection's role and commit): not KCIDB's, the LAVA case name takes it.
    #[serde(skip)]
    pub instance: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    pub comment: String,
    pub misc: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Resource {
    pub name: String,
    pub url: String,
}

/// `xrunrig export kcidb`: the I/O JSON, named and linked as its options say.
#[derive(Debug, Clone, Default)]
pub struct Kcidb(Options);

impl Kcidb {
    /// Refuses options KCIDB would not take, before any directory is read.
    pub fn new(opts: Options) -> Result<Kcidb, String> {
        check(&opts)?;
        Ok(Kcidb(opts))
    }
}

impl Export for Kcidb {
    fn name(&self) -> &'static str {
        "kcidb"
    }
    fn writes(&self) -> &'static str {
        "KCIDB I/O JSON (schema v5.3): a checkout and build per kernel, a test per figure"
    }
    fn accepts(&self, res: &Results) -> Result<(), String> {
        rig_ran(res)
    }
    fn export(&self, res: &[Results], out: &mut Out) -> Result<(), String> {
        let io = io(res, &self.0)?;
        let text = serde_json::to_string_pretty(&io).map_err(|e| e.to_string())?;
        out.write("kcidb.json", &(text + "\n"))
    }
}

/// Refuses a watch directory: it has no figures to export as tests (the LAVA export
/// refuses it too).
pub fn rig_ran(res: &Results) -> Result<(), String> {
    if kind::of(res).rig_ran() {
        return Ok(());
    }
    Err(format!(
        "{} is an `xrunrig watch` directory: the export takes rig runs (trials, \
         livefx) and bisections; read a watch with `xrunrig report {}`",
        res.dir.display(),
        res.dir.display()
    ))
}

fn check(opts: &Options) -> Result<(), String> {
    check_origin(&opts.origin)?;
    if let Some(b) = &opts.url_base
        && !(b.starts_with("https://") || b.starts_with("http://") || b.starts_with("file://"))
    {
        return Err(format!(
            "--url-base '{b}': give the http(s):// address the results directories are published under"
        ));
    }
    Ok(())
}

/// The I/O data for `res`, in order; checkouts and builds once per kernel.
pub fn io(res: &[Results], opts: &Options) -> Result<Io, String> {
    check(opts)?;
    let mut io = Io {
        version: SchemaVersion {
            major: SCHEMA_MAJOR,
            minor: SCHEMA_MINOR,
        },
        checkouts: vec![],
        builds: vec![],
        tests: vec![],
    };
    for res in res {
        rig_ran(res)?;
        let figures = kind::of(res).kcidb_figures();
        // The directory's kernel (run.json's), unless every figure has its own.
        let own = (figures.is_empty() || figures.iter().any(|f| f.at.is_none()))
            .then(|| io.add(kernel(res, opts)));
        let shared = Shared::new(res, opts)?;
        let mut tests = Vec::with_capacity(figures.len());
        for f in figures {
            let build_id = match &f.at {
                Some(at) => io.add(revision(res, &at.revision, opts)),
                None => own.clone().unwrap_or_default(),
            };
            tests.push(shared.test(res, f, &build_id, opts));
        }
        for t in tests {
            if io.tests.iter().any(|x| x.id == t.id) {
                return Err(format!(
                    "{}: test {} is already exported from another directory (the same run given twice?)",
                    res.dir.display(),
                    t.id
                ));
            }
            io.tests.push(t);
        }
    }
    Ok(io)
}

impl Io {
    /// A checkout and its build, each once (the same kernel from several directories or
    /// steps is one); the build's id.
    fn add(&mut self, (checkout, build): (Checkout, Build)) -> String {
        if !self.checkouts.iter().any(|c| c.id == checkout.id) {
            self.checkouts.push(checkout);
        }
        let id = build.id.clone();
        if !self.builds.iter().any(|b| b.id == build.id) {
            self.builds.push(build);
        }
        id
    }
}

/// KCIDB's origin pattern: `[a-z0-9_]+`.
pub fn check_origin(o: &str) -> Result<(), String> {
    if !o.is_empty()
        && o.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(format!(
            "--origin '{o}': KCIDB names a lab with lower-case letters, digits and _ only (e.g. my_lab)"
        ))
    }
}

/// One part of a test path: KCIDB allows `[a-zA-Z0-9_-]`; anything else becomes `_`.
pub fn path_part(s: &str) -> String {
    let p: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if p.is_empty() { "_".into() } else { p }
}

/// `xrunrig.<rig>.<setting>.<variant>.<metric>`.
pub fn test_path(rig: &str, setting: &str, variant: &str, metric: &str) -> String {
    ["xrunrig", rig, setting, variant, metric]
        .iter()
        .map(|p| path_part(p))
        .collect::<Vec<_>>()
        .join(".")
}

/// The kernel's checkout and build.
fn kernel(res: &Results, opts: &Options) -> (Checkout, Build) {
    let run = &res.run;
    let k = run.kernel.clone().unwrap_or_default();
    let g = run.guest.as_ref();
    let release = k
        .release
        .clone()
        .or_else(|| g.and_then(|g| g.kernel_release.clone().or(g.release.clone())))
        .unwrap_or_else(|| "unknown".into());
    let version = k.version.clone().unwrap_or_default();
    let package = g.and_then(|g| g.kernel_package.clone());
    let key = format!("{release} {version}").trim().to_string();
    let checkout_id = format!("{}:{key}", opts.origin);
    let mut cmisc = Map::new();
    cmisc.insert("release".into(), json!(release));
    put(&mut cmisc, "version", k.version.clone());
    put(&mut cmisc, "package", package.clone());
    put(&mut cmisc, "kernel", g.and_then(|g| g.kernel.clone()));
    put(
        &mut cmisc,
        "image",
        g.and_then(|g| g.kernel_image.clone().or(g.image.clone())),
    );
    let comment = match &package {
        Some(p) => format!("Linux {release} ({version}) from the Debian package {p}"),
        None => format!("Linux {release} ({version})"),
    };
    let checkout = Checkout {
        id: checkout_id.clone(),
        origin: opts.origin.clone(),
        // Debian's kernels say so in `uname -v`; other trees are not guessed.
        tree_name: (version.contains("Debian") || package.is_some()).then(|| "debian".into()),
        git_repository_url: None,
        git_commit_hash: None,
        comment: Some(comment.trim().to_string()),
        valid: true,
        misc: cmisc,
    };
    let arch = architecture(res);
    let mut bmisc = Map::new();
    put(&mut bmisc, "preemption", k.preemption.clone());
    put(&mut bmisc, "cmdline", k.cmdline.clone());
    let build = Build {
        id: format!(
            "{}:{key} {}",
            opts.origin,
            k.machine.as_deref().unwrap_or("")
        )
        .trim()
        .to_string(),
        checkout_id,
        origin: opts.origin.clone(),
        architecture: arch,
        config_name: k.preemption.clone(),
        comment: package.clone(),
        duration: None,
        log_excerpt: None,
        status: Status::Pass,
        misc: bmisc,
    };
    (checkout, build)
}

/// run.json's machine as KCIDB names an architecture (`[a-z0-9_]+`), when it is one.
fn architecture(res: &Results) -> Option<String> {
    let k = res.run.kernel.as_ref()?;
    k.machine
        .clone()
        .map(|m| m.to_ascii_lowercase())
        .filter(|m| {
            !m.is_empty()
                && m.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// A kernel built from a commit (a bisection's step): the commit as the checkout, its
/// build with its config and build time, FAIL when it did not build.
fn revision(res: &Results, r: &Revision, opts: &Options) -> (Checkout, Build) {
    let checkout_id = format!("{}:{}", opts.origin, r.checkout);
    let short = r.commit.get(..12).unwrap_or(&r.commit);
    let mut cmisc = Map::new();
    cmisc.insert("tree".into(), json!(r.tree));
    cmisc.insert("subject".into(), json!(r.subject));
    if !r.applied.is_empty() {
        cmisc.insert("applied".into(), json!(r.applied));
    }
    let hash = r.commit.to_ascii_lowercase();
    let applied = if r.applied.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.applied.join(", "))
    };
    let checkout = Checkout {
        id: checkout_id.clone(),
        origin: opts.origin.clone(),
        tree_name: None,
        git_repository_url: r.tree.starts_with("https://").then(|| r.tree.clone()),
        git_commit_hash: (hash.len() == 40 && hash.chars().all(|c| c.is_ascii_hexdigit()))
            .then_some(hash),
        comment: Some(format!("{short} {}{applied}", r.subject)),
        valid: true,
        misc: cmisc,
    };
    let b = r.build.clone().unwrap_or_default();
    let mut bmisc = Map::new();
    put(&mut bmisc, "version", b.version.clone());
    put(&mut bmisc, "config_sha256", b.config_sha256.clone());
    put(&mut bmisc, "key", b.key.clone());
    put(&mut bmisc, "build_dir", b.build_dir.clone());
    put(&mut bmisc, "log", b.log.clone());
    put(&mut bmisc, "started_from", b.started_from.clone());
    if r.build.is_some() {
        bmisc.insert("cached".into(), json!(b.cached));
    }
    // One build per commit and configuration: the same config hash is the same kernel.
    let config = b
        .config_sha256
        .as_deref()
        .map(|c| c.get(..16).unwrap_or(c))
        .unwrap_or(if r.built { "built" } else { "not-built" });
    let duration = Some(r.build_s)
        .filter(|s| *s > 0.0)
        .or(b.build_s)
        .filter(|s| s.is_finite() && *s >= 0.0);
    let build = Build {
        id: format!("{checkout_id}:{config}"),
        checkout_id,
        origin: opts.origin.clone(),
        architecture: architecture(res),
        config_name: b.config.clone(),
        comment: Some(match &b.version {
            Some(v) => format!("Linux {v} at {short}{applied}"),
            None => format!("Linux at {short}{applied}"),
        }),
        duration,
        log_excerpt: r.build_error.as_deref().map(excerpt),
        status: if r.built { Status::Pass } else { Status::Fail },
        misc: bmisc,
    };
    (checkout, build)
}

/// `s` within the schema's cap on an excerpt, in characters: cut, not refused.
fn excerpt(s: &str) -> String {
    if s.chars().count() > LOG_EXCERPT_MAX {
        s.chars().take(LOG_EXCERPT_MAX - 2).collect::<String>() + "…\n"
    } else {
        s.to_string()
    }
}

/// Where and on what the run measured, for every test of the directory.
fn environment(res: &Results) -> Environment {
    let run = &res.run;
    let mut misc = Map::new();
    let mut words = Vec::new();
    let k = run.kernel.clone().unwrap_or_default();
    if let Some(m) = &k.machine {
        words.push(m.clone());
        misc.insert("machine".into(), json!(m));
    }
    if let Some(c) = &run.cpus {
        let n = c.count.map_or(String::new(), |n| format!("{n} × "));
        words.push(format!("{n}{}", c.model.as_deref().unwrap_or("CPU")));
        put(&mut misc, "cpu_model", c.model.clone());
        if let Some(n) = c.count {
            misc.insert("cpus".into(), json!(n));
        }
    }
    if let Some(p) = &k.preemption {
        words.push(format!("preemption {p}"));
        misc.insert("preemption".into(), json!(p));
    }
    put(&mut misc, "host", run.host.clone());
    let emulated = run
        .guest
        .as_ref()
        .is_some_and(|g| g.emulated || g.accel.as_deref() == Some("tcg"));
    misc.insert("emulated".into(), json!(emulated));
    if let Some(g) = &run.guest {
        put(&mut misc, "accel", g.accel.clone());
        put(&mut misc, "qemu", g.qemu.clone());
        let host = g.host.as_ref();
        put(
            &mut misc,
            "qemu_host",
            host.and_then(|h| h.hostname.clone()),
        );
        put(
            &mut misc,
            "qemu_host_cpu",
            host.and_then(|h| h.cpus.as_ref())
                .and_then(|c| c.model.clone()),
        );
        words.push(if emulated {
            format!(
                "QEMU guest, emulated CPUs ({})",
                g.accel.as_deref().unwrap_or("tcg")
            )
        } else {
            format!("QEMU guest ({})", g.accel.as_deref().unwrap_or("?"))
        });
    } else {
        words.push("bare metal or the host's own VM".into());
    }
    if let Some(p) = run.profile.as_ref().and_then(|p| p.name.clone()) {
        misc.insert("profile".into(), json!(p));
    }
    Environment {
        comment: words.join(", "),
        misc,
    }
}

/// The report's verdict (its conclusion, the bullets and, for an emulated run, the
/// note that says so): every test's log excerpt.
fn verdict(res: &Results) -> String {
    let (bullets, conclusion) = kind::of(res).verdict();
    let mut s = conclusion;
    for b in bullets {
        s += "\n- ";
        s += &b;
    }
    if let Some(n) = emulated_note(&res.run) {
        s += "\n";
        s += &n;
    }
    s.push('\n');
    excerpt(&s)
}

/// The results directory's files as published.
fn files(res: &Results, opts: &Options) -> Result<Vec<Resource>, String> {
    let base = match &opts.url_base {
        Some(b) => {
            let name = res
                .dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "results".into());
            format!("{}/{}", b.trim_end_matches('/'), encode(&name))
        }
        None => {
            let abs = std::fs::canonicalize(&res.dir)
                .map_err(|e| format!("{}: {e}", res.dir.display()))?;
            format!("file://{}", encode(&abs.to_string_lossy()))
        }
    };
    Ok(OUTPUT_FILES
        .iter()
        .filter(|f| res.dir.join(f).is_file())
        .map(|f| Resource {
            name: f.to_string(),
            url: format!("{base}/{f}"),
        })
        .collect())
}

/// A path percent-encoded for a URL, `/` kept.
fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, PATH).to_string()
}

/// Everything but RFC 3986's unreserved characters and `/`.
const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// run.json's start time when it is RFC 3339 (as this xrunrig writes it), else none.
fn start_time(res: &Results) -> Option<String> {
    let s = res.run.started.clone()?;
    let b = s.as_bytes();
    let ok = b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b't')
        && b[13] == b':'
        && b[16] == b':'
        && (s.ends_with('Z')
            || s.ends_with('z')
            || b[19..].iter().any(|c| *c == b'+' || *c == b'-'));
    ok.then_some(s)
}

/// What names this run among all the origin's runs: the directory's name and the time
/// it started.
fn run_key(res: &Results) -> String {
    let name = res
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match &res.run.started {
        Some(t) => format!("{name}@{t}"),
        None => name,
    }
}

/// What every test of one directory shares: where and on what it ran, the verdict, the
/// files, when it started and the run's name.
struct Shared {
    env: Environment,
    excerpt: String,
    outputs: Vec<Resource>,
    log_url: Option<String>,
    start: Option<String>,
    key: String,
}

impl Shared {
    fn new(res: &Results, opts: &Options) -> Result<Shared, String> {
        let mut outputs = files(res, opts)?;
        // report.txt is the overview: the log; the rest are outputs.
        let log_url = outputs
            .iter()
            .position(|r| r.name == "report.txt")
            .map(|i| outputs.remove(i).url);
        Ok(Shared {
            env: environment(res),
            excerpt: verdict(res),
            outputs,
            log_url,
            start: start_time(res),
            key: run_key(res),
        })
    }

    /// The figure `f` as a test of the build `build_id`.
    fn test(&self, res: &Results, f: Figure, build_id: &str, opts: &Options) -> Test {
        let rig = &res.rig;
        let Figure {
            setting,
            variant,
            metric,
            status,
            number,
            duration,
            mut misc,
            at,
        } = f;
        let (path, instance, comment) = match at {
            Some(AtCommit {
                path,
                instance,
                comment,
                ..
            }) => {
                let parts: Vec<String> = std::iter::once("xrunrig".to_string())
                    .chain(path)
                    .map(|p| path_part(&p))
                    .collect();
                (parts.join("."), Some(instance), comment)
            }
            None => (
                test_path(rig, &setting, &variant, &metric),
                None,
                format!("{rig}: {setting} / {variant}: {metric}"),
            ),
        };
        misc.insert("rig".into(), json!(rig));
        misc.insert("setting".into(), json!(setting));
        misc.insert("variant".into(), json!(variant));
        misc.insert("metric".into(), json!(metric));
        if let Some(s) = res
            .run
            .settings
            .iter()
            .find(|s| s.name.as_deref() == Some(setting.as_str()))
        {
            if let Some(f) = &s.in_force {
                misc.insert("in_force".into(), json!(f));
            }
            put(&mut misc, "setting_description", s.description.clone());
        }
        let id = match &instance {
            Some(i) => format!("{}:{}:{path}:{i}", opts.origin, self.key),
            None => format!("{}:{}:{path}", opts.origin, self.key),
        };
        Test {
            id,
            build_id: build_id.to_string(),
            origin: opts.origin.clone(),
            path,
            status,
            number,
            start_time: self.start.clone(),
            duration: duration.filter(|d| d.is_finite() && *d >= 0.0),
            environment: self.env.clone(),
            log_url: self.log_url.clone(),
            log_excerpt: self.excerpt.clone(),
            output_files: self.outputs.clone(),
            comment: Some(comment),
            misc,
            instance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_to_kcidbs_characters() {
        assert_eq!(
            test_path("pi-boost", "RT_PUSH_IPI", "no pi", "wait.ms"),
            "xrunrig.pi-boost.RT_PUSH_IPI.no_pi.wait_ms"
        );
        assert_eq!(path_part(""), "_");
    }

    #[test]
    fn origins_are_checked() {
        assert!(check_origin("lab_2").is_ok());
        for bad in ["", "Lab", "my-lab", "a:b"] {
            assert!(
                check_origin(bad).unwrap_err().contains("lower-case"),
                "{bad}"
            );
        }
    }

    #[test]
    fn urls_are_encoded() {
        assert_eq!(encode("/tmp/a b/ü"), "/tmp/a%20b/%C3%BC");
    }
}
