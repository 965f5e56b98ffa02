//! The NAT traversal's two state machines under hostile datagrams: a rendezvous with
//! two members registered, and a peer's traversal, fed datagrams from the rendezvous's
//! address, the peers', and strangers', with time moving on.

use std::net::SocketAddr;

use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{
    Claimed, HELLO_SIZE, MAX_RENDEZVOUS_PLAYERS, MatchClaim, PeerPath, RELAY_HEADER_SIZE, Rendezvous, RendezvousConfig,
    Route, Secret, Traversal, TraversalConfig, peer_address, peer_slot,
};

use super::Input;
use tickwire_proto::wire::MAX_DATAGRAM_SIZE;

/// The rendezvous's address in the target's world.
pub(crate) const RDV: &str = "203.0.113.10:7000";
/// Its key (tickets are minted with it).
pub(crate) const KEY: [u8; 32] = [0x5a; 32];
/// The protocol id of the target's tickets.
pub(crate) const PROTOCOL: u32 = 0x7477_f022;
/// The wall clock the target's tickets are judged by.
pub(crate) const UNIX: u64 = 2_000_000_000;
const SOURCES: [&str; 5] = [RDV, "198.51.100.2:20000", "198.51.100.3:30000", "192.168.1.10:20000", "198.51.100.66:9"];

/// A ticket of the target's match for `slot`, as the seeds and the target make it.
pub(crate) fn ticket(slot: u8) -> ConnectToken {
    let params = TokenParams {
        protocol_id: PROTOCOL,
        client_id: 10 + u64::from(slot),
        created: UNIX - 100,
        expires: UNIX + 100,
        timeout_secs: 0,
        addresses: vec![RDV.parse().expect("an address")],
        user_data: MatchClaim { match_id: 1, slot, players: 3 }.user_data(b"").expect("a claim"),
    };
    let bytes = token::mint(&Secret(KEY), &params, &[slot; 56]).expect("a token");
    ConnectToken::decode(&bytes).expect("decodes")
}

/// A Hello of `slot`'s ticket, as its traversal sends it first.
pub(crate) fn hello(slot: u8) -> Vec<u8> {
    let mut t = traversal(slot, 0);
    t.update(0);
    let mut buf = vec![0u8; HELLO_SIZE];
    let (_, n) = t.poll_transmit(&mut buf).expect("a Hello is due at once");
    buf.truncate(n);
    buf
}

fn traversal(slot: u8, now: u64) -> Traversal {
    let cfg = TraversalConfig {
        rendezvous: RDV.parse().expect("an address"),
        ticket: ticket(slot),
        match_secret: Secret([0x33; 32]),
        local_slot: slot,
        private: false,
        hosts: vec![SOURCES[3].parse().expect("an address")],
        unix_us: 0,
    };
    Traversal::new(now, cfg, &[slot; 32])
}

/// Records of `[to u8][from u8][dt u16][len u16][bytes]`: to the rendezvous (even) or
/// the traversal of slot 0 (odd), from one of five addresses (the rendezvous, two
/// peers, a LAN address, a stranger), `dt` ms later. Oracles:
/// - the rendezvous never sends an address more bytes in answer to one of its
///   datagrams than that datagram had (no amplification), never forwards a relay
///   datagram from a stranger, and sends nothing larger than a relayed packet of ours;
/// - the traversal delivers only slices of what it was given, as from a peer address
///   of a slot that is not its own; routes each peer address somewhere or holds it;
///   sends nothing larger than a Hello, nothing to a peer address, and, before the
///   rendezvous has introduced anyone, nothing but Hellos to the rendezvous.
pub fn rendezvous(data: &[u8]) {
    let mut input = Input::new(data);
    let rdv_addr: SocketAddr = RDV.parse().expect("an address");
    let mut cfg = RendezvousConfig::new(Secret(KEY), PROTOCOL);
    cfg.public_addresses = vec![rdv_addr];
    cfg.relay_bytes_per_sec = 4096;
    let mut r = Rendezvous::new(cfg, 1, &[7; 32]);
    // Two members already in: the peers' addresses of SOURCES.
    r.handle(0, UNIX, SOURCES[1].parse().expect("an address"), &hello(0));
    r.handle(0, UNIX, SOURCES[2].parse().expect("an address"), &hello(1));
    assert_eq!(r.stats().members, 2);
    let mut t = traversal(0, 0);
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    while let Some((_, n)) = r.poll_transmit(&mut buf) {
        assert!(n <= HELLO_SIZE);
    }
    let mut introduced = false;
    while !input.is_empty() {
        let to_rdv = input.u8() & 1 == 0;
        let from: SocketAddr = SOURCES[input.below(SOURCES.len())].parse().expect("an address");
        now += u64::from(input.u16()) * 1_000;
        let len = (input.u16() as usize) % 1400;
        let bytes = input.bytes(len);
        if to_rdv {
            let strangers = r.stats().strangers;
            r.handle(now, UNIX, from, bytes);
            r.update(now);
            let mut back = 0usize;
            while let Some((to, n)) = r.poll_transmit(&mut buf) {
                // An Info (never above a Hello), or a member's packet relayed (never
                // above the endpoint's largest behind the relay's header).
                assert!(n <= RELAY_HEADER_SIZE + MAX_DATAGRAM_SIZE, "{n}-byte datagram");
                if to == from {
                    back += n;
                }
            }
            assert!(back <= bytes.len(), "{back} bytes back for {}", bytes.len());
            if r.stats().strangers > strangers {
                assert_eq!(back, 0);
            }
        } else {
            match t.claim(now, from, bytes) {
                Claimed::Deliver { from: peer, data } => {
                    let slot = peer_slot(peer).expect("delivered as from a peer address");
                    assert_ne!(slot, 0, "nothing from ourselves");
                    let start = data.as_ptr() as usize - bytes.as_ptr() as usize;
                    assert!(start + data.len() <= bytes.len(), "a slice of what came");
                }
                Claimed::Taken | Claimed::NotMine => {}
            }
            if t.next_timeout().is_some_and(|at| now >= at) {
                t.update(now);
            }
            for slot in 1..MAX_RENDEZVOUS_PLAYERS as u8 {
                match t.route(peer_address(slot)) {
                    Route::Hold(s) => {
                        assert_eq!(s, slot);
                        assert_eq!(t.path(slot), PeerPath::Pending);
                        t.hold(slot, &[1, 2, 3]);
                    }
                    Route::Direct(a) => assert!(peer_slot(a).is_none()),
                    Route::Relay { via, slot: s } => assert_eq!((via, s), (rdv_addr, slot)),
                    Route::NotMine => panic!("a peer address is the traversal's"),
                }
                introduced |= t.path(slot) != PeerPath::Pending;
            }
            let mut sent = 0;
            while let Some((to, n)) = t.poll_transmit(&mut buf) {
                sent += 1;
                assert!(n <= HELLO_SIZE && peer_slot(to).is_none());
                if !introduced {
                    assert_eq!((to, n), (rdv_addr, HELLO_SIZE), "only Hellos before an introduction");
                }
            }
            assert!(sent <= 64, "{sent} datagrams at once");
            while t.poll_event().is_some() {}
        }
    }
}
