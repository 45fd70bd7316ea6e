//! lava/: the LAVA job template, the xrunrig test definition and the QEMU device, proven
//! with Debian's lava-dispatcher 2023.01 (`.ci/setup` installs it):
//! - `lava_run_boots_the_guest_kernel_and_reports_every_row`: `lava-run` boots the
//!   guest tests' Debian 6.12 kernel on the local QEMU device (lava/devices/), with the
//!   ramdisk lava/qemu-ramdisk.sh makes, runs lava/xrunrig-test.yaml (a short livefx
//!   run on the clock backend), and every test case LAVA recorded is compared with the
//!   summary.json of the results directory the job attached to its log;
//! - `job_test_definition_and_device_pass_lava_common`: the rendered job, the test
//!   definition and the device configuration pass lava-common's own schemas.
//!
//! What this machine needed (measured): LAVA builds the overlay disk it attaches to a
//! QEMU device with libguestfs, whose supermin looks for a kernel in /boot and finds
//! none here ("supermin: failed to find a suitable kernel (host_cpu=x86_64)": this VM's
//! kernel is not in its filesystem), so the test points SUPERMIN_KERNEL and
//! SUPERMIN_MODULES at the Debian package's kernel and its modules, decompressed (with
//! the package's subset of modules that xrunrig's kernel cache keeps, the appliance
//! waits for its root disk forever: no virtio_scsi); and Debian's busybox has no blkid,
//! so lava/qemu-ramdisk.sh's /init reads the overlay's UUID from its superblock.
//!
//! Missing LAVA packages fail these tests (as any missing prerequisite under
//! XRUNRIG_REQUIRE_ALL=1): they are Debian packages that `.ci/setup` installs.

use std::path::{Path, PathBuf};
use std::process::Command;
use xrunrig::testkit;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Debian's python (lava-common and lava-dispatcher are Debian packages for it).
const PY: &str = "/usr/bin/python3";

fn have_lava_common() -> bool {
    Command::new(PY)
        .args(["-c", "import lava_common.schemas, jinja2, yaml"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Renders lava/xrunrig-job.yaml.jinja2 with `values` (JSON) into `out`.
fn render_job(values: &serde_json::Value, out: &Path) {
    const RENDER: &str = r#"
import sys, json, jinja2
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]), trim_blocks=True,
                         undefined=jinja2.StrictUndefined)
text = env.get_template("xrunrig-job.yaml.jinja2").render(**json.loads(sys.argv[2]))
open(sys.argv[3], "w").write(text)
"#;
    let o = Command::new(PY)
        .args(["-c", RENDER])
        .arg(repo().join("lava"))
        .arg(values.to_string())
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "rendering the job template: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every variable the template reads, as a lab would give them.
fn job_values(kernel: &str, ramdisk: &str, run_args: &str) -> serde_json::Value {
    serde_json::json!({
        "device_type": "qemu",
        "kernel_url": format!("file://{kernel}"),
        "kernel_name": "debian:6.12",
        "kernel_args": "nowatchdog",
        "ramdisk_url": format!("file://{ramdisk}"),
        "ramdisk_compression": "",
        "os": "oe",
        "prompt": "/ #",
        "repo_url": repo().display().to_string(),
        "repo_branch": "",
        "rig": "rigs/livefx.toml",
        "profile": "",
        "trials": 1,
        "run_args": run_args,
        "xrunrig_url": "",
        "upload_url": "",
        "job_timeout_minutes": 20,
    })
}

#[test]
fn job_test_definition_and_device_pass_lava_common() {
    if !testkit::have(
        have_lava_common(),
        "lava-common (Debian package; .ci/setup installs lava-dispatcher)",
    ) {
        return;
    }
    let d = testkit::private_dir("lava-schemas");
    let job = d.join("job.yaml");
    render_job(
        &job_values("/boot/vmlinuz", "/tmp/ramdisk.cpio.gz", "--backend clock"),
        &job,
    );
    const CHECK: &str = r#"
import sys, yaml
from lava_common.schemas import validate
from lava_common.schemas.test import testdef
from lava_common.schemas import device
job = yaml.safe_load(open(sys.argv[1]))
validate(job, strict=True, extra_context_variables=[])
testdef.validate(yaml.safe_load(open(sys.argv[2])))
device.validate(yaml.safe_load(open(sys.argv[3])))
print("job, test definition and device valid")
"#;
    let o = Command::new(PY)
        .args(["-c", CHECK])
        .arg(&job)
        .arg(repo().join("lava/xrunrig-test.yaml"))
        .arg(repo().join("lava/devices/qemu-xrunrig.yaml"))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "lava-common refuses:\n{said}");
    // And refuses a job that is not one (the check is not a rubber stamp).
    let bad = d.join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&job)
            .unwrap()
            .replace("to: tmpfs", "to: nowhere"),
    )
    .unwrap();
    let o = Command::new(PY)
        .args(["-c", CHECK])
        .arg(&bad)
        .arg(repo().join("lava/xrunrig-test.yaml"))
        .arg(repo().join("lava/devices/qemu-xrunrig.yaml"))
        .output()
        .unwrap();
    assert!(!o.status.success(), "a job deploying to nowhere passed");
    let _ = std::fs::remove_dir_all(&d);
}

/// The guest tests' Debian 6.12 package, as .ci/fetch-kernel caches it.
fn kernel_deb() -> Option<PathBuf> {
    let cache = std::env::var_os("XRUNRIG_CACHE_DIR")
        .map(|c| PathBuf::from(c).join("kernels"))
        .unwrap_or_else(|| PathBuf::from("/var/cache/xrunrig/kernels"));
    let mut debs: Vec<PathBuf> = std::fs::read_dir(&cache)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("linux-image-6.12.") && n.ends_with(".deb"))
        })
        .collect();
    debs.sort();
    debs.pop()
}

fn run(cmd: &mut Command, what: &str) -> String {
    let o = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{what} failed:\n{text}");
    text
}

/// The results tarball the job put into its log, between the markers, base64.
fn attached_results(log: &str, into: &Path) -> PathBuf {
    let mut b64 = String::new();
    let mut inside = false;
    for l in log.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        if v["lvl"] != "target" {
            continue;
        }
        let msg = v["msg"].as_str().unwrap_or("").trim();
        if msg.starts_with("XRUNRIG-RESULTS-BEGIN") {
            inside = true;
        } else if msg.starts_with("XRUNRIG-RESULTS-END") {
            inside = false;
        } else if inside {
            b64.push_str(msg);
        }
    }
    assert!(!b64.is_empty(), "no results attached in the job log");
    let tgz = into.join("results.tar.gz");
    let b64f = into.join("results.b64");
    std::fs::write(&b64f, b64).unwrap();
    run(
        Command::new("sh").arg("-c").arg(format!(
            "base64 -d {} > {} && tar -C {} -xzf {}",
            b64f.display(),
            tgz.display(),
            into.display(),
            tgz.display()
        )),
        "unpacking the attached results",
    );
    into.join("xrunrig-lava-results")
}

/// The test cases of the xrunrig definition, from lava-run's log: name -> (result,
/// measurement, units).
fn lava_cases(log: &str) -> Vec<(String, String, Option<f64>, Option<String>)> {
    let mut out = Vec::new();
    for l in log.lines() {
        // lava-run's log lines are YAML flow mappings; the one thing in them that is not
        // JSON is the non-specific tag on a case's line numbers (`"endtc": ! "634"`).
        let l = l.replace(": ! \"", ": \"");
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&l) else {
            continue;
        };
        if v["lvl"] != "results" || v["msg"]["definition"] != "0_xrunrig" {
            continue;
        }
        let m = &v["msg"];
        out.push((
            m["case"].as_str().unwrap_or("").to_string(),
            m["result"].as_str().unwrap_or("").to_string(),
            m["measurement"]
                .as_f64()
                .or_else(|| m["measurement"].as_str().and_then(|s| s.parse().ok())),
            m["units"].as_str().map(String::from),
        ));
    }
    out
}

#[test]
fn lava_run_boots_the_guest_kernel_and_reports_every_row() {
    if !testkit::root() {
        return;
    }
    if !testkit::have(
        testkit::on_path("lava-run"),
        "lava-run (Debian package lava-dispatcher; .ci/setup installs it)",
    ) {
        return;
    }
    let Some(deb) = kernel_deb() else {
        testkit::skip("the Debian 6.12 kernel package (.ci/fetch-kernel)");
        return;
    };
    let d = testkit::private_dir("lava-run");
    // The kernel image and its whole module tree, decompressed: libguestfs boots them
    // to build LAVA's overlay disk, as this machine has no kernel in /boot (see above).
    let k = d.join("k");
    run(
        Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&k),
        "unpacking the kernel package",
    );
    let rel = std::fs::read_dir(k.join("lib/modules"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let modules = k.join("lib/modules").join(&rel);
    run(
        Command::new("sh").arg("-c").arg(format!(
            "find {} -name '*.ko.xz' | xargs -r -n 500 xz -d && depmod -b {} {rel}",
            modules.display(),
            k.display()
        )),
        "decompressing the modules for libguestfs",
    );
    let vmlinuz = k.join(format!("boot/vmlinuz-{rel}"));
    let ramdisk = d.join("ramdisk.cpio.gz");
    run(
        Command::new("sh")
            .arg(repo().join("lava/qemu-ramdisk.sh"))
            .arg(env!("CARGO_BIN_EXE_xrunrig"))
            .arg(&k)
            .arg(&ramdisk),
        "building the ramdisk",
    );
    let job = d.join("job.yaml");
    render_job(
        &job_values(
            &vmlinuz.display().to_string(),
            &ramdisk.display().to_string(),
            "--backend clock --duration 1s --variant pi",
        ),
        &job,
    );
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let t0 = std::time::Instant::now();
    let o = Command::new("lava-run")
        .args(["--job-id", "1", "--output-dir"])
        .arg(&out)
        .arg("--device")
        .arg(repo().join("lava/devices/qemu-xrunrig.yaml"))
        .arg(&job)
        .env("SUPERMIN_KERNEL", &vmlinuz)
        .env("SUPERMIN_MODULES", &modules)
        .env("LIBGUESTFS_BACKEND_SETTINGS", "force_tcg")
        .output()
        .unwrap();
    // lava-run logs to stderr, one YAML flow mapping a line.
    let log = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    eprintln!(
        "lava-run: exit {:?} in {:.0} s",
        o.status.code(),
        t0.elapsed().as_secs_f64()
    );
    std::fs::write(d.join("lava-run.log"), &log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
    assert!(
        o.status.success()
            && log.contains("\"case\": \"job\", \"definition\": \"lava\", \"result\": \"pass\""),
        "lava-run failed (whole log: {}):\n{tail}",
        d.join("lava-run.log").display(),
    );
    let cases = lava_cases(&log);
    let res = attached_results(&log, &d);
    // What the rows say, through xrunrig's own mapping of the attached directory, and
    // the summary's row count, read through the results types.
    let want = run(
        Command::new(env!("CARGO_BIN_EXE_xrunrig"))
            .args(["export", "lava"])
            .arg(&res),
        "xrunrig export lava",
    );
    let summary: results::livefx::Summary =
        serde_json::from_str(&std::fs::read_to_string(res.join("summary.json")).unwrap()).unwrap();
    assert!(!summary.rows.is_empty());
    let figures: usize = summary
        .rows
        .iter()
        .map(|r| analysis::kcidb::livefx_figures(r).len())
        .sum();
    let want: Vec<&str> = want.lines().collect();
    assert_eq!(want.len(), figures);
    for step in ["install", "run", "results"] {
        assert!(
            cases.iter().any(|c| c.0 == step && c.1 == "pass"),
            "{step}: {cases:?}"
        );
    }
    let rows: Vec<_> = cases
        .iter()
        .filter(|c| !["install", "run", "results"].contains(&c.0.as_str()))
        .collect();
    assert_eq!(rows.len(), want.len(), "{cases:?}\n{want:?}");
    for (c, w) in rows.iter().zip(&want) {
        let f: Vec<&str> = w.split(' ').collect();
        assert_eq!(
            (c.0.as_str(), c.1.as_str()),
            (f[0], f[1]),
            "{c:?} against {w}"
        );
        let m: f64 = f[2].parse().unwrap();
        assert!(
            c.2.is_some_and(|x| (x - m).abs() <= 1e-9 * m.abs().max(1.0)),
            "{c:?} against {w}"
        );
        assert_eq!(c.3.as_deref(), Some(f[3]), "{c:?} against {w}");
    }
    // xruns per row, straight from summary.json.
    for r in &summary.rows {
        let name = format!("livefx.{}.{}.xruns", r.setting, r.variant);
        let c = rows.iter().find(|c| c.0 == name).expect(&name);
        assert_eq!(c.2, Some(r.counts.xruns as f64), "{name}");
        assert_eq!(c.1, if r.counts.xruns == 0 { "pass" } else { "fail" });
    }
    let _ = std::fs::remove_dir_all(&d);
}
