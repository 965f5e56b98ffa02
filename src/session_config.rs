//! `tw_session_config`: what `tw_session_create` is built from, its defaults and its
//! conversion to the runtime's settings of one session type ([`ModeSettings`]).

use std::ffi::c_char;
use std::mem::size_of;
use std::net::SocketAddr;

use super::args::{AUTOMATIC_BIND, arg_bind};
use super::config::tw_host_config;
use super::error::{Failure, FfiResult, copy_c_string, tw_result};
use super::guard;
use tickwire_proto::{
    GameShape, InputDelay, JitterConfig, LatePolicy, MAX_INPUT_DELAY, MAX_PREDICTION, MAX_TICK_RATE_HZ, P2pConfig,
    PredictionMode, RelayClientSessionConfig, RelayServerSessionConfig, UnderflowPolicy,
};
use tickwire_runtime::{
    HostConfig, P2pSettings, RelayClientSettings, RelayServerSettings, ReplaySettings, SpectatorSettings,
    SyncTestSettings,
};

/// The settings of the session type a `tw_session_config` asks for.
// Built once per session create and consumed at once: the variants' sizes cost
// nothing worth an indirection.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ModeSettings {
    P2p(P2pSettings),
    SyncTest(SyncTestSettings),
    Spectator(SpectatorSettings),
    Replay(ReplaySettings),
    RelayServer(RelayServerSettings),
    RelayClient(RelayClientSettings),
}

/// The largest `tw_session_config.input_size`: bytes of one player's input per tick.
pub const TW_MAX_INPUT_SIZE: u32 = 255;
const _: () = assert!(TW_MAX_INPUT_SIZE as usize == tickwire_proto::MAX_INPUT_SIZE);

/// The topology of a session (`tw_session_config.mode`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_session_mode {
    /// GGPO-style rollback between peers: add local and remote players, then start.
    P2p = 1,
    /// Local determinism check: every tick is rolled back `check_distance` ticks and
    /// simulated again; differing checksums give `TW_SESSION_EVENT_KIND_SYNCTEST_MISMATCH`.
    Synctest = 2,
    /// Watches a P2P match through one of its peers (`tw_session_spectate`).
    Spectator = 3,
    /// Plays a recorded replay back (`tw_session_load_replay*`).
    Replay = 4,
    /// The relay topology's server: binds `bind_address` and listens; clients that
    /// join become players (`num_players` slots). Its clock is the master: it never
    /// waits and never dilates. It has no player of its own: every request it hands out
    /// is final (`TW_REQUEST_FLAG_AUTHORITATIVE`), and a joining client's snapshot is
    /// asked for with a DUMP_STATE request.
    RelayServer = 5,
    /// A relay client: name the server with `tw_session_set_server`, start, and push
    /// this client's input every due tick (`TW_LOCAL_PLAYER`). It joins with a
    /// snapshot of the server's state (a RESTORE request), predicts ahead of the
    /// authoritative state and re-simulates from it when a prediction was wrong.
    RelayClient = 6,
}

/// What a relay server uses for a tick whose input from a client has not arrived
/// (`tw_session_config.jitter_underflow`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_underflow_policy {
    /// Repeat the client's last input (held buttons stay held).
    RepeatLast = 0,
    /// An all-zero input.
    Empty = 1,
}

/// What a relay server tick does when a client's next input is late
/// (`tw_session_config.jitter_late_policy`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_late_policy {
    /// Use no input of that client this tick and consume it a tick later: nothing is
    /// lost; the client's lead loop removes the shift.
    Delay = 0,
    /// Substitute the missing input and drop the real one when it comes (consumption
    /// never shifts; a misprediction per late input).
    Substitute = 1,
    /// The default: substitute while at most 2 inputs in a row are missing (a packet
    /// late by jitter costs one step and no slip), then delay (when the whole stream
    /// is late, after a latency step or a hitch, waiting keeps the inputs). From a
    /// client that sends every tick (a relay client does while its uplink loses
    /// packets) up to 16 in a row are substituted, as a burst of loss that the next
    /// packet's copies end, unless the server waited for it within the last 60 ticks.
    Adaptive = 2,
}

/// Where a relay client's base input delay comes from
/// (`tw_session_config.input_delay_mode`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_input_delay_mode {
    /// Always `input_delay` ticks.
    Fixed = 0,
    /// `input_delay_rtt_percent` of the round trip, in whole ticks, at most
    /// `input_delay_max`; re-evaluated every second.
    FromRtt = 1,
}

/// How a P2P session guesses a remote input that has not arrived
/// (`tw_session_config.prediction`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_prediction {
    /// Repeat the player's last confirmed input (held buttons stay held).
    RepeatLast = 0,
    /// Predict all-zero input.
    Zero = 1,
}

/// Settings of a session, passed to `tw_session_create`.
///
/// Fill it with `tw_session_config_init_default`, then change fields. `struct_size`
/// (and `host.struct_size`) tell the library which version of the struct the caller
/// was compiled with. Fields marked with modes (P2P, SYNCTEST, SPECTATOR,
/// RELAY_SERVER, RELAY_CLIENT) are ignored by the other modes. The relay fields after
/// `bind_address`, `progress_timeout_ms` and `loading_grace_ms` took the place of
/// reserved bytes that had to be zero: the struct's size and every offset are
/// unchanged, and a zero there keeps the behaviour from before each field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_config {
    /// `sizeof(tw_session_config)`, set by `tw_session_config_init_default`.
    pub struct_size: u32,
    /// One of `tw_session_mode` (default `TW_SESSION_MODE_P2P`).
    pub mode: u32,
    /// Players in the match, 1..=255 (default 2). Every peer, spectator and replay of
    /// a match uses the same number and the same player order. RELAY_SERVER and
    /// RELAY_CLIENT: the player slots, 1..=64, the same on the server and its clients.
    pub num_players: u32,
    /// Bytes per input, 1..=`TW_MAX_INPUT_SIZE` (255; default 2); the same for every
    /// player. P2P: one tick of every player's input must fit one datagram (room for
    /// disconnect entries, checksum reports and 16-byte input digests included: 4
    /// players of 255 bytes, 8 of 129, 12 of 74, 16 of 49, 32 of 12), else `tw_session_create` says the most that fits. The relay
    /// sends larger steps in pieces: 255 bytes for every slot is fine there.
    pub input_size: u32,
    /// Ticks per second (default 60), in (0, 10000].
    pub tick_rate_hz: f64,
    /// P2P: most ticks simulated past the confirmed inputs, 0..=64 (default 8);
    /// 0 is lockstep. RELAY_CLIENT: most ticks predicted past the authoritative state,
    /// 1..=64; latency beyond it becomes input delay (about one round trip plus the
    /// server's buffering is needed: 12 at 100 ms and 60 Hz), and the event
    /// INPUT_DELAY_CHANGED says how much (`data.input_delay.spill`).
    pub max_prediction: u32,
    /// P2P: local inputs apply this many ticks later, 0..=32 (default 0);
    /// changeable at run time with `tw_session_set_input_delay`. RELAY_CLIENT with
    /// `TW_INPUT_DELAY_MODE_FIXED`: the base input delay, 0..=32.
    pub input_delay: u32,
    /// SYNCTEST: ticks rolled back every tick, 1..=32 (default 2).
    pub check_distance: u32,
    /// P2P: compare checksums with the peers every this many ticks (default 10; 0 = off).
    /// RELAY_SERVER: send the checksum of its state every this many ticks, for the
    /// clients' desync checks (0 = off).
    pub desync_interval: u32,
    /// P2P: drop a silent peer after this long (default 5000); 0 = never, as
    /// `ggpo_set_disconnect_timeout(0)`: the transport then never times the connection
    /// out either, and the progress watch (`progress_timeout_ms`) is off. It holds whatever
    /// `host.timeout_ms` says: the session's transport waits a second longer than this
    /// when `host.timeout_ms` is shorter. Changeable later with
    /// `tw_session_set_timeouts`.
    pub disconnect_timeout_ms: u32,
    /// P2P: report a silent peer (`TW_SESSION_EVENT_KIND_PEER_INTERRUPTED`) after this
    /// long (default 750); 0 = no notice. Below `disconnect_timeout_ms` unless either
    /// is 0. Changeable later with `tw_session_set_timeouts`.
    pub disconnect_notify_ms: u32,
    /// SPECTATOR: ticks played per advance while catching up, 1..=16 (default 2).
    pub spectator_catchup_speed: u32,
    /// SPECTATOR: more than this many received ticks not yet played starts catching
    /// up (default 10).
    pub spectator_max_behind: u32,
    /// P2P: spectators this peer may serve (default 4; 0: none); only addresses
    /// registered with `tw_session_add_spectator` are accepted, at most this many.
    /// Each spectator costs this peer the upload of one more peer: every confirmed
    /// tick of every player's input (`num_players * input_size` bytes plus about 30
    /// bytes of headers, 60 times a second: about 2.3 KB/s for 4 players of 2 bytes)
    /// and a state snapshot when it joins mid-match. The default keeps a home
    /// connection's upload small (GGPO allows 32); a peer with upload to spare raises
    /// it. The host's `max_clients` (when 0) grows with it.
    pub max_spectators: u32,
    /// P2P: non-zero saves only confirmed ticks (and desync-check ticks): fewer saves,
    /// longer re-simulations (default 0).
    pub sparse_saving: u32,
    /// P2P: one of `tw_prediction` (default `TW_PREDICTION_REPEAT_LAST`).
    pub prediction: u32,
    /// P2P: a peer that keeps talking while its inputs hold the confirmed tick still
    /// for this long, or under half the tick rate for twice this long, is dropped
    /// (`TW_DISCONNECT_REASON_NO_PROGRESS`, and a NO_PROGRESS event names it): the
    /// longest hitch an engine may take without announcing it with
    /// `tw_session_set_loading`, and the most one peer can stall the match for.
    /// Default 1500 (at 60 Hz a match with such a peer keeps over 58 ticks a second
    /// over a minute); 0 = `disconnect_timeout_ms` (as before this field, which took
    /// the place of a reserved zero); never longer than `disconnect_timeout_ms`.
    pub progress_timeout_ms: u32,
    /// P2P, SPECTATOR, RELAY_SERVER and RELAY_CLIENT: the transport (protocol id,
    /// timeouts, buffers, link simulator seed). `max_clients` 0 (the default) means
    /// `num_players - 1 + max_spectators` in P2P and `2 * num_players` on a relay
    /// server (room for clients coming back before their old connection timed out).
    /// Its own `struct_size` must be `sizeof(tw_host_config)`.
    pub host: tw_host_config,
    /// P2P, SPECTATOR, RELAY_SERVER and RELAY_CLIENT: the address to bind,
    /// NUL-terminated, e.g. `"0.0.0.0:7000"` (default `"0.0.0.0:0"`: any free port,
    /// IPv4 only; read it with `tw_session_local_address`). Empty (`""`) is the
    /// automatic bind: any free port on a dual-stack IPv6 socket that reaches IPv4 and
    /// IPv6 peers (`0.0.0.0` where the system has no IPv6), the choice for a session
    /// whose remote addresses may be IPv6 (`tw_host_create` says more).
    pub bind_address: [c_char; 64],
    /// RELAY_CLIENT: the late rate its input-lead loop aims for: the share of inputs
    /// allowed to reach the server after their tick, in (0, 0.5] (default 0.01).
    pub late_rate: f64,
    /// RELAY_SERVER and RELAY_CLIENT (the same on both): server ticks between the
    /// updates it sends each client, 1..=60 (default 3).
    pub server_send_interval: u32,
    /// RELAY_CLIENT: client ticks between its input packets, 1..=60 (default 2). Each
    /// packet repeats the inputs the server has not acknowledged, as loss requires.
    /// While the uplink loses more than half of `late_rate` (measured from the
    /// transport's acknowledgements, and held for 10 s after it falls), the client
    /// sends every tick instead: each lost packet delays the inputs it carried by one
    /// interval, so on a lossy link the interval sets the input lead (at 33% loss,
    /// every tick takes about 5 ticks off it, for twice the input packets).
    pub client_send_interval: u32,
    /// RELAY_SERVER: a client's inputs queued this many ticks beyond the queue's usual
    /// span (its one-second average) are merged into one tick: a burst after a hitch
    /// is cut, a queue kept deep by a long lead is not. 1..=1024 (default 64).
    pub jitter_max_depth: u32,
    /// RELAY_SERVER: a client whose queue passes this is kicked
    /// (`TW_KICK_REASON_OVERFLOW`), `jitter_max_depth`..=4096 (default 120).
    pub jitter_hard_cap: u32,
    /// RELAY_SERVER: a client without an input for this many ticks in a row is kicked
    /// (`TW_KICK_REASON_STARVED`), >= 1 (default 300).
    pub jitter_max_starved_ticks: u32,
    /// RELAY_SERVER: one of `tw_underflow_policy` (default `TW_UNDERFLOW_POLICY_REPEAT_LAST`).
    pub jitter_underflow: u32,
    /// RELAY_SERVER: one of `tw_late_policy` (default `TW_LATE_POLICY_ADAPTIVE`).
    pub jitter_late_policy: u32,
    /// RELAY_CLIENT: one of `tw_input_delay_mode` (default `TW_INPUT_DELAY_MODE_FIXED`).
    pub input_delay_mode: u32,
    /// RELAY_CLIENT with `TW_INPUT_DELAY_MODE_FROM_RTT`: the share of the round trip
    /// shown as input delay, in percent, 0..=400 (default 50).
    pub input_delay_rtt_percent: u32,
    /// RELAY_CLIENT with `TW_INPUT_DELAY_MODE_FROM_RTT`: the most ticks of base input
    /// delay, 0..=32 (default 8).
    pub input_delay_max: u32,
    /// RELAY_CLIENT: most authoritative ticks simulated per advance while catching up
    /// after joining or a stall, 1..=256 (default 16).
    pub catchup_ticks: u32,
    /// RELAY_SERVER: a dropped player's slot waits this long for it to come back with
    /// its token, >= 1 (default 30000). A client that left on purpose (destroyed its
    /// session) frees its slot at once.
    pub slot_timeout_ms: u32,
    /// RELAY_SERVER: a connection that has not said Hello within this time is closed
    /// (`TW_REJECT_REASON_NO_HELLO`), >= 1 (default 5000).
    pub hello_timeout_ms: u32,
    /// RELAY_CLIENT: after its connection times out, the client reconnects by itself
    /// for this long and gets its slot back (0 = never; default 30000). A server that
    /// closed the connection on purpose is not retried.
    pub reconnect_window_ms: u32,
    /// RELAY_SERVER: canonical steps kept for clients that have not acknowledged them,
    /// 1..=100000 (default 600). A client needing an older one is sent a snapshot and
    /// its steps from there (`TW_SESSION_EVENT_KIND_PLAYER_CATCHING_UP`).
    pub step_history: u32,
    /// RELAY_SERVER: most canonical steps past a client's acknowledged one that are
    /// sent to it, 16..=256 (default 256). The server also sizes the window from the
    /// client's measured round trip and loss; this caps it.
    pub step_window: u32,
    /// RELAY_SERVER: bytes per second one client's updates may take before redundant
    /// copies of steps are left out; new steps and resends always go, so a cap never
    /// stalls the match, it only makes it more fragile on lossy links. 0 = no cap
    /// (default 0).
    pub bandwidth_cap: u32,
    /// RELAY_SERVER: most datagrams one update (every `server_send_interval` ticks) to
    /// one client takes, 1..=64 (default 16); steps beyond them wait for the next update.
    pub max_update_datagrams: u32,
    /// Every mode: the catch-up cap of `tw_session_ticks_due`, in milliseconds,
    /// 1..=10000 (default 250) and at least one tick. When more time than this passed
    /// since the previous call (a hitch: a load, a breakpoint, a stalled frame), only
    /// this much is turned into ticks and the rest is dropped, not simulated, so one
    /// call hands out at most about `max_catch_up_ms * tick_rate_hz / 1000` ticks (15 at
    /// 60 Hz by default; P2P and RELAY_CLIENT up to 10% more while their time sync runs
    /// fast). A P2P peer or relay client that dropped time is behind the others
    /// afterwards and its time sync catches it up. Zero is refused: initialise with
    /// `tw_session_config_init_default`.
    pub max_catch_up_ms: u32,
    /// P2P: the time each peer's announced stalls (`tw_session_set_loading`) may hold
    /// the match without counting as no progress, in total over the match, in
    /// milliseconds (default 10000; 0 = none). It took the place of the last reserved
    /// bytes: the struct's size is unchanged.
    pub loading_grace_ms: u32,
}

impl tw_session_config {
    /// The defaults `tw_session_config_init_default` writes.
    pub fn default_values() -> Self {
        let p = P2pConfig::default();
        let rs = RelayServerSessionConfig::default();
        let rc = RelayClientSessionConfig::default();
        let j = JitterConfig::default();
        let ms = |us: u64| u32::try_from(us / 1000).unwrap_or(u32::MAX);
        let mut bind = [0 as c_char; 64];
        // SAFETY: `bind` is a local array of exactly the length passed.
        unsafe { copy_c_string(b"0.0.0.0:0", bind.as_mut_ptr(), bind.len()) };
        tw_session_config {
            struct_size: size_of::<tw_session_config>() as u32,
            mode: tw_session_mode::P2p as u32,
            num_players: 2,
            input_size: p.game.input_size as u32,
            // The rate of the core's default tick length, as it has always been written
            // (59.99999999999999 in a double).
            tick_rate_hz: 1e6 / p.game.tick_us(),
            max_prediction: p.max_prediction,
            input_delay: p.input_delay,
            check_distance: 2,
            desync_interval: p.desync_interval,
            disconnect_timeout_ms: ms(p.disconnect_timeout_us),
            disconnect_notify_ms: ms(p.notify_after_us),
            spectator_catchup_speed: 2,
            spectator_max_behind: 10,
            max_spectators: 4,
            sparse_saving: 0,
            prediction: tw_prediction::RepeatLast as u32,
            progress_timeout_ms: ms(p.progress_timeout_us),
            host: tw_host_config::default_values(),
            bind_address: bind,
            late_rate: rc.sync.lead.late_rate,
            server_send_interval: rs.relay.send_interval,
            client_send_interval: rc.sync.send_interval,
            jitter_max_depth: j.max_depth as u32,
            jitter_hard_cap: j.hard_cap as u32,
            jitter_max_starved_ticks: j.max_starved_ticks,
            jitter_underflow: tw_underflow_policy::RepeatLast as u32,
            jitter_late_policy: late_policy_value(j.late),
            input_delay_mode: tw_input_delay_mode::Fixed as u32,
            input_delay_rtt_percent: 50,
            input_delay_max: 8,
            catchup_ticks: rc.max_catchup_ticks,
            slot_timeout_ms: ms(rs.reconnect_timeout_us),
            hello_timeout_ms: ms(rs.hello_timeout_us),
            reconnect_window_ms: ms(rc.reconnect_window_us),
            step_history: rs.relay.step_history as u32,
            step_window: rs.relay.step_window as u32,
            bandwidth_cap: rs.relay.bandwidth_cap as u32,
            max_update_datagrams: rs.relay.max_update_datagrams as u32,
            max_catch_up_ms: ms(p.game.max_frame_us),
            loading_grace_ms: ms(p.loading_grace_us),
        }
    }

    /// Converts to the runtime's config, checking every field the session itself uses
    /// (the cores check the rest and their messages come back as the error).
    /// # Safety
    /// `self.host.security` must be NULL or point to at least its `struct_size`
    /// readable bytes.
    pub(crate) unsafe fn to_runtime(self) -> FfiResult<ModeSettings> {
        if !(1..=6).contains(&self.mode) {
            return Err(Failure::invalid(format!("{CFG}.mode {} is not a tw_session_mode (1..=6)", self.mode)));
        }
        if !(self.tick_rate_hz.is_finite() && self.tick_rate_hz > 0.0 && self.tick_rate_hz <= MAX_TICK_RATE_HZ) {
            return Err(Failure::invalid(format!("{CFG}.tick_rate_hz {} is not in (0, 10000]", self.tick_rate_hz)));
        }
        let prediction = match self.prediction {
            0 => PredictionMode::RepeatLast,
            1 => PredictionMode::Zero,
            p => return Err(Failure::invalid(format!("{CFG}.prediction {p} is not a tw_prediction (0..=1)"))),
        };
        if self.host.struct_size as usize != size_of::<tw_host_config>() {
            return Err(Failure::new(
                tw_result::VersionMismatch,
                format!(
                    "tw_session_config.host.struct_size is {}, this library knows only {}",
                    self.host.struct_size,
                    size_of::<tw_host_config>()
                ),
            ));
        }
        let networked = !matches!(self.mode, 2 | 4);
        let bind = if networked { self.bind()? } else { Some(SocketAddr::from(([0, 0, 0, 0], 0))) };
        // SAFETY: forwarded contract (host.security NULL or valid).
        let mut host: HostConfig =
            unsafe { self.host.to_runtime(bind.unwrap_or(AUTOMATIC_BIND), "tw_session_config.host") }?;
        host.dual_stack = bind.is_none();
        let game = GameShape {
            players: self.num_players as usize,
            input_size: self.input_size as usize,
            tick_rate_hz: self.tick_rate_hz,
            max_frame_us: u64::from(self.max_catch_up_ms) * 1000,
        };
        Ok(match self.mode {
            1 => ModeSettings::P2p(P2pSettings {
                max_prediction: self.max_prediction,
                input_delay: self.input_delay,
                sparse_saving: self.sparse_saving != 0,
                desync_interval: self.desync_interval,
                notify_after_us: u64::from(self.disconnect_notify_ms) * 1000,
                disconnect_timeout_us: u64::from(self.disconnect_timeout_ms) * 1000,
                progress_timeout_us: u64::from(self.progress_timeout_ms) * 1000,
                loading_grace_us: u64::from(self.loading_grace_ms) * 1000,
                prediction,
                max_spectators: self.max_spectators,
                ..P2pSettings::new(game, host)
            }),
            2 => ModeSettings::SyncTest(SyncTestSettings {
                check_distance: self.check_distance,
                ..SyncTestSettings::new(game)
            }),
            3 => ModeSettings::Spectator(SpectatorSettings {
                max_behind: self.spectator_max_behind,
                catchup_speed: self.spectator_catchup_speed,
                ..SpectatorSettings::new(game, host)
            }),
            4 => ModeSettings::Replay(ReplaySettings { game }),
            5 => ModeSettings::RelayServer(RelayServerSettings {
                server: self.relay_server()?,
                ..RelayServerSettings::new(game, host)
            }),
            _ => ModeSettings::RelayClient(RelayClientSettings {
                client: self.relay_client()?,
                ..RelayClientSettings::new(game, host)
            }),
        })
    }

    /// The relay server's settings (its `game` is filled in by the session).
    fn relay_server(&self) -> FfiResult<RelayServerSessionConfig> {
        range("server_send_interval", self.server_send_interval, 1, 60)?;
        range("jitter_max_depth", self.jitter_max_depth, 1, 1024)?;
        range("jitter_hard_cap", self.jitter_hard_cap, self.jitter_max_depth, 4096)?;
        range("jitter_max_starved_ticks", self.jitter_max_starved_ticks, 1, u32::MAX)?;
        range("slot_timeout_ms", self.slot_timeout_ms, 1, u32::MAX)?;
        range("hello_timeout_ms", self.hello_timeout_ms, 1, u32::MAX)?;
        range("step_history", self.step_history, 1, 100_000)?;
        range("step_window", self.step_window, 16, 256)?;
        range("max_update_datagrams", self.max_update_datagrams, 1, 64)?;
        let underflow = match self.jitter_underflow {
            0 => UnderflowPolicy::RepeatLast,
            1 => UnderflowPolicy::Empty,
            u => {
                return Err(Failure::invalid(format!(
                    "{CFG}.jitter_underflow {u} is not a tw_underflow_policy (0..=1)"
                )));
            }
        };
        let late = match self.jitter_late_policy {
            0 => LatePolicy::Delay,
            1 => LatePolicy::Substitute,
            2 => LatePolicy::Adaptive { substitute_run: ADAPTIVE_SUBSTITUTE_RUN },
            l => return Err(Failure::invalid(format!("{CFG}.jitter_late_policy {l} is not a tw_late_policy (0..=2)"))),
        };
        let mut c = RelayServerSessionConfig::default();
        c.relay.send_interval = self.server_send_interval;
        c.relay.step_history = self.step_history as usize;
        c.relay.step_window = self.step_window as usize;
        c.relay.bandwidth_cap = u64::from(self.bandwidth_cap);
        c.relay.max_update_datagrams = self.max_update_datagrams as usize;
        c.relay.jitter.max_depth = self.jitter_max_depth as usize;
        c.relay.jitter.hard_cap = self.jitter_hard_cap as usize;
        c.relay.jitter.max_starved_ticks = self.jitter_max_starved_ticks;
        c.relay.jitter.underflow = underflow;
        c.relay.jitter.late = late;
        c.checksum_interval = self.desync_interval;
        c.reconnect_timeout_us = u64::from(self.slot_timeout_ms) * 1000;
        c.hello_timeout_us = u64::from(self.hello_timeout_ms) * 1000;
        Ok(c)
    }

    /// The relay client's settings (its `game` is filled in by the session).
    fn relay_client(&self) -> FfiResult<RelayClientSessionConfig> {
        range("server_send_interval", self.server_send_interval, 1, 60)?;
        range("client_send_interval", self.client_send_interval, 1, 60)?;
        range("max_prediction", self.max_prediction, 1, MAX_PREDICTION)?;
        range("input_delay", self.input_delay, 0, MAX_INPUT_DELAY)?;
        range("input_delay_rtt_percent", self.input_delay_rtt_percent, 0, 400)?;
        range("input_delay_max", self.input_delay_max, 0, 32)?;
        range("catchup_ticks", self.catchup_ticks, 1, 256)?;
        if !(self.late_rate > 0.0 && self.late_rate <= 0.5) {
            return Err(Failure::invalid(format!("{CFG}.late_rate {} is not in (0, 0.5]", self.late_rate)));
        }
        let input_delay = match self.input_delay_mode {
            0 => InputDelay::Fixed(self.input_delay),
            1 => InputDelay::FromRtt {
                share: f64::from(self.input_delay_rtt_percent) / 100.0,
                max: self.input_delay_max,
            },
            m => {
                return Err(Failure::invalid(format!(
                    "{CFG}.input_delay_mode {m} is not a tw_input_delay_mode (0..=1)"
                )));
            }
        };
        let mut c = RelayClientSessionConfig::default();
        c.sync.send_interval = self.client_send_interval;
        c.sync.interp.send_interval = self.server_send_interval;
        c.sync.lead.late_rate = self.late_rate;
        c.max_prediction = self.max_prediction;
        c.input_delay = input_delay;
        c.max_catchup_ticks = self.catchup_ticks;
        c.reconnect_window_us = u64::from(self.reconnect_window_ms) * 1000;
        Ok(c)
    }

    /// The bind address; `None` for an empty one (the automatic bind).
    fn bind(&self) -> FfiResult<Option<SocketAddr>> {
        if !self.bind_address.contains(&0) {
            return Err(Failure::invalid("tw_session_config.bind_address is not NUL-terminated within its 64 bytes"));
        }
        // SAFETY: non-NULL and NUL-terminated within the array, which outlives the call.
        unsafe { arg_bind(self.bind_address.as_ptr(), "tw_session_config.bind_address") }
    }
}

/// Fills `config` with the defaults (including `struct_size` and `host`). Call it
/// before setting any field, so that fields added in later versions get their defaults.
///
/// Ownership: `config` is the caller's; it is only written during the call.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`, or `TW_RESULT_NULL_ARGUMENT` if `config` is NULL.
///
/// # Safety
/// `config` must be NULL or point to writable memory of `sizeof(tw_session_config)` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_config_init_default(config: *mut tw_session_config) -> tw_result {
    guard::run("tw_session_config_init_default", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and the caller guarantees a writable tw_session_config.
        unsafe { config.write(tw_session_config::default_values()) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_session_config)` as the library sees it (320). A binding compares it with
/// its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_config_size() -> usize {
    guard::run_or("tw_session_config_size", 0, size_of::<tw_session_config>)
}

/// Checks that config field `name` is in `lo..=hi`.
fn range(name: &str, v: u32, lo: u32, hi: u32) -> FfiResult<()> {
    if v < lo || v > hi {
        return Err(Failure::invalid(format!("{CFG}.{name} {v} is not in {lo}..={hi}")));
    }
    Ok(())
}

/// The struct's name, which every message about one of its fields starts with.
pub(crate) const CFG: &str = "tw_session_config";

/// The run of missing inputs `TW_LATE_POLICY_ADAPTIVE` substitutes before it waits.
const ADAPTIVE_SUBSTITUTE_RUN: u32 = 2;

/// `tw_late_policy` of a core late policy (the defaults' mirror).
fn late_policy_value(p: LatePolicy) -> u32 {
    match p {
        LatePolicy::Delay => tw_late_policy::Delay as u32,
        LatePolicy::Substitute => tw_late_policy::Substitute as u32,
        LatePolicy::Adaptive { .. } => tw_late_policy::Adaptive as u32,
    }
}
