//! The one result line, for every state; the four "not enforced" sentences must differ.

use agentty_sandbox::{Backend, Enforcement, Mode, NotEnforcedWhy, Policy, State};

use super::common::Fixture;

#[test]
fn four_distinct_sentences() {
    let lines = [
        Enforcement::decide(Mode::Default, false, &Backend::Landlock { abi: 7 }).line(),
        Enforcement::decide(Mode::Default, true, &Backend::None).line(),
        Enforcement::decide(Mode::Default, true, &Backend::KernelLacksLandlock).line(),
        Enforcement::decide(Mode::Auto, true, &Backend::Landlock { abi: 7 }).line(),
    ];
    assert_eq!(
        lines,
        [
            "[sandbox] workspace-write: not confined: disabled by configuration (sandbox.terminal = false)",
            "[sandbox] workspace-write: not confined: no sandbox backend on this platform",
            "[sandbox] workspace-write: not confined: this kernel does not offer Landlock",
            "[sandbox] danger-full-access: writes are not confined",
        ]
    );
    assert_eq!(
        Enforcement::decide(Mode::Plan, true, &Backend::Landlock { abi: 7 }).line(),
        "[sandbox] read-only: enforced (Landlock ABI 7)"
    );
    let partial = Enforcement::decide(Mode::Default, true, &Backend::Landlock { abi: 2 });
    assert!(partial.line().starts_with(
        "[sandbox] workspace-write: partially enforced (Landlock ABI 2 lacks TRUNCATE"
    ));
    let old = Enforcement::decide(Mode::Default, true, &Backend::Landlock { abi: 1 }).line();
    assert!(old.contains("lacks REFER and TRUNCATE"), "{old}");
    assert!(lines.iter().chain([&old]).all(|l| !l.contains('\n')));
}

#[test]
fn this_host_is_enforced_at_the_kernel_abi() {
    let f = Fixture::new();
    let abi = agentty_sandbox::landlock_abi().unwrap();
    let prepared = f.prepared(Mode::Default);
    assert_eq!(prepared.enforcement().state, State::Enforced { abi });
    assert_eq!(
        prepared.enforcement().line(),
        format!("[sandbox] workspace-write: enforced (Landlock ABI {abi})")
    );
    let disabled = agentty_sandbox::Plan::with_context(
        &Policy {
            enabled: false,
            ..Policy::new(Mode::Default, vec![f.ws.clone()])
        },
        &f.ctx(),
    );
    let e = disabled.prepare().unwrap().enforcement();
    assert_eq!(
        (e.mode, e.state),
        (
            Mode::Default,
            State::NotEnforced {
                why: NotEnforcedWhy::DisabledByConfig
            }
        )
    );
}

#[test]
fn disabled_and_auto_do_not_confine_children() {
    let f = Fixture::new();
    let target = f.outside.join("free");
    for policy in [
        Policy {
            enabled: false,
            ..Policy::new(Mode::Plan, vec![])
        },
        Policy::new(Mode::Auto, vec![]),
    ] {
        let p = std::sync::Arc::new(
            agentty_sandbox::Plan::with_context(&policy, &f.ctx())
                .prepare()
                .unwrap(),
        );
        super::common::ok(&super::common::sh(
            &p,
            &f.ws,
            &f.home,
            &format!("echo x > '{}'", target.display()),
        ));
        assert!(target.exists());
        std::fs::remove_file(&target).unwrap();
    }
}

/// The line's network words: the mode as the call's client gets it (`ask` is `allowlist` for a
/// client that cannot be asked), what is refused, how the user allows more, and what holds it;
/// short, since every result carries it (what still gets through is `doctor`'s).
#[test]
fn the_network_words_say_the_mode_this_client_gets() {
    use agentty_sandbox::{NetEnforcement, NetHold, Network};
    let line = |mode, held, loopback, asks, namespace| {
        let mut e = Enforcement::decide(Mode::Default, true, &Backend::Landlock { abi: 7 });
        e.network = NetEnforcement::Filtered {
            mode,
            held,
            loopback,
            namespace,
        };
        let line = e.line_for(asks);
        let base = "[sandbox] workspace-write: enforced (Landlock ABI 7)";
        line.strip_prefix(base).unwrap().to_owned()
    };
    let refused = "others refused (the user allows more with allow_net)";
    let held = "held by seccomp+Landlock";
    assert_eq!(
        line(Network::Ask, NetHold::Full, true, true, false),
        format!("; network ask: listed hosts and loopback; the user is asked for others; {held}")
    );
    assert_eq!(
        line(Network::Ask, NetHold::Full, true, false, false),
        format!(
            "; network allowlist (this client cannot ask the user): listed hosts and loopback; \
             {refused}; {held}"
        )
    );
    for asks in [true, false] {
        assert_eq!(
            line(Network::Allowlist, NetHold::Full, true, asks, false),
            format!("; network allowlist: listed hosts and loopback; {refused}; {held}")
        );
    }
    assert_eq!(
        line(Network::Allowlist, NetHold::Full, false, true, false),
        format!("; network allowlist: listed hosts only; {refused}; {held}")
    );
    assert!(
        line(Network::Allowlist, NetHold::Full, true, true, true)
            .ends_with("; held by netns+seccomp+Landlock")
    );
    let weak = line(Network::Ask, NetHold::SupervisorOnly, true, true, false);
    assert!(
        weak.ends_with("; held by seccomp alone (agentty doctor says what that lets through)"),
        "{weak}"
    );
}
