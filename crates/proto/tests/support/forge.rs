//! Forged P2P messages: what a peer with valid credentials and a modified client can
//! put in a message. They are handed to the session as the endpoint would deliver
//! them from that peer's connection.

use super::toy_game::Mesh;
use tickwire_proto::wire::p2p::{Header, KIND_INPUT, decode, encode};
use tickwire_proto::{DisconnectReason, P2pConfig, PeerId, RollbackEvent as Event, Tick};

/// The numbers of one forged message (no inputs: `count` is 0).
#[derive(Clone, Copy, Debug)]
pub struct Lie<'a> {
    pub tick: Tick,
    pub ack: Tick,
    pub confirmed: Tick,
    pub advantage: f32,
    pub disconnects: &'a [(u16, Tick)],
}

/// A lie whose numbers are those of an honest peer in step with `mesh.peers[to]`.
pub fn plausible(mesh: &Mesh, to: usize) -> Lie<'static> {
    let s = mesh.peers[to].session.stats();
    Lie { tick: s.current_tick, ack: s.current_tick, confirmed: s.confirmed_tick, advantage: 0.0, disconnects: &[] }
}

/// Hands `lie` to `mesh.peers[to]` as a message from the peer behind node `from`.
pub fn forge(mesh: &mut Mesh, to: usize, from: usize, lie: Lie<'_>) {
    let h = Header {
        kind: KIND_INPUT,
        tick: lie.tick,
        ack: lie.ack,
        confirmed: lie.confirmed,
        advantage: lie.advantage,
        first: lie.ack,
        count: 0,
        players: mesh.peers[from].local.len() as u8,
        loading: false,
    };
    let mut out = Vec::new();
    encode(&mut out, &h, 2, |_, _| &[0u8, 0][..], lie.disconnects.iter().copied(), std::iter::empty(), &[]);
    let now = mesh.net.local_now(mesh.peers[to].node);
    let id = mesh.peers[to].ids[from];
    mesh.peers[to].session.handle_message(now, id, &out);
}

/// Why `mesh.peers[on]` dropped `peer`, if it did.
pub fn dropped(mesh: &Mesh, on: usize, peer: PeerId) -> Option<DisconnectReason> {
    mesh.peers[on].events.iter().find_map(|e| match *e {
        Event::PeerDisconnected { peer: p, reason } if p == peer => Some(reason),
        _ => None,
    })
}

/// Makes `mesh.peers[liar]` send its inputs of ticks from `from` on to `victims`
/// changed, and (`cover`) no checksum reports to them.
pub fn equivocate(mesh: &mut Mesh, liar: usize, victims: &[usize], from: Tick, cover: bool) {
    let victim_ids: Vec<PeerId> = victims.iter().map(|&v| mesh.peers[liar].ids[v]).collect();
    let channel = P2pConfig::default().channel;
    let mut scratch = Vec::new();
    mesh.tamper = Some(Box::new(move |sender, to, ch, msg: &mut Vec<u8>| {
        if sender != liar || ch != channel || !victim_ids.contains(&to) {
            return;
        }
        let Ok(d) = decode(msg, 2, &mut scratch) else { return };
        if d.header.kind != KIND_INPUT {
            return;
        }
        let h = d.header;
        let k = h.players as usize;
        let mut inputs = d.inputs.to_vec();
        for i in 0..h.count as usize {
            if h.first + i as Tick >= from {
                for p in 0..k {
                    inputs[(i * k + p) * 2] ^= 1;
                }
            }
        }
        let disconnects: Vec<(u16, Tick)> = d.disconnects().collect();
        let reports: Vec<(Tick, u64)> = if cover { Vec::new() } else { d.reports().collect() };
        let digests: Vec<u128> = if cover { Vec::new() } else { d.digests().collect() };
        let mut out = Vec::new();
        encode(
            &mut out,
            &h,
            2,
            |i, p| &inputs[(i * k + p) * 2..][..2],
            disconnects.into_iter(),
            reports.into_iter(),
            &digests,
        );
        *msg = out;
    }));
}
