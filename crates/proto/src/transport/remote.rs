//! Remotes of an external carrier: the peers an engine reaches through a platform's
//! networking (Steam, Epic Online Services, WebRTC data channels, console sockets)
//! instead of a UDP socket of ours.
//!
//! The engine names each remote with an opaque 64-bit identity of its choosing (a Steam
//! ID, an EOS ProductUserId handle, a data channel's index). The transport keys its
//! connections, cookies, budgets and backoffs by socket address, so a remote is given
//! one: an IPv6 address whose upper 64 bits are the identity and whose lower 64 bits
//! are a fixed marker, on port [`REMOTE_PORT`]. Nothing is sent to that address; the
//! engine's carrier moves the bytes. Why this form:
//! - the mapping is one-to-one both ways, and the text form `remote:<decimal id>` is
//!   read and written in one place ([`parse_address`], [`AddressText`]), so every API
//!   that takes or shows an address takes or shows a remote too;
//! - the identity fills the /64 prefix, which is what counts as one host for
//!   `max_incoming_per_ip` and for the backoffs: each remote is its own host, whatever
//!   the identities look like (a run of small channel indices included);
//! - the marker keeps the address off the forms the transport treats specially: never
//!   unspecified, never IPv4-mapped.

use std::fmt;
use std::net::{Ipv6Addr, SocketAddr, SocketAddrV6};

/// The port of every remote's address (never 0: a port of 0 is "not concrete").
pub const REMOTE_PORT: u16 = 1;

/// The lower 64 bits of every remote's address: "tw_remot".
const MARKER: u64 = u64::from_be_bytes(*b"tw_remot");

/// The prefix of a remote's text form.
const TEXT_PREFIX: &str = "remote:";

/// A peer on an external carrier, as the engine names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RemoteId(pub u64);

impl RemoteId {
    /// The address the transport knows this remote by.
    pub fn to_addr(self) -> SocketAddr {
        let ip = Ipv6Addr::from((u128::from(self.0) << 64) | u128::from(MARKER));
        SocketAddr::V6(SocketAddrV6::new(ip, REMOTE_PORT, 0, 0))
    }

    /// The remote an address stands for, if it is one ([`RemoteId::to_addr`]'s form).
    pub fn from_addr(addr: SocketAddr) -> Option<RemoteId> {
        let SocketAddr::V6(a) = addr else { return None };
        let bits = u128::from(*a.ip());
        (a.port() == REMOTE_PORT && bits as u64 == MARKER && a.flowinfo() == 0 && a.scope_id() == 0)
            .then_some(RemoteId((bits >> 64) as u64))
    }
}

impl fmt::Display for RemoteId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{TEXT_PREFIX}{}", self.0)
    }
}

/// Reads an address as a user writes it: an IP literal with its port (`1.2.3.4:5`,
/// `[::1]:5`), or a remote of an external carrier (`remote:76561198000000000`).
/// Host names are the caller's business (the runtime looks them up).
pub fn parse_address(text: &str) -> Result<SocketAddr, String> {
    if let Some(id) = text.strip_prefix(TEXT_PREFIX) {
        // Decimal digits only: no sign, no spaces, no leading "+".
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{text:?}: a remote is \"remote:\" and a decimal 64-bit id"));
        }
        return id
            .parse::<u64>()
            .map(|id| RemoteId(id).to_addr())
            .map_err(|_| format!("{text:?}: the remote id is larger than 64 bits"));
    }
    text.parse::<SocketAddr>().map_err(|_| format!("{text:?} is not an IP address with a port, nor remote:<id>"))
}

/// An address as a user reads it: a remote's text form, or the socket address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressText(pub SocketAddr);

impl fmt::Display for AddressText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match RemoteId::from_addr(self.0) {
            Some(r) => r.fmt(f),
            None => self.0.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_maps_both_ways_and_prints_as_it_reads() {
        for id in [0, 1, 2, 255, 0xffff_ffff, 76_561_198_000_000_000, u64::MAX - 1, u64::MAX] {
            let addr = RemoteId(id).to_addr();
            assert_eq!(RemoteId::from_addr(addr), Some(RemoteId(id)));
            assert!(!addr.ip().is_unspecified() && addr.port() != 0);
            let SocketAddr::V6(v6) = addr else { unreachable!() };
            assert_eq!(v6.ip().to_ipv4_mapped(), None, "never IPv4-mapped");
            let text = AddressText(addr).to_string();
            assert_eq!(text, format!("remote:{id}"));
            assert_eq!(parse_address(&text), Ok(addr));
        }
    }

    #[test]
    fn real_addresses_are_not_remotes() {
        for a in ["127.0.0.1:1", "[::1]:1", "[::ffff:1.2.3.4]:1", "[fd00::1]:7000"] {
            let addr: SocketAddr = a.parse().unwrap();
            assert_eq!(RemoteId::from_addr(addr), None, "{a}");
            assert_eq!(AddressText(addr).to_string(), addr.to_string());
        }
        // The remote's address on another port is not a remote.
        let SocketAddr::V6(mut v6) = RemoteId(7).to_addr() else { unreachable!() };
        v6.set_port(2);
        assert_eq!(RemoteId::from_addr(SocketAddr::V6(v6)), None);
    }

    #[test]
    fn bad_remote_text_is_refused_by_name() {
        for t in ["remote:", "remote:-1", "remote:+1", "remote: 1", "remote:0x10", "remote:18446744073709551616"] {
            let e = parse_address(t).unwrap_err();
            assert!(e.contains("remote"), "{t}: {e}");
        }
        assert!(parse_address("example.com:7").is_err());
    }

    #[test]
    fn distinct_remotes_are_distinct_hosts() {
        // What max_incoming_per_ip and the backoffs count by: the /64 prefix.
        let key = |id| {
            u128::from(
                *match RemoteId(id).to_addr() {
                    SocketAddr::V6(a) => a,
                    _ => unreachable!(),
                }
                .ip(),
            ) >> 64
        };
        assert_ne!(key(1), key(2));
        assert_ne!(key(0), key(1));
    }
}
