//! One peer of a two-player tickwire P2P match carried by a WebRTC data channel.
//!
//! `tickwire-webrtc-peer offer|answer <own remote id> <other remote id> <ticks> <seed>`
//!
//! str0m's `Rtc` (sans-IO) runs over a UDP socket bound to 127.0.0.1:0, whose address
//! is its one host ICE candidate. The offerer makes one data channel, unordered and
//! without retransmissions, as a game's would be. Signaling is on the standard streams
//! (the crate's documentation has the line protocol). Once the channel is open, a
//! `P2pSession` bound to `HostConfig::external(own, 1200)` plays the offerer as player
//! 0 and the answerer as player 1: every frame, what the channel delivered is pushed
//! into it (from the other's remote id, aged from its arrival on the socket) and what
//! it has to send is pulled and written to the channel.

use std::collections::HashMap;
use std::fmt::Display;
use std::io::{BufRead, ErrorKind, Write};
use std::net::{SocketAddr, UdpSocket};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use str0m::change::{SdpAnswer, SdpOffer};
use str0m::channel::{ChannelConfig, ChannelId, Reliability};
use str0m::net::{Protocol, Receive};
use str0m::{Candidate, Event, IceConnectionState, Input, Output, Rtc};
use tickwire_proto::{GameShape, RemoteId, RollbackEvent};
use tickwire_runtime::{
    EngineLoop, HostConfig, Incoming, Networked, P2pSession, P2pSettings, RequestKind, SessionEvent,
};
use tickwire_webrtc_carrier::{INPUT_SIZE, digest, hex_decode, hex_encode, input_of, step};

/// The largest datagram the session sends: about what a data channel message carries
/// without IP fragmentation of the SCTP packets under it.
const MAX_DATAGRAM: usize = 1200;
/// How often the engine runs a frame.
const FRAME: Duration = Duration::from_millis(2);
/// The longest wait for the other's SDP.
const SIGNALING_WAIT: Duration = Duration::from_secs(20);
/// The longest wait for the data channel to open once the SDPs are exchanged.
const CONNECT_WAIT: Duration = Duration::from_secs(20);
/// The longest the match may take, from the start of the process.
const RUN_LIMIT: Duration = Duration::from_secs(50);
/// How long a peer that is done keeps playing for its peer, without a `STOP`.
const LINGER: Duration = Duration::from_secs(15);

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tickwire-webrtc-peer: {e}");
            ExitCode::FAILURE
        }
    }
}

fn fail<E: Display>(what: &'static str) -> impl FnOnce(E) -> String {
    move |e| format!("{what}: {e}")
}

/// Prints one line on standard output, at once (the test reads it as it comes).
fn say(line: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(fail("stdout"))
}

/// The lines of standard input, read on a thread of their own.
fn stdin_lines() -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The line starting `word ` on standard input, its hex argument decoded as text.
fn expect_line(lines: &Receiver<String>, word: &str) -> Result<String, String> {
    let line = match lines.recv_timeout(SIGNALING_WAIT) {
        Ok(line) => line,
        Err(RecvTimeoutError::Timeout) => return Err(format!("no {word} within {SIGNALING_WAIT:?}")),
        Err(RecvTimeoutError::Disconnected) => return Err(format!("standard input closed before {word}")),
    };
    let hex =
        line.strip_prefix(word).and_then(|r| r.strip_prefix(' ')).ok_or(format!("expected {word}, got {line:?}"))?;
    let bytes = hex_decode(hex.trim()).ok_or(format!("{word} is not hex"))?;
    String::from_utf8(bytes).map_err(fail("SDP text"))
}

/// The WebRTC side: str0m's `Rtc`, its socket, and what its outputs told.
struct Wire {
    rtc: Rtc,
    socket: UdpSocket,
    local: SocketAddr,
    /// Open once `ChannelOpen` came.
    channel: Option<ChannelId>,
    /// Messages the channel delivered, with the arrival of the UDP datagram that
    /// completed them, for the next frame.
    inbox: Vec<(Vec<u8>, Instant)>,
    /// When the datagram being handled arrived.
    arrival: Instant,
    /// str0m's next deadline.
    timeout: Instant,
    /// The channel closed or ICE disconnected.
    broken: Option<String>,
    udp_sent: u64,
    udp_received: u64,
}

impl Wire {
    /// Drains the `Rtc`'s outputs until its next timeout, as str0m requires after
    /// every mutation: transmits go to the socket, events are noted.
    fn drain(&mut self) -> Result<(), String> {
        loop {
            match self.rtc.poll_output().map_err(fail("poll_output"))? {
                Output::Timeout(t) => {
                    self.timeout = t;
                    return Ok(());
                }
                Output::Transmit(t) => {
                    // A full socket buffer loses the datagram, as the network may.
                    if self.socket.send_to(&t.contents, t.destination).is_ok() {
                        self.udp_sent += 1;
                    }
                }
                Output::Event(e) => match e {
                    Event::ChannelOpen(id, label) => {
                        eprintln!("data channel {label:?} open");
                        self.channel = Some(id);
                    }
                    Event::ChannelData(d) => self.inbox.push((d.data, self.arrival)),
                    Event::ChannelClose(_) => self.broken = Some("the data channel closed".into()),
                    Event::IceConnectionStateChange(s) => {
                        eprintln!("ICE {s:?}");
                        if s == IceConnectionState::Disconnected {
                            self.broken = Some("ICE disconnected".into());
                        }
                    }
                    _ => {}
                },
            }
        }
    }

    /// Waits until `until` (or str0m's own deadline, if sooner) for one datagram, and
    /// hands it, or the time, to the `Rtc`.
    fn turn(&mut self, until: Instant) -> Result<(), String> {
        let wait = until.min(self.timeout).saturating_duration_since(Instant::now());
        // A read timeout of zero is refused: at least 1 ms.
        self.socket.set_read_timeout(Some(wait.max(Duration::from_millis(1)))).map_err(fail("read timeout"))?;
        let mut buf = [0u8; 2048];
        let got = self.socket.recv_from(&mut buf);
        let now = Instant::now();
        match got {
            Ok((n, source)) => {
                self.udp_received += 1;
                self.arrival = now;
                // Anything not STUN, DTLS, RTP or RTCP is not for the Rtc.
                let Ok(r) = Receive::new(Protocol::Udp, source, self.local, &buf[..n]) else { return Ok(()) };
                self.rtc.handle_input(Input::Receive(now, r)).map_err(fail("handle_input"))?;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                self.rtc.handle_input(Input::Timeout(now)).map_err(fail("handle_input"))?;
            }
            Err(e) => return Err(format!("recv: {e}")),
        }
        self.drain()
    }

    /// Writes one datagram to the data channel; false if the channel did not take it.
    fn send(&mut self, data: &[u8]) -> Result<bool, String> {
        let Some(id) = self.channel else { return Ok(false) };
        let taken = match self.rtc.channel(id) {
            Some(mut ch) => ch.write(true, data).map_err(fail("channel write"))?,
            None => false,
        };
        self.drain()?;
        Ok(taken)
    }
}

/// What the match did, for the report.
#[derive(Default)]
struct Figures {
    pushed: u64,
    pulled: u64,
    refused_writes: u64,
    desync_events: u64,
    advances: u64,
}

/// The game: a rolling hash of every input applied, its snapshots by slot, and its
/// state after each tick as last simulated.
#[derive(Default)]
struct Game {
    state: u64,
    slots: HashMap<usize, u64>,
    after: HashMap<u32, u64>,
}

fn run() -> Result<ExitCode, String> {
    let started = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [role, own, other, ticks, seed] = args.as_slice() else {
        return Err("usage: tickwire-webrtc-peer offer|answer OWN_ID OTHER_ID TICKS SEED".into());
    };
    let offerer = match role.as_str() {
        "offer" => true,
        "answer" => false,
        r => return Err(format!("role {r:?}: offer or answer")),
    };
    let own: u64 = own.parse().map_err(fail("own id"))?;
    let other: u64 = other.parse().map_err(fail("other id"))?;
    let ticks: u32 = ticks.parse().map_err(fail("ticks"))?;
    let seed: u64 = seed.parse().map_err(fail("seed"))?;
    let lines = stdin_lines();

    // The socket and its host candidate.
    let socket = UdpSocket::bind("127.0.0.1:0").map_err(fail("bind"))?;
    let local = socket.local_addr().map_err(fail("local_addr"))?;
    eprintln!("{role}: UDP {local}");
    let now = Instant::now();
    let mut wire = Wire {
        rtc: Rtc::new(now),
        socket,
        local,
        channel: None,
        inbox: Vec::new(),
        arrival: now,
        timeout: now,
        broken: None,
        udp_sent: 0,
        udp_received: 0,
    };
    let candidate = Candidate::host(local, "udp").map_err(fail("host candidate"))?;
    wire.rtc.add_local_candidate(candidate);
    wire.drain()?;

    // Signaling: the SDPs carry the candidates.
    if offerer {
        let mut api = wire.rtc.sdp_api();
        api.add_channel_with_config(ChannelConfig {
            label: "tickwire".into(),
            ordered: false,
            reliability: Reliability::MaxRetransmits { retransmits: 0 },
            ..ChannelConfig::default()
        });
        let (offer, pending) = api.apply().ok_or("no offer to make")?;
        wire.drain()?;
        say(&format!("OFFER {}", hex_encode(offer.to_sdp_string().as_bytes())))?;
        let answer = SdpAnswer::from_sdp_string(&expect_line(&lines, "ANSWER")?).map_err(fail("answer"))?;
        wire.rtc.sdp_api().accept_answer(pending, answer).map_err(fail("accept_answer"))?;
    } else {
        let offer = SdpOffer::from_sdp_string(&expect_line(&lines, "OFFER")?).map_err(fail("offer"))?;
        let answer = wire.rtc.sdp_api().accept_offer(offer).map_err(fail("accept_offer"))?;
        wire.drain()?;
        say(&format!("ANSWER {}", hex_encode(answer.to_sdp_string().as_bytes())))?;
    }
    wire.drain()?;

    // ICE, DTLS, SCTP, then the channel.
    let signaled = Instant::now();
    while wire.channel.is_none() {
        if let Some(why) = &wire.broken {
            return Err(format!("before the channel opened: {why}"));
        }
        if signaled.elapsed() > CONNECT_WAIT {
            return Err(format!("the data channel did not open within {CONNECT_WAIT:?}"));
        }
        wire.turn(Instant::now() + Duration::from_millis(50))?;
    }
    let connect_ms = signaled.elapsed().as_millis();

    // The match: the offerer is player 0.
    let (me, them) = if offerer { (0, 1) } else { (1, 0) };
    let game_shape = GameShape::new(2, INPUT_SIZE);
    let mut settings = P2pSettings::new(game_shape, HostConfig::external(RemoteId(own), MAX_DATAGRAM));
    // Compare checksums with the peer at every tick it can.
    settings.desync_interval = 1;
    let mut s = P2pSession::new(settings).map_err(fail("session"))?;
    s.add_local_player(me).map_err(fail("local player"))?;
    s.add_remote_player(them, RemoteId(other).to_addr()).map_err(fail("remote player"))?;
    s.start().map_err(fail("start"))?;
    assert!(s.is_external());

    let mut game = Game::default();
    let mut fig = Figures::default();
    let mut outgoing: Vec<Vec<u8>> = Vec::new();
    let mut done_at: Option<Instant> = None;
    let mut next_frame = Instant::now();
    loop {
        wire.turn(next_frame)?;
        if let Some(why) = &wire.broken {
            if done_at.is_none() {
                return Err(format!("during the match: {why}"));
            }
            // The other is done and gone.
            break;
        }
        if Instant::now() < next_frame {
            continue;
        }
        next_frame = Instant::now() + FRAME;

        // What the channel delivered, from the other peer.
        let now = Instant::now();
        let mut arrived = wire.inbox.iter().map(|(data, at)| Incoming {
            remote: RemoteId(other),
            data,
            age_us: now.saturating_duration_since(*at).as_micros() as u64,
        });
        fig.pushed += s.push_datagrams(&mut arrived).map_err(fail("push_datagrams"))? as u64;
        wire.inbox.clear();

        // The engine's frame.
        let due = s.ticks_due().map_err(fail("ticks_due"))?;
        let confirmed = s.stats().core.confirmed_tick;
        for _ in 0..due {
            let tick = s.stats().core.current_tick;
            s.add_input(me, &input_of(seed, me, tick)).map_err(fail("add_input"))?;
            s.advance().map_err(fail("advance"))?;
            while let Some(r) = s.poll_request() {
                match r.kind {
                    RequestKind::Save => {
                        game.slots.insert(r.slot, game.state);
                        s.confirm_save(r.tick, game.state).map_err(fail("confirm_save"))?;
                    }
                    RequestKind::Load => {
                        game.state = *game.slots.get(&r.slot).ok_or(format!("load of empty slot {}", r.slot))?;
                    }
                    RequestKind::Advance => {
                        let inputs = s.request_inputs().ok_or("an advance without inputs")?;
                        game.state = step(game.state, r.tick, inputs);
                        game.after.insert(r.tick, game.state);
                        fig.advances += 1;
                    }
                    RequestKind::DumpState => {
                        let bytes = game.slots.get(&r.slot).copied().unwrap_or(game.state).to_le_bytes();
                        s.provide_state(r.tick, &bytes).map_err(fail("provide_state"))?;
                    }
                    RequestKind::Restore => {
                        let b = s.request_state().ok_or("a restore without state")?;
                        game.state = u64::from_le_bytes(b.try_into().map_err(fail("restored state"))?);
                    }
                }
            }
        }
        while let Some(e) = s.poll_event() {
            match e {
                SessionEvent::Core(RollbackEvent::Desync { .. }) => {
                    eprintln!("{role}: {e:?}");
                    fig.desync_events += 1;
                }
                SessionEvent::Fatal(m) => return Err(format!("session fatal: {m}")),
                _ => {}
            }
        }

        // What the session sends, onto the channel.
        s.pull_datagrams(&mut |o| {
            outgoing.push(o.data.to_vec());
            true
        })
        .map_err(fail("pull_datagrams"))?;
        for d in outgoing.drain(..) {
            fig.pulled += 1;
            if !wire.send(&d)? {
                fig.refused_writes += 1;
            }
        }

        // Done once every tick before `ticks` is confirmed, each was simulated, and an
        // advance ran after the inputs that confirmed them were in (any rollback they
        // called for is done): their states are final.
        if done_at.is_none() && due > 0 && confirmed >= ticks && (0..ticks).all(|t| game.after.contains_key(&t)) {
            let sums: Vec<u64> = (0..ticks).map(|t| game.after[&t]).collect();
            for (t, c) in sums.iter().enumerate() {
                say(&format!("TICK {t} {c:016x}"))?;
            }
            let st = s.stats();
            say(&format!(
                "RESULT role={role} confirmed={} current={} digest={:016x} desyncs={} core_desyncs={} checks={} \
                 rollbacks={} advances={} pushed={} pulled={} refused_writes={} udp_sent={} udp_received={} \
                 connect_ms={connect_ms} elapsed_ms={}",
                st.core.confirmed_tick,
                st.core.current_tick,
                digest(&sums),
                fig.desync_events,
                st.core.desyncs,
                st.core.checks_compared,
                st.core.rollbacks,
                fig.advances,
                fig.pushed,
                fig.pulled,
                fig.refused_writes,
                wire.udp_sent,
                wire.udp_received,
                started.elapsed().as_millis(),
            ))?;
            say("DONE")?;
            done_at = Some(Instant::now());
        }
        // The test says stop once both are done; a closed standard input means the
        // test is gone (no orphan outlives it for long).
        let (stop, orphaned) = match lines.try_recv() {
            Ok(l) => (l.trim() == "STOP", false),
            Err(TryRecvError::Empty) => (false, false),
            Err(TryRecvError::Disconnected) => (false, true),
        };
        if let Some(at) = done_at {
            // Keep playing for the other until then.
            if stop || orphaned || at.elapsed() > LINGER {
                break;
            }
        } else if orphaned {
            return Err("standard input closed during the match".into());
        } else if started.elapsed() > RUN_LIMIT {
            let st = s.stats();
            return Err(format!(
                "not done within {RUN_LIMIT:?}: confirmed {} current {} pushed {} pulled {}",
                st.core.confirmed_tick, st.core.current_tick, fig.pushed, fig.pulled
            ));
        }
    }
    wire.rtc.disconnect();
    Ok(ExitCode::SUCCESS)
}
