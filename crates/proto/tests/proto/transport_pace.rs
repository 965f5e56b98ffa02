//! The send pace (`PeerLimits`, three quarters of what the peer accepts) holds a flush
//! back when it has spent its burst. What it held back must still leave once the pace
//! allows, on the endpoint's own timer: an engine that flushed once should not find its
//! message waiting for a next flush that may never come. And a resend the pace holds
//! back must not leave a timer due in the past, which would spin the network thread.
//! Found by a single-threaded ping-pong at 140,000 messages a second (issue 17): after
//! about 6,600 round trips an echo stayed queued until the next flush.

use crate::support::hand_net::{HandNet, messages};
use tickwire_proto::{CHANNEL_RELIABLE, CHANNEL_UNRELIABLE, EndpointConfig, Micros, PeerLimits, Security};

const S: usize = 0;
const C: usize = 1;

/// 1,000 messages a second with a burst of 0.2 s: the sender paces at 750 a second
/// (one message's worth every 1.33 ms), 150 in a burst, and a datagram may leave while
/// 64 messages' worth (a full datagram) are left.
fn limits() -> PeerLimits {
    PeerLimits { max_messages_per_sec: 1_000, burst_us: 200_000, ..PeerLimits::default() }
}

fn pair() -> (HandNet, tickwire_proto::PeerId) {
    let mut net = HandNet::new();
    let cfg = |seed| EndpointConfig {
        max_incoming: 4,
        seed,
        security: Security::InsecurePlaintext,
        limits: limits(),
        ..Default::default()
    };
    net.add(cfg(1));
    net.add(cfg(2));
    let cp = net.connect(C, S);
    net.events(S);
    net.events(C);
    (net, cp)
}

/// Sends one message per flush, 10 µs apart, until a flush sends nothing: the pace has
/// spent its burst. Returns how many went.
fn spend_the_burst(net: &mut HandNet, cp: tickwire_proto::PeerId, channel: u8) -> usize {
    for sent in 0..10_000 {
        net.now += 10;
        let now = net.now;
        net.ep(C).send(cp, channel, &(sent as u32).to_le_bytes()).unwrap();
        net.ep(C).flush(now);
        let out = net.take(C);
        if out.is_empty() {
            return sent;
        }
        for (_, d) in out {
            let from = net.addr(C);
            net.inject(from, S, &d);
        }
    }
    panic!("the pace never held a flush back");
}

/// Runs the client's timers as a network thread would (waking at `next_timeout`) until
/// `until`, delivering what it sends. Returns the messages the server got, with when.
fn run_timers(net: &mut HandNet, until: Micros) -> Vec<(Micros, Vec<u8>)> {
    let mut got = Vec::new();
    let mut wakes = 0;
    while let Some(t) = net.ep(C).next_timeout() {
        if t > until {
            break;
        }
        wakes += 1;
        assert!(wakes < 1_000, "the client's timer keeps firing at {t} µs (now {} µs)", net.now);
        net.now = net.now.max(t);
        let now = net.now;
        net.ep(C).update(now);
        let from = net.addr(C);
        for (_, d) in net.take(C) {
            net.inject(from, S, &d);
        }
        got.extend(messages(&net.events(S)).into_iter().map(|m| (now, m)));
        // Whatever the update did, no timer of the client is left due now.
        let next = net.ep(C).next_timeout().unwrap_or(Micros::MAX);
        assert!(next > now, "after update({now}) a timer is still due at {next}");
        // The server's acks go back, so the client's resends end.
        let from = net.addr(S);
        net.ep(S).update(now);
        for (_, d) in net.take(S) {
            net.inject(from, C, &d);
        }
    }
    got
}

#[test]
fn a_flush_the_pace_holds_back_leaves_when_the_pace_allows() {
    let (mut net, cp) = pair();
    let sent = spend_the_burst(&mut net, cp, CHANNEL_UNRELIABLE);
    assert!((85..=90).contains(&sent), "{sent} messages before the pace held one back (150 - 64 + refill)");
    messages(&net.events(S));
    let held_at = net.now;
    // Nothing more from the engine: no send, no flush.
    let got = run_timers(&mut net, held_at + 1_000_000);
    let (at, first) = got.first().expect("the held message never left without another flush");
    assert_eq!(first, &(sent as u32).to_le_bytes().to_vec(), "the held message, not another");
    // Less than one message's worth was missing: it comes back within 1.33 ms.
    assert!(at - held_at <= 1_400, "left {} µs after its flush", at - held_at);
    assert_eq!(got.len(), 1);
}

#[test]
fn reliable_messages_the_pace_holds_back_leave_and_resends_wait_without_spinning() {
    let (mut net, cp) = pair();
    let sent = spend_the_burst(&mut net, cp, CHANNEL_RELIABLE);
    messages(&net.events(S));
    let held_at = net.now;
    let got = run_timers(&mut net, held_at + 2_000_000);
    let (at, first) = got.first().expect("the held reliable message never left without another flush");
    assert_eq!(first, &(sent as u32).to_le_bytes().to_vec());
    assert!(at - held_at <= 1_400, "left {} µs after its flush", at - held_at);
}

/// Resends that come due while the pace is spent wait for it; the timer in between is
/// the pace's, not the resend's (already past), so the thread sleeps meanwhile.
#[test]
fn resends_held_by_the_pace_do_not_leave_a_timer_due() {
    let (mut net, cp) = pair();
    // Reliable messages whose datagrams are all lost: each will be resent.
    for i in 0..140u32 {
        net.now += 10;
        let now = net.now;
        net.ep(C).send(cp, CHANNEL_RELIABLE, &i.to_le_bytes()).unwrap();
        net.ep(C).flush(now);
        net.take(C);
    }
    // The resends come due with the pace near empty; run_timers asserts that no timer
    // is left due after an update, and that the resends get through in the end.
    let until = net.now + 3_000_000;
    let got = run_timers(&mut net, until);
    let mut seen: Vec<u32> = got.iter().map(|(_, m)| u32::from_le_bytes(m[..4].try_into().unwrap())).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 140, "every lost reliable message resent and delivered");
}
