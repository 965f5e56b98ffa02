//! A match through a hostile proxy, over real UDP on 127.0.0.1 through the C ABI: a
//! thread between the sessions corrupts, truncates, replays, duplicates and reorders 5%
//! of the datagrams in each direction (1% each), and every player stays in the match
//! and in sync (relay: a server and 4 clients; P2P: 2 peers). Encryption is on (the
//! default): a tampered datagram is dropped and counted as `forged`, a replayed or
//! duplicated one as `replayed`, so the game protocol above sees only loss and
//! reordering. Replays stay within one flow (a client's, or one P2P direction).

use crate::support::abi_engine;

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;
use tickwire_proto::Rng;

const SEED: u64 = 41;
const PERIOD: u32 = 5;
const PLAYERS: u32 = 4;
/// Mangled datagrams per 10 000, per direction.
const MANGLE_PER_10K: u64 = 500;
const KINDS: [&str; 5] = ["corrupt", "truncate", "replay", "duplicate", "reorder"];
const PLAY: Duration = Duration::from_secs(8);

/// The two tests share 2 cores with 7 sessions' network threads: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// What the proxy did to one direction: datagrams seen, and mangled by kind.
#[derive(Clone, Copy, Default, Debug)]
struct Counts {
    seen: u64,
    kind: [u64; 5],
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.seen += o.seen;
        for (a, b) in self.kind.iter_mut().zip(o.kind) {
            *a += b;
        }
    }

    fn mangled(&self) -> u64 {
        self.kind.iter().sum()
    }

    fn describe(&self) -> String {
        let kinds: Vec<String> = KINDS.iter().zip(self.kind).map(|(k, n)| format!("{k} {n}")).collect();
        format!(
            "{} datagrams, {} mangled ({:.2}%): {}",
            self.seen,
            self.mangled(),
            100.0 * self.mangled() as f64 / self.seen.max(1) as f64,
            kinds.join(", ")
        )
    }

    #[track_caller]
    fn assert_hostile(&self, dir: &str) {
        for (k, n) in KINDS.iter().zip(self.kind) {
            assert!(n > 0, "{dir}: the proxy did no {k}: {}", self.describe());
        }
        let rate = self.mangled() as f64 / self.seen as f64;
        assert!((0.03..=0.07).contains(&rate), "{dir}: mangled {:.2}%: {}", rate * 100.0, self.describe());
    }
}

/// One direction of one flow: decides each datagram's fate.
struct Mangler {
    rng: Rng,
    /// The last 200 datagrams of this direction, newest last (for replays).
    ring: VecDeque<Vec<u8>>,
    /// A datagram held back, to go out after the next one.
    held: Option<Vec<u8>>,
    counts: Counts,
}

impl Mangler {
    fn new(seed: u64) -> Mangler {
        Mangler { rng: Rng::new(seed), ring: VecDeque::with_capacity(201), held: None, counts: Counts::default() }
    }

    /// Appends to `out` what goes on the wire in place of datagram `d`, in order.
    fn process(&mut self, d: &[u8], out: &mut Vec<Vec<u8>>) {
        self.counts.seen += 1;
        let kind = (self.rng.below(10_000) < MANGLE_PER_10K).then(|| self.rng.below(5) as usize);
        let before = self.held.take();
        let applied = match kind {
            Some(0) if !d.is_empty() => {
                let mut c = d.to_vec();
                for _ in 0..1 + self.rng.below(3) {
                    let bit = self.rng.below(c.len() as u64 * 8) as usize;
                    c[bit / 8] ^= 1 << (bit % 8);
                }
                out.push(c);
                true
            }
            Some(1) if !d.is_empty() => {
                out.push(d[..self.rng.below(d.len() as u64) as usize].to_vec());
                true
            }
            Some(2) if self.ring.len() >= 10 => {
                let back = 10 + self.rng.below(self.ring.len() as u64 - 9) as usize;
                out.push(self.ring[self.ring.len() - back].clone());
                true
            }
            Some(3) => {
                out.extend([d.to_vec(), d.to_vec()]);
                true
            }
            Some(4) => {
                self.held = Some(d.to_vec());
                true
            }
            // Too early for a replay (or nothing to cut): passes unchanged, uncounted.
            _ => {
                out.push(d.to_vec());
                false
            }
        };
        if applied {
            self.counts.kind[kind.unwrap()] += 1;
        }
        out.extend(before);
        if self.ring.len() == 200 {
            self.ring.pop_front();
        }
        self.ring.push_back(d.to_vec());
    }
}

fn bind() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_nonblocking(true).unwrap();
    s
}

/// Reads every datagram waiting on `rx`, mangles it and sends the result to `to`
/// from `tx`. Returns whether anything was read.
fn pump(rx: &UdpSocket, m: &mut Mangler, tx: &UdpSocket, to: SocketAddr, buf: &mut [u8]) -> bool {
    let mut out = Vec::new();
    let mut any = false;
    while let Ok((n, _)) = rx.recv_from(buf) {
        any = true;
        m.process(&buf[..n], &mut out);
        for d in out.drain(..) {
            let _ = tx.send_to(&d, to);
        }
    }
    any
}

/// What the proxy did per flow (named by its client's address) and direction ([0]
/// toward the server or from A to B, [1] back).
type FlowCounts = Vec<(SocketAddr, [Counts; 2])>;

/// The proxy thread, stopped on drop.
struct Proxy {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<FlowCounts>>,
}

impl Proxy {
    fn spawn(f: impl FnOnce(&AtomicBool) -> FlowCounts + Send + 'static) -> Proxy {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        Proxy { stop, thread: Some(std::thread::spawn(move || f(&s))) }
    }

    /// Stops the proxy: the counts per flow, and their sums per direction.
    fn finish(mut self) -> (FlowCounts, [Counts; 2]) {
        self.stop.store(true, Ordering::Relaxed);
        let flows = self.thread.take().unwrap().join().unwrap();
        let mut sum = [Counts::default(); 2];
        for (_, f) in &flows {
            sum[0].add(&f[0]);
            sum[1].add(&f[1]);
        }
        (flows, sum)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A NAT-like proxy in front of `server`: each new client source address gets its own
/// upstream socket, whose replies go back to that client. Returns its client-facing
/// address.
fn relay_proxy(server: SocketAddr) -> (SocketAddr, Proxy) {
    let front = bind();
    let addr = front.local_addr().unwrap();
    let proxy = Proxy::spawn(move |stop| {
        // (client address, upstream socket, client to server, server to client)
        let mut flows: Vec<(SocketAddr, UdpSocket, Mangler, Mangler)> = Vec::new();
        let mut buf = vec![0u8; 65536];
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let mut busy = false;
            while let Ok((n, from)) = front.recv_from(&mut buf) {
                busy = true;
                let i = flows.iter().position(|f| f.0 == from).unwrap_or_else(|| {
                    let seed = SEED ^ ((flows.len() as u64 + 1) << 12);
                    flows.push((from, bind(), Mangler::new(seed), Mangler::new(seed + 1)));
                    flows.len() - 1
                });
                flows[i].2.process(&buf[..n], &mut out);
                for d in out.drain(..) {
                    let _ = flows[i].1.send_to(&d, server);
                }
            }
            for (client, up, _, down) in &mut flows {
                busy |= pump(up, down, &front, *client, &mut buf);
            }
            if !busy {
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        flows.iter().map(|f| (f.0, [f.2.counts, f.3.counts])).collect()
    });
    (addr, proxy)
}

/// A proxy between P2P peers at `a` and `b`: A is told B is at PB and B is told A is at
/// PA; what arrives at PB goes to B from PA, what arrives at PA goes to A from PB.
/// Returns (PA, PB).
fn p2p_proxy(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr, Proxy) {
    let (pa, pb) = (bind(), bind());
    let (pa_addr, pb_addr) = (pa.local_addr().unwrap(), pb.local_addr().unwrap());
    let proxy = Proxy::spawn(move |stop| {
        let (mut to_b, mut to_a) = (Mangler::new(SEED ^ 0xA), Mangler::new(SEED ^ 0xB));
        let mut buf = vec![0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let busy = pump(&pb, &mut to_b, &pa, b, &mut buf) | pump(&pa, &mut to_a, &pb, a, &mut buf);
            if !busy {
                std::thread::sleep(Duration::from_micros(300));
            }
        }
        vec![(a, [to_b.counts, to_a.counts])]
    });
    (pa_addr, pb_addr, proxy)
}

fn of_kind(events: &[tw_session_event], k: tw_session_event_kind) -> Vec<tw_session_event> {
    events.iter().filter(|e| e.kind == k as u32).copied().collect()
}

/// Asserts that none of `bad` is among `events`.
#[track_caller]
fn assert_none(who: &str, events: &[tw_session_event], bad: &[tw_session_event_kind]) {
    let kinds: Vec<u32> = events.iter().map(|e| e.kind).collect();
    for &k in bad {
        assert!(!kinds.contains(&(k as u32)), "{who}: a {k:?} event: {kinds:?}");
    }
}

fn peer_stats(s: *mut tw_session, peer: u32) -> tw_peer_stats {
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    // SAFETY: live session, writable storage.
    ok(unsafe { tw_session_peer_stats(s, peer, ps.as_mut_ptr()) });
    // SAFETY: written on success.
    unsafe { ps.assume_init() }
}

fn player_peer(s: *mut tw_session, player: u32) -> u32 {
    let mut peer = 0;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_player_peer(s, player, &mut peer) });
    peer
}

struct Client {
    s: SessionGuard,
    e: Engine,
    events: Vec<tw_session_event>,
    pushed: u32,
}

fn client_frame(i: usize, c: &mut Client) {
    relay_client_frame(c.s.0, &mut c.e, i, &mut c.pushed, (SEED, PERIOD), &mut c.events);
}

#[test]
fn a_relay_match_through_a_hostile_proxy_keeps_every_player_in_sync() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut cfg = session_config(tw_session_mode::RelayServer, PLAYERS);
    cfg.max_prediction = 16;
    let server = create(&cfg);
    let mut slots = 0;
    // SAFETY: live session, valid pointers.
    unsafe {
        ok(tw_session_state_slots(server.0, &mut slots));
        ok(tw_session_start(server.0));
    }
    let mut es = Engine::new(PLAYERS as usize, slots as usize);
    es.record_after_advance = true;
    // The server's first ADVANCE is tick 1, so nothing records the state at its start,
    // the initial one, which a client joining at once gets as its snapshot.
    es.checksums = vec![None, Some(es.checksum())];
    let mut server_events = Vec::new();
    let (proxy_addr, proxy) = relay_proxy(local_address(server.0).parse().unwrap());
    let proxy_c = cstr(&proxy_addr.to_string());
    let mut clients: Vec<Client> = (0..PLAYERS)
        .map(|_| {
            let mut cfg = session_config(tw_session_mode::RelayClient, PLAYERS);
            cfg.max_prediction = 16;
            let s = create(&cfg);
            let mut slots = 0;
            // SAFETY: live session, valid pointers.
            unsafe {
                ok(tw_session_state_slots(s.0, &mut slots));
                ok(tw_session_set_server(s.0, proxy_c.as_ptr()));
                ok(tw_session_start(s.0));
            }
            let mut e = Engine::new(PLAYERS as usize, slots as usize);
            e.state.iter_mut().for_each(|w| *w = -1); // replaced by the server's snapshot
            Client { s, e, events: Vec::new(), pushed: 0 }
        })
        .collect();
    let joined = |c: &Client| !of_kind(&c.events, tw_session_event_kind::Joined).is_empty();
    let start = Instant::now();
    let mut play_from: Option<Instant> = None;
    while play_from.is_none_or(|t| t.elapsed() < PLAY) {
        frame(server.0, &mut es, &[], SEED, PERIOD, &mut server_events);
        for (i, c) in clients.iter_mut().enumerate() {
            client_frame(i, c);
        }
        if play_from.is_none() && clients.iter().all(joined) {
            play_from = Some(Instant::now());
            println!("all {PLAYERS} clients joined after {:?}", start.elapsed());
        }
        assert!(play_from.is_some() || start.elapsed() < Duration::from_secs(10), "not all joined within 10 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    let (flows, counts) = proxy.finish();

    // Nobody left, was kicked, lost the server or had to reconnect or resync.
    use tw_session_event_kind as K;
    assert_none("server", &server_events, &[K::PlayerLeft, K::PlayerKicked, K::PlayerSlotFreed, K::PlayerReconnected]);
    assert_none("server", &server_events, &[K::Fatal, K::NoProgress, K::PeerDisconnected, K::PeerInterrupted]);
    assert_eq!(of_kind(&server_events, K::PlayerJoined).len(), PLAYERS as usize);
    let ss = stats(server.0);
    assert_eq!((ss.players, ss.connected_peers), (PLAYERS, PLAYERS));
    assert_eq!(flows.len(), PLAYERS as usize, "one proxy flow per client: none came back from a new address");
    let (mut server_forged, mut server_replayed, mut client_forged, mut client_replayed) = (0, 0, 0, 0);
    let mut total_compared = 0;
    for (i, c) in clients.iter().enumerate() {
        let who = format!("client {i}");
        assert_none(&who, &c.events, &[K::ServerLost, K::Reconnecting, K::Resyncing, K::Desync, K::PeerInterrupted]);
        assert_none(&who, &c.events, &[K::PeerDisconnected, K::PlayerLeft, K::Fatal, K::NoProgress]);
        let joins = of_kind(&c.events, K::Joined);
        assert_eq!(joins.len(), 1, "{who} joined once");
        // SAFETY: the kind says the relay member is live.
        let (player, from) = unsafe { (joins[0].data.relay.player, joins[0].data.relay.tick) };
        let st = stats(c.s.0);
        assert_eq!((st.running, st.connected_peers, st.local_player, st.desyncs), (1, 1, player, 0), "{who}");
        assert!(st.checks_compared > 5, "{who} compared {} server checksums", st.checks_compared);
        // Its authoritative state equals the server's at every tick since its join.
        let to = st.confirmed_tick;
        for t in from..to {
            let server = es.checksums.get(t as usize).copied().flatten();
            assert!(server.is_some(), "the server has no checksum for tick {t}");
            let client = c.e.checksums.get(t as usize).copied().flatten();
            assert_eq!(client, server, "{who}: authoritative state at tick {t} differs from the server's");
        }
        let compared = to.saturating_sub(from);
        assert!(compared > 300, "{who}: compared only {compared} ticks");
        total_compared += compared;
        // Corruption was caught by authentication, at both ends of every connection.
        let on_server = peer_stats(server.0, player_peer(server.0, player));
        let addr: SocketAddr = local_address(c.s.0).parse().unwrap();
        let flow = flows.iter().find(|f| f.0 == addr).expect("the proxy relayed this client").1;
        let server_conn = of_kind(&c.events, K::PeerConnected).last().expect("connected to the server").peer;
        let on_client = peer_stats(c.s.0, server_conn);
        println!(
            "{who}: player {player} joined at {from}, compared ticks {from}..{to} ({compared}); \
             rollbacks {} late {} empty {}; server side forged {} replayed {} malformed {}; \
             client side forged {} replayed {} malformed {}; proxy: up {}; down {}",
            st.rollbacks,
            st.late_inputs,
            st.empty_steps,
            on_server.forged,
            on_server.replayed,
            on_server.malformed,
            on_client.forged,
            on_client.replayed,
            on_client.malformed,
            flow[0].describe(),
            flow[1].describe()
        );
        server_forged += on_server.forged;
        server_replayed += on_server.replayed;
        client_forged += on_client.forged;
        client_replayed += on_client.replayed;
    }
    println!(
        "relay through the hostile proxy: to server {}; to clients {}; ticks compared {total_compared}; \
         forged/replayed seen by the server {server_forged}/{server_replayed}, by the clients \
         {client_forged}/{client_replayed}",
        counts[0].describe(),
        counts[1].describe()
    );
    // Over all connections (one flow sees only ~3 corrupted or truncated datagrams
    // each way, and a flipped bit in the salt makes an unknown sender, not a forgery).
    assert!(server_forged > 0 && client_forged > 0, "tampering caught by authentication at both ends");
    assert!(server_replayed > 0 && client_replayed > 0, "replays and duplicates caught at both ends");
    counts[0].assert_hostile("to the server");
    counts[1].assert_hostile("to the clients");
}

#[test]
fn a_p2p_match_through_a_hostile_proxy_stays_in_sync() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cfg = session_config(tw_session_mode::P2p, 2);
    let (a, b) = (create(&cfg), create(&cfg));
    let (pa, pb, proxy) = p2p_proxy(local_address(a.0).parse().unwrap(), local_address(b.0).parse().unwrap());
    let (pa, pb) = (cstr(&pa.to_string()), cstr(&pb.to_string()));
    let mut slots = 0;
    // SAFETY: live sessions, NUL-terminated addresses, writable out.
    unsafe {
        ok(tw_session_add_local_player(a.0, 0));
        ok(tw_session_add_remote_player(a.0, 1, pb.as_ptr()));
        ok(tw_session_add_remote_player(b.0, 0, pa.as_ptr()));
        ok(tw_session_add_local_player(b.0, 1));
        ok(tw_session_state_slots(a.0, &mut slots));
        ok(tw_session_start(a.0));
        ok(tw_session_start(b.0));
    }
    let (mut ea, mut eb) = (Engine::new(2, slots as usize), Engine::new(2, slots as usize));
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    let end = Instant::now() + PLAY;
    while Instant::now() < end {
        frame(a.0, &mut ea, &[0], SEED, PERIOD, &mut va);
        frame(b.0, &mut eb, &[1], SEED, PERIOD, &mut vb);
        std::thread::sleep(Duration::from_millis(2));
    }
    let (_, counts) = proxy.finish();

    use tw_session_event_kind as K;
    for (who, v) in [("a", &va), ("b", &vb)] {
        assert_eq!(of_kind(v, K::Synchronized).len(), 1, "{who} synchronized once");
        assert_none(
            who,
            v,
            &[K::Desync, K::PeerDisconnected, K::PlayerDisconnected, K::PeerInterrupted, K::Fatal, K::NoProgress],
        );
    }
    let (sa, sb) = (stats(a.0), stats(b.0));
    assert_eq!((sa.desyncs, sb.desyncs, sa.connected_peers, sb.connected_peers), (0, 0, 1, 1));
    assert!(sa.checks_compared > 10 && sb.checks_compared > 10, "checksums were compared");
    let confirmed = sa.confirmed_tick.min(sb.confirmed_tick);
    for t in 0..confirmed as usize {
        let (ca, cb) = (ea.checksums.get(t).copied().flatten(), eb.checksums.get(t).copied().flatten());
        assert!(ca.is_some(), "peer a saved no checksum for confirmed tick {t}");
        assert_eq!(ca, cb, "tick {t} differs");
    }
    assert!(confirmed > 300, "ticks confirmed: {confirmed}");
    let (on_a, on_b) = (peer_stats(a.0, player_peer(a.0, 1)), peer_stats(b.0, player_peer(b.0, 0)));
    println!(
        "p2p through the hostile proxy: a to b {}; b to a {}; ticks compared {confirmed}; \
         rollbacks a {} b {}; a saw forged {} replayed {} malformed {}, b saw forged {} replayed {} malformed {}",
        counts[0].describe(),
        counts[1].describe(),
        sa.rollbacks,
        sb.rollbacks,
        on_a.forged,
        on_a.replayed,
        on_a.malformed,
        on_b.forged,
        on_b.replayed,
        on_b.malformed
    );
    assert!(on_a.forged > 0 && on_b.forged > 0, "tampering caught by authentication on both peers");
    assert!(on_a.replayed > 0 && on_b.replayed > 0, "replays caught on both peers");
    counts[0].assert_hostile("a to b");
    counts[1].assert_hostile("b to a");
}
