//! Addresses a listed *name* must not lead to (docs/BEHAVIOUR.md §13): a name on the allowlist
//! that resolves to the machine's loopback, a private or link-local network, a cloud's metadata
//! service or one of this machine's own addresses would reach inside, where the name's owner
//! (or whoever answers its DNS) chooses; such an address is refused unless the allowlist names
//! the address itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

/// What an address is, when it is one a listed name must not reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inside {
    Loopback,
    Private,
    LinkLocal,
    Metadata,
    Own,
    /// Unspecified, multicast, broadcast, reserved: nothing a name should lead to.
    Special,
}

impl Inside {
    pub fn word(self) -> &'static str {
        match self {
            Inside::Loopback => "a loopback address",
            Inside::Private => "a private address",
            Inside::LinkLocal => "a link-local address",
            Inside::Metadata => "a cloud metadata address",
            Inside::Own => "an address of this machine",
            Inside::Special => "a special-purpose address",
        }
    }
}

/// Cloud instance metadata services: AWS, GCP, Azure, Oracle, OpenStack (169.254.169.254), AWS
/// ECS tasks (169.254.170.2), Alibaba (100.100.100.200), AWS over IPv6 (fd00:ec2::254).
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(100, 100, 100, 200),
];
const METADATA_V6: &[Ipv6Addr] = &[Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];

/// How long this machine's own addresses are trusted before they are read again.
const OWN_FRESH: Duration = Duration::from_secs(5);

/// What `ip` is, if a listed name must not reach it.
pub fn inside(ip: IpAddr) -> Option<Inside> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => inside_v4(v4),
        IpAddr::V6(v6) => inside_v6(v6),
    }
    .or_else(|| {
        own_addresses()
            .contains(&ip.to_canonical())
            .then_some(Inside::Own)
    })
}

/// Whether a connect to `ip` reaches this machine's loopback: a loopback address, or the
/// unspecified one (Linux connects 0.0.0.0 and :: to the machine itself).
pub(super) fn reaches_loopback(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    ip.is_loopback() || ip.is_unspecified()
}

fn inside_v4(ip: Ipv4Addr) -> Option<Inside> {
    let [a, b, ..] = ip.octets();
    if METADATA_V4.contains(&ip) {
        Some(Inside::Metadata)
    } else if ip.is_loopback() {
        Some(Inside::Loopback)
    } else if ip.is_link_local() {
        Some(Inside::LinkLocal)
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        // 10/8, 172.16/12, 192.168/16, and the carrier-grade NAT range 100.64/10.
        Some(Inside::Private)
    } else if ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
    {
        Some(Inside::Special)
    } else {
        None
    }
}

fn inside_v6(ip: Ipv6Addr) -> Option<Inside> {
    let first = ip.segments()[0];
    if METADATA_V6.contains(&ip) {
        Some(Inside::Metadata)
    } else if ip.is_loopback() {
        Some(Inside::Loopback)
    } else if first & 0xffc0 == 0xfe80 {
        Some(Inside::LinkLocal)
    } else if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
        // Unique local (fc00::/7) and the old site-local (fec0::/10).
        Some(Inside::Private)
    } else if ip.is_unspecified() || ip.is_multicast() {
        Some(Inside::Special)
    } else if let Some(v4) = embedded_v4(ip) {
        // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address a gateway goes to.
        inside_v4(v4)
    } else {
        None
    }
}

/// The IPv4 address a NAT64 or 6to4 address leads to.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
    } else if s[0] == 0x2002 {
        Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]))
    } else {
        None
    }
}

/// This machine's addresses (every interface's), read at most every [`OWN_FRESH`].
fn own_addresses() -> Vec<IpAddr> {
    static OWN: std::sync::Mutex<Option<(Instant, Vec<IpAddr>)>> = std::sync::Mutex::new(None);
    let mut own = OWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((read, addresses)) = own.as_ref()
        && read.elapsed() < OWN_FRESH
    {
        return addresses.clone();
    }
    let addresses = interface_addresses();
    *own = Some((Instant::now(), addresses.clone()));
    addresses
}

fn interface_addresses() -> Vec<IpAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list freed below.
    if unsafe { libc::getifaddrs(&raw mut list) } != 0 {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: `at` is a node of the list getifaddrs made, alive until freeifaddrs.
        let node = unsafe { &*at };
        if !node.ifa_addr.is_null() {
            // SAFETY: ifa_addr points to a sockaddr of the family it says.
            let family = i32::from(unsafe { (*node.ifa_addr).sa_family });
            if family == libc::AF_INET {
                // SAFETY: an AF_INET address is a sockaddr_in.
                let sin = unsafe { &*node.ifa_addr.cast::<libc::sockaddr_in>() };
                found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                    sin.sin_addr.s_addr,
                ))));
            } else if family == libc::AF_INET6 {
                // SAFETY: an AF_INET6 address is a sockaddr_in6.
                let sin6 = unsafe { &*node.ifa_addr.cast::<libc::sockaddr_in6>() };
                found.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
            }
        }
        at = node.ifa_next;
    }
    // SAFETY: frees the list getifaddrs made, once.
    unsafe { libc::freeifaddrs(list) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Option<Inside> {
        inside(text.parse().unwrap())
    }

    #[test]
    fn inside_addresses_are_told_apart() {
        assert_eq!(of("127.0.0.1"), Some(Inside::Loopback));
        assert_eq!(of("::1"), Some(Inside::Loopback));
        assert_eq!(of("::ffff:127.0.0.1"), Some(Inside::Loopback));
        for private in [
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "fd12::1",
        ] {
            assert_eq!(of(private), Some(Inside::Private), "{private}");
        }
        assert_eq!(of("169.254.169.254"), Some(Inside::Metadata));
        assert_eq!(of("fd00:ec2::254"), Some(Inside::Metadata));
        assert_eq!(of("100.100.100.200"), Some(Inside::Metadata));
        assert_eq!(of("169.254.1.1"), Some(Inside::LinkLocal));
        assert_eq!(of("fe80::1"), Some(Inside::LinkLocal));
        for special in ["0.0.0.0", "::", "224.0.0.1", "255.255.255.255", "ff02::1"] {
            assert_eq!(of(special), Some(Inside::Special), "{special}");
        }
        // NAT64 and 6to4 forms of inside addresses are inside too.
        assert_eq!(of("64:ff9b::a9fe:a9fe"), Some(Inside::Metadata));
        assert_eq!(of("2002:0a00:0001::1"), Some(Inside::Private));
        // Public addresses (and the documentation ranges) are not.
        for public in ["1.1.1.1", "151.101.1.1", "203.0.113.80", "2606:4700::1111"] {
            if !own_addresses().contains(&public.parse().unwrap()) {
                assert_eq!(of(public), None, "{public}");
            }
        }
    }

    #[test]
    fn this_machines_own_addresses_are_inside() {
        for ip in interface_addresses() {
            assert!(inside(ip).is_some(), "{ip}");
        }
    }
}
