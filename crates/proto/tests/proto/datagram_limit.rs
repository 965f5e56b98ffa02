//! A per-endpoint largest datagram (`EndpointConfig::max_datagram_size`), for carriers
//! smaller than UDP's 1,200 bytes (EOS P2P: 1,170): no datagram either endpoint emits
//! is larger, reliable messages of every size still arrive whole and in order,
//! unreliable ones up to the endpoint's own limit go and one byte more is refused, and
//! the sessions (P2P, relay) size their messages to it and stay in sync.

use crate::support::relay_world::{self, World};
use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::wire::{MAX_DATAGRAM_SIZE, MIN_DATAGRAM_SIZE};
use tickwire_proto::{
    CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, CheckedConfig, EndpointConfig, GameShape, JitterModel,
    LinkConfig, LossModel, MAX_UNRELIABLE, NetEvent as Event, P2pConfig, RelayClientSessionConfig,
    RelayServerSessionConfig, SendError, SimNet, max_unreliable_for, p2p_inputs_fit_in,
};

const LIMIT: usize = 1170;
const MS: u64 = 1_000;
const SEC: u64 = 1_000_000;

fn limited(max_incoming: u32) -> EndpointConfig {
    EndpointConfig { max_incoming, max_datagram_size: LIMIT, timeout_us: 30 * SEC, ..EndpointConfig::default() }
}

/// The largest datagram recorded, asserting that none is over `LIMIT`.
fn largest_datagram(net: &mut SimNet) -> usize {
    let recorded = net.take_recorded();
    assert!(!recorded.is_empty());
    let largest = recorded.iter().map(|(_, _, d)| d.len()).max().unwrap();
    for (from, to, d) in &recorded {
        assert!(d.len() <= LIMIT, "a datagram of {} bytes from {from} to {to}: over {LIMIT}", d.len());
    }
    largest
}

/// Reliable sizes: small ones, every size around one unit's limit (1,125 at 1,170,
/// 1,155 at 1,200) and a fragment (1,024), around two and three fragments, then a
/// sweep to 20,000.
fn reliable_sizes() -> Vec<usize> {
    let mut v: Vec<usize> = (1..=40).collect();
    v.extend(1000..=1200);
    v.extend(2040..=2060);
    v.extend(3066..=3080);
    v.extend((1..20_000).step_by(97));
    v.extend(19_990..=20_000);
    v
}

/// Unreliable sizes up to the endpoint's limit, every one of the last 40.
fn unreliable_sizes(max: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..max - 40).step_by(7).collect();
    v.extend(max - 40..=max);
    v
}

fn body(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i * 31 + k * 7) as u8).collect()
}

/// Both endpoints at 1,170 send each other every reliable and unreliable size over
/// `link`; returns the largest datagram seen.
fn exchange(seed: u64, link: LinkConfig, lossless: bool) -> usize {
    let mut net = SimNet::new(seed, link);
    net.record_datagrams();
    let s = net.add(limited(4));
    let c = net.add(limited(0));
    let now = net.now();
    let addr = net.addr(s);
    let cp = net.endpoint(c).connect(now, addr).unwrap();
    let mut sp = None;
    assert!(net.run_until(MS, 10 * SEC, |n| {
        for e in n.take_events(s) {
            if let Event::Connected { peer, .. } = e {
                sp = Some(peer);
            }
        }
        sp.is_some()
    }));
    let sp = sp.unwrap();
    for node in [s, c] {
        let ep = net.endpoint(node);
        let max = ep.max_unreliable();
        assert_eq!(max, max_unreliable_for(LIMIT));
        assert!(max < MAX_UNRELIABLE);
        let peer = if node == s { sp } else { cp };
        assert_eq!(
            ep.send(peer, CHANNEL_UNRELIABLE, &vec![0; max + 1]),
            Err(SendError::TooLarge { size: max + 1, max }),
            "one byte over the endpoint's limit"
        );
        assert_eq!(
            ep.send(peer, CHANNEL_SEQUENCED, &vec![0; max + 1]),
            Err(SendError::TooLarge { size: max + 1, max })
        );
    }
    net.take_events(c);
    let max = max_unreliable_for(LIMIT);
    let reliable = reliable_sizes();
    let unreliable = unreliable_sizes(max);
    // Each side's messages, received: (reliable in order, unreliable ones by length).
    let mut got_reliable = [Vec::new(), Vec::new()];
    let mut got_unreliable = [Vec::new(), Vec::new()];
    let (mut r, mut u) = (0, 0);
    let mut tick = 0;
    while tick < 4_000 {
        // A frame: a few reliable messages and a few unreliable ones each way, so that
        // packing mixes them.
        for _ in 0..4 {
            if r < reliable.len() {
                let m = body(r, reliable[r]);
                net.endpoint(c).send(cp, CHANNEL_RELIABLE, &m).unwrap();
                net.endpoint(s).send(sp, CHANNEL_RELIABLE, &m).unwrap();
                r += 1;
            }
        }
        for _ in 0..3 {
            if u < unreliable.len() {
                let m = body(u, unreliable[u]);
                let ch = if u % 2 == 0 { CHANNEL_UNRELIABLE } else { CHANNEL_SEQUENCED };
                net.endpoint(c).send(cp, ch, &m).unwrap();
                net.endpoint(s).send(sp, ch, &m).unwrap();
                u += 1;
            }
        }
        net.flush(c);
        net.flush(s);
        net.step(16 * MS);
        for (side, node) in [(0, s), (1, c)] {
            for e in net.take_events(node) {
                if let Event::Message { channel, data, .. } = e {
                    if channel == CHANNEL_RELIABLE {
                        got_reliable[side].push(data);
                    } else {
                        got_unreliable[side].push(data);
                    }
                }
            }
        }
        tick += 1;
        if got_reliable.iter().all(|g| g.len() == reliable.len()) && r == reliable.len() && u == unreliable.len() {
            break;
        }
    }
    for side in 0..2 {
        assert_eq!(got_reliable[side].len(), reliable.len(), "side {side}: every reliable message arrived");
        for (i, m) in got_reliable[side].iter().enumerate() {
            assert!(
                *m == body(i, reliable[i]),
                "side {side}: reliable message {i} ({} bytes) whole, in order",
                m.len()
            );
        }
        let want: Vec<Vec<u8>> = unreliable.iter().enumerate().map(|(i, &n)| body(i, n)).collect();
        assert!(got_unreliable[side].iter().all(|m| want.contains(m)), "side {side}: unreliable messages intact");
        if lossless {
            assert_eq!(got_unreliable[side], want, "side {side}: every unreliable message arrived");
        }
    }
    largest_datagram(&mut net)
}

#[test]
fn every_datagram_fits_the_endpoints_limit_and_every_message_arrives() {
    let perfect = LinkConfig { latency_us: 20 * MS, ..LinkConfig::perfect() };
    let largest = exchange(1, perfect, true);
    assert!(largest > LIMIT - 20, "the limit was reached: largest datagram {largest}");
    let hostile = LinkConfig {
        latency_us: 40 * MS,
        jitter: JitterModel::Uniform { max_us: 20 * MS },
        loss: LossModel::Bernoulli { p: 0.1 },
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay_us: 30 * MS,
        ..LinkConfig::perfect()
    };
    let largest = exchange(2, hostile, false);
    assert!(largest > LIMIT - 20, "the limit was reached under loss: largest datagram {largest}");
}

#[test]
fn a_p2p_match_sizes_its_messages_to_the_transport_and_stays_in_sync() {
    // 2 peers of 16 players each: a message carries 32 bytes of inputs a tick and 512
    // of input digests with its reports, so runs of unacknowledged ticks under latency
    // and loss (a round trip of 24 ticks, more than a message holds) fill it. The config is left at its default (1,200-byte datagrams): the
    // session reads the transport's limit as it sends.
    let link = LinkConfig { latency_us: 12 * TICK_US, loss: LossModel::Bernoulli { p: 0.05 }, ..LinkConfig::perfect() };
    let cfg = P2pConfig { max_prediction: 16, ..P2pConfig::default() };
    let mut mesh = Mesh::with_endpoint(21, 2, 16, link, cfg, limited(0));
    mesh.period = 1;
    mesh.net.record_datagrams();
    let start = mesh.net.now();
    mesh.run_until(start + 60 * SEC);
    let largest = largest_datagram(&mut mesh.net);
    let confirmed = mesh.confirmed();
    assert!(confirmed > 3_000, "the match ran: {confirmed} ticks confirmed");
    mesh.assert_in_sync(0, confirmed);
    assert_eq!(mesh.desyncs(), 0);
    for (i, p) in mesh.peers.iter().enumerate() {
        assert_eq!(p.session.stats().send_errors, 0, "peer {i}: a message its transport refused");
    }
    println!("largest P2P datagram {largest}, {confirmed} ticks confirmed");
    // The bound a message is sized by is a worst case (every player's disconnect entry,
    // the largest reports): real messages stay some way below it.
    assert!(largest > 900, "messages came near the limit: largest datagram {largest}");
}

#[test]
fn a_relay_match_sizes_its_messages_to_the_transport_and_stays_in_sync() {
    // 4 players of 128-byte inputs changing every tick: a step is about 540 bytes, so
    // two fit a 1,200-byte datagram's update and not a 1,170-byte one's; under loss a
    // client's input packets carry up to 12 inputs, more than either holds.
    let game = GameShape::new(4, 128);
    let scfg = RelayServerSessionConfig { game, ..RelayServerSessionConfig::default() };
    let ccfg = RelayClientSessionConfig { game, ..RelayClientSessionConfig::default() };
    let mut w = World::with_server_endpoint(31, relay_world::link(0.05), scfg, ccfg, limited(16));
    w.input_period = 1;
    w.net.record_datagrams();
    for _ in 0..4 {
        w.add_client_with(limited(0));
    }
    w.run_for(30 * SEC);
    let largest = largest_datagram(&mut w.net);
    assert_eq!(w.too_large, 0, "messages the transport refused as too large");
    for i in 0..4 {
        let compared = w.assert_same_states(i, w.joined_tick(i));
        assert!(compared > 1_000, "client {i}: {compared} ticks compared");
    }
    println!("largest relay datagram {largest}");
    assert!(largest > LIMIT - 60, "messages came near the limit: largest datagram {largest}");
}

#[test]
fn the_datagram_limit_is_checked_by_name() {
    // The floor: a reliable fragment or a relay update's step piece, with the header
    // and the tag, and the handshake packets.
    assert!((1100..=1110).contains(&MIN_DATAGRAM_SIZE), "{MIN_DATAGRAM_SIZE}");
    let with = |n| EndpointConfig { max_datagram_size: n, ..EndpointConfig::default() }.validate();
    for bad in [0, 1099, MIN_DATAGRAM_SIZE - 1, MAX_DATAGRAM_SIZE + 1] {
        let e = with(bad).unwrap_err().0;
        assert!(e.contains(&format!("max_datagram_size {bad} not in")), "{bad}: {e}");
    }
    for good in [MIN_DATAGRAM_SIZE, LIMIT, MAX_DATAGRAM_SIZE] {
        assert_eq!(with(good), Ok(()), "{good}");
    }
    assert_eq!(EndpointConfig::default().max_datagram_size, MAX_DATAGRAM_SIZE);
    assert_eq!(max_unreliable_for(MAX_DATAGRAM_SIZE), MAX_UNRELIABLE);

    // A P2P game whose one tick fits 1,200-byte datagrams and not 1,170-byte ones is
    // refused by name once the config says the transport's limit.
    let at = |limit| (1..=255).take_while(|&n| p2p_inputs_fit_in(8, n, limit)).last().unwrap();
    let (small, big) = (at(max_unreliable_for(LIMIT)), at(MAX_UNRELIABLE));
    assert!(small < big, "{small} {big}");
    let cfg = |max_unreliable| P2pConfig { game: GameShape::new(8, big), max_unreliable, ..P2pConfig::default() };
    assert!(cfg(MAX_UNRELIABLE).validate().is_ok());
    let e = cfg(max_unreliable_for(LIMIT)).validate().unwrap_err().to_string();
    assert!(e.contains("input_size") && e.contains(&format!("at most {small} bytes")), "{e}");
    let e = cfg(max_unreliable_for(MIN_DATAGRAM_SIZE) - 1).validate().unwrap_err().to_string();
    assert!(e.contains("max_unreliable"), "{e}");
    let e = cfg(MAX_UNRELIABLE + 1).validate().unwrap_err().to_string();
    assert!(e.contains("max_unreliable"), "{e}");
}
