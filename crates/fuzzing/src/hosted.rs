//! The relay-only targets: a relay-only server session fed its clients' reports
//! (state digests and uploads, checksums) beside Hellos and inputs, and a match server
//! fed connections whose tokens claim any match of any shape.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::Input;
use super::fake::FakeTransport;
use super::relay::reason;
use tickwire_proto::wire::relay::{
    self as msg, Hello, KIND_STATE_ASK, KIND_WELCOME, SessionToken, StateDigest, StateReport,
};
use tickwire_proto::{
    AdvanceStatus, CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, Credential, GameShape, MatchServer, MatchServerConfig, Micros,
    NetEvent as Event, PeerId, RelayServerSession, RelayServerSessionConfig, ServeClaim, ServerMode, Tick,
    TokenIdentity,
};

const MAX_OPS: usize = 4096;
const MAX_ADVANCES: u32 = 20_000;
const PLAYERS: usize = 4;
const INPUT_SIZE: usize = 2;
const INTERVAL: u32 = 10;

fn addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)), 9000)
}

/// What the harness saw the server send, read off the transport after each frame.
#[derive(Default)]
struct Seen {
    /// State asks: to whom, for which tick, whether with the state.
    asks: Vec<(PeerId, Tick, bool)>,
    /// Digests of the uploads the harness sent that matched their declared digest.
    honest_uploads: Vec<StateDigest>,
}

impl Seen {
    fn take(&mut self, t: &mut FakeTransport) {
        for (peer, m) in t.reliable.drain(..) {
            match m.first() {
                Some(&KIND_STATE_ASK) => {
                    let a = msg::decode_state_ask(&m).expect("the server's asks decode");
                    self.asks.push((peer, a.tick, a.upload));
                    if self.asks.len() > 64 {
                        self.asks.remove(0);
                    }
                }
                Some(&KIND_WELCOME) => {
                    let w = msg::decode_welcome(&m).expect("the server's welcomes decode");
                    assert_eq!(w.report_interval, INTERVAL, "a relay-only server's welcome asks for reports");
                    // A snapshot is the game's initial state (empty), or an upload some
                    // client sent that was the state it vouched for.
                    assert!(
                        w.state.is_empty() || self.honest_uploads.contains(&StateDigest::of(w.state)),
                        "a welcome's state that no donor uploaded honestly"
                    );
                }
                _ => {}
            }
        }
    }
}

/// A relay-only server session (4 players, 2-byte inputs, checksums every 10 ticks)
/// fed connections, Hellos, inputs, StateReports (answers to its asks, honest, forged
/// or unasked, with or without the state) and checksum reports (near its tick, or any),
/// raw messages and disconnects, with time passing.
///
/// Oracles: no panic, no hang; it asks nothing of an engine; its asks and Welcomes
/// decode; a Welcome's state is empty (a new match) or a state some client uploaded
/// with the digest it declared.
pub fn relay_hosted(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let cfg = RelayServerSessionConfig {
        game: GameShape::new(PLAYERS, INPUT_SIZE),
        mode: ServerMode::RelayOnly,
        checksum_interval: INTERVAL,
        reconnect_timeout_us: 3_000_000,
        hello_timeout_us: 1_000_000,
        seed: 0x405e,
        ..RelayServerSessionConfig::default()
    };
    let mut s = RelayServerSession::new(cfg, now).expect("valid config");
    let mut t = FakeTransport::default();
    let mut seen = Seen::default();
    let (mut advances, mut buf) = (0u32, Vec::new());
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let pick = inp.u8();
        match op % 9 {
            0 => {
                let peer = t.accept();
                let credential = Credential::ConnectToken(Box::new(TokenIdentity {
                    client_id: u64::from(inp.u8() % 6),
                    user_data: [0; 256],
                }));
                s.on_event(now, &mut t, Event::Connected { peer, addr: addr(), credential, binding: None });
            }
            1 => {
                let Some(peer) = t.pick(pick) else { continue };
                let h = Hello { token: SessionToken::NONE, input_size: INPUT_SIZE as u16, max_players: PLAYERS as u16 };
                msg::encode_hello(&mut buf, &h);
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data: buf.clone() });
            }
            2 => {
                let Some(peer) = t.pick(pick) else { continue };
                let n = inp.u8() as usize % 8;
                let inputs: Vec<&[u8]> = (0..n).map(|_| inp.bytes(INPUT_SIZE)).collect();
                let first = inp.tick_near(s.last_tick());
                msg::encode_client_inputs(&mut buf, msg::NONE, &[], first, inputs.into_iter());
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_UNRELIABLE, data: buf.clone() });
            }
            3 | 4 => {
                // A StateReport: to one of the asks seen (as its peer), or from anyone.
                let (peer, tick, upload) = match seen.asks.len() {
                    n if n > 0 && op & 0x80 == 0 => seen.asks[pick as usize % n],
                    _ => match t.pick(pick) {
                        Some(p) => (p, inp.tick_near(s.last_tick()), inp.bool()),
                        None => continue,
                    },
                };
                let state = if upload || inp.u8() & 7 == 0 { inp.blob().to_vec() } else { Vec::new() };
                // Mostly the state's own digest; sometimes one of a few others, so that
                // witnesses agree or disagree and forgeries are declared.
                let digest = match inp.u8() % 4 {
                    0 => StateDigest([inp.u8() % 3; 32]),
                    _ => StateDigest::of(&state),
                };
                if !state.is_empty() && digest == StateDigest::of(&state) {
                    seen.honest_uploads.push(digest);
                }
                msg::encode_state_report(&mut buf, &StateReport { tick, digest, state: &state });
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data: buf.clone() });
            }
            5 => {
                let Some(peer) = t.pick(pick) else { continue };
                let n = 1 + inp.u8() as usize % 4;
                let checks: Vec<(Tick, u64)> = (0..n)
                    .map(|_| {
                        let t = inp.tick_near(s.last_tick());
                        let t = if inp.bool() { t / INTERVAL * INTERVAL } else { t };
                        (t, u64::from(inp.u8() % 3))
                    })
                    .collect();
                msg::encode_checks(&mut buf, &checks);
                s.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data: buf.clone() });
            }
            6 => {
                let Some(peer) = t.pick(pick) else { continue };
                let data = inp.blob().to_vec();
                let channel = if op & 0x80 == 0 { CHANNEL_RELIABLE } else { CHANNEL_UNRELIABLE };
                s.on_event(now, &mut t, Event::Message { peer, channel, data });
            }
            7 => {
                let Some(peer) = t.pick(pick) else { continue };
                t.open.remove(&peer);
                s.on_event(now, &mut t, Event::Disconnected { peer, reason: reason(op >> 4) });
            }
            _ => {
                now += inp.u16() as Micros * 100;
                for _ in 0..s.ticks_due(now) {
                    if advances >= MAX_ADVANCES {
                        break;
                    }
                    advances += 1;
                    assert_eq!(s.advance(), AdvanceStatus::Advanced);
                    assert!(s.poll_request().is_none(), "a relay-only server asks nothing of an engine");
                }
                while s.poll_event().is_some() {}
                s.send_messages(now, &mut t);
                seen.take(&mut t);
                for (peer, reason) in std::mem::take(&mut t.closed) {
                    s.on_event(now, &mut t, Event::Disconnected { peer, reason });
                }
            }
        }
    }
}

/// A match server (at most 3 matches) fed connections whose credentials claim any
/// match, shape or nothing, Hellos, raw messages and disconnects of any connection,
/// time passing, drains and ends by the owner.
///
/// Oracles: no panic, no hang; never more than 3 matches; a refused connection is
/// closed at once; every match's shape is one a token claimed.
pub fn match_server(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut now: Micros = 1_000_000;
    let mut cfg = MatchServerConfig { max_matches: 3, ..MatchServerConfig::default() };
    cfg.session.hello_timeout_us = 1_000_000;
    cfg.session.reconnect_timeout_us = 2_000_000;
    let mut server = MatchServer::new(cfg).expect("valid config");
    let mut t = FakeTransport::default();
    let mut claims: Vec<ServeClaim> = Vec::new();
    let mut buf = Vec::new();
    let mut frames = 0u32;
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        let op = inp.u8();
        let pick = inp.u8();
        match op % 6 {
            0 => {
                let peer = t.accept();
                let claim = ServeClaim {
                    match_id: u64::from(inp.u8() % 5),
                    players: inp.u8() % 6,
                    input_size: u16::from(inp.u8() % 4),
                    tick_rate_hz: [0, 30, 60, 60, 1000, 1001][inp.u8() as usize % 6],
                };
                let mut user_data = [0u8; 256];
                match inp.u8() % 4 {
                    // A valid claim (or one that does not check), as a backend wrote it.
                    0 | 1 => {
                        if let Ok(b) = claim.user_data(&[]) {
                            user_data[..b.len()].copy_from_slice(&b);
                            claims.push(claim);
                        }
                    }
                    // Any bytes.
                    2 => {
                        let b = inp.bytes(32);
                        user_data[..b.len()].copy_from_slice(b);
                    }
                    _ => {}
                }
                let credential = match op & 0x80 {
                    0 => Credential::ConnectToken(Box::new(TokenIdentity { client_id: u64::from(pick), user_data })),
                    _ => Credential::Open,
                };
                let before = t.closed.len();
                server.on_event(now, &mut t, Event::Connected { peer, addr: addr(), credential, binding: None });
                let refused = t.closed.len() > before;
                assert_eq!(refused, !t.open.contains_key(&peer));
            }
            1 => {
                let Some(peer) = t.pick(pick) else { continue };
                let shape = inp.u8();
                let h = Hello {
                    token: SessionToken::NONE,
                    input_size: u16::from(shape % 4),
                    max_players: u16::from(shape >> 4),
                };
                msg::encode_hello(&mut buf, &h);
                server.on_event(now, &mut t, Event::Message { peer, channel: CHANNEL_RELIABLE, data: buf.clone() });
            }
            2 => {
                // Any message from any connection, open or closed.
                let peer: PeerId = if op & 0x80 == 0 { t.pick(pick).unwrap_or(0) } else { PeerId::from(pick) };
                let data = inp.blob().to_vec();
                let channel = if op & 0x40 == 0 { CHANNEL_RELIABLE } else { CHANNEL_UNRELIABLE };
                server.on_event(now, &mut t, Event::Message { peer, channel, data });
            }
            3 => {
                let Some(peer) = t.pick(pick) else { continue };
                t.open.remove(&peer);
                server.on_event(now, &mut t, Event::Disconnected { peer, reason: reason(op >> 4) });
            }
            4 => match pick % 8 {
                0 => server.drain(),
                1 => {
                    let _ = server.end_match(now, &mut t, u64::from(inp.u8() % 5));
                }
                _ => continue,
            },
            _ => {
                frames += 1;
                if frames > 3000 {
                    continue;
                }
                now += inp.u16() as Micros * 50;
                server.run(now, &mut t);
                while server.poll_event().is_some() {}
                t.reliable.clear();
                for (peer, reason) in std::mem::take(&mut t.closed) {
                    server.on_event(now, &mut t, Event::Disconnected { peer, reason });
                }
            }
        }
        assert!(server.match_count() <= 3, "more matches than allowed");
        for (_, claim, _) in server.matches() {
            assert!(claims.contains(claim), "a match of a shape no token claimed");
        }
    }
}
