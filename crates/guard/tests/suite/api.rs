//! The public API's contract: messages, the allow-list, argv checks, the report.

use agentty_guard::{GuardConfig, Verdict, analyze, check, check_argv, report, rule, rule_names};

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(std::string::ToString::to_string).collect()
}

#[test]
fn block_message_names_rule_and_reason() {
    let Verdict::Block(b) = check("sudo rm -rf /", &GuardConfig::default()) else {
        panic!("not blocked");
    };
    assert_eq!(b.rule, "rm-root");
    assert_eq!(b.command, "sudo rm -rf /");
    let msg = b.message();
    assert!(
        msg.starts_with("blocked by guard rule `rm-root`: "),
        "{msg}"
    );
    assert!(msg.contains(b.reason), "{msg}");
    assert!(msg.contains("allow"), "{msg}");
}

#[test]
fn unknown_rules_are_reported() {
    let cfg = GuardConfig {
        allow: vec!["rm-root".into(), "rm-rf".into(), "nope".into()],
    };
    assert_eq!(
        cfg.unknown_rules(),
        vec!["rm-rf".to_string(), "nope".to_string()]
    );
    let err = cfg.validate().unwrap_err().to_string();
    assert!(
        err.contains("rm-rf") && err.contains("nope") && err.contains("download-exec"),
        "{err}"
    );
    assert!(
        GuardConfig {
            allow: vec!["kill-all".into()]
        }
        .validate()
        .is_ok()
    );
}

#[test]
fn every_rule_has_a_reason() {
    for name in rule_names() {
        let r = rule(name).unwrap();
        assert!(!r.reason.is_empty() && !r.reason.ends_with('.'), "{name}");
    }
}

#[test]
fn check_argv_reads_shell_c() {
    let cfg = GuardConfig::default();
    assert!(check_argv(&argv(&["bash", "-c", "rm -rf /"]), &cfg).is_blocked());
    assert!(check_argv(&argv(&["/usr/bin/sudo", "rm", "-rf", "/"]), &cfg).is_blocked());
    // An argv is not re-split: this is one file named "rm -rf /" passed to ls.
    assert!(!check_argv(&argv(&["ls", "rm -rf /"]), &cfg).is_blocked());
    assert!(check_argv(&argv(&["ls", "-la"]), &cfg).is_read_only());
    assert!(!check_argv(&[], &cfg).is_blocked());
}

#[test]
fn report_shows_argv_wrappers_verdict_and_read_only() {
    let (text, v) = report(
        "sudo env A=1 sh -c 'rm -rf /' ; ls",
        &GuardConfig::default(),
        None,
    );
    assert!(v.is_blocked());
    for needle in [
        "1. rm -rf /",
        "peeled: sudo > env > sh -c",
        "verdict: BLOCKED by rule `rm-root`",
        "read-only: no",
        "2. ls",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    let (text, v) = report("git status && ls -la", &GuardConfig::default(), None);
    assert_eq!(v, Verdict::Allow { read_only: true });
    assert!(
        text.contains("verdict: allowed") && text.ends_with("read-only: yes\n"),
        "{text}"
    );
}

#[test]
fn report_mentions_allowed_rules() {
    let cfg = GuardConfig {
        allow: vec!["shutdown".into()],
    };
    let (text, v) = report("sudo reboot", &cfg, None);
    assert!(!v.is_blocked());
    assert!(text.contains("rule `shutdown` matched"), "{text}");
}

#[test]
fn wrappers_and_pipelines_are_recorded() {
    let a = analyze("curl -s https://x | sudo -E bash");
    assert!(a.exact);
    let bash = a.commands.iter().find(|c| c.program == "bash").unwrap();
    assert_eq!(bash.wrappers, vec!["sudo".to_string()]);
    assert_eq!(bash.pipeline.map(|p| p.1), Some(1));
    let a = analyze("/usr/bin/RM -rf x");
    assert_eq!(a.commands[0].program, "rm");
}

#[test]
fn hostile_inputs_do_not_panic_and_stay_conservative() {
    let cfg = GuardConfig::default();
    // Deep nesting beyond every cap still finds the rm inside.
    let deep = format!("{}rm -rf /{}", "$(".repeat(500), ")".repeat(500));
    assert!(check(&deep, &cfg).is_blocked());
    let deep_sh = format!("{}rm -rf /{}", "sh -c \"".repeat(30), "\"".repeat(30));
    let _ = check(&deep_sh, &cfg); // mis-nested quotes: no real nesting, only no panic
    // Long lines stay allowed when harmless (their speed is the bench's business).
    let long = "echo hello; ".repeat(20_000);
    assert!(!check(&long, &cfg).is_blocked());
    let long_danger = format!("{long}rm -rf /");
    assert!(check(&long_danger, &cfg).is_blocked());
    // NUL bytes and replacement characters.
    assert!(check("rm -rf /\0", &cfg).is_blocked());
    assert!(!check("echo \u{fffd}\0\u{fffd}", &cfg).is_blocked());
    let nested = format!("{}rm -rf /{}", "$(".repeat(100_000), ")".repeat(100_000));
    assert!(check(&nested, &cfg).is_blocked());
    // Crashed tree-sitter-bash's scanner (isdigit on a code point > 255) before the ASCII view.
    let _ = check(
        "\u{a6}\u{11d10}H;\u{a51}T\u{1ff3}\u{1ee5d}{<rG*k\u{11350}{\u{e018c}",
        &cfg,
    );
    assert!(check("echo \u{e9}t\u{e9}; rm -rf /", &cfg).is_blocked());
    let huge = "x".repeat(2 << 20);
    assert!(!check(&huge, &cfg).is_blocked());
    // Expansions nested as deep as the line is long, judged with a known environment (where
    // `${X:-…}` of an unset X is followed): bounded, no stack overflow.
    let call = |line: &str| super::corpus::as_a_call(line, &cfg);
    let unset = "AGENTTY_HOSTILE_UNSET";
    let nested = format!(
        "rm -rf {}/{}",
        format!("${{{unset}:-").repeat(20_000),
        "}".repeat(20_000)
    );
    let _ = call(&nested);
    let subst = format!(
        "rm -rf {}~{}",
        "$(dirname ".repeat(50_000),
        ")".repeat(50_000)
    );
    let _ = call(&subst);
    let trimmed = format!("D=$HOME; rm -rf \"${{D%{}}}\"", "*?".repeat(100_000));
    let _ = call(&trimmed);
    let assigns = format!("D=/tmp/x; {}rm -rf $D", "D=$D$D; ".repeat(40));
    let _ = call(&assigns);
}

/// Double quotes for a POSIX shell (grows about twice per level, single quotes four times).
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Correctly quoted scripts nested past the guard's depth: it cannot see in, so it refuses
/// (rule `too-deep`) rather than passing what it did not read. Real lines nest two or three.
#[test]
fn scripts_nested_past_the_limit_are_refused_not_passed() {
    let cfg = GuardConfig::default();
    for wrapper in ["sh -c", "bash -c", "eval"] {
        let mut line = "rm -rf /".to_owned();
        for level in 1..=10 {
            line = format!("{wrapper} {}", quote(&line));
            assert!(check(&line, &cfg).is_blocked(), "{wrapper} x{level} passed");
        }
        let mut harmless = "echo hi".to_owned();
        for _ in 0..3 {
            harmless = format!("{wrapper} {}", quote(&harmless));
        }
        assert!(!check(&harmless, &cfg).is_blocked(), "{harmless}");
        let mut deep_harmless = "echo hi".to_owned();
        for _ in 0..10 {
            deep_harmless = format!("{wrapper} {}", quote(&deep_harmless));
        }
        match check(&deep_harmless, &cfg) {
            agentty_guard::Verdict::Block(b) => assert_eq!(b.rule, "too-deep", "{wrapper} x10"),
            _ => panic!("{wrapper} x10 passed"),
        }
    }
}

/// Where a line runs decides where its relative targets land: `rm -rf ../../..` from three levels
/// down is `rm -rf /`, and `rm -rf ..` from a project in the home directory deletes the home.
#[test]
fn relative_targets_are_judged_where_the_line_runs() {
    use agentty_guard::{Place, check_argv_at, check_at};
    let cfg = GuardConfig::default();
    let place = |cwd: &str| Place {
        cwd: cwd.to_owned(),
        home: Some("/home/me".to_owned()),
        env: None,
    };
    let blocked = |line: &str, cwd: &str| matches!(check_at(line, &cfg, place(cwd)), Verdict::Block(b) if b.rule == "rm-root");
    for (line, cwd) in [
        ("rm -rf ../../..", "/tmp/a/b"),
        ("rm -rf \"$PWD/../../..\"", "/tmp/a/b"),
        ("rm -rf $(pwd)/../../..", "/tmp/a/b"),
        ("cd .. && cd .. && rm -rf *", "/usr/a"),
        ("rm -rf ..", "/home/me/project"),
        ("rm -rf ../*", "/home/me/project"),
        ("rm -rf .", "/home/me"),
        ("cd && rm -rf *", "/tmp"),
    ] {
        assert!(blocked(line, cwd), "{line} in {cwd}");
    }
    for (line, cwd) in [
        ("rm -rf ..", "/home/me/project/build"),
        ("rm -rf ../dist", "/home/me/project/web"),
        ("rm -rf build node_modules", "/home/me/project"),
        ("cd .. && rm -rf build", "/home/me/project/web"),
        ("rm -rf \"$OUT/..\"", "/tmp/a/b"),
        ("rm -rf ../../..", "/home/me/project/a/b/c"),
    ] {
        assert!(!blocked(line, cwd), "{line} in {cwd}");
    }
    let chmod_blocked = |line: &str, cwd: &str| matches!(check_at(line, &cfg, place(cwd)), Verdict::Block(b) if b.rule == "chmod-root");
    assert!(chmod_blocked("chmod -R 000 ..", "/home/me/project"));
    assert!(chmod_blocked("chown -R nobody .", "/home/me"));
    assert!(!chmod_blocked("chmod -R u+w .", "/home/me/project"));
    assert!(!chmod_blocked("chmod -R 000 ..", "/home/me/project/web"));
    let argv = ["rm", "-rf", "../.."].map(String::from);
    assert!(matches!(
        check_argv_at(&argv, &cfg, place("/home/me/x")),
        Verdict::Block(_)
    ));
    assert!(
        matches!(check_argv(&argv, &cfg), Verdict::Allow { .. }),
        "no place: as before"
    );
}

/// Where a line leaves its shell: what a relative path in its errors is relative to.
#[test]
fn cwd_after_follows_the_lines_cds() {
    use agentty_guard::{Place, cwd_after};
    let at = |line: &str| {
        cwd_after(
            line,
            Place {
                cwd: "/w".to_owned(),
                home: Some("/home/me".to_owned()),
                env: None,
            },
        )
    };
    assert_eq!(at("touch x").as_deref(), Some("/w"));
    assert_eq!(at("cd /tmp/x && touch y").as_deref(), Some("/tmp/x"));
    assert_eq!(at("cd sub; make").as_deref(), Some("/w/sub"));
    assert_eq!(at("cd ~/p && ls").as_deref(), Some("/home/me/p"));
    assert_eq!(at("cd && ls").as_deref(), Some("/home/me"));
    for unknown in [
        "cd \"$DIR\" && ls",
        "(cd /tmp && touch x)",
        "cd - && ls",
        "x=$(cd /a; pwd)",
    ] {
        assert_eq!(at(unknown), None, "{unknown}");
    }
}

/// A variable unset in the environment the command will run with is empty, as the shell will
/// make it: `rm -rf "$STEAMROOT/"*` with it unset is `rm -rf /*`. Judged with that environment
/// (this process's plus the call's `env`), and not when the line sets variables itself.
#[test]
fn unset_variables_are_judged_as_the_shell_expands_them() {
    use agentty_guard::{Place, check_at};
    let cfg = GuardConfig::default();
    let place = |vars: &[(&str, &str)]| {
        Place {
            cwd: "/w".to_owned(),
            home: Some("/home/me".to_owned()),
            env: None,
        }
        .with_env(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    };
    let unset = "AGENTTY_TEST_SURELY_UNSET_VAR";
    assert!(std::env::var_os(unset).is_none());
    for line in [
        format!("rm -rf \"${unset}/\"*"),
        format!("rm -rf ${{{unset}}}/*"),
        format!("rm -rf ${{{unset}:-/}}"),
        format!("rm -rf ${{{unset}-/usr}}"),
        "rm -rf ${HOME:?}/".to_owned(),
        format!("chmod -R 777 ${unset}/"),
    ] {
        assert!(check_at(&line, &cfg, place(&[])).is_blocked(), "{line}");
    }
    // Set by the call: judged by its value.
    let line = "rm -rf \"$OUT/\"*";
    assert!(!check_at(line, &cfg, place(&[("OUT", "/w/build")])).is_blocked());
    assert!(check_at(line, &cfg, place(&[("OUT", "")])).is_blocked());
    // The line sets it: not knowable from the text, not blocked.
    for line in [
        "X=$(mktemp -d); rm -rf \"$X/\"*".to_owned(),
        "for d in a b; do rm -rf \"$d/\"*; done".to_owned(),
        "read -r D; rm -rf \"$D\"/*".to_owned(),
    ] {
        assert!(!check_at(&line, &cfg, place(&[])).is_blocked(), "{line}");
    }
    // Without a known environment (the CLI, the corpus): not expanded.
    let unknown = Place {
        cwd: "/w".to_owned(),
        home: None,
        env: None,
    };
    assert!(!check_at(&format!("rm -rf \"${unset}/x\""), &cfg, unknown).is_blocked());
}
