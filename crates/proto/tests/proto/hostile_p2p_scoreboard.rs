//! Issue 31, "Show": one liar harms only itself. Each attack of the findings
//! already has a focused test; this file runs every one of them for a full minute in
//! the same setting and scores it with one function, so the claims are checked side
//! by side rather than one attack at a time:
//!
//! - a 4-peer match (one player per peer) on a 30 ms +- 5 ms, 1% loss link, seeded;
//! - peer 1 lies continuously (or once a second) for 60 s from 2 s in (the ramp:
//!   connecting and synchronizing is not part of the window);
//! - every honest peer confirms >= 58 ticks/s over the window, the honest peers
//!   simulate the same ticks, the liar is named or dropped on every honest peer, and no
//!   honest peer is dropped, removed or named by another.
//!
//! Each run prints one `scoreboard |` line (run with `--nocapture` to see the table).

use crate::support::forge;
use crate::support::forge::{Lie, forge, plausible};
use crate::support::toy_game::{Mesh, TICK_US};
use tickwire_proto::{
    DisconnectReason, JitterModel, LinkConfig, LossModel, P2pConfig, PeerId, RollbackEvent as Event, Tick,
};

const SEC: u64 = 1_000_000;
const PEERS: usize = 4;
/// The lying peer (and its player: one player per peer).
const LIAR: usize = 1;
/// The match has started by then at these latencies; the attack window opens here.
const START: u64 = 2 * SEC;
const WINDOW: u64 = 60 * SEC;
/// The floor of the issue: 60 Hz less the clock's room for honest slowness.
const MIN_RATE: f64 = 58.0;
/// How often the slow peer of the trickle attack lets one tick through (the rate
/// finding 2 measured: 0.30 ticks/s, never dropped before the fix).
const TRICKLE_US: u64 = 4_500_000;

/// 30 ms +- 5 ms each way (25 ms floor plus up to 10 ms) and 1% loss: a real path, so
/// that the defenses are checked with resends, reordering of acks and clock noise,
/// not on a perfect link where any lie stands out.
fn link() -> LinkConfig {
    LinkConfig {
        latency_us: 25_000,
        jitter: JitterModel::Uniform { max_us: 10_000 },
        loss: LossModel::Bernoulli { p: 0.01 },
        ..LinkConfig::perfect()
    }
}

fn honest() -> impl Iterator<Item = usize> {
    (0..PEERS).filter(|&i| i != LIAR)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attack {
    /// Finding 1: "player 2 disconnected", to every peer but player 2's, every second.
    DisconnectLie,
    /// Finding 2: the liar talks but lets one tick through every 4.5 s.
    Trickle,
    /// Finding 4: a tick 100,000 ahead with a matching advantage, every second.
    FarFuture,
    /// Finding 3: different inputs to peers 2 and 3 than to peer 0, hiding its own
    /// checksums from them.
    Equivocation,
    /// An ack beyond every input sent (to peers 0 and 3) or a confirmed tick beyond
    /// the liar's own (to peer 2), every second.
    AckConfirmed,
}

/// Runs the window with the liar's hook called before every frame; returns the mesh
/// and each peer's confirmed tick when the window opened.
fn play(attack: Attack, seed: u64) -> (Mesh, Vec<Tick>) {
    let mut mesh = Mesh::new(seed, PEERS, 1, link(), P2pConfig::default());
    mesh.run_until(START);
    let from: Vec<Tick> = mesh.peers.iter().map(|p| p.session.stats().confirmed_tick).collect();
    assert!(from.iter().all(|&c| c > 0), "the match runs before the window: {from:?}");
    if let Attack::Equivocation = attack {
        // Far enough ahead that no input of these ticks has left the liar yet, so
        // every copy of them the victims get is the altered one.
        let from_tick = mesh.peers[LIAR].session.current_tick() + 30;
        equivocate(&mut mesh, &[2, 3], from_tick);
    }
    let end = START + WINDOW;
    let mut next_lie = START;
    while mesh.net.now() < end {
        let now = mesh.net.now();
        match attack {
            Attack::Trickle => {
                // Frozen but for one frame (one tick) every TRICKLE_US.
                mesh.peers[LIAR].frozen = (now - START) % TRICKLE_US >= TICK_US;
            }
            Attack::Equivocation => {}
            _ if now >= next_lie => {
                next_lie += SEC;
                lie_once(&mut mesh, attack);
            }
            _ => {}
        }
        mesh.frame();
    }
    (mesh, from)
}

/// One round of a forged-message attack, to each peer it targets.
fn lie_once(mesh: &mut Mesh, attack: Attack) {
    for to in honest() {
        let l = plausible(mesh, to);
        match attack {
            Attack::DisconnectLie => {
                // The victim is not told: it would see its own removal proposed.
                let victim = 2;
                if to != victim {
                    let lie = [(victim as u16, l.confirmed)];
                    forge(mesh, to, LIAR, Lie { disconnects: &lie, ..l });
                }
            }
            Attack::FarFuture => {
                // A confirmed tick to match and an advantage that agrees with a far
                // future tick, so no single number is out of line with the others.
                let lie = Lie { tick: l.tick + 100_000, confirmed: l.tick + 99_990, advantage: 6.0, ..l };
                forge(mesh, to, LIAR, lie);
            }
            Attack::AckConfirmed if to == 2 => {
                forge(mesh, to, LIAR, Lie { confirmed: l.tick + 5_000, ..l });
            }
            Attack::AckConfirmed => {
                forge(mesh, to, LIAR, Lie { ack: l.tick + 100_000, ..l });
            }
            Attack::Trickle | Attack::Equivocation => unreachable!("not a forged-message attack"),
        }
    }
}

/// The liar's outgoing input messages to `victims` carry its inputs of ticks from
/// `from` on with a bit flipped (the same at every resend, so each victim sees one
/// consistent story), and no checksum reports or digests, so that its own checksums,
/// which match the peer that got the real inputs, never show to them.
fn equivocate(mesh: &mut Mesh, victims: &[usize], from: Tick) {
    forge::equivocate(mesh, LIAR, victims, from, true);
}

/// How honest peer `on` treated the liar: named (a desync blamed on its player,
/// NoProgress naming its peer, or a disconnect proposal of its refused) and/or dropped
/// (its peer disconnected, with why).
fn treatment(mesh: &Mesh, on: usize) -> (bool, Option<DisconnectReason>) {
    let liar = mesh.peers[on].ids[LIAR];
    let events = &mesh.peers[on].events;
    let named = events.iter().any(|e| match *e {
        Event::Desync { culprit, .. } => culprit == Some(LIAR),
        Event::NoProgress { peer, .. } => peer == liar,
        Event::ProposalRefused { by, .. } => by == liar,
        Event::InputsDisagree { player, .. } => player == LIAR,
        _ => false,
    });
    let dropped = events.iter().find_map(|e| match *e {
        Event::PeerDisconnected { peer, reason } if peer == liar => Some(reason),
        _ => None,
    });
    (named, dropped)
}

/// What honest peer `on` did to the other honest peers that it should not have:
/// dropped one, took one's player out of the game, was itself removed, or named one
/// as the culprit of a desync or of no progress.
fn harm_to_honest(mesh: &Mesh, on: usize) -> Vec<Event> {
    let p = &mesh.peers[on];
    let honest_ids: Vec<PeerId> = honest().filter(|&j| j != on).map(|j| p.ids[j]).collect();
    p.events
        .iter()
        .copied()
        .filter(|e| match *e {
            Event::PeerDisconnected { peer, .. } => honest_ids.contains(&peer),
            Event::PlayerDisconnected { player, .. } => player != LIAR,
            Event::RemovedByPeers { .. } => true,
            Event::Desync { culprit, .. } => culprit.is_some_and(|c| c != LIAR),
            Event::NoProgress { peer, .. } => honest_ids.contains(&peer),
            Event::ProposalRefused { by, .. } => honest_ids.contains(&by),
            Event::InputsDisagree { player, .. } => player != LIAR,
            _ => false,
        })
        .collect()
}

/// Desync events an honest peer raised against another honest peer (whoever it
/// blamed): the honest peers disagreeing on the game is what the liar is after.
fn honest_desyncs(mesh: &Mesh) -> usize {
    honest()
        .map(|i| {
            let p = &mesh.peers[i];
            let honest_ids: Vec<PeerId> = honest().filter(|&j| j != i).map(|j| p.ids[j]).collect();
            p.events.iter().filter(|e| matches!(e, Event::Desync { peer, .. } if honest_ids.contains(peer))).count()
        })
        .sum()
}

/// The first tick in `start..end` whose saved checksum differs between honest peers.
fn first_divergence(mesh: &Mesh, start: Tick, end: Tick) -> Option<Tick> {
    (start..end).find(|&t| {
        let sums: Vec<Option<u64>> =
            honest().map(|i| mesh.peers[i].game.played.get(t as usize).copied().flatten()).collect();
        sums.iter().any(|c| *c != sums[0])
    })
}

/// One run's figures, kept until every seed of the attack has printed its line.
struct Outcome {
    attack: Attack,
    seed: u64,
    mesh: Mesh,
    rates: Vec<(usize, f64)>,
    treated: Vec<(usize, (bool, Option<DisconnectReason>))>,
    harm: Vec<(usize, Vec<Event>)>,
    honest_desyncs: usize,
    /// The window's ticks every honest peer has confirmed (and so saved for good).
    start: Tick,
    end: Tick,
}

/// Plays the attack and prints its scoreboard line.
fn measure(attack: Attack, seed: u64) -> Outcome {
    let (mesh, from) = play(attack, seed);
    let secs = WINDOW as f64 / SEC as f64;
    let rates: Vec<(usize, f64)> =
        honest().map(|i| (i, (mesh.peers[i].session.stats().confirmed_tick - from[i]) as f64 / secs)).collect();
    let treated: Vec<_> = honest().map(|i| (i, treatment(&mesh, i))).collect();
    let harm: Vec<_> = honest().map(|i| (i, harm_to_honest(&mesh, i))).filter(|h| !h.1.is_empty()).collect();
    let start = honest().map(|i| from[i]).min().unwrap();
    let end = honest().map(|i| mesh.peers[i].session.stats().confirmed_tick).min().unwrap();
    let o = Outcome { attack, seed, rates, treated, harm, honest_desyncs: honest_desyncs(&mesh), start, end, mesh };
    let slowest = o.rates.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let named = o.treated.iter().filter(|t| t.1.0).count();
    let dropped: Vec<DisconnectReason> = o.treated.iter().filter_map(|t| t.1.1).collect();
    let diverged = first_divergence(&o.mesh, start, end);
    println!(
        "scoreboard | {:<13} | seed {seed} | slowest honest {slowest:5.2} ticks/s | honest desyncs {:4} | first diverging tick {:>5} | liar named by {named}/3, dropped by {}/3 {:?} | harm to honest {}",
        format!("{attack:?}"),
        o.honest_desyncs,
        diverged.map_or("none".to_string(), |t| t.to_string()),
        dropped.len(),
        dropped,
        o.harm.iter().map(|h| h.1.len()).sum::<usize>(),
    );
    o
}

/// The shared score: the four claims.
fn check(mut o: Outcome) {
    let (attack, seed) = (o.attack, o.seed);
    for (i, rate) in &o.rates {
        assert!(
            *rate >= MIN_RATE,
            "{attack:?} seed {seed}: honest peer {i} confirmed {rate:.2} ticks/s: {:?}",
            o.rates
        );
    }
    for (i, (named, dropped)) in &o.treated {
        // The disconnect lie is told to every honest peer but its victim, and a peer
        // relays only the proposals it took: the victim never hears the lie, so it has
        // nothing to name (and nothing was done to it; the harm check covers it).
        if attack == Attack::DisconnectLie && *i == 2 {
            continue;
        }
        assert!(
            *named || dropped.is_some(),
            "{attack:?} seed {seed}: honest peer {i} neither named nor dropped the liar: {:?}",
            o.mesh.peers[*i].events
        );
    }
    assert!(o.harm.is_empty(), "{attack:?} seed {seed}: an honest peer was dropped, removed or named: {:?}", o.harm);
    assert_eq!(o.honest_desyncs, 0, "{attack:?} seed {seed}: desyncs between honest peers");
    // Out of the comparison, the liar: it may well be playing another game by now.
    o.mesh.peers[LIAR].alive = false;
    assert_eq!(o.mesh.assert_in_sync(o.start, o.end), (o.end - o.start) as usize, "{attack:?} seed {seed}");
}

/// Every seed's line is printed before any assertion can stop the test.
fn both_seeds(attack: Attack) {
    let outcomes: Vec<Outcome> = [41, 42].into_iter().map(|seed| measure(attack, seed)).collect();
    outcomes.into_iter().for_each(check);
}

/// Harmless (nobody is removed, in sync), and the peers it lied to name the liar
/// (ProposalRefused). Before that event, nobody named it: 0/3.
#[test]
fn a_lie_that_a_live_player_disconnected() {
    both_seeds(Attack::DisconnectLie);
}

/// A stall: the trickler is dropped after the progress timeout (1.5 s), and the
/// ticks the honest peers stalled for are never played back. Before the stall rule
/// (the 5 s crawl rule alone) seeds 41/42 confirmed 55.12 ticks/s.
#[test]
fn a_peer_that_trickles_ticks() {
    both_seeds(Attack::Trickle);
}

#[test]
fn a_far_future_tick_every_second() {
    both_seeds(Attack::FarFuture);
}

/// The peers it lied to are outvoted by the others on its inputs: the peer in the
/// minority takes the majority's and resimulates, everyone names the liar
/// (`InputsDisagree`), and no desync is reported between honest peers. Before that, the
/// liar was named (Desync culprit, 3/3) but the honest peers diverged from tick 141
/// for the rest of the match: 1,424 Desync events between them in 60 s.
#[test]
fn different_inputs_to_different_peers() {
    both_seeds(Attack::Equivocation);
}

#[test]
fn acks_and_confirmed_ticks_beyond_the_truth() {
    both_seeds(Attack::AckConfirmed);
}

/// Not tuned to two seeds: every attack over ten more, each scored the same way.
#[test]
fn every_attack_over_ten_more_seeds() {
    use Attack::*;
    for attack in [DisconnectLie, Trickle, FarFuture, Equivocation, AckConfirmed] {
        let outcomes: Vec<Outcome> = (43..53).map(|seed| measure(attack, seed)).collect();
        outcomes.into_iter().for_each(check);
    }
}
