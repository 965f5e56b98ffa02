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

#[test]
fn full_event_channel_spills_to_an_ordered_backlog() {
    let (tx, rx) = crossbeam_channel::bounded(2);
    let (p, _cmd) = parts(tx);
    let mut l = NetLoop::new(p);
    for i in 0..5u8 {
        l.emit(ThreadMsg::Event(HostEvent::Message { peer: 1, channel: 0, data: vec![i], received_at: 0 }));
    }
    l.retry_backlog();
    assert_eq!(l.rt.event_backlog, 3);
    assert_eq!(event_no(rx.try_recv().unwrap()), 0);
    assert_eq!(event_no(rx.try_recv().unwrap()), 1);
    // A newer event must queue behind the backlog, not overtake it.
    l.emit(ThreadMsg::Event(HostEvent::Message { peer: 1, channel: 0, data: vec![5], received_at: 0 }));
    l.retry_backlog();
    let mut got: Vec<u8> = rx.try_iter().map(event_no).collect();
    l.retry_backlog();
    got.extend(rx.try_iter().map(event_no));
    l.retry_backlog();
    got.extend(rx.try_iter().map(event_no));
    assert_eq!(got, vec![2, 3, 4, 5]);
    assert_eq!(l.rt.event_backlog, 0);
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
