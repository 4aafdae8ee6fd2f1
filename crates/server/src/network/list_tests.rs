use super::*;

fn list(extra: &[&str]) -> Allowlist {
    let extra: Vec<String> = extra.iter().map(|s| (*s).to_owned()).collect();
    Allowlist::new(false, &extra).unwrap()
}

#[test]
fn names_wildcards_and_ports() {
    let l = list(&[
        "example.com",
        "*.npmjs.org",
        "db.example.com:5432",
        "any.example.com:*",
    ]);
    assert!(l.name_rule("example.com", 443).is_some());
    assert!(l.name_rule("Example.COM.", 80).is_some());
    assert!(l.name_rule("example.com", 8443).is_none());
    assert!(l.name_rule("www.example.com", 443).is_none());
    assert!(l.name_rule("registry.npmjs.org", 443).is_some());
    assert!(l.name_rule("a.b.npmjs.org", 443).is_some());
    // A wildcard covers the names under it, not the name itself, nor a look-alike.
    assert!(l.name_rule("npmjs.org", 443).is_none());
    assert!(l.name_rule("evilnpmjs.org", 443).is_none());
    assert!(l.name_rule("db.example.com", 5432).is_some());
    assert!(l.name_rule("db.example.com", 443).is_none());
    assert!(l.name_rule("any.example.com", 22).is_some());
    assert_eq!(
        l.name_rule("db.example.com", 5432).unwrap().named(),
        "allow_net: db.example.com:5432"
    );
}

#[test]
fn addresses_and_networks() {
    let l = list(&[
        "10.0.0.5",
        "192.168.0.0/16:5432",
        "[fd00::5]:443",
        "[fd00:1::]/32:*",
    ]);
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert!(l.address_rule(ip("10.0.0.5"), 80).is_some());
    assert!(l.address_rule(ip("10.0.0.5"), 5432).is_none());
    assert!(l.address_rule(ip("::ffff:10.0.0.5"), 443).is_some());
    assert!(l.address_rule(ip("192.168.7.9"), 5432).is_some());
    assert!(l.address_rule(ip("192.169.0.1"), 5432).is_none());
    assert!(l.address_rule(ip("fd00::5"), 443).is_some());
    assert!(l.address_rule(ip("fd00:1:2::3"), 9).is_some());
    assert!(l.address_rule(ip("fd00:2::3"), 9).is_none());
    // Addresses are not names.
    assert!(l.name_rule("10.0.0.5", 80).is_none());
}

#[test]
fn the_built_in_list_has_the_registries_and_code_hosts() {
    let l = Allowlist::new(true, &[]).unwrap();
    for (host, port) in [
        ("crates.io", 443),
        ("static.crates.io", 443),
        ("index.crates.io", 443),
        ("registry.npmjs.org", 443),
        ("pypi.org", 443),
        ("files.pythonhosted.org", 443),
        ("proxy.golang.org", 443),
        ("sum.golang.org", 443),
        ("rubygems.org", 443),
        ("repo.maven.apache.org", 443),
        ("github.com", 443),
        ("github.com", 22),
        ("objects.githubusercontent.com", 443),
        ("api.github.com", 443),
        ("codeload.github.com", 443),
        ("gitlab.com", 443),
        ("bitbucket.org", 22),
        ("deb.debian.org", 80),
        ("us.archive.ubuntu.com", 80),
    ] {
        let rule = l.name_rule(host, port);
        assert!(rule.is_some_and(|r| r.built_in), "{host}:{port}");
    }
    assert!(l.name_rule("example.com", 443).is_none());
    assert!(l.name_rule("pypi.org", 22).is_none());
    assert_eq!(
        l.name_rule("pypi.org", 443).unwrap().named(),
        "built-in: pypi.org"
    );
    // Replaced: only the config's.
    assert!(list(&[]).name_rule("pypi.org", 443).is_none());
}

#[test]
fn what_is_not_a_rule_is_refused_with_its_text() {
    for bad in [
        "",
        "exa mple.com",
        "example.com:0",
        "example.com:99999",
        "example.com:http",
        "*example.com",
        "a.*.example.com",
        "10.0.0.0/33",
        "example.com/8",
        "[fd00::1",
        "https://example.com",
    ] {
        let e = Allowlist::new(false, &[bad.to_owned()]).unwrap_err();
        assert_eq!(e.text, bad);
        assert!(e.to_string().contains("is not a host rule"), "{e}");
    }
}
