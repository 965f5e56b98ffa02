//! The rollback session targets: a P2P session fed its peers' messages, and a
//! spectator fed its host's, each with time passing and an engine answering requests.

use super::Input;
use super::engine::{Answer, Engine};
use super::fake::FakeTransport;
use super::relay::reason;
use tickwire_proto::fuzzing::KIND_SNAPSHOT_BYTE;
use tickwire_proto::wire::{
    self,
    p2p::{Header, KIND_INPUT, KIND_SPECTATE},
};
use tickwire_proto::{
    DesyncDump, GameShape, Micros, P2pConfig, P2pSession, PeerId, PlayerKind, Replay, SpectatorConfig,
    SpectatorSession, Tick,
};

const MAX_OPS: usize = 4096;
/// Advances one input may run in all.
const MAX_ADVANCES: u32 = 20_000;
const INPUT_SIZE: usize = 2;
const SPECTATOR: PeerId = 3;
const STRANGER: PeerId = 9;
const TICK_US: Micros = 16_667;

/// A message as a peer (or the host, for `kind` spectate) would send it, its numbers
/// around `base`: `players` inputs per tick, up to 8 ticks, maybe disconnects and
/// checksum reports; with reports, maybe input digests (mostly one per player of the
/// `match_players`, small values that differ from the session's: a culprit to name).
fn peer_message(inp: &mut Input<'_>, kind: u8, players: usize, match_players: usize, base: Tick, out: &mut Vec<u8>) {
    let sel = inp.u8();
    let tick = inp.tick_near(base);
    let h = Header {
        kind: if sel & 0x0f == 0 { inp.u8() % 4 } else { kind },
        tick,
        ack: inp.tick_near(base),
        confirmed: inp.tick_near(base),
        advantage: inp.u8() as i8 as f32 / 16.0,
        first: inp.tick_near(base),
        count: inp.u8() % 9,
        players: if sel & 0xf0 == 0 { inp.u8() % 5 } else { players as u8 },
        loading: false,
    };
    let n = h.count as usize * h.players as usize * INPUT_SIZE;
    let mut inputs = inp.bytes(n).to_vec();
    inputs.resize(n, 0);
    let disconnects: Vec<(u16, Tick)> = (0..inp.u8() % 3).map(|_| (inp.u8() as u16 % 6, inp.tick_near(base))).collect();
    let reports: Vec<(Tick, u64)> = (0..inp.u8() % 3).map(|_| (inp.tick_near(base), inp.u64() % 4)).collect();
    let digests: Vec<u128> = match reports.is_empty() {
        true => Vec::new(),
        false => {
            let n = match inp.u8() % 4 {
                0 => 0,
                3 => inp.u8() as usize % 6,
                _ => match_players,
            };
            (0..n).map(|_| inp.u8() as u128 % 4).collect()
        }
    };
    let p = h.players as usize;
    wire::p2p::encode(
        out,
        &h,
        INPUT_SIZE,
        |i, j| &inputs[(i * p + j) * INPUT_SIZE..][..INPUT_SIZE],
        disconnects.into_iter(),
        reports.into_iter(),
        &digests,
    );
}

/// A P2P session (the first byte picks the player layout and settings) whose remote
/// peers the harness plays: input messages built around the session's tick (or raw
/// bytes), from peers, a spectator and a stranger; disconnects; time passing and the
/// engine loop run in between (every due tick advanced, every request run, local
/// inputs from the input).
///
/// Oracles: no panic, no hang; the engine contract (see the engine's docs); every save
/// and dump asked for is accepted back; a desync dump it writes decodes, and so does
/// the replay it records.
pub fn p2p_session(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let setup = inp.u8();
    let players: &[PlayerKind] = match setup % 4 {
        0 => &[PlayerKind::Local, PlayerKind::Remote(1)],
        1 => &[PlayerKind::Local, PlayerKind::Remote(1), PlayerKind::Remote(2)],
        2 => &[PlayerKind::Remote(1), PlayerKind::Local, PlayerKind::Remote(1)],
        _ => &[PlayerKind::Local, PlayerKind::Remote(1), PlayerKind::Remote(2), PlayerKind::Remote(2)],
    };
    let cfg = P2pConfig {
        game: GameShape::new(players.len(), INPUT_SIZE),
        max_prediction: [0, 2, 8, 16][(setup >> 2) as usize % 4],
        input_delay: (setup >> 4) as u32 & 2,
        sparse_saving: setup & 0x20 != 0,
        desync_interval: if setup & 0x40 != 0 { 0 } else { 10 },
        notify_after_us: 500_000,
        disconnect_timeout_us: 2_000_000,
        ..P2pConfig::default()
    };
    let mut s = P2pSession::new(cfg, players, now).expect("valid config");
    if setup & 0x80 != 0 {
        s.start_recording(b"initial");
    }
    let local: Vec<usize> = (0..players.len()).filter(|&i| players[i] == PlayerKind::Local).collect();
    let of = |peer: PeerId| players.iter().filter(|&&k| k == PlayerKind::Remote(peer)).count();
    let mut t = FakeTransport::default();
    for peer in [1, 2, SPECTATOR] {
        t.open.insert(peer, true);
    }
    let mut engine = Engine::new(players.len(), INPUT_SIZE, s.state_slots());
    let mut advances = 0u32;
    let mut msg = Vec::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let peer = [1, 2, 1, 2, 1, 2, SPECTATOR, STRANGER][(op >> 5) as usize];
        match op % 8 {
            0..=2 => {
                let base = s.current_tick();
                peer_message(&mut inp, KIND_INPUT, of(peer), players.len(), base, &mut msg);
                s.handle_message(now, peer, &msg);
            }
            3 => s.handle_message(now, peer, inp.blob()),
            4 => {
                t.open.remove(&peer);
                s.peer_disconnected(peer, reason(inp.u8()));
            }
            5 => match inp.u8() % 4 {
                0 => s.add_spectator(SPECTATOR),
                1 => {
                    let _ = s.set_input_delay(inp.u8() as u32 % 40);
                }
                2 => {
                    let p = inp.below(players.len() + 1);
                    let b = inp.bytes(INPUT_SIZE);
                    let _ = s.set_prediction(p, inp.bool().then_some(b));
                }
                3 if op & 0x80 != 0 => s.set_loading(inp.bool()),
                _ => s.update(now),
            },
            _ => {
                now += inp.u16() as Micros * 100;
                let local_input = inp.bytes(INPUT_SIZE);
                let n = s.ticks_due(now);
                for _ in 0..n.max(op as u32 >> 7) {
                    if advances >= MAX_ADVANCES {
                        break;
                    }
                    advances += 1;
                    for &p in &local {
                        let _ = s.add_local_input(p, local_input);
                    }
                    s.advance();
                    engine.checksum_salt = (op >> 3) as u64 & 1;
                    while let Some(r) = s.poll_request() {
                        match engine.run(r) {
                            Some(Answer::Saved(tick, c)) => s.confirm_save(tick, c).expect("a requested save"),
                            Some(Answer::Dump(tick, state)) => s.provide_state(tick, &state).expect("a requested dump"),
                            None => {}
                        }
                    }
                }
                while s.poll_event().is_some() {}
                if let Some(dump) = s.take_desync_dump() {
                    let d = DesyncDump::decode(&dump).expect("a dump the session wrote decodes");
                    assert_eq!(d.players, players.len());
                }
                s.send_messages(now, &mut t);
                for (peer, reason) in std::mem::take(&mut t.closed) {
                    s.peer_disconnected(peer, reason);
                }
            }
        }
    }
    if let Some(r) = s.replay() {
        Replay::decode(r.bytes()).expect("a replay the session recorded decodes");
    }
}

/// A spectator session (3 players) whose host the harness plays: spectate messages
/// built around the spectator's tick (or raw bytes), join snapshots at any tick, and
/// the engine loop with time passing.
///
/// Oracles: no panic, no hang, and the engine contract (see the engine's docs).
pub fn spectator(data: &[u8]) {
    const HOST: PeerId = 1;
    const PLAYERS: usize = 3;
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let cfg = SpectatorConfig::new(GameShape::new(PLAYERS, INPUT_SIZE));
    let mut s = SpectatorSession::new(cfg, HOST).expect("valid config");
    let mut t = FakeTransport::default();
    t.open.insert(HOST, true);
    let mut engine = Engine::new(PLAYERS, INPUT_SIZE, 0);
    let mut advances = 0u32;
    let mut msg = Vec::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let from = if op & 0x80 == 0 { HOST } else { STRANGER };
        match op % 4 {
            0 | 1 => {
                peer_message(&mut inp, KIND_SPECTATE, PLAYERS, 0, s.current_tick(), &mut msg);
                s.handle_message(from, &msg);
            }
            2 => {
                msg.clear();
                if op & 0x40 == 0 {
                    msg.push(KIND_SNAPSHOT_BYTE);
                    msg.extend_from_slice(&inp.tick_near(s.current_tick()).to_le_bytes());
                }
                msg.extend_from_slice(inp.blob());
                s.handle_message(from, &msg);
            }
            _ => {
                now += inp.u16() as Micros * 100;
                for _ in 0..=inp.u8() % 4 {
                    if advances >= MAX_ADVANCES {
                        break;
                    }
                    advances += 1;
                    s.advance();
                    while let Some(r) = s.poll_request() {
                        assert!(engine.run(r).is_none(), "a spectator asks for no save or dump");
                    }
                }
                while s.poll_event().is_some() {}
                s.send_messages(now, &mut t, TICK_US);
            }
        }
    }
}
