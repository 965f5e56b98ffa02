//! GGRS's run: a `P2PSession` over a `NonBlockingSocket` on the same links.

use crate::game::{GameState, input_for};
use crate::ggrs_wire_size::DebugScan;
use crate::measure::{Meter, Results, compare_checksums};
use crate::scenario::{Scenario, link_config, link_seed};
use crate::with_tickwire::detail_wanted;
use crate::{DESYNC_INTERVAL, WARMUP, frame_time};
use tickwire_testkit::counting_alloc;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use ggrs::{
    Config, DesyncDetection, GgrsEvent, GgrsRequest, Message, NonBlockingSocket, P2PSession, PlayerType,
    PredictRepeatLast, SessionBuilder, SessionState,
};
use tickwire_proto::LinkConditioner;

pub(crate) struct GgrsConfig;

impl Config for GgrsConfig {
    type Input = [u8; 2];
    type InputPredictor = PredictRepeatLast;
    type State = GameState;
    type Address = usize;
}

/// The simulated network shared by the GGRS peers' sockets.
pub(crate) struct GgrsNet {
    pub(crate) n: usize,
    pub(crate) now: u64,
    pub(crate) links: Vec<LinkConditioner<Message>>,
    pub(crate) inbox: Vec<Vec<(usize, Message)>>,
    pub(crate) measuring: bool,
    pub(crate) bytes: u64,
    pub(crate) datagrams: u64,
    pub(crate) timed_bytes: u64,
    /// Time and allocations spent inside the socket, per peer, since the last reset.
    pub(crate) socket_ns: Vec<u64>,
    pub(crate) socket_sections: Vec<u64>,
    pub(crate) socket_allocs: Vec<u64>,
    pub(crate) scan: DebugScan,
    /// BENCH_DETAIL=1: message kinds and inputs carried, counted here.
    pub(crate) detail: bool,
    pub(crate) diag: Results,
    /// Each peer's frame whose input `advance_frame` is about to send.
    pub(crate) sending_frame: Vec<i32>,
}

pub(crate) struct SimSocket {
    pub(crate) me: usize,
    pub(crate) net: Rc<RefCell<GgrsNet>>,
}

impl NonBlockingSocket<usize> for SimSocket {
    fn send_to(&mut self, msg: &Message, addr: &usize) {
        let t = Meter::start();
        let mut net = self.net.borrow_mut();
        let (size, timed) = net.scan.wire_size(msg);
        if net.measuring {
            net.bytes += size as u64;
            net.datagrams += 1;
            if timed {
                net.timed_bytes += size as u64;
            }
            if net.detail {
                let (name, start) = net.scan.variant();
                net.diag.kind(name, size);
                if let Some(start) = start {
                    let carried = (net.sending_frame[self.me] - start + 1).max(1) as u64;
                    net.diag.input_msgs += 1;
                    net.diag.carried += carried;
                }
                if name == "ChecksumReport" {
                    net.diag.reports += 1;
                }
            }
        }
        let (now, k) = (net.now, self.me * net.n + *addr);
        net.links[k].send(now, size, msg.clone());
        net.socket_ns[self.me] += t.0.elapsed().as_nanos() as u64;
        net.socket_sections[self.me] += 1;
        net.socket_allocs[self.me] += counting_alloc::allocations() - t.1;
    }

    fn receive_all_messages(&mut self) -> Vec<(usize, Message)> {
        let t = Meter::start();
        let mut net = self.net.borrow_mut();
        let out = std::mem::take(&mut net.inbox[self.me]);
        net.socket_ns[self.me] += t.0.elapsed().as_nanos() as u64;
        net.socket_sections[self.me] += 1;
        net.socket_allocs[self.me] += counting_alloc::allocations() - t.1;
        out
    }
}

pub(crate) fn run_ggrs(s: &Scenario, frames: u64, calib: f64) -> Results {
    let n = s.peers;
    let total = WARMUP + frames;
    let net = Rc::new(RefCell::new(GgrsNet {
        n,
        now: 0,
        links: (0..n * n)
            .map(|k| LinkConditioner::new(link_config(s.latency_ticks), link_seed(s.seed, k / n, k % n)))
            .collect(),
        inbox: (0..n).map(|_| Vec::new()).collect(),
        measuring: false,
        bytes: 0,
        datagrams: 0,
        timed_bytes: 0,
        socket_ns: vec![0; n],
        socket_sections: vec![0; n],
        socket_allocs: vec![0; n],
        scan: DebugScan::new(),
        detail: detail_wanted(),
        diag: Results::new(0, 0),
        sending_frame: vec![0; n],
    }));
    let mut sessions: Vec<P2PSession<GgrsConfig>> = (0..n)
        .map(|i| {
            let mut b = SessionBuilder::<GgrsConfig>::new()
                .with_num_players(n)
                .expect("players")
                .with_max_prediction_window(8)
                .with_input_delay(0)
                .with_fps(60)
                .expect("fps")
                .with_desync_detection_mode(DesyncDetection::On { interval: DESYNC_INTERVAL });
            for j in 0..n {
                let kind = if j == i { PlayerType::Local } else { PlayerType::Remote(j) };
                b = b.add_player(kind, j).expect("player");
            }
            b.start_p2p_session(SimSocket { me: i, net: net.clone() }).expect("session")
        })
        .collect();
    let mut games = vec![GameState::new(n); n];
    let mut sums = vec![vec![None; total as usize + 64]; n];
    let mut skip = vec![0u32; n];
    let mut desyncs = 0u64;
    let mut res = Results::new(frames, n);

    // Sync handshake (not measured). GGRS retries on wall-clock timers: let time pass.
    let mut frame = 0u64;
    while sessions.iter().any(|s| s.current_state() != SessionState::Running) {
        deliver_ggrs(&net, frame_time(frame));
        for s in sessions.iter_mut() {
            s.poll_remote_clients();
            s.events().for_each(drop);
        }
        frame += 1;
        std::thread::sleep(Duration::from_millis(1));
        assert!(frame < 60 * 60, "GGRS sessions did not synchronize");
    }
    let start = frame;

    let mut meters = vec![Meter::default(); n];
    for f in 0..total {
        let now = frame_time(start + f);
        let measuring = f >= WARMUP;
        deliver_ggrs(&net, now);
        {
            let mut g = net.borrow_mut();
            g.measuring = measuring;
            g.socket_ns.iter_mut().for_each(|x| *x = 0);
            g.socket_sections.iter_mut().for_each(|x| *x = 0);
            g.socket_allocs.iter_mut().for_each(|x| *x = 0);
        }
        for (i, session) in sessions.iter_mut().enumerate() {
            let m = &mut meters[i];
            *m = Meter::default();
            let game = &mut games[i];
            let (ticks0, depth0) = (res.ticks, res.depth_sum);
            let skipped = skip[i] > 0;
            if skipped {
                skip[i] -= 1;
                let t = Meter::start();
                session.poll_remote_clients();
                m.stop(t);
            } else {
                net.borrow_mut().sending_frame[i] = session.current_frame();
                let input = input_for(s.seed, i, session.current_frame() as u64, s.period);
                let t = Meter::start();
                session.add_local_input(i, input).expect("local input");
                let current = session.current_frame();
                let requests = session.advance_frame().expect("advance_frame");
                m.stop(t);
                for r in requests {
                    match r {
                        GgrsRequest::SaveGameState { cell, frame } => {
                            let c = game.checksum();
                            sums[i][frame as usize] = Some(c);
                            let state = *game;
                            let t = Meter::start();
                            cell.save(frame, Some(state), Some(c as u128));
                            drop(cell);
                            m.stop(t);
                        }
                        GgrsRequest::LoadGameState { cell, frame } => {
                            let t = Meter::start();
                            let state = cell.load().expect("saved state");
                            drop(cell);
                            m.stop(t);
                            *game = state;
                            if measuring {
                                res.rollback((current - frame) as u64);
                            }
                        }
                        GgrsRequest::AdvanceFrame { inputs } => {
                            game.step(|q| inputs[q].0);
                            if measuring {
                                res.ticks += 1;
                            }
                            let t = Meter::start();
                            drop(inputs);
                            m.stop(t);
                        }
                    }
                }
            }
            let t = Meter::start();
            for e in session.events() {
                match e {
                    GgrsEvent::WaitRecommendation { skip_frames } => skip[i] = skip_frames,
                    GgrsEvent::DesyncDetected { .. } => desyncs += 1,
                    _ => {}
                }
            }
            m.stop(t);
            if measuring {
                res.frame_done((res.ticks - ticks0) - (res.depth_sum - depth0), !skipped, skipped);
            }
        }
        if measuring {
            let g = net.borrow();
            for (i, m) in meters.iter_mut().enumerate() {
                // Take out the socket's share (its time, its timer calls, its allocations).
                m.ns = m.ns.saturating_sub(g.socket_ns[i]);
                m.sections += g.socket_sections[i];
                m.allocs -= g.socket_allocs[i];
                res.sample(m, calib);
            }
        }
    }
    res.ticks -= res.depth_sum;
    {
        let g = net.borrow();
        res.bytes = g.bytes;
        res.datagrams = g.datagrams;
        res.timed_bytes = g.timed_bytes;
        res.kinds = g.diag.kinds.clone();
        res.input_msgs = g.diag.input_msgs;
        res.carried = g.diag.carried;
        res.reports = g.diag.reports;
    }
    // `confirmed_frame` is the last frame whose inputs are all in: states up to the
    // next one are final.
    let last = sessions.iter().map(|s| s.confirmed_frame().max(0) as u64 + 1).min().unwrap_or(0);
    compare_checksums(&sums, last, &mut res);
    if desyncs > 0 && res.void.is_none() {
        res.void = Some(format!("{desyncs} desync events"));
    }
    res
}

/// Moves every message due at `now` into its receiver's inbox.
pub(crate) fn deliver_ggrs(net: &Rc<RefCell<GgrsNet>>, now: u64) {
    let mut g = net.borrow_mut();
    g.now = now;
    let n = g.n;
    for k in 0..n * n {
        while let Some(msg) = g.links[k].poll(now) {
            g.inbox[k % n].push((k / n, msg));
        }
    }
}
