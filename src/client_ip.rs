//! Gate 2 — identity (SPEC §5): who is this search request from, and which rate
//! buckets does it spend? Not only searches: the publish budget and the PIN
//! failures count per the same client, so this lives beside the search pipeline
//! and the budgets rather than inside either.
//!
//! `resolve(peer, forwarded_for, trusted)` picks the client address; its `Display`
//! text is what [`crate::budget::Budget::keys`] hashes into the keys gates 3/4 count
//! against. Pure: no I/O, no clock.
//!
//! Only hops appended by our own proxies can be believed, so `X-Forwarded-For` is read
//! from the right and only while the hops are trusted; everything further left was
//! written by the client and could be anything. IPv6 clients are bucketed per /64
//! because one subscriber usually owns a whole /64 and could otherwise rotate freely.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Parsed `TRUSTED_PROXY_CIDRS` (SPEC §2): comma-separated CIDRs such as
/// `10.0.0.0/8, 2001:db8::/32`; a bare IP means /32 (IPv4) or /128 (IPv6); the empty
/// (or all-whitespace) string means no trusted proxies; whitespace around entries is
/// ignored. An empty entry between commas is an error, as is any bad address or prefix.
///
/// IPv4-mapped IPv6 entries (`::ffff:10.0.0.1`, `::ffff:10.0.0.0/104`) are stored as
/// their IPv4 form, because every address checked against the set is canonicalized the
/// same way and would otherwise never match them.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
}

/// A `TRUSTED_PROXY_CIDRS` entry that is not a CIDR or a bare IP address.
#[derive(Debug, thiserror::Error)]
#[error("invalid CIDR `{entry}`: {reason}")]
pub struct InvalidCidr {
    /// The offending entry, trimmed.
    pub entry: String,
    /// Why it was rejected, e.g. "prefix length 33 exceeds 32".
    pub reason: String,
}

impl FromStr for TrustedProxies {
    type Err = InvalidCidr;

    /// Parses the whole variable value; fails on the first bad entry
    /// (e.g. `10.0.0.0/33`, `nonsense`, `10.0.0.0/8,,10.1.0.0/16`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        let nets = s
            .split(',')
            .map(|entry| parse_cidr(entry.trim()))
            .collect::<Result<_, _>>()?;
        Ok(Self { nets })
    }
}

fn parse_cidr(entry: &str) -> Result<IpNet, InvalidCidr> {
    let fail = |reason: String| InvalidCidr {
        entry: entry.to_owned(),
        reason,
    };
    if entry.is_empty() {
        return Err(fail("empty entry".into()));
    }
    let (addr_text, prefix_text) = match entry.split_once('/') {
        Some((addr, prefix)) => (addr, Some(prefix)),
        None => (entry, None),
    };
    let addr: IpAddr = addr_text
        .parse()
        .map_err(|_| fail(format!("`{addr_text}` is not an IP address")))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix_text {
        None => max,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p
            .parse::<u8>()
            .ok()
            .filter(|&len| len <= max)
            .ok_or_else(|| fail(format!("prefix length {p} exceeds {max}")))?,
        Some(p) => return Err(fail(format!("prefix length `{p}` is not a number"))),
    };
    let net = IpNet::new(addr, prefix)
        .map_err(|e| fail(e.to_string()))?
        .trunc();
    Ok(unmap_net(net))
}

/// `::ffff:a.b.c.d/n` with n ≥ 96 is exactly the IPv4 network `a.b.c.d/(n-96)`.
fn unmap_net(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.network().to_ipv4_mapped() {
            Some(v4) => IpNet::V4(Ipv4Net::new_assert(v4, v6.prefix_len() - 96)),
            None => net,
        },
        _ => net,
    }
}

impl TrustedProxies {
    /// Whether `ip` lies in any trusted CIDR; an IPv4-mapped IPv6 address is checked
    /// as the IPv4 address it carries.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// True when no proxy is trusted, i.e. the socket peer is always the client.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }
}

/// The resolved client: an IPv4 address, or the /64 network of an IPv6 client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientIp {
    /// An IPv4 client, including one that arrived as IPv4-mapped IPv6.
    V4(Ipv4Addr),
    /// An IPv6 client's network: always prefix length 64 with the host bits zeroed.
    V6(Ipv6Net),
}

impl ClientIp {
    /// Canonicalizes `ip`: `::ffff:a.b.c.d` becomes `V4(a.b.c.d)`, any other IPv6
    /// address becomes its /64 network.
    pub fn from_addr(ip: IpAddr) -> ClientIp {
        match ip.to_canonical() {
            IpAddr::V4(v4) => ClientIp::V4(v4),
            IpAddr::V6(v6) => ClientIp::V6(Ipv6Net::new_assert(v6, 64).trunc()),
        }
    }
}

impl fmt::Display for ClientIp {
    /// The SPEC's `ip` text: the dotted quad (`1.2.3.4`) for IPv4, the /64 network in
    /// canonical RFC 5952 form (`2001:db8:1:2::/64`) for IPv6.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIp::V4(v4) => v4.fmt(f),
            ClientIp::V6(net) => net.fmt(f),
        }
    }
}

/// Gate 2: the client behind `peer`, the socket peer address.
///
/// `forwarded_for` holds every `X-Forwarded-For` header value in the order received;
/// each may be a comma list (X-Forwarded-For de-facto format, the same chain that
/// RFC 7239 `for=` formalizes). A header that is blank as a whole contributes nothing.
///
/// If `peer` is not trusted it is the client and the headers are ignored. Otherwise the
/// joined entries are walked from the right, skipping trusted addresses, and the first
/// untrusted one is the client. An unparseable entry (`unknown`, `_hidden`, an empty
/// entry between commas, garbage) ends the walk at the nearest trusted hop to its right,
/// which is `peer` itself when it is the rightmost entry. If every entry is trusted the
/// leftmost is the client; with no entries at all, `peer` is.
pub fn resolve(peer: IpAddr, forwarded_for: &[&str], trusted: &TrustedProxies) -> ClientIp {
    let mut nearest_trusted = peer.to_canonical();
    if !trusted.contains(nearest_trusted) {
        return ClientIp::from_addr(nearest_trusted);
    }
    let entries_right_to_left = forwarded_for
        .iter()
        .rev()
        .filter(|header| !header.trim().is_empty())
        .flat_map(|header| header.split(',').rev());
    for entry in entries_right_to_left {
        match parse_forwarded_entry(entry) {
            Some(ip) if trusted.contains(ip) => nearest_trusted = ip,
            Some(ip) => return ClientIp::from_addr(ip),
            None => break,
        }
    }
    ClientIp::from_addr(nearest_trusted)
}

/// One X-Forwarded-For entry: `1.2.3.4`, `1.2.3.4:5678`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:443`, optionally with an IPv6 zone (`fe80::1%eth0`)
/// that is dropped, and surrounding whitespace. Anything else is `None`.
fn parse_forwarded_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let ip = if let Some(rest) = entry.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        IpAddr::V6(parse_v6_dropping_zone(inside)?)
    } else if let Ok(ip) = entry.parse::<IpAddr>() {
        ip
    } else if let Some((host, _)) = entry.split_once(':').filter(|(_, port)| is_port(port)) {
        // A single colon followed by a port can only be IPv4: unbracketed IPv6 has
        // more colons and was either parsed above or is handled below.
        IpAddr::V4(host.parse().ok()?)
    } else {
        IpAddr::V6(parse_v6_dropping_zone(entry)?)
    };
    Some(ip.to_canonical())
}

fn parse_v6_dropping_zone(text: &str) -> Option<Ipv6Addr> {
    let addr = match text.split_once('%') {
        Some((addr, zone)) if !zone.is_empty() => addr,
        Some(_) => return None,
        None => text,
    };
    addr.parse().ok()
}

/// Decimal digits only: `u16::from_str` would also take a leading `+`.
fn is_port(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && text.parse::<u16>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn trusted(text: &str) -> TrustedProxies {
        text.parse().unwrap()
    }

    /// The proxies of the resolve table: a v4 range, a bare v4 host and a v6 range.
    fn table_proxies() -> TrustedProxies {
        trusted("10.0.0.0/8, 192.168.1.1, 2001:db8:ffff::/48")
    }

    #[test]
    fn resolve_follows_gate_two_for_every_case_in_the_table() {
        // (what the case shows, peer, X-Forwarded-For headers, expected client text)
        #[rustfmt::skip]
        let cases: &[(&str, &str, &[&str], &str)] = &[
            ("untrusted peer ignores XFF", "203.0.113.9", &["1.2.3.4"], "203.0.113.9"),
            ("untrusted v6 peer is its /64", "2001:db8:1:2::9", &["1.2.3.4"], "2001:db8:1:2::/64"),
            ("trusted peer, no header", "10.0.0.1", &[], "10.0.0.1"),
            ("trusted peer, only blank headers", "10.0.0.1", &["", "  "], "10.0.0.1"),
            ("a blank header adds no entry", "10.0.0.1", &["1.2.3.4", " "], "1.2.3.4"),
            ("trusted peer, single entry", "10.0.0.1", &["1.2.3.4"], "1.2.3.4"),
            ("several trusted hops are skipped", "10.0.0.1", &["1.2.3.4, 10.1.1.1, 192.168.1.1"], "1.2.3.4"),
            ("spoofed left entries are never reached", "10.0.0.1", &["6.6.6.6, 1.2.3.4, 10.1.1.1"], "1.2.3.4"),
            ("several headers joined in order", "10.0.0.1", &["1.2.3.4", "10.2.2.2, 10.3.3.3"], "1.2.3.4"),
            ("later header is nearer the server", "10.0.0.1", &["1.2.3.4", "5.6.7.8"], "5.6.7.8"),
            ("v4 with port", "10.0.0.1", &["1.2.3.4:5678"], "1.2.3.4"),
            ("trusted v4 with port is skipped", "10.0.0.1", &["1.2.3.4, 10.9.9.9:443"], "1.2.3.4"),
            ("bracketed v6 with port", "10.0.0.1", &["[2001:db8:1:2::1]:443"], "2001:db8:1:2::/64"),
            ("bracketed v6 without port", "10.0.0.1", &["[2001:db8:1:2::1]"], "2001:db8:1:2::/64"),
            ("plain v6", "10.0.0.1", &["2001:db8:1:2::1"], "2001:db8:1:2::/64"),
            ("surrounding whitespace", "10.0.0.1", &["  1.2.3.4  ,\t10.1.1.1 "], "1.2.3.4"),
            ("v4-mapped v6 in XFF is v4", "10.0.0.1", &["::ffff:1.2.3.4"], "1.2.3.4"),
            ("bracketed v4-mapped with port", "10.0.0.1", &["[::ffff:1.2.3.4]:80"], "1.2.3.4"),
            ("v4-mapped trusted hop is skipped", "10.0.0.1", &["1.2.3.4, ::ffff:10.5.5.5"], "1.2.3.4"),
            ("v4-mapped trusted peer walks XFF", "::ffff:10.0.0.1", &["1.2.3.4"], "1.2.3.4"),
            ("v4-mapped untrusted peer is v4", "::ffff:203.0.113.9", &["1.2.3.4"], "203.0.113.9"),
            ("zone is dropped", "10.0.0.1", &["fe80::1%eth0"], "fe80::/64"),
            ("zone is dropped inside brackets", "10.0.0.1", &["[fe80::1%eth0]:443"], "fe80::/64"),
            ("trusted v6 proxy hop is skipped", "2001:db8:ffff::1", &["1.2.3.4, 2001:db8:ffff::2"], "1.2.3.4"),
            ("garbage rightmost gives the peer", "10.0.0.1", &["1.2.3.4, garbage"], "10.0.0.1"),
            ("`unknown` rightmost gives the peer", "10.0.0.1", &["unknown"], "10.0.0.1"),
            ("obfuscated id gives the peer", "10.0.0.1", &["_hidden"], "10.0.0.1"),
            ("trailing empty entry gives the peer", "10.0.0.1", &["1.2.3.4,"], "10.0.0.1"),
            ("garbage in the middle stops at nearest trusted hop", "10.0.0.1", &["1.2.3.4, nonsense, 10.7.7.7, 10.8.8.8"], "10.7.7.7"),
            ("empty entry in the middle stops the walk", "10.0.0.1", &["1.2.3.4,,10.7.7.7"], "10.7.7.7"),
            ("garbage left of the client is never reached", "10.0.0.1", &["garbage, 1.2.3.4"], "1.2.3.4"),
            ("every entry trusted gives the leftmost", "10.0.0.1", &["10.4.4.4, 10.5.5.5", "192.168.1.1"], "10.4.4.4"),
            ("garbage at the far left of trusted hops", "10.0.0.1", &["junk, 10.4.4.4, 10.5.5.5"], "10.4.4.4"),
            ("v4 in brackets is garbage", "10.0.0.1", &["[1.2.3.4]:80"], "10.0.0.1"),
            ("port out of range is garbage", "10.0.0.1", &["1.2.3.4:70000"], "10.0.0.1"),
            ("signed port is garbage", "10.0.0.1", &["1.2.3.4:+80"], "10.0.0.1"),
            ("text after the bracket is garbage", "10.0.0.1", &["[2001:db8::1]x"], "10.0.0.1"),
            ("empty zone is garbage", "10.0.0.1", &["fe80::1%"], "10.0.0.1"),
        ];
        let proxies = table_proxies();
        for (case, peer, headers, expected) in cases {
            let client = resolve(ip(peer), headers, &proxies);
            assert_eq!(client.to_string(), *expected, "case: {case}");
        }
    }

    #[test]
    fn no_trusted_proxies_means_the_peer_is_always_the_client() {
        let none = TrustedProxies::default();
        assert_eq!(
            resolve(ip("10.0.0.1"), &["1.2.3.4"], &none),
            ClientIp::V4("10.0.0.1".parse().unwrap())
        );
    }

    #[test]
    fn garbage_in_the_middle_resolves_to_the_trusted_hop_right_of_it() {
        let client = resolve(
            ip("10.0.0.1"),
            &["9.9.9.9, 8.8.8.8, unknown", "10.2.2.2, 10.3.3.3"],
            &table_proxies(),
        );
        assert_eq!(client, ClientIp::from_addr(ip("10.2.2.2")));
    }

    #[test]
    fn ipv4_mapped_ipv6_is_the_ipv4_address_everywhere() {
        assert_eq!(
            ClientIp::from_addr(ip("::ffff:1.2.3.4")),
            ClientIp::from_addr(ip("1.2.3.4"))
        );
        assert!(trusted("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(trusted("::ffff:10.0.0.0/104").contains(ip("10.1.2.3")));
        assert!(trusted("::ffff:10.0.0.1").contains(ip("10.0.0.1")));
    }

    #[test]
    fn two_ipv6_addresses_in_one_slash_64_share_keys_and_other_slash_64s_differ() {
        let a = ClientIp::from_addr(ip("2001:db8:1:2::1"));
        let b = ClientIp::from_addr(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"));
        let other = ClientIp::from_addr(ip("2001:db8:1:3::1"));
        assert_eq!(a, b);
        assert_eq!(a.to_string(), b.to_string());
        assert_ne!(a, other);
        match a {
            ClientIp::V6(net) => {
                assert_eq!(net.prefix_len(), 64);
                assert_eq!(net.addr(), ip("2001:db8:1:2::"));
            }
            ClientIp::V4(_) => panic!("an IPv6 client must stay IPv6"),
        }
    }

    #[test]
    fn display_is_the_dotted_quad_or_the_canonical_slash_64() {
        assert_eq!(ClientIp::from_addr(ip("1.2.3.4")).to_string(), "1.2.3.4");
        assert_eq!(
            ClientIp::from_addr(ip("2001:0DB8:0001:0002:0:0:0:1")).to_string(),
            "2001:db8:1:2::/64"
        );
        assert_eq!(ClientIp::from_addr(ip("::1")).to_string(), "::/64");
    }

    #[test]
    fn cidr_list_accepts_bare_ips_whitespace_and_the_empty_string() {
        let proxies = trusted(" 10.0.0.0/8 ,192.168.1.1,\t2001:db8::/32 , ::1 ");
        assert!(proxies.contains(ip("10.255.0.1")));
        assert!(proxies.contains(ip("192.168.1.1")));
        assert!(!proxies.contains(ip("192.168.1.2")));
        assert!(proxies.contains(ip("2001:db8:abcd::1")));
        assert!(proxies.contains(ip("::1")));
        assert!(!proxies.contains(ip("::2")));
        assert!(!proxies.is_empty());
        assert!(trusted("").is_empty());
        assert!(trusted("   ").is_empty());
    }

    #[test]
    fn cidr_with_host_bits_set_still_covers_its_network() {
        assert!(trusted("10.1.2.3/8").contains(ip("10.200.0.1")));
    }

    #[test]
    fn cidr_list_rejects_bad_entries_naming_the_entry() {
        for (bad, entry) in [
            ("10.0.0.0/33", "10.0.0.0/33"),
            ("2001:db8::/129", "2001:db8::/129"),
            ("nonsense", "nonsense"),
            ("10.0.0.0/8, nonsense", "nonsense"),
            ("10.0.0.0/", "10.0.0.0/"),
            ("10.0.0.0/x", "10.0.0.0/x"),
            ("10.0.0.0/+8", "10.0.0.0/+8"),
            ("10.0.0.0/8,,10.1.0.0/16", ""),
            ("10.0.0.0/8,", ""),
        ] {
            let err = bad.parse::<TrustedProxies>().unwrap_err();
            assert_eq!(err.entry, entry, "input: {bad}");
        }
        let err = "10.0.0.0/33".parse::<TrustedProxies>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid CIDR `10.0.0.0/33`: prefix length 33 exceeds 32"
        );
    }
}
