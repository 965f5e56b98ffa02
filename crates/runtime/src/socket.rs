//! Creating the host's UDP socket with socket2.
//!
//! socket2 is used for what std cannot do before binding (buffer sizes, address family
//! from the bind address); the result is converted to a `std::net::UdpSocket`, which
//! `recv_batch.rs` reads (`recvmmsg` on Linux, `recv_from` elsewhere).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use socket2::{Domain, Protocol, Socket, Type};
use tickwire_proto::{AddressText, RemoteId};

use super::host_config::HostConfig;
use super::host_error::HostError;

/// Builds the non-blocking UDP socket described by `cfg`. Every error names the
/// operation and the bind address.
///
/// With `cfg.dual_stack` the socket is IPv6 on `[::]` with IPV6_V6ONLY off, so that it
/// reaches IPv4 peers too (as `::ffff:a.b.c.d`): Linux, macOS and Windows (Vista on)
/// all allow that, but the default differs (Windows and some BSDs start IPv6-only), so
/// it is set, not assumed. Where the system has no IPv6 or refuses dual-stack, the
/// socket is IPv4 on `0.0.0.0` with the same port instead: IPv4 is what most peers
/// reach.
pub(crate) fn bind(cfg: &HostConfig) -> Result<UdpSocket, HostError> {
    if cfg.dual_stack {
        let v6 = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), cfg.bind.port());
        if let Ok(socket) = bind_to(cfg, v6, true) {
            return Ok(socket);
        }
        return bind_to(cfg, SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), cfg.bind.port()), false);
    }
    bind_to(cfg, cfg.bind, false)
}

fn bind_to(cfg: &HostConfig, addr: SocketAddr, dual_stack: bool) -> Result<UdpSocket, HostError> {
    let ctx = |what: &str| {
        let context = format!("{what} (bind address {addr})");
        move |source| HostError::Io { context, source }
    };
    let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(ctx(&format!("creating an {family} UDP socket")))?;
    if dual_stack {
        socket.set_only_v6(false).map_err(ctx("turning IPV6_V6ONLY off"))?;
    }
    if cfg.recv_buffer_bytes > 0 {
        socket.set_recv_buffer_size(cfg.recv_buffer_bytes).map_err(ctx("setting SO_RCVBUF"))?;
    }
    if cfg.send_buffer_bytes > 0 {
        socket.set_send_buffer_size(cfg.send_buffer_bytes).map_err(ctx("setting SO_SNDBUF"))?;
    }
    socket.set_nonblocking(true).map_err(ctx("making the socket non-blocking"))?;
    socket.bind(&addr.into()).map_err(ctx("binding the UDP socket"))?;
    Ok(socket.into())
}

/// Maps `addr` into the socket's family when that is possible (IPv4 peers of a
/// dual-stack IPv6 socket are addressed as `::ffff:a.b.c.d`), or explains why not.
pub(crate) fn reachable(local: SocketAddr, addr: SocketAddr) -> Result<SocketAddr, HostError> {
    // A host on an external carrier (known by a remote id) reaches remotes only, and
    // a socket reaches no remote.
    match (RemoteId::from_addr(local).is_some(), RemoteId::from_addr(addr).is_some()) {
        (true, true) => return Ok(addr),
        (true, false) => {
            return Err(HostError::Config(format!(
                "cannot reach {addr} from a host on an external carrier: name peers as remote:<id>"
            )));
        }
        (false, true) => {
            return Err(HostError::Config(format!(
                "cannot reach {} from a host with a UDP socket ({local}): a remote is reached through an external \
                 carrier (bind the host to remote:<id>)",
                AddressText(addr)
            )));
        }
        (false, false) => {}
    }
    match (local, addr) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) | (SocketAddr::V6(_), SocketAddr::V6(_)) => Ok(addr),
        (SocketAddr::V6(_), SocketAddr::V4(v4)) => Ok(SocketAddr::new(mapped(IpAddr::V4(*v4.ip())), v4.port())),
        (SocketAddr::V4(_), SocketAddr::V6(_)) => Err(HostError::Config(unreachable(&local, &addr).to_string())),
    }
}

/// Why a socket bound to `local` cannot send to `addr` (an IPv6 address from an IPv4
/// socket), in words.
pub(crate) fn unreachable<'a>(local: &'a SocketAddr, addr: &'a SocketAddr) -> impl std::fmt::Display + 'a {
    struct Unreachable<'a>(&'a SocketAddr, &'a SocketAddr);
    impl std::fmt::Display for Unreachable<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let (local, addr) = (self.0, self.1);
            write!(
                f,
                "cannot reach IPv6 address {addr} from a socket bound to IPv4 address {local} (bind an IPv6 \
                 address, or leave the bind address empty for a dual-stack socket)"
            )
        }
    }
    Unreachable(local, addr)
}

/// An address as an IPv6 socket writes it: IPv4 as `::ffff:a.b.c.d`.
pub(crate) fn mapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V6(v4.to_ipv6_mapped()),
        v6 => v6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_RECV_BUFFER_BYTES;

    #[test]
    fn address_in_use_names_the_address() {
        let first = UdpSocket::bind("127.0.0.1:0").unwrap();
        let taken = first.local_addr().unwrap();
        let err = bind(&HostConfig::new(taken)).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, HostError::Io { .. }), "{msg}");
        assert!(msg.contains(&taken.to_string()), "{msg}");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn buffer_sizes_are_applied() {
        let mut cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.recv_buffer_bytes = 16 * 1024;
        cfg.send_buffer_bytes = 24 * 1024;
        let s = Socket::from(bind(&cfg).unwrap());
        // Linux stores twice the requested size (bookkeeping overhead), well below the
        // default maximum for these small values.
        assert_eq!(s.recv_buffer_size().unwrap(), 32 * 1024);
        assert_eq!(s.send_buffer_size().unwrap(), 48 * 1024);
    }

    /// A host asks for a 256 KiB receive buffer unless told otherwise, and gets what
    /// Linux allows of it (capped at `net.core.rmem_max`, reported doubled); 0 keeps
    /// the OS default.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_default_host_asks_for_a_quarter_megabyte_receive_buffer() {
        let read = |path: &str| std::fs::read_to_string(path).unwrap().trim().parse::<usize>().unwrap();
        let (max, default) = (read("/proc/sys/net/core/rmem_max"), read("/proc/sys/net/core/rmem_default"));
        let cfg = HostConfig::new("127.0.0.1:0".parse().unwrap());
        let s = Socket::from(bind(&cfg).unwrap());
        assert_eq!(s.recv_buffer_size().unwrap(), 2 * DEFAULT_RECV_BUFFER_BYTES.min(max));
        let os = HostConfig { recv_buffer_bytes: 0, ..HostConfig::new("127.0.0.1:0".parse().unwrap()) };
        assert_eq!(Socket::from(bind(&os).unwrap()).recv_buffer_size().unwrap(), default);
    }

    #[test]
    fn dual_stack_reaches_both_families() {
        let mut cfg = HostConfig::new("0.0.0.0:0".parse().unwrap());
        cfg.dual_stack = true;
        let s = bind(&cfg).unwrap();
        let local = s.local_addr().unwrap();
        if local.is_ipv4() {
            return; // no IPv6 on this machine: the fallback is what there is to test
        }
        assert!(local.ip().is_unspecified());
        assert!(!Socket::from(s.try_clone().unwrap()).only_v6().unwrap());
        for peer in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(other) = UdpSocket::bind(peer) else { continue }; // no ::1 (IPv6 off)
            let to = reachable(local, other.local_addr().unwrap()).unwrap();
            s.send_to(b"hi", to).unwrap();
            let mut buf = [0u8; 8];
            other.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
            assert_eq!(other.recv_from(&mut buf).unwrap().0, 2, "to {peer}");
        }
    }

    #[test]
    fn family_mapping() {
        let v4: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        assert_eq!(reachable(v4, v4).unwrap(), v4);
        assert!(reachable(v4, v6).is_err());
        assert_eq!(reachable(v6, v4).unwrap(), "[::ffff:127.0.0.1]:1".parse::<SocketAddr>().unwrap());
    }
}
