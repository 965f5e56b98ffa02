//! Tests of the network loop against a scripted protocol (`protocol.rs`).

use super::*;
use crate::protocol::fake::FakeProtocol;
use crate::waker;

fn parts(events: Sender<ThreadMsg>) -> (ThreadParts<FakeProtocol>, Sender<Command>) {
    let (waker, waiter) = waker::pair().unwrap();
    let (cmd_tx, cmd_rx) = crossbeam_channel::bounded(16);
    let shared = Arc::new(Shared {
        waker,
        shutdown: AtomicBool::new(false),
        inject_panic: AtomicBool::new(false),
        fatal: Mutex::new(None),
        polled: Default::default(),
        log: Default::default(),
    });
    let p = ThreadParts {
        proto: FakeProtocol::new(),
        socket: UdpSocket::bind("127.0.0.1:0").unwrap(),
        waiter,
        shared,
        clock: SystemClock::new(),
        commands: cmd_rx,
        events,
        send_pool: BufferPool::new(1),
        msg_pool: BufferPool::new(1),
        outbound_sim: None,
        inbound_sim: None,
        sim_seed: 1,
        auto_flush_us: 0,
        idle_cap: IDLE_CAP,
    };
    (p, cmd_tx)
}

fn event_no(m: ThreadMsg) -> u8 {
    match m {
        ThreadMsg::Event(HostEvent::Message { data, .. }) => data[0],
        other => panic!("unexpected {other:?}"),
    }
}

/// Feeds `n` one-byte datagrams `[channel 0, i]` from one address to the loop's fake
/// protocol (the first also creates the peer: a `Connected` event).
fn feed(l: &mut NetLoop<FakeProtocol>, n: u8) {
    let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for i in 0..n {
        l.p.proto.handle_datagram(0, from, &[0, i]);
    }
}

#[test]
fn a_full_event_channel_leaves_events_in_the_protocol_in_order() {
    let (tx, rx) = crossbeam_channel::bounded(4);
    let (p, _cmd) = parts(tx);
    let mut l = NetLoop::new(p);
    feed(&mut l, 10);
    // The accepted peer's Connected brings its budget and statistics: three of four.
    l.forward_events();
    let first: Vec<ThreadMsg> = rx.try_iter().collect();
    assert!(matches!(first[..], [ThreadMsg::PeerBudget(..), ThreadMsg::PeerStats(..), ThreadMsg::Event(_)]));
    // Nothing waits on the thread: the rest is still in the protocol.
    assert_eq!((l.to_engine.waiting(), l.rt.event_backlog), (0, 10));
    let mut got = Vec::new();
    for _ in 0..10 {
        l.forward_events();
        got.extend(rx.try_iter().map(event_no));
    }
    assert_eq!(got, (0..10).collect::<Vec<_>>(), "all of them, in order");
    assert_eq!(l.rt.event_backlog, 0);
}

#[test]
fn received_messages_in_the_channel_are_limited_until_the_engine_takes_them() {
    use crate::to_engine::{MAX_BYTES_IN_CHANNEL, MAX_MESSAGES_IN_CHANNEL, MESSAGE_OVERHEAD};
    let (tx, rx) = crossbeam_channel::bounded(8192);
    let (p, _cmd) = parts(tx);
    let shared = p.shared.clone();
    let mut l = NetLoop::new(p);
    for _ in 0..10 {
        feed(&mut l, 200);
    }
    // The fake's messages come in datagram-sized buffers: the bytes bind first.
    let per = (tickwire_proto::wire::MAX_DATAGRAM_SIZE as u64) + MESSAGE_OVERHEAD;
    let limit = MAX_BYTES_IN_CHANNEL.div_ceil(per).min(MAX_MESSAGES_IN_CHANNEL);
    l.forward_events();
    assert_eq!(rx.len() as u64, 3 + limit, "the Connected with its figures, and the limit");
    assert_eq!(l.rt.event_backlog, 2000 - limit);
    // The engine takes 100 messages (and the first three events): 100 more come.
    for m in rx.try_iter().take(103) {
        if let ThreadMsg::Event(HostEvent::Message { data, .. }) = m {
            shared.polled.took(&data);
        }
    }
    l.forward_events();
    assert_eq!(rx.len() as u64, limit);
    assert_eq!(l.rt.event_backlog, 2000 - limit - 100);
}

#[test]
fn sleep_time_honours_the_auto_flush_deadline() {
    let (tx, _rx) = crossbeam_channel::bounded(2);
    let (mut p, _cmd) = parts(tx);
    p.idle_cap = Duration::from_secs(60);
    p.auto_flush_us = 5_000;
    let l = NetLoop::new(p);
    assert!(l.sleep_time() <= Duration::from_millis(5));
}

#[test]
fn send_buffers_go_back_to_the_engine_pool() {
    let (tx, _rx) = crossbeam_channel::bounded(16);
    let (p, cmd) = parts(tx);
    let pool = p.send_pool.clone();
    let mut l = NetLoop::new(p);
    let peer_addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    cmd.send(Command::Connect { peer: 7, addr: peer_addr, budget: SendBudget::new() }).unwrap();
    cmd.send(Command::Send { peer: 7, channel: 0, data: Vec::with_capacity(300) }).unwrap();
    cmd.send(Command::Send { peer: 8, channel: 0, data: Vec::with_capacity(300) }).unwrap();
    l.apply_commands(0);
    assert_eq!(l.rt.sends_rejected, 1, "peer 8 is unknown to the endpoint");
    assert!(pool.try_take().is_some() && pool.try_take().is_some(), "both buffers returned");
}
