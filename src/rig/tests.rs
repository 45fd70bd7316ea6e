//! Parser and validation tests: every problem names its line and column.

use super::*;
use std::path::Path;

fn errs(text: &str) -> Vec<(usize, usize, String)> {
    match parse(Path::new("bad.toml"), text) {
        Ok(_) => panic!("expected errors for:\n{text}"),
        Err(e) => e.problems,
    }
}

fn one_err(text: &str, want: &str) -> (usize, usize) {
    let e = errs(text);
    let hit = e
        .iter()
        .find(|(_, _, m)| m.contains(want))
        .unwrap_or_else(|| panic!("no error containing {want:?} in {e:?}"));
    (hit.0, hit.1)
}

const GOOD: &str = r#"
name = "ok"
trials = 3
[locks.M]
protocol = "inherit"
[[threads]]
name = "a"
policy = "fifo"
priority = 10
cpus = [0]
steps = [ { lock = "M" }, { signal = "go" }, { run = "1 ms" }, { unlock = "M" } ]
[[threads]]
name = "b"
policy = "other"
cpus = "0"
instances = 2
steps = [ { wait = "go" }, { mark = "want" }, { lock = "M" }, { mark = "got" }, { unlock = "M" },
          { barrier = "end" } ]
[metrics.wait]
from = "b.want"
to = "b.got"
bound = "< 1 s"
[[variants]]
name = "pi"
[[variants]]
name = "none"
locks.M.protocol = "none"
threads.a.priority = 20
"#;

#[test]
fn good_rig_compiles_to_plans() {
    let r = parse(Path::new("ok.toml"), GOOD).unwrap();
    assert_eq!(r.name, "ok");
    assert_eq!(r.trials, 3);
    assert_eq!(r.variants.len(), 2);
    let pi = &r.variants[0].plan;
    let none = &r.variants[1].plan;
    assert_eq!(pi.locks[0].protocol, Protocol::Inherit);
    assert_eq!(none.locks[0].protocol, Protocol::None);
    assert_eq!(pi.threads[0].priority, 10);
    assert_eq!(none.threads[0].priority, 20);
    // Two instances of b, named b.0 and b.1, each with its own marks.
    let names: Vec<&str> = pi.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b.0", "b.1"]);
    assert_eq!(pi.marks.len(), 4);
    assert_eq!(pi.barriers, vec![("end".to_string(), 2)]);
    assert_eq!(pi.threads[0].ops[2], Op::Run(1_000_000));
    assert_eq!(r.metrics[0].bound.unwrap().limit_ns, 1_000_000_000);
}

#[test]
fn shipped_rigs_are_valid() {
    for f in ["rigs/pi-inversion.toml", "rigs/pi-boost-affinity.toml"] {
        let r = load(Path::new(f)).unwrap_or_else(|e| panic!("{e}"));
        assert!(!r.metrics.is_empty());
    }
}

#[test]
fn syntax_error_has_position() {
    let (l, c) = one_err("name = \"x\"\n[[threads]\n", "");
    assert_eq!((l, c), (2, 11), "points at the unclosed table header");
}

#[test]
fn unknown_key_is_named_with_position() {
    let text = GOOD.replace("policy = \"fifo\"", "polcy = \"fifo\"");
    let (l, _) = one_err(&text, "unknown field `polcy`");
    assert_eq!(l, 8);
}

#[test]
fn priority_out_of_range() {
    let text = GOOD.replace("priority = 10", "priority = 120");
    let (l, c) = one_err(&text, "priority 120 is out of range for fifo/rr");
    assert_eq!((l, c), (9, 12));
    let text = GOOD.replace("policy = \"other\"", "policy = \"other\"\npriority = 30");
    one_err(&text, "nice value, -20..=19");
}

#[test]
fn lock_never_unlocked() {
    let text = GOOD.replace(", { unlock = \"M\" } ]\n[[threads]]", " ]\n[[threads]]");
    let (l, _) = one_err(&text, "thread 'a' never unlocks M");
    assert_eq!(l, 7);
}

#[test]
fn unlock_without_lock_and_double_lock() {
    let text = GOOD.replace("{ lock = \"M\" }, { signal", "{ unlock = \"M\" }, { signal");
    one_err(&text, "unlocks 'M' without holding it");
    let text = GOOD.replace("{ run = \"1 ms\" }", "{ lock = \"M\" }");
    one_err(&text, "while already holding it");
}

#[test]
fn mark_never_taken() {
    let text = GOOD.replace("to = \"b.got\"", "to = \"b.gotten\"");
    let (l, c) = one_err(&text, "mark 'gotten' is never taken by thread 'b'");
    assert_eq!((l, c), (21, 6));
    let text = GOOD.replace("from = \"b.want\"", "from = \"c.want\"");
    one_err(&text, "thread 'c' is not defined");
}

#[test]
fn event_never_signalled_and_undefined_lock() {
    let text = GOOD.replace("{ wait = \"go\" }", "{ wait = \"gone\" }");
    one_err(&text, "event 'gone' is waited for but no thread signals it");
    let text = GOOD.replace(
        "{ lock = \"M\" }, { mark = \"got\" }",
        "{ lock = \"N\" }, { mark = \"got\" }",
    );
    one_err(&text, "lock 'N' is not defined");
}

#[test]
fn step_with_two_actions_or_none() {
    let text = GOOD.replace("{ run = \"1 ms\" }", "{ run = \"1 ms\", sleep = \"1 ms\" }");
    one_err(&text, "this one has run and sleep");
    let text = GOOD.replace("{ run = \"1 ms\" }", "{ }");
    one_err(&text, "a step needs one action");
}

#[test]
fn bad_durations_bounds_policies_cpus() {
    one_err(
        &GOOD.replace("\"1 ms\"", "\"1 parsec\""),
        "no known time unit",
    );
    one_err(&GOOD.replace("\"< 1 s\"", "\"1 s\""), "must start with <");
    one_err(
        &GOOD.replace("\"fifo\"", "\"deadline\""),
        "unknown policy 'deadline'",
    );
    one_err(&GOOD.replace("cpus = \"0\"", "cpus = \"0-x\""), "cpus:");
    one_err(&GOOD.replace("cpus = [0]", "cpus = []"), "cpus is empty");
    one_err(
        &GOOD.replace("\"inherit\"", "\"priority-ceiling\""),
        "unknown lock protocol",
    );
}

#[test]
fn variants_must_name_real_things() {
    one_err(
        &GOOD.replace("threads.a.priority", "threads.z.priority"),
        "overrides thread 'z'",
    );
    one_err(
        &GOOD.replace("locks.M.protocol = \"none\"", "locks.Q.protocol = \"none\""),
        "overrides lock 'Q'",
    );
    one_err(
        &GOOD.replace("name = \"none\"", "name = \"pi\""),
        "variant 'pi' is defined twice",
    );
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let text = GOOD
        .replace("priority = 10", "priority = 0")
        .replace("to = \"b.got\"", "to = \"b.nope\"");
    assert!(errs(&text).len() >= 2);
}

/// `[livefx]` and `[instruments]` are checked in the same pass as the rest of the file:
/// their problems come with the others, positioned, and a good rig carries them typed.
#[test]
fn livefx_and_instruments_are_checked_with_the_rest() {
    let text = format!(
        "{}[instruments.trace]\nthreads = [\"zz\"]\n",
        GOOD.replace("priority = 10", "priority = 0")
    );
    let e = errs(&text);
    assert!(
        e.iter().any(|p| p.0 == 9 && p.2.contains("1..=99")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|p| (p.0, p.1) == (30, 12) && p.2.contains("no thread 'zz'")),
        "{e:?}"
    );
    let lf = "kind = \"livefx\"\n[livefx]\nperiod = 0\n[[livefx.workers]]\nname = \"w\"\n\
              priority = 10\nplugins = [ { run = \"1 ms\", lock = \"nope\" } ]\n";
    assert_eq!(one_err(lf, "period must be 1..=16384"), (3, 10));
    assert_eq!(one_err(lf, "lock 'nope' is not defined"), (7, 36));
    let r = parse(
        Path::new("lf.toml"),
        &lf.replace("period = 0", "period = 64")
            .replace(", lock = \"nope\"", ""),
    )
    .unwrap();
    let c = r.livefx.unwrap();
    assert_eq!((c.period, c.workers[0].priority), (64, 10));
    assert!(r.instruments.is_none());
    assert!(parse(Path::new("ok.toml"), GOOD).unwrap().livefx.is_none());
}

#[test]
fn cpus_missing_on_this_machine_name_the_line() {
    // CPU 40: none here, but a guest kernel (up to 64 vCPUs) can have it.
    let text = GOOD.replace("cpus = [0]", "cpus = [0, 40]");
    let r = parse(Path::new("big.toml"), &text).unwrap();
    let e = r.check_machine(&[0, 1]).unwrap_err();
    assert!(e.contains("big.toml:10:8: thread 'a' uses CPU {40}"), "{e}");
    assert!(e.contains("--kernel"), "{e}");
    assert!(r.check_machine(&(0..41).collect::<Vec<_>>()).is_ok());
}

#[test]
fn end_early_resolves_to_mark_slots_in_every_variant() {
    let one = GOOD
        .replace("instances = 2\n", "")
        .replace(", { barrier = \"end\" }", "")
        .replace("bound = \"< 1 s\"", "bound = \"< 1 s\"\nend_early = true");
    let r = parse(Path::new("ok.toml"), &one).unwrap();
    assert!(r.metrics[0].end_early);
    assert_eq!(r.metrics[0].bound_limit(), Some(1000.0));
    for v in &r.variants {
        let p = &v.plan;
        let [e] = p.early_ends.as_slice() else {
            panic!("{:?}", p.early_ends)
        };
        assert_eq!((e.metric, e.after_ns), (0, 1_000_000_000));
        assert_eq!(
            (p.marks[e.from].mark.as_str(), p.marks[e.to].mark.as_str()),
            ("want", "got")
        );
    }
    // `<=`: cut one ns past the limit, so a value cut there fails it too.
    let le = one.replace("< 1 s", "<= 1 s");
    let r = parse(Path::new("ok.toml"), &le).unwrap();
    assert_eq!(r.variants[0].plan.early_ends[0].after_ns, 1_000_000_001);
    // Off by default, and when false.
    let r = parse(
        Path::new("ok.toml"),
        &one.replace("end_early = true", "end_early = false"),
    )
    .unwrap();
    assert!(!r.metrics[0].end_early && r.variants[0].plan.early_ends.is_empty());
}

#[test]
fn end_early_needs_an_upper_bound_and_marks_taken_once() {
    let with = |bound: &str| GOOD.replace("bound = \"< 1 s\"", &format!("{bound}end_early = true"));
    // Instances: `b.want` is taken twice a trial. Line 23 is end_early's.
    assert_eq!(
        one_err(
            &with("bound = \"< 1 s\"\n"),
            "end_early needs 'b.want' taken once per trial"
        ),
        (23, 13)
    );
    let single = |bound: &str| {
        with(bound)
            .replace("instances = 2\n", "")
            .replace(", { barrier = \"end\" }", "")
    };
    assert_eq!(one_err(&single(""), "end_early needs a bound"), (21, 13));
    assert_eq!(
        one_err(
            &single("bound = \"> 1 ms\"\n"),
            "end_early needs an upper bound (< or <=)"
        ),
        (22, 13)
    );
    // A bound that does not parse is reported once, where it is written.
    let e = errs(&single("bound = \"< soon\"\n"));
    assert!(e.iter().all(|p| !p.2.contains("end_early")), "{e:?}");
    // Inside a repeat.
    let rep = single("bound = \"< 1 s\"\n").replace(
        "{ mark = \"got\" }",
        "{ repeat = 2, steps = [ { mark = \"got\" } ] }",
    );
    one_err(
        &rep,
        "'b.got' taken once per trial (one thread instance, outside any repeat); it is taken up to 2 times",
    );
    // Not in a livefx rig.
    let lf = "kind = \"livefx\"\n[livefx]\nperiod = 64\n[[livefx.workers]]\nname = \"w\"\n\
              priority = 10\nplugins = [ { run = \"1 ms\" } ]\n[[threads]]\nname = \"t\"\n\
              policy = \"other\"\nsteps = [ { mark = \"a\" }, { mark = \"b\" } ]\n\
              [metrics.m]\nfrom = \"t.a\"\nto = \"t.b\"\nbound = \"< 1 ms\"\nend_early = true\n";
    assert_eq!(one_err(lf, "end_early is for thread rigs"), (16, 13));
}

#[test]
fn repeat_marks_have_capacity() {
    let r = parse(
        Path::new("r.toml"),
        r#"
[[threads]]
name = "a"
policy = "other"
steps = [ { repeat = 5, steps = [ { mark = "x" }, { repeat = 3, steps = [ { mark = "y" } ] } ] } ]
[metrics.m]
from = "a.x"
to = "a.y"
"#,
    )
    .unwrap();
    let caps: Vec<usize> = r.variants[0]
        .plan
        .marks
        .iter()
        .map(|m| m.capacity)
        .collect();
    assert_eq!(caps, [5, 15]);
}

#[test]
fn line_col_counts_from_one() {
    assert_eq!(line_col("ab\ncd", 0), (1, 1));
    assert_eq!(line_col("ab\ncd", 4), (2, 2));
}

/// The caps of `super::limits`, each at its line and column; none of these is
/// expanded (threads, workers) before it is refused.
#[test]
fn counts_past_their_caps_are_positioned_errors() {
    let t = GOOD.replace("trials = 3", "trials = 10000\ntrial_timeout = \"24 h\"");
    assert_eq!(one_err(&t, "the run is too long"), (3, 10));
    let t = GOOD.replace("instances = 2", "instances = 4000000000");
    assert_eq!(one_err(&t, "instances must be 1..=256"), (16, 13));
    let thread = |n: &str| {
        format!(
            "[[threads]]\nname = \"{n}\"\npolicy = \"other\"\ninstances = 200\nsteps = [ {{ mark = \"x\" }} ]\n"
        )
    };
    let t = format!(
        "{}{}[metrics.m]\nfrom = \"a.x\"\nto = \"b.x\"\n",
        thread("a"),
        thread("b")
    );
    assert_eq!(one_err(&t, "at most 256 thread instances"), (7, 8));
    let t = GOOD.replace("name = \"ok\"", "name = \"a\\u0007b\"");
    assert_eq!(one_err(&t, "name contains"), (2, 8));
    let t = GOOD.replace("cpus = \"0\"", "cpus = \"0-99999999999999999999\"");
    assert_eq!(one_err(&t, "does not exist"), (15, 8));

    let lf = |body: &str| format!("kind = \"livefx\"\n[livefx]\n{body}\n");
    let w = "[[livefx.workers]]\nname = \"w\"\npriority = 10\n";
    assert_eq!(
        one_err(&lf("period = 20000"), "period must be 1..=16384"),
        (3, 10)
    );
    assert_eq!(
        one_err(&lf("rate = 4000000"), "rate must be 1..=768000"),
        (3, 8)
    );
    assert_eq!(
        one_err(&lf("nperiods = 1000"), "nperiods must be 1..=32"),
        (3, 12)
    );
    assert_eq!(one_err(&lf("duration = \"25 h\""), "at most 24 h"), (3, 12));
    assert_eq!(
        one_err(
            &lf("loopback = { clock_latency = 4000000000 }"),
            "at most 1048576"
        ),
        (3, 30)
    );
    assert_eq!(
        one_err(
            &lf("callback = { cpus = [0, 100000] }"),
            "CPU 100000 does not exist"
        ),
        (3, 21)
    );
    let many = format!("{w}instances = 4000000000\nplugins = [ {{ run = \"1 us\" }} ]");
    assert_eq!(one_err(&lf(&many), "instances must be 1..=64"), (6, 13));
    let plugins = vec!["{ run = \"1 us\" }"; 65].join(", ");
    let many = format!("{w}plugins = [ {plugins} ]");
    assert!(one_err(&lf(&many), "more than 64 plugins").0 == 6);

    let events = vec!["\"sched_switch\""; 65].join(", ");
    let i = format!(
        "{}[instruments]\ncpu = 5000\n[instruments.trace]\nevents = [{events}]\n",
        GOOD
    );
    assert!(
        errs(&i)
            .iter()
            .any(|p| p.2.contains("trace events: at most 64")),
        "{:?}",
        errs(&i)
    );
    assert!(
        errs(&i)
            .iter()
            .any(|p| p.2.contains("CPU 5000 does not exist"))
    );
}

/// `[livefx] pass`: one bound, in its range; each problem at its value (or at the
/// table, when the table itself is wrong).
#[test]
fn livefx_pass_is_one_bound_in_its_range() {
    use super::livefx::Pass;
    let lf = |pass: &str| {
        format!(
            "kind = \"livefx\"\n[livefx]\n{pass}\n[[livefx.workers]]\nname = \"w\"\n\
             priority = 10\nplugins = [ {{ run = \"1 ms\" }} ]\n"
        )
    };
    let ok = |pass: &str| {
        parse(Path::new("lf.toml"), &lf(pass))
            .unwrap()
            .livefx
            .unwrap()
            .pass
    };
    assert_eq!(ok("pass = { misses = 0 }"), Some(Pass::Misses(0)));
    assert_eq!(
        ok("pass = { misses = 1000000 }"),
        Some(Pass::Misses(1_000_000))
    );
    assert_eq!(
        ok("pass = { misses_per_minute = 2.5 }"),
        Some(Pass::MissesPerMinute(2.5))
    );
    // An integer rate is a rate.
    assert_eq!(
        ok("pass = { misses_per_minute = 2 }"),
        Some(Pass::MissesPerMinute(2.0))
    );
    assert_eq!(ok("# no pass"), None);
    for (pass, want, at) in [
        (
            "pass = { misses = -1 }",
            "pass: misses = -1 must be 0..=1000000",
            (3, 19),
        ),
        (
            "pass = { misses = 1000001 }",
            "must be 0..=1000000",
            (3, 19),
        ),
        (
            "pass = { misses_per_minute = -0.5 }",
            "pass: misses_per_minute = -0.5 must be between 0 and 100000",
            (3, 30),
        ),
        (
            "pass = { misses_per_minute = nan }",
            "must be between 0",
            (3, 30),
        ),
        (
            "pass = { misses_per_minute = inf }",
            "must be between 0",
            (3, 30),
        ),
        (
            "pass = { misses_per_minute = 1e6 }",
            "must be between 0",
            (3, 30),
        ),
        (
            "pass = { misses = 0, misses_per_minute = 1.0 }",
            "pass: give one bound, not both: write pass = { misses = 0 }",
            (3, 8),
        ),
        (
            "pass = {}",
            "pass is empty: write pass = { misses = 0 }",
            (3, 8),
        ),
        ("pass = { misses = \"none\" }", "invalid type", (3, 19)),
    ] {
        assert_eq!(one_err(&lf(pass), want), at, "{pass}");
    }
    // A key it does not know is named, with the two it does.
    let e = errs(&lf("pass = { dropouts = 0 }"));
    assert!(
        e.iter().any(|p| p.0 == 3
            && p.2.contains("unknown field `dropouts`")
            && p.2.contains("misses_per_minute")),
        "{e:?}"
    );
}
