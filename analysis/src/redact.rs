//! `--redact`: takes host names, user names and home paths out of everything a report
//! writes. Applied to the final text of every file, so nothing slips through a field
//! nobody thought of.

use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (needle, replacement, whole word only), longest needles first.
    rules: Vec<(String, String, bool)>,
}

impl Redactor {
    /// No redaction.
    pub fn none() -> Self {
        Self::default()
    }

    /// Redacts this machine's host name, user and home, plus the hosts and homes named
    /// in the results (`extra_hosts`: e.g. run.json's "host" of another machine).
    pub fn for_this_machine(extra_hosts: &[String]) -> Self {
        let mut hosts: Vec<String> = extra_hosts.to_vec();
        if let Ok(h) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
            hosts.push(h.trim().to_string());
        }
        if let Ok(h) = std::env::var("HOSTNAME") {
            hosts.push(h);
        }
        let mut users: Vec<String> = Vec::new();
        for k in ["USER", "LOGNAME", "SUDO_USER"] {
            if let Ok(u) = std::env::var(k) {
                users.push(u);
            }
        }
        let mut homes: Vec<String> = Vec::new();
        if let Ok(h) = std::env::var("HOME") {
            homes.push(h);
        }
        if let Some((u, home)) = passwd_entry_of_this_uid() {
            users.push(u);
            homes.push(home);
        }
        Self::with(&hosts, &users, &homes)
    }

    pub fn with(hosts: &[String], users: &[String], homes: &[String]) -> Self {
        let mut rules = Vec::new();
        for h in homes {
            let h = h.trim_end_matches('/');
            // "/" as a home would redact every path: skip it.
            if h.len() > 1 {
                rules.push((h.to_string(), "~".to_string(), false));
            }
        }
        for h in hosts {
            let h = h.trim();
            if !h.is_empty() && h != "localhost" {
                rules.push((h.to_string(), "<host>".to_string(), true));
                // The short name of a FQDN too.
                if let Some((short, _)) = h.split_once('.')
                    && !short.is_empty()
                {
                    rules.push((short.to_string(), "<host>".to_string(), true));
                }
            }
        }
        for u in users {
            let u = u.trim();
            if !u.is_empty() {
                rules.push((u.to_string(), "<user>".to_string(), true));
            }
        }
        rules.sort_by_key(|r| std::cmp::Reverse(r.0.len()));
        rules.dedup_by(|a, b| a.0 == b.0);
        Redactor { rules }
    }

    pub fn active(&self) -> bool {
        !self.rules.is_empty()
    }

    pub fn apply(&self, text: &str) -> String {
        if !self.active() {
            return text.to_string();
        }
        // Known homes first ("~"), then any other /home/NAME, then words.
        let mut s = text.to_string();
        for (needle, rep, _) in self.rules.iter().filter(|r| !r.2) {
            s = replace_bounded(&s, needle, rep, is_path_char_or_slash, is_path_char);
        }
        s = redact_home_dirs(&s);
        for (needle, rep, _) in self.rules.iter().filter(|r| r.2) {
            s = replace_word(&s, needle, rep);
        }
        s
    }

    pub fn path(&self, p: &Path) -> String {
        self.apply(&p.display().to_string())
    }
}

/// A command line as `--redact` shows it: the program as `xrunrig` and every path cut to
/// its file name (`--out=/home/u/r` to `--out=r`), so the options stay (for `run --from`)
/// and where the sender keeps things goes.
pub fn command(argv: &[String]) -> Vec<String> {
    let base = |p: &str| {
        let t = p.trim_end_matches('/');
        t.rsplit('/')
            .next()
            .filter(|b| !b.is_empty())
            .unwrap_or(".")
            .to_string()
    };
    argv.iter()
        .enumerate()
        .map(|(i, a)| match (i, a.split_once('=')) {
            (0, _) => "xrunrig".to_string(),
            _ if !a.contains('/') => a.clone(),
            (_, Some((k, v))) if k.starts_with("--") => format!("{k}={}", base(v)),
            _ => base(a),
        })
        .collect()
}

/// A JSON record with every command line in it (a `command` or `guest_command` array of
/// strings, at any depth) cut by `command()`; the redactor's text pass does the rest.
pub fn json_commands(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let argv: Option<Vec<String>> = x
                    .as_array()
                    .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect());
                match argv {
                    Some(a) if k == "command" || k == "guest_command" => {
                        *x = serde_json::json!(command(&a));
                    }
                    _ => json_commands(x),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(json_commands),
        _ => {}
    }
}

/// Any "/home/NAME" becomes "/home/<user>": results copied from another machine carry
/// that machine's user.
fn redact_home_dirs(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("/home/") {
        out.push_str(&rest[..i + 6]);
        let after = &rest[i + 6..];
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .unwrap_or(after.len());
        if end > 0 {
            out.push_str("<user>");
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-' || c == '.'
}

fn is_path_char_or_slash(c: char) -> bool {
    is_path_char(c) || c == '/'
}

/// Replaces `needle` where it is not part of a longer word ("vm" but not "vmlinux").
fn replace_word(s: &str, needle: &str, rep: &str) -> String {
    replace_bounded(s, needle, rep, is_word, is_word)
}

/// Replaces `needle` unless the character before it satisfies `bad_before` or the one
/// after satisfies `bad_after` (a home "/root" is not in "/rootfs" or "/x/root").
fn replace_bounded(
    s: &str,
    needle: &str,
    rep: &str,
    bad_before: fn(char) -> bool,
    bad_after: fn(char) -> bool,
) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (i, _) in s.match_indices(needle) {
        if i < last {
            continue;
        }
        let before = s[..i].chars().next_back();
        let after = s[i + needle.len()..].chars().next();
        if before.is_some_and(bad_before) || after.is_some_and(bad_after) {
            continue;
        }
        out.push_str(&s[last..i]);
        out.push_str(rep);
        last = i + needle.len();
    }
    out.push_str(&s[last..]);
    out
}

fn passwd_entry_of_this_uid() -> Option<(String, String)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.len() >= 6 && f[2] == uid).then(|| (f[0].to_string(), f[5].to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_keeps_its_options_and_loses_its_paths() {
        let argv: Vec<String> = [
            "/home/ann/src/xrunrig/target/release/xrunrig",
            "run",
            "/home/ann/rigs/pi.toml",
            "--trials",
            "3",
            "--out=/srv/ann/results/",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            command(&argv),
            [
                "xrunrig",
                "run",
                "pi.toml",
                "--trials",
                "3",
                "--out=results"
            ]
        );
        let mut v = serde_json::json!({"command": argv, "rerun_of": {"command": ["/x/xrunrig", "run", "/a/b.toml"]}, "note": ["/a/b"]});
        json_commands(&mut v);
        assert_eq!(
            v["rerun_of"]["command"],
            serde_json::json!(["xrunrig", "run", "b.toml"])
        );
        // Only command lines are cut: other arrays of text are left to the text pass.
        assert_eq!(v["note"], serde_json::json!(["/a/b"]));
    }

    #[test]
    fn redacts_words_paths_and_homes() {
        let r = Redactor::with(
            &["vm".into(), "box.example.org".into()],
            &["alice".into()],
            &["/home/alice".into()],
        );
        let t = r.apply("host vm ran vmlinux from /home/alice/k and /home/bob/x on box, alice!");
        assert_eq!(
            t,
            "host <host> ran vmlinux from ~/k and /home/<user>/x on <host>, <user>!"
        );
        assert_eq!(r.apply("kvm_pvm nested_pvm=1"), "kvm_pvm nested_pvm=1");
        assert_eq!(Redactor::none().apply("vm"), "vm");
    }

    #[test]
    fn root_home_and_user() {
        let r = Redactor::with(&[], &["root".into()], &["/root".into(), "/".into()]);
        assert_eq!(
            r.apply("/root/x by root in /rootfs /x/root \"/root\""),
            "~/x by <user> in /rootfs /x/<user> \"~\""
        );
    }
}
