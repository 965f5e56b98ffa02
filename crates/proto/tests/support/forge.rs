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

/// A peer's input message taken apart for a hook to change (2-byte inputs).
pub struct Parts {
    /// The fixed fields.
    pub header: Header,
    /// `count * players` inputs of 2 bytes, tick by tick.
    pub inputs: Vec<u8>,
    /// Disconnect entries.
    pub disconnects: Vec<(u16, Tick)>,
    /// Checksum reports.
    pub reports: Vec<(Tick, u64)>,
    /// Input digests of the newest report.
    pub digests: Vec<u128>,
}

/// Makes `mesh.peers[liar]`'s input messages to `targets` pass through `edit`, which
/// may change any part of them (the message is encoded again from the parts).
pub fn rewrite(mesh: &mut Mesh, liar: usize, targets: &[usize], mut edit: impl FnMut(&mut Parts) + 'static) {
    let target_ids: Vec<PeerId> = targets.iter().map(|&v| mesh.peers[liar].ids[v]).collect();
    let channel = P2pConfig::default().channel;
    let mut scratch = Vec::new();
    mesh.tamper = Some(Box::new(move |sender, to, ch, msg: &mut Vec<u8>| {
        if sender != liar || ch != channel || !target_ids.contains(&to) {
            return;
        }
        let Ok(d) = decode(msg, 2, &mut scratch) else { return };
        if d.header.kind != KIND_INPUT {
            return;
        }
        let mut m = Parts {
            header: d.header,
            inputs: d.inputs.to_vec(),
            disconnects: d.disconnects().collect(),
            reports: d.reports().collect(),
            digests: d.digests().collect(),
        };
        edit(&mut m);
        let k = m.header.players as usize;
        let mut out = Vec::new();
        encode(
            &mut out,
            &m.header,
            2,
            |i, p| &m.inputs[(i * k + p) * 2..][..2],
            m.disconnects.iter().copied(),
            m.reports.iter().copied(),
            &m.digests,
        );
        *msg = out;
    }));
}

/// Makes `mesh.peers[liar]` send its inputs of ticks from `from` on to `victims`
/// changed, and (`cover`) no checksum reports to them.
pub fn equivocate(mesh: &mut Mesh, liar: usize, victims: &[usize], from: Tick, cover: bool) {
    rewrite(mesh, liar, victims, move |m| {
        let (h, k) = (m.header, m.header.players as usize);
        for i in 0..h.count as usize {
            if h.first + i as Tick >= from {
                for p in 0..k {
                    m.inputs[(i * k + p) * 2] ^= 1;
                }
            }
        }
        if cover {
            m.reports.clear();
            m.digests.clear();
        }
    });
}
