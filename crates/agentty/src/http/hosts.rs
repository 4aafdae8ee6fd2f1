//! Which `Host` a request may name (DNS rebinding, docs/BEHAVIOUR.md §9): the loopback names,
//! the address bound, and `--allow-host`'s. One list for MCP and the web view.
//!
//! An entry is a name (`agentty.agents.svc`), a name with a port (`…:7337`: only that port), or
//! a wildcard `*.NAME` that stands for exactly one label before NAME, with or without a port:
//! `*.agents.svc.cluster.local:8888` accepts `sb-1.agents.svc.cluster.local:8888`, which is how
//! agent-sandbox's sandbox-router names a sandbox's pod, and not `a.b.agents.svc.cluster.local`
//! nor `agents.svc.cluster.local`. A name without a port accepts any port, as rmcp's check did.
//!
//! `/livez` and `/readyz` are answered whatever the Host (see `health`): a kubelet's probe names
//! the pod's IP, which is not known when the flags are written.

use std::net::SocketAddr;

/// One accepted name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    /// Lower case, without brackets; for a wildcard, what follows `*.`.
    name: String,
    wildcard: bool,
    port: Option<u16>,
}

/// The accepted names.
#[derive(Debug, Clone)]
pub struct Hosts(Vec<Pattern>);

/// A host name or address as compared: lower case, no IPv6 brackets, no final dot.
fn normal(name: &str) -> String {
    name.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// `entry` as a pattern; `None` when it is not a host, `host:port` or `*.host[:port]`.
fn pattern(entry: &str) -> Option<Pattern> {
    let entry = entry.trim();
    // `Authority` takes a user (`user@host`) and names only its host: no host has one.
    if entry.contains(['@', '/']) {
        return None;
    }
    let (wildcard, rest) = match entry.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, entry),
    };
    let authority = hyper::http::uri::Authority::try_from(rest).ok()?;
    let name = normal(authority.host());
    let port = authority.port_u16();
    // A port given as `:` alone or past 65535 (which `Authority` reads as no port), or a name
    // with characters no host has, is a mistake.
    let port_written = rest.contains(':') && !rest.ends_with(']');
    if name.is_empty()
        || rest.ends_with(':')
        || (port_written && port.is_none())
        || name.contains(['*', '/', '@'])
        || (wildcard && name.parse::<std::net::IpAddr>().is_ok())
    {
        return None;
    }
    Some(Pattern {
        name,
        wildcard,
        port,
    })
}

/// Whether `entry` is an accepted form for `--allow-host`; the reason when it is not.
pub fn check(entry: &str) -> Result<(), String> {
    pattern(entry).map(drop).ok_or_else(|| {
        format!(
            "--allow-host {entry:?} is not a host name, name:port, or *.name[:port] (one label \
             for the *)"
        )
    })
}

impl Hosts {
    /// The loopback names, the address bound, and `allowed` (entries that do not parse, which
    /// the flags already refused, are left out).
    pub fn new(bound: SocketAddr, allowed: &[String]) -> Self {
        // An IPv6 address is named in brackets, as a `Host` names it.
        let bound = match bound.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        let own = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .chain([bound]);
        Hosts(
            own.chain(allowed.iter().cloned())
                .filter_map(|entry| pattern(&entry))
                .collect(),
        )
    }

    /// Whether the `Host` header value `host` is accepted.
    pub fn accepts(&self, host: &str) -> bool {
        if host.contains('@') {
            return false;
        }
        let Ok(authority) = hyper::http::uri::Authority::try_from(host.trim()) else {
            return false;
        };
        let name = normal(authority.host());
        let port = authority.port_u16();
        self.0.iter().any(|p| {
            let name_matches = if p.wildcard {
                name.strip_suffix(&p.name)
                    .and_then(|label| label.strip_suffix('.'))
                    .is_some_and(|label| !label.is_empty() && !label.contains('.'))
            } else {
                name == p.name
            };
            name_matches && p.port.is_none_or(|want| port == Some(want))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(allowed: &[&str]) -> Hosts {
        let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        Hosts::new(SocketAddr::from(([127, 0, 0, 1], 7337)), &allowed)
    }

    #[test]
    fn loopback_names_and_the_bound_address_are_accepted_on_any_port() {
        let h = hosts(&[]);
        for ok in [
            "localhost",
            "localhost:7337",
            "127.0.0.1:1",
            "[::1]:7337",
            "LOCALHOST.",
        ] {
            assert!(h.accepts(ok), "{ok}");
        }
        for no in [
            "evil.example",
            "evil.example:7337",
            "",
            "127.0.0.2",
            "localhost.evil",
            "evil@localhost",
        ] {
            assert!(!h.accepts(no), "{no}");
        }
    }

    #[test]
    fn a_port_given_is_the_only_port_accepted() {
        let h = hosts(&["agentty.agents.svc:7337", "plain.example"]);
        assert!(h.accepts("agentty.agents.svc:7337"));
        assert!(!h.accepts("agentty.agents.svc:7338"));
        assert!(!h.accepts("agentty.agents.svc"));
        assert!(h.accepts("plain.example:1234"));
        assert!(h.accepts("Plain.Example"));
    }

    #[test]
    fn a_wildcard_stands_for_exactly_one_label() {
        let h = hosts(&["*.agents.svc.cluster.local:8888"]);
        assert!(h.accepts("sb-1.agents.svc.cluster.local:8888"));
        assert!(!h.accepts("sb-1.agents.svc.cluster.local:8889"));
        assert!(!h.accepts("sb-1.agents.svc.cluster.local"));
        assert!(!h.accepts("agents.svc.cluster.local:8888"));
        assert!(!h.accepts("a.b.agents.svc.cluster.local:8888"));
        assert!(!h.accepts(".agents.svc.cluster.local:8888"));
        assert!(!h.accepts("sb-1.agents.svc.cluster.local.evil:8888"));
        assert!(!h.accepts("xagents.svc.cluster.local:8888"));
        let any_port = hosts(&["*.ns.svc"]);
        assert!(any_port.accepts("x.ns.svc:1"));
    }

    #[test]
    fn entries_that_are_not_hosts_are_refused() {
        for bad in [
            "",
            "*.",
            "*",
            "a/b",
            "user@host",
            "*.10.0.0.1",
            "host:",
            "host:99999",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "a:1", "*.a.b:8888", "[::1]:7337", "10.0.0.1:8888"] {
            assert!(check(good).is_ok(), "{good:?}");
        }
    }
}
