//! Asking STUN servers which address they see us at, over the socket a host already
//! uses for its connections: the probes in flight, their retransmissions and
//! deadlines, and telling a server's answer from the connections' own datagrams.
//!
//! Sans-IO in the quinn-proto manner: the owner of the socket starts a probe with a
//! transaction id from a cryptographic generator ([`Probes::start`]), offers every
//! datagram it receives to [`Probes::claim`] before the endpoint sees it, sends what
//! [`Probes::poll_transmit`] gives, runs [`Probes::update`] at [`Probes::next_timeout`],
//! and takes the results from [`Probes::poll_result`].
//!
//! A datagram is claimed only when it comes from a probe's server and carries that
//! probe's 96-bit transaction id at the place a STUN message has it: a packet of ours
//! cannot be taken for one by chance, and nobody who has not seen the request can
//! answer it (RFC 8489 §6.3). A claimed datagram that does not decode (or says "error")
//! ends its probe with the reason; an unclaimed one goes to the endpoint as before.

use std::collections::VecDeque;
use std::net::SocketAddr;

use super::stun::{self, BINDING_REQUEST_SIZE, StunError, TRANSACTION_ID_SIZE};
use crate::clock::Micros;

/// The first retransmission timeout (RFC 8489 §6.2.1 suggests 500 ms; a game asks at
/// the start of a match, on links that are rarely slower than that).
const FIRST_RTO_US: Micros = 250_000;
/// Requests sent in all before a probe gives up (RFC 8489's Rc is 7): 250 ms, then
/// doubling, gives up about 8 s after the first.
const MAX_SENDS: u32 = 6;
/// Probes in flight at once; more are refused (a bound on what the engine can make
/// the host hold and send).
pub const MAX_PROBES: usize = 16;

/// Why a probe gave no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// No answer came after every retransmission.
    #[error("no answer from the STUN server after {sends} requests")]
    Timeout {
        /// Requests sent.
        sends: u32,
    },
    /// The server answered with an error, or with a message that does not read.
    #[error("the STUN server's answer: {0}")]
    Answer(StunError),
}

/// One probe in flight.
#[derive(Debug)]
struct Probe {
    id: u32,
    server: SocketAddr,
    transaction: [u8; TRANSACTION_ID_SIZE],
    sends: u32,
    /// When the next request goes out (or, after the last, when the probe gives up).
    due: Micros,
    /// Whether a request is owed to the socket now.
    owed: bool,
}

/// The probes of one host.
#[derive(Debug, Default)]
pub struct Probes {
    live: Vec<Probe>,
    results: VecDeque<(u32, Result<SocketAddr, ProbeError>)>,
}

impl Probes {
    /// Starts asking `server`; `id` is the caller's name for the probe, returned with
    /// its result, and `transaction` must come from a cryptographic generator. False
    /// (nothing started) when [`MAX_PROBES`] are in flight.
    pub fn start(&mut self, now: Micros, id: u32, server: SocketAddr, transaction: [u8; TRANSACTION_ID_SIZE]) -> bool {
        if self.live.len() >= MAX_PROBES {
            return false;
        }
        self.live.push(Probe { id, server, transaction, sends: 0, due: now, owed: true });
        true
    }

    /// Whether any probe is in flight.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Takes `data` from `from` if it answers a probe in flight: true, and the probe
    /// has its result. False: not ours, for the endpoint.
    pub fn claim(&mut self, from: SocketAddr, data: &[u8]) -> bool {
        if self.live.is_empty() || data.len() < 20 || data[4..8] != stun::MAGIC_COOKIE.to_be_bytes() {
            return false;
        }
        let Some(i) = self.live.iter().position(|p| p.server == from && data[8..20] == p.transaction) else {
            return false;
        };
        let probe = self.live.swap_remove(i);
        let result = stun::decode_binding_response(data, probe.transaction).map_err(ProbeError::Answer);
        self.results.push_back((probe.id, result));
        true
    }

    /// Runs the timers: a request owed at each retransmission time, a probe that sent
    /// its last ended with [`ProbeError::Timeout`].
    pub fn update(&mut self, now: Micros) {
        let results = &mut self.results;
        self.live.retain_mut(|p| {
            if now < p.due || p.owed {
                return true;
            }
            if p.sends >= MAX_SENDS {
                results.push_back((p.id, Err(ProbeError::Timeout { sends: p.sends })));
                return false;
            }
            p.owed = true;
            true
        });
    }

    /// The next request to send, written into `buf` (at least [`BINDING_REQUEST_SIZE`]
    /// bytes): its server and length.
    pub fn poll_transmit(&mut self, now: Micros, buf: &mut [u8]) -> Option<(SocketAddr, usize)> {
        let p = self.live.iter_mut().find(|p| p.owed)?;
        let mut out = Vec::with_capacity(BINDING_REQUEST_SIZE);
        stun::encode_binding_request(p.transaction, &mut out);
        let n = out.len().min(buf.len());
        buf[..n].copy_from_slice(&out[..n]);
        p.owed = false;
        p.sends += 1;
        p.due = now + (FIRST_RTO_US << (p.sends - 1).min(16));
        Some((p.server, n))
    }

    /// When [`update`](Self::update) has work next.
    pub fn next_timeout(&self) -> Option<Micros> {
        self.live.iter().map(|p| p.due).min()
    }

    /// A finished probe: its id and the address its server saw, or why there is none.
    pub fn poll_result(&mut self) -> Option<(u32, Result<SocketAddr, ProbeError>)> {
        self.results.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVER: &str = "203.0.113.10:3478";

    fn server() -> SocketAddr {
        SERVER.parse().unwrap()
    }

    /// A success response for `transaction` with XOR-MAPPED-ADDRESS `mapped` (IPv4).
    fn answer(transaction: [u8; 12], mapped: SocketAddr) -> Vec<u8> {
        let SocketAddr::V4(v4) = mapped else { unreachable!() };
        let cookie = stun::MAGIC_COOKIE.to_be_bytes();
        let mut m = vec![0x01, 0x01, 0, 12];
        m.extend_from_slice(&cookie);
        m.extend_from_slice(&transaction);
        m.extend_from_slice(&[0x00, 0x20, 0, 8, 0, 0x01]);
        m.extend_from_slice(&(v4.port() ^ 0x2112).to_be_bytes());
        let ip = v4.ip().octets();
        m.extend((0..4).map(|i| ip[i] ^ cookie[i]));
        m
    }

    #[test]
    fn a_probe_sends_resends_with_backoff_and_gives_up() {
        let mut p = Probes::default();
        assert!(p.start(0, 7, server(), [1; 12]));
        let mut buf = [0u8; 64];
        let mut sent_at = Vec::new();
        let mut now = 0;
        while now < 20_000_000 {
            p.update(now);
            while let Some((to, n)) = p.poll_transmit(now, &mut buf) {
                assert_eq!((to, n), (server(), BINDING_REQUEST_SIZE));
                sent_at.push(now);
            }
            if let Some((id, r)) = p.poll_result() {
                assert_eq!((id, r), (7, Err(ProbeError::Timeout { sends: MAX_SENDS })));
                break;
            }
            now = p.next_timeout().unwrap();
        }
        assert_eq!(sent_at, vec![0, 250_000, 750_000, 1_750_000, 3_750_000, 7_750_000]);
        assert_eq!(now, 15_750_000, "gives up one timeout after the last request");
        assert!(p.is_empty() && p.next_timeout().is_none());
    }

    #[test]
    fn only_an_answer_from_the_server_with_the_transaction_id_is_claimed() {
        let mut p = Probes::default();
        p.start(0, 1, server(), [9; 12]);
        let mapped: SocketAddr = "198.51.100.7:40000".parse().unwrap();
        let other: SocketAddr = "203.0.113.11:3478".parse().unwrap();
        assert!(!p.claim(other, &answer([9; 12], mapped)), "another source");
        assert!(!p.claim(server(), &answer([8; 12], mapped)), "another transaction");
        assert!(!p.claim(server(), &[0u8; 19]), "too short");
        assert!(!p.claim(server(), &[0x55; 40]), "one of our packets");
        assert!(p.poll_result().is_none());
        assert!(p.claim(server(), &answer([9; 12], mapped)));
        assert_eq!(p.poll_result(), Some((1, Ok(mapped))));
        assert!(!p.claim(server(), &answer([9; 12], mapped)), "the probe is over: a duplicate is not ours");
    }

    #[test]
    fn a_claimed_answer_that_does_not_read_ends_the_probe_with_why() {
        let mut p = Probes::default();
        p.start(0, 3, server(), [4; 12]);
        let mut bad = answer([4; 12], "198.51.100.7:1".parse().unwrap());
        bad[3] = 200; // a length past the end
        assert!(p.claim(server(), &bad));
        assert!(matches!(p.poll_result(), Some((3, Err(ProbeError::Answer(_))))));
    }

    #[test]
    fn probes_in_flight_are_bounded() {
        let mut p = Probes::default();
        for i in 0..MAX_PROBES as u32 {
            assert!(p.start(0, i, server(), [i as u8; 12]));
        }
        assert!(!p.start(0, 99, server(), [99; 12]));
    }
}
