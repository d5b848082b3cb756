//! Which IP addresses fundi treats as special-purpose, and so never connects to on a
//! user's behalf (webhooks, skills that fetch) unless an operator allows it: every block
//! of the IANA IPv4 and IPv6 Special-Purpose Address Registries that is not globally
//! reachable, multicast, and the IPv6 forms that carry an IPv4 address (mapped,
//! compatible, NAT64, 6to4, Teredo), judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{Ipv4Net, Ipv6Net};

/// IANA IPv4 special-purpose blocks that are not globally reachable, and what they are.
const V4_BLOCKS: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "a \"this network\""),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "a private"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "a shared (carrier-grade NAT)",
    ),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "a loopback"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "a link-local"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "a private"),
    // 192.0.0.9 and .10 are globally reachable; the rest of the block is not.
    (
        Ipv4Addr::new(192, 0, 0, 0),
        29,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 8),
        32,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 11),
        32,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 12),
        30,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 16),
        28,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 32),
        27,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 64),
        26,
        "an IETF protocol assignment",
    ),
    (
        Ipv4Addr::new(192, 0, 0, 128),
        25,
        "an IETF protocol assignment",
    ),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "a documentation"),
    (Ipv4Addr::new(192, 31, 196, 0), 24, "an AS112 service"),
    (Ipv4Addr::new(192, 52, 193, 0), 24, "an AMT"),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "a deprecated 6to4 relay anycast",
    ),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "a private"),
    (
        Ipv4Addr::new(192, 175, 48, 0),
        24,
        "a direct delegation AS112 service",
    ),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "a benchmarking"),
    (Ipv4Addr::new(198, 51, 100, 0), 24, "a documentation"),
    (Ipv4Addr::new(203, 0, 113, 0), 24, "a documentation"),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "a multicast"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "a reserved"),
];

/// IANA IPv6 special-purpose blocks that are not globally reachable (those that embed
/// an IPv4 address are judged by it, below).
const V6_BLOCKS: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0), 128, "an unspecified"),
    (Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1), 128, "a loopback"),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "a local-use NAT64",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "a discard-only",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "an IETF protocol assignment",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "a documentation",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "a documentation",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "a segment routing",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "a private (unique local)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "a link-local",
    ),
    // Deprecated, and never public: site-local.
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "a site-local",
    ),
    (Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, "a multicast"),
];

/// Globally reachable exceptions inside the blocks above (IANA lists them apart).
const V6_GLOBAL: &[(Ipv6Addr, u8)] = &[
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 1), 128),
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 2), 128),
    (Ipv6Addr::new(0x2001, 1, 0, 0, 0, 0, 0, 3), 128),
    (Ipv6Addr::new(0x2001, 3, 0, 0, 0, 0, 0, 0), 32),
    (Ipv6Addr::new(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48),
    (Ipv6Addr::new(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28),
    (Ipv6Addr::new(0x2001, 0x30, 0, 0, 0, 0, 0, 0), 28),
];

fn in_v4(ip: Ipv4Addr, (base, len, _): &(Ipv4Addr, u8, &str)) -> bool {
    Ipv4Net::new(*base, *len).is_ok_and(|net| net.contains(&ip))
}

fn in_v6(ip: Ipv6Addr, base: Ipv6Addr, len: u8) -> bool {
    Ipv6Net::new(base, len).is_ok_and(|net| net.contains(&ip))
}

/// What kind of special-purpose address `ip` is ("a loopback"), or `None` when it is
/// globally reachable.
pub fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_broadcast() {
        return Some("a broadcast");
    }
    V4_BLOCKS
        .iter()
        .find(|block| in_v4(ip, block))
        .map(|(_, _, kind)| *kind)
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return special_v4(v4);
    }
    if V6_GLOBAL.iter().any(|(base, len)| in_v6(ip, *base, *len)) {
        return None;
    }
    V6_BLOCKS
        .iter()
        .find(|(base, len, _)| in_v6(ip, *base, *len))
        .map(|(_, _, kind)| *kind)
}

/// The IPv4 address an IPv6 address carries, in the forms that reach it: IPv4-mapped
/// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`, deprecated), NAT64 (`64:ff9b::/96`),
/// 6to4 (`2002:AABB:CCDD::/48`) and Teredo (`2001:0::/32`, the client's address
/// obfuscated in the last 32 bits).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let last = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    match s {
        // `::` and `::1` are themselves, not 0.0.0.0 and 0.0.0.1.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => None,
        [0, 0, 0, 0, 0, 0xffff | 0, hi, lo] => Some(last(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(last(hi, lo)),
        [0x2002, hi, lo, ..] => Some(last(hi, lo)),
        [0x2001, 0, _, _, _, _, hi, lo] => Some(last(!hi, !lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        special_purpose(ip.parse().unwrap())
    }

    #[test]
    fn special_purpose_blocks_of_both_registries_are_refused() {
        for ip in [
            "0.1.2.3",
            "10.0.0.1",
            "100.64.0.1",
            "127.0.0.1",
            "169.254.169.254",
            "172.16.5.4",
            "192.0.0.1",
            "192.0.0.170",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "100::1",
            "2001:db8::1",
            "2001:2::1",
            "3fff::1",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "64:ff9b:1::1",
        ] {
            assert!(kind(ip).is_some(), "{ip} passed as public");
        }
    }

    #[test]
    fn ipv6_forms_of_an_inside_ipv4_address_are_judged_by_it() {
        for (ip, expected) in [
            ("::ffff:127.0.0.1", "a loopback"),
            ("::127.0.0.1", "a loopback"),
            ("64:ff9b::7f00:1", "a loopback"),
            ("64:ff9b::a9fe:a9fe", "a link-local"),
            ("2002:7f00:1::1", "a loopback"),
            ("2002:a00:1::", "a private"),
            // Teredo: the client address is the last 32 bits, inverted.
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", "a loopback"),
        ] {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
        // Public IPv4 carried the same ways is public.
        for ip in ["::ffff:1.1.1.1", "64:ff9b::101:101", "2002:101:101::1"] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn globally_reachable_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "192.0.0.9",
            "192.0.0.10",
            "2606:4700:4700::1111",
            "2001:20::1",
            "2001:4860:4860::8888",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }
}
