//! The relay session targets: a server fed connections and client messages, a client
//! fed a server's messages, each with time passing and an engine answering requests.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::Input;
use super::engine::{Answer, Engine};
use super::fake::FakeTransport;
use tickwire_proto::fuzzing;
use tickwire_proto::wire::{
    self,
    relay::{Hello, MarginReport, NONE, PlayerStep, SessionToken, StepForm, UpdateHead, Welcome},
};
use tickwire_proto::{
    AdvanceStatus, CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, ClientSessionEvent, Credential,
    DisconnectReason, GameShape, Micros, NetEvent as Event, PeerId, RelayClientSession, RelayClientSessionConfig,
    RelayServerSession, RelayServerSessionConfig, ServerSessionEvent, Tick, TokenIdentity,
};

const MAX_OPS: usize = 4096;
/// Advances one input may run in all (each frame runs at most what its clock says).
const MAX_ADVANCES: u32 = 20_000;
const PLAYERS: usize = 4;
const INPUT_SIZE: usize = 2;

fn server_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 9000)
}

/// Any reason a connection ends for.
pub(crate) fn reason(b: u8) -> DisconnectReason {
    (1..=u8::MAX).filter_map(DisconnectReason::from_u8).cycle().nth(b as usize).expect("reasons exist")
}

/// A message on one of the channels a session reads, or on one it does not.
fn channel(b: u8) -> u8 {
    [CHANNEL_UNRELIABLE, CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, CHANNEL_SEQUENCED][b as usize % 4]
}

/// An input of the game's size, or (one time in 16) of any size up to 8.
fn input<'a>(inp: &mut Input<'a>) -> &'a [u8] {
    let sel = inp.u8();
    let n = if sel & 0x0f == 0 { (sel >> 4) as usize % 9 } else { INPUT_SIZE };
    inp.bytes(n)
}

/// Any 16 bytes as a session token.
fn any_token(inp: &mut Input<'_>) -> SessionToken {
    SessionToken(inp.bytes(16).try_into().unwrap_or([0; 16]))
}

/// A session token: none (a new player), one the session handed out, or any.
fn token(inp: &mut Input<'_>, t: &FakeTransport) -> SessionToken {
    match inp.u8() % 4 {
        0 => SessionToken::NONE,
        1 => any_token(inp),
        _ => {
            let welcomes: Vec<SessionToken> =
                t.reliable.iter().filter_map(|(_, m)| wire::relay::decode_welcome(m).ok()).map(|w| w.token).collect();
            if welcomes.is_empty() { SessionToken::NONE } else { welcomes[inp.below(welcomes.len())] }
        }
    }
}

/// What a connection proved: a secret's class, or a connect token of one of a few
/// client ids (so that ids repeat, and slots are claimed by one and tried by another).
fn credential(inp: &mut Input<'_>) -> Credential {
    match inp.u8() % 4 {
        0 => Credential::Open,
        1 => Credential::PlayerSecret,
        2 => Credential::SpectatorSecret,
        _ => Credential::ConnectToken(Box::new(TokenIdentity { client_id: inp.u8() as u64 % 4, user_data: [7; 256] })),
    }
}

/// A relay server session (4 players, 2-byte inputs, short timeouts) fed connections,
/// Hellos, client inputs, raw messages and disconnects, with time passing and the
/// engine loop run in between (every due tick advanced, every request run).
///
/// Oracles: no panic, no hang, and the engine contract (see the engine's docs); every
/// save and dump it asks for is accepted back.
pub fn relay_server(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let cfg = RelayServerSessionConfig {
        game: GameShape::new(PLAYERS, INPUT_SIZE),
        checksum_interval: 10,
        reconnect_timeout_us: 3_000_000,
        hello_timeout_us: 1_000_000,
        seed: 0xf022,
        ..RelayServerSessionConfig::default()
    };
    let mut s = RelayServerSession::new(cfg, now).expect("valid config");
    let mut t = FakeTransport::default();
    let mut engine = Engine::new(PLAYERS, INPUT_SIZE, s.state_slots());
    let mut advances = 0u32;
    let mut msg = Vec::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let pick = inp.u8();
        match op % 8 {
            0 => {
                let peer = t.accept();
                let credential = credential(&mut inp);
                s.on_event(now, &mut t, Event::Connected { peer, addr: server_addr(), credential, binding: None });
            }
            1 | 2 => {
                let Some(peer) = t.pick(pick) else { continue };
                let step_ack = if inp.bool() { NONE } else { inp.tick_near(s.last_tick()) };
                let first = inp.tick_near(s.last_tick());
                let n = inp.u8() as usize % 24;
                let inputs: Vec<&[u8]> = (0..n).map(|_| input(&mut inp)).collect();
                let sack: Vec<u8> = (0..inp.u8() % 4).map(|_| inp.u8()).collect();
                wire::relay::encode_client_inputs(&mut msg, step_ack, &sack, first, inputs.into_iter());
                let data = msg.clone();
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_UNRELIABLE, data });
            }
            3 => {
                let Some(peer) = t.pick(pick) else { continue };
                let game = inp.u8();
                let h = Hello {
                    token: token(&mut inp, &t),
                    input_size: if game & 0x0f == 0 { game as u16 >> 4 } else { INPUT_SIZE as u16 },
                    max_players: if game & 0xf0 == 0 { game as u16 } else { PLAYERS as u16 },
                };
                wire::relay::encode_hello(&mut msg, &h);
                let data = msg.clone();
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data });
            }
            4 => {
                let Some(peer) = t.pick(pick) else { continue };
                let data = inp.blob().to_vec();
                s.on_event(now, &mut t, Event::Message { peer, channel: channel(op >> 3), data });
            }
            5 => {
                let Some(peer) = t.pick(pick) else { continue };
                t.open.remove(&peer);
                s.on_event(now, &mut t, Event::Disconnected { peer, reason: reason(op >> 3) });
            }
            _ => {
                now += inp.u16() as Micros * 100;
                let n = s.ticks_due(now);
                for _ in 0..n {
                    if advances >= MAX_ADVANCES {
                        break;
                    }
                    advances += 1;
                    assert_eq!(s.advance(), AdvanceStatus::Advanced, "the server never waits");
                    while let Some(r) = s.poll_request() {
                        match engine.run(r) {
                            Some(Answer::Saved(tick, c)) => s.confirm_save(tick, c).expect("a requested save"),
                            Some(Answer::Dump(tick, state)) => s.provide_state(tick, &state).expect("a requested dump"),
                            None => {}
                        }
                    }
                }
                while let Some(e) = s.poll_event() {
                    if let ServerSessionEvent::PlayerJoined { player, .. }
                    | ServerSessionEvent::PlayerReconnected { player, .. } = e
                    {
                        assert!((player as usize) < PLAYERS);
                    }
                }
                s.send_messages(now, &mut t);
                // What the session closed comes back as the endpoint reports it.
                for (peer, reason) in std::mem::take(&mut t.closed) {
                    s.on_event(now, &mut t, Event::Disconnected { peer, reason });
                }
            }
        }
    }
}

/// A ServerUpdate built from the input around the client's own position, so that the
/// deep paths (steps taken, predictions corrected, checksums compared) are reachable.
fn server_update(inp: &mut Input<'_>, s: &RelayClientSession, out: &mut Vec<u8>) {
    let auth = s.authoritative_tick();
    let cur = s.current_tick();
    let head = UpdateHead {
        server_tick: inp.tick_near(auth),
        your_player: if inp.u8() & 7 == 0 { inp.u32() } else { s.player().unwrap_or(0) },
        shift: if inp.u8() & 7 == 0 { inp.u32() as i32 } else { inp.u8() as i8 as i32 },
        input_ack: if inp.bool() { NONE } else { inp.tick_near(cur) },
        depth: inp.u8(),
        first_input: if inp.bool() { NONE } else { inp.tick_near(auth) },
        substituted: inp.u8() as u16,
        late_substituted: inp.u8() as u16,
    };
    let margins: Vec<MarginReport> = (0..inp.u8() % 4)
        .map(|_| MarginReport { tick: inp.tick_near(cur), margin: inp.u16() as i16 as f64 / 256.0, copy: inp.u8() })
        .collect();
    let checks: Vec<(Tick, u64)> = (0..inp.u8() % 3).map(|_| (inp.tick_near(auth), inp.u64() % 4)).collect();
    // Entries around the client's position: a full step (where a stream starts, or a
    // restart), then deltas against the step before, some cut in pieces or reordered.
    let base = inp.tick_near(auth);
    wire::relay::encode_server_update_head(out, &head, &margins, &checks, base);
    let n_steps = inp.u8() % 8;
    let (mut prev, mut full, mut delta) = (Vec::new(), Vec::new(), Vec::new());
    let mut n = 0u8;
    for i in 0..n_steps {
        let present = inp.u8();
        let players: Vec<PlayerStep> = (0..PLAYERS as u32)
            .filter(|p| present & (1 << p) != 0)
            .map(|player| {
                let accepted = inp.u8() % 3;
                let inputs = (0..accepted.max(1)).map(|_| input(inp).to_vec()).collect();
                PlayerStep { player, accepted, inputs }
            })
            .collect();
        full.clear();
        wire::relay::write_step(&mut full, &players);
        wire::relay::encode_delta(&mut delta, &prev, &full);
        let offset = if inp.u8() & 7 == 0 { inp.u16() % 300 } else { i as u16 };
        let (form, body) =
            if i == 0 || inp.u8() & 15 == 0 { (StepForm::Full, &full) } else { (StepForm::Delta, &delta) };
        if inp.u8() & 15 == 0 && body.len() > 1 {
            // Two pieces of a body cut short (the first is not FRAGMENT_BYTES long: refused).
            let half = body.len() / 2;
            fuzzing::write_fragment_head(out, offset, form, 0, 2, half);
            out.extend_from_slice(&body[..half]);
        } else {
            wire::relay::write_entry(out, offset, form, body);
        }
        n += 1;
        std::mem::swap(&mut prev, &mut full);
    }
    wire::relay::set_entry_count(out, margins.len(), checks.len(), n);
}

/// A relay client session (4 players, 2-byte inputs) that dials a server the harness
/// plays: connects or drops it, sends Welcomes and ServerUpdates built around the
/// client's position (or raw bytes), with time passing and the engine loop run in
/// between (every due tick advanced, every request run).
///
/// Oracles: no panic, no hang (a Welcome or step at any tick, any shift), and the
/// engine contract (see the engine's docs).
pub fn relay_client(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let cfg = RelayClientSessionConfig {
        game: GameShape::new(PLAYERS, INPUT_SIZE),
        max_prediction: 8,
        max_catchup_ticks: 8,
        reconnect_window_us: 5_000_000,
        ..RelayClientSessionConfig::default()
    };
    let mut s = RelayClientSession::new(cfg).expect("valid config");
    let mut t = FakeTransport::default();
    let mut engine = Engine::new(PLAYERS, INPUT_SIZE, s.state_slots());
    let mut advances = 0u32;
    s.connect(now, &mut t, server_addr()).expect("the fake transport dials");
    let mut msg = Vec::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        // The server's connection: the one the session dials now, or any other.
        let server: Option<PeerId> = if op & 0x80 == 0 { s.server_peer() } else { t.pick(inp.u8()) };
        let server_open = server.is_some_and(|p| t.open.contains_key(&p));
        match op % 8 {
            0 => {
                let Some(peer) = server.filter(|p| t.open.get(p) == Some(&false)) else { continue };
                t.open.insert(peer, true);
                let credential = Credential::TokenServer;
                s.on_event(now, &mut t, Event::Connected { peer, addr: server_addr(), credential, binding: None });
            }
            1 => {
                let Some(peer) = server.filter(|_| server_open) else { continue };
                t.open.remove(&peer);
                s.on_event(now, &mut t, Event::Disconnected { peer, reason: reason(op >> 3) });
            }
            2 => {
                let Some(peer) = server.filter(|p| t.open.get(p) == Some(&true)) else { continue };
                let game = inp.u8();
                let w = Welcome {
                    player: if game & 0x0f == 0 { inp.u16() } else { (game >> 4) as u16 % PLAYERS as u16 },
                    token: if game & 0x30 == 0 {
                        any_token(&mut inp)
                    } else {
                        s.token().unwrap_or(SessionToken([0x0c; 16]))
                    },
                    tick: inp.tick_near(s.authoritative_tick()),
                    input_size: if game == 0xff { 3 } else { INPUT_SIZE as u16 },
                    max_players: PLAYERS as u16,
                    // Now and then from a relay-only server: the client owes it
                    // checksum reports and answers to its state asks.
                    report_interval: if game & 0x40 != 0 { 30 } else { 0 },
                    state: inp.blob(),
                };
                wire::relay::encode_welcome(&mut msg, &w);
                let data = msg.clone();
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data });
            }
            3 | 4 => {
                let Some(peer) = server.filter(|p| t.open.get(p) == Some(&true)) else { continue };
                server_update(&mut inp, &s, &mut msg);
                let data = msg.clone();
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_UNRELIABLE, data });
            }
            5 => {
                let Some(peer) = server.filter(|p| t.open.get(p) == Some(&true)) else { continue };
                let ch = channel(inp.u8());
                let data = inp.blob().to_vec();
                s.on_event(now, &mut t, Event::Message { peer, channel: ch, data });
            }
            6 => match inp.u8() % 4 {
                0 => s.request_snapshot(),
                1 => {
                    let p = inp.below(PLAYERS + 1);
                    let b = inp.bytes(INPUT_SIZE);
                    let _ = s.set_prediction(p, inp.bool().then_some(b));
                }
                _ => {
                    t.stats.srtt_us = inp.u16() as f64 * 10.0;
                    t.stats.loss = inp.u8() as f64 / 255.0;
                    t.stats.packets_sent = inp.u16() as u64;
                }
            },
            _ => {
                now += inp.u16() as Micros * 100;
                let local = inp.bytes(INPUT_SIZE);
                let n = s.ticks_due(now, &mut t);
                for _ in 0..n {
                    if advances >= MAX_ADVANCES {
                        break;
                    }
                    advances += 1;
                    let _ = s.add_local_input(local);
                    s.advance();
                    engine.checksum_salt = (op >> 3) as u64 & 1;
                    while let Some(r) = s.poll_request() {
                        if let Some(Answer::Saved(tick, c)) = engine.run(r) {
                            s.confirm_save(tick, c).expect("a requested save");
                        }
                    }
                }
                while let Some(e) = s.poll_event() {
                    if let ClientSessionEvent::Joined { player, .. } = e {
                        assert!((player as usize) < PLAYERS);
                    }
                }
                s.send_messages(now, &mut t);
                for (peer, reason) in std::mem::take(&mut t.closed) {
                    s.on_event(now, &mut t, Event::Disconnected { peer, reason });
                }
            }
        }
    }
}
