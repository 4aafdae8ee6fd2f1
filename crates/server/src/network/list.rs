//! The allowlist (docs/BEHAVIOUR.md §13): which hosts confined commands may reach through the
//! proxy. A rule is a name (`pypi.org`), a wildcard (`*.npmjs.org`: any name under it, not the
//! name itself), an address (`10.0.0.5`, `[fd00::5]`) or a network (`10.0.0.0/8`), each with
//! a port (`:5432`), any port (`:*`), or, when none is written, 80 and 443 (an IPv6 address
//! with a port or a prefix in brackets: `[fd00::5]:443`, `[fd00::]/8`). An address rule
//! also lets a listed name resolve to that address when the address is private, link-local,
//! loopback, metadata or this machine's own (see `address.rs`).
//!
//! The built-in list (package registries and code hosts) comes first; the config's
//! `allow_net` extends it, or replaces it with `builtin_net = false`. Every rule remembers where
//! it came from, so a log line and a refusal can name it.

use std::net::IpAddr;

/// Ports a rule without one allows: plain HTTP and HTTPS.
const DEFAULT_PORTS: &[u16] = &[80, 443];

/// Package registries and code hosts, with the ports they serve (`None`: [`DEFAULT_PORTS`]).
/// Code hosts also serve git over ssh (22, and GitHub's 443 at `ssh.github.com`).
const BUILT_IN: &[(&str, Option<u16>)] = &[
    // Rust: crates.io, its index and its downloads.
    ("crates.io", None),
    ("index.crates.io", None),
    ("static.crates.io", None),
    // npm (and yarn's mirror of it).
    ("registry.npmjs.org", None),
    ("*.npmjs.org", None),
    ("registry.yarnpkg.com", None),
    // PyPI.
    ("pypi.org", None),
    ("files.pythonhosted.org", None),
    // Go's module proxy and checksum database.
    ("proxy.golang.org", None),
    ("sum.golang.org", None),
    // RubyGems.
    ("rubygems.org", None),
    ("index.rubygems.org", None),
    // Maven Central.
    ("repo.maven.apache.org", None),
    ("repo1.maven.org", None),
    // GitHub: the site, its API and archives, raw and release files, git over ssh.
    ("github.com", None),
    ("github.com", Some(22)),
    ("ssh.github.com", Some(443)),
    ("api.github.com", None),
    ("codeload.github.com", None),
    ("*.githubusercontent.com", None),
    // GitLab and Bitbucket, git over ssh too.
    ("gitlab.com", None),
    ("gitlab.com", Some(22)),
    ("bitbucket.org", None),
    ("bitbucket.org", Some(22)),
    // Debian and Ubuntu archives.
    ("deb.debian.org", None),
    ("security.debian.org", None),
    ("archive.ubuntu.com", None),
    ("*.archive.ubuntu.com", None),
    ("security.ubuntu.com", None),
    ("ports.ubuntu.com", None),
];

/// Which hosts a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hosts {
    /// One name, lower case, without a trailing dot.
    Name(String),
    /// Every name under this suffix (`npmjs.org` for `*.npmjs.org`), not the suffix itself.
    Under(String),
    /// An address, or a network of `prefix` bits.
    Net { ip: IpAddr, prefix: u8 },
}

/// Which ports a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ports {
    Default,
    One(u16),
    Any,
}

/// One rule, as written, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    hosts: Hosts,
    ports: Ports,
    /// As the user wrote it (or the built-in entry), for log lines and refusals.
    pub text: String,
    pub built_in: bool,
}

impl Rule {
    /// `built-in: pypi.org` or `allow_net: example.com:8443`.
    pub fn named(&self) -> String {
        if self.built_in {
            format!("built-in: {}", self.text)
        } else {
            format!("allow_net: {}", self.text)
        }
    }

    fn covers_port(&self, port: u16) -> bool {
        match self.ports {
            Ports::Default => DEFAULT_PORTS.contains(&port),
            Ports::One(p) => p == port,
            Ports::Any => true,
        }
    }
}

/// A rule the config gave that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "allow_net: {text:?} is not a host rule: {why} (examples: example.com, *.example.com, example.com:8443, example.com:*, 10.0.0.5, 10.0.0.0/8:5432, [fd00::1]:443)"
)]
pub struct RuleError {
    pub text: String,
    pub why: &'static str,
}

/// The list in force: the built-in rules (unless replaced) and the config's.
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    rules: Vec<Rule>,
}

impl Allowlist {
    /// The list for `builtin` (whether the built-in rules are in) and the config's `extra`
    /// rules; the first rule that is not one is the error.
    pub fn new(builtin: bool, extra: &[String]) -> Result<Allowlist, RuleError> {
        let mut rules = Vec::new();
        if builtin {
            for (name, port) in BUILT_IN {
                let text = match port {
                    Some(port) => format!("{name}:{port}"),
                    None => (*name).to_owned(),
                };
                rules.push(Rule {
                    built_in: true,
                    ..parse(&text)?
                });
            }
        }
        for text in extra {
            rules.push(parse(text)?);
        }
        Ok(Allowlist { rules })
    }

    /// The rule that lets a name (not an address) through on `port`.
    pub fn name_rule(&self, name: &str, port: u16) -> Option<&Rule> {
        let name = normal_name(name);
        self.rules.iter().find(|rule| {
            rule.covers_port(port)
                && match &rule.hosts {
                    Hosts::Name(n) => *n == name,
                    // `suffix` starts with its dot: `a.npmjs.org` is under `.npmjs.org`.
                    Hosts::Under(suffix) => name
                        .strip_suffix(suffix.as_str())
                        .is_some_and(|head| !head.is_empty()),
                    Hosts::Net { .. } => false,
                }
        })
    }

    /// The address rule that covers `ip` on `port`.
    pub fn address_rule(&self, ip: IpAddr, port: u16) -> Option<&Rule> {
        let ip = ip.to_canonical();
        self.rules.iter().find(|rule| {
            rule.covers_port(port)
                && matches!(&rule.hosts, Hosts::Net { ip: net, prefix } if in_net(ip, *net, *prefix))
        })
    }

    /// How many rules there are, built-in and the config's.
    pub fn counts(&self) -> (usize, usize) {
        let built_in = self.rules.iter().filter(|r| r.built_in).count();
        (built_in, self.rules.len() - built_in)
    }
}

/// A name as compared: lower case, no trailing dot.
pub fn normal_name(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn in_net(ip: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// Reads one rule.
fn parse(text: &str) -> Result<Rule, RuleError> {
    let error = |why| RuleError {
        text: text.to_owned(),
        why,
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(error("it is empty"));
    }
    // `[v6]`, `[v6]:port`, `[v6]/len`, `[v6]/len:port`; else `host`, `host:port`.
    let (host, port) = if let Some(rest) = trimmed.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| error("a [ without its ]"))?;
        let (prefix, port) = match after.split_once(':') {
            Some((prefix, port)) => (prefix, Some(port)),
            None => (after, None),
        };
        (format!("{inside}{prefix}"), port)
    } else if trimmed.matches(':').count() > 1 {
        // A bare IPv6 address (no port can be told apart from it).
        (trimmed.to_owned(), None)
    } else {
        match trimmed.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (trimmed.to_owned(), None),
        }
    };
    let ports = match port {
        None => Ports::Default,
        Some("*") => Ports::Any,
        Some(p) => match p.parse::<u16>() {
            Ok(port) if port > 0 => Ports::One(port),
            _ => return Err(error("the port is not a number from 1 to 65535, or *")),
        },
    };
    let hosts = if let Some((address, prefix)) = host.split_once('/') {
        let ip: IpAddr = address
            .parse()
            .map_err(|_| error("a /prefix follows something that is not an address"))?;
        let most = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = prefix
            .parse::<u8>()
            .ok()
            .filter(|p| *p <= most)
            .ok_or_else(|| error("the prefix length is not a number of bits"))?;
        Hosts::Net {
            ip: ip.to_canonical(),
            prefix,
        }
    } else if let Ok(ip) = host.parse::<IpAddr>() {
        let ip = ip.to_canonical();
        Hosts::Net {
            ip,
            prefix: if ip.is_ipv4() { 32 } else { 128 },
        }
    } else if let Some(suffix) = host.strip_prefix("*.") {
        check_name(suffix).map_err(error)?;
        Hosts::Under(format!(".{}", normal_name(suffix)))
    } else {
        check_name(&host).map_err(error)?;
        Hosts::Name(normal_name(&host))
    };
    Ok(Rule {
        hosts,
        ports,
        text: trimmed.to_owned(),
        built_in: false,
    })
}

/// A DNS name of letters, digits, `-`, `_` and dots (internationalised names in their `xn--`
/// form).
fn check_name(name: &str) -> Result<(), &'static str> {
    let name = name.trim_end_matches('.');
    if name.is_empty() || name.len() > 253 {
        return Err("the name is empty or too long");
    }
    let fine = name.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if fine {
        Ok(())
    } else {
        Err(
            "a name has only letters, digits, - and _ between dots (a wildcard only as *. at its start)",
        )
    }
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
