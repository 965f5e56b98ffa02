//! Creating the host's UDP socket with socket2.
//!
//! socket2 is used for what std cannot do before binding (buffer sizes, address family
//! from the bind address); the result is converted to a `std::net::UdpSocket`, whose
//! safe `recv_from(&mut [u8])` the loop uses.

use std::net::{SocketAddr, UdpSocket};

use socket2::{Domain, Protocol, Socket, Type};

use super::{HostConfig, HostError};

/// Builds the non-blocking UDP socket described by `cfg`. Every error names the
/// operation and the bind address.
pub(crate) fn bind(cfg: &HostConfig) -> Result<UdpSocket, HostError> {
    let addr = cfg.bind;
    let ctx = |what: &str| {
        let context = format!("{what} (bind address {addr})");
        move |source| HostError::Io { context, source }
    };
    let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(ctx(&format!("creating an {family} UDP socket")))?;
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
    match (local, addr) {
        (SocketAddr::V4(_), SocketAddr::V4(_)) | (SocketAddr::V6(_), SocketAddr::V6(_)) => Ok(addr),
        (SocketAddr::V6(_), SocketAddr::V4(v4)) => Ok(SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())),
        (SocketAddr::V4(_), SocketAddr::V6(_)) => Err(HostError::Config(format!(
            "cannot reach IPv6 address {addr} from a socket bound to IPv4 address {local}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn family_mapping() {
        let v4: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        assert_eq!(reachable(v4, v4).unwrap(), v4);
        assert!(reachable(v4, v6).is_err());
        assert_eq!(reachable(v6, v4).unwrap(), "[::ffff:127.0.0.1]:1".parse::<SocketAddr>().unwrap());
    }
}
