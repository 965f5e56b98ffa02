//! `tw_session_config`: what `tw_session_create` is built from, its defaults and its
//! conversion to the runtime's [`SessionConfig`].

use std::ffi::c_char;
use std::mem::size_of;
use std::net::SocketAddr;

use super::config::tw_host_config;
use super::error::{Failure, FfiResult, copy_c_string, tw_result};
use super::guard;
use crate::core::rollback::{P2pConfig, PredictionMode};
use crate::runtime::session::{Mode, SessionConfig};
use crate::runtime::HostConfig;

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
    /// Reserved for the relay topology's server; not available yet (rejected).
    RelayServer = 5,
    /// Reserved for the relay topology's client; not available yet (rejected).
    RelayClient = 6,
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
/// was compiled with. `reserved0` and `reserved` must stay zero. Fields marked P2P,
/// SYNCTEST or SPECTATOR are ignored by the other modes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_config {
    /// `sizeof(tw_session_config)`, set by `tw_session_config_init_default`.
    pub struct_size: u32,
    /// One of `tw_session_mode` (default `TW_SESSION_MODE_P2P`).
    pub mode: u32,
    /// Players in the match, 1..=255 (default 2). Every peer, spectator and replay of
    /// a match uses the same number and the same player order.
    pub num_players: u32,
    /// Bytes per input, 1..=64 (default 2); the same for every player.
    pub input_size: u32,
    /// Ticks per second (default 60), in (0, 10000].
    pub tick_rate_hz: f64,
    /// P2P: most ticks simulated past the confirmed inputs, 0..=64 (default 8);
    /// 0 is lockstep.
    pub max_prediction: u32,
    /// P2P: local inputs apply this many ticks later, 0..=32 (default 0);
    /// changeable at run time with `tw_session_set_input_delay`.
    pub input_delay: u32,
    /// SYNCTEST: ticks rolled back every tick, 1..=32 (default 2).
    pub check_distance: u32,
    /// P2P: compare checksums with the peers every this many ticks (default 10; 0 = off).
    pub desync_interval: u32,
    /// P2P: drop a silent peer after this long (default 5000).
    pub disconnect_timeout_ms: u32,
    /// P2P: report a silent peer (`TW_SESSION_EVENT_KIND_PEER_INTERRUPTED`) after this
    /// long (default 750); below `disconnect_timeout_ms`.
    pub disconnect_notify_ms: u32,
    /// SPECTATOR: ticks played per advance while catching up, 1..=16 (default 2).
    pub spectator_catchup_speed: u32,
    /// SPECTATOR: more than this many received ticks not yet played starts catching
    /// up (default 10).
    pub spectator_max_behind: u32,
    /// P2P: spectators this peer may serve (default 4); only addresses registered with
    /// `tw_session_add_spectator` are accepted.
    pub max_spectators: u32,
    /// P2P: non-zero saves only confirmed ticks (and desync-check ticks): fewer saves,
    /// longer re-simulations (default 0).
    pub sparse_saving: u32,
    /// P2P: one of `tw_prediction` (default `TW_PREDICTION_REPEAT_LAST`).
    pub prediction: u32,
    /// Must be zero.
    pub reserved0: u32,
    /// P2P and SPECTATOR: the transport (protocol id, timeouts, buffers, link simulator
    /// seed). `max_clients` 0 (the default) means `num_players - 1 + max_spectators`.
    /// Its own `struct_size` must be `sizeof(tw_host_config)`.
    pub host: tw_host_config,
    /// P2P and SPECTATOR: the address to bind, NUL-terminated, e.g. `"0.0.0.0:7000"`
    /// (default `"0.0.0.0:0"`: any free port; read it with `tw_session_local_address`).
    pub bind_address: [c_char; 64],
    /// Must be zero.
    pub reserved: [u8; 88],
}

impl tw_session_config {
    /// The defaults `tw_session_config_init_default` writes.
    pub fn default_values() -> Self {
        let p = P2pConfig::default();
        let ms = |us: u64| u32::try_from(us / 1000).unwrap_or(u32::MAX);
        let mut bind = [0 as c_char; 64];
        // SAFETY: `bind` is a local array of exactly the length passed.
        unsafe { copy_c_string(b"0.0.0.0:0", bind.as_mut_ptr(), bind.len()) };
        tw_session_config {
            struct_size: size_of::<tw_session_config>() as u32,
            mode: tw_session_mode::P2p as u32,
            num_players: 2,
            input_size: p.input_size as u32,
            tick_rate_hz: 1e6 / p.clock.tick_us,
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
            reserved0: 0,
            host: tw_host_config::default_values(),
            bind_address: bind,
            reserved: [0; 88],
        }
    }

    /// Converts to the runtime's config, checking every field the session itself uses
    /// (the cores check the rest and their messages come back as the error).
    pub(crate) fn to_runtime(self) -> FfiResult<SessionConfig> {
        if self.reserved0 != 0 || self.reserved.iter().any(|&b| b != 0) {
            return Err(Failure::invalid("tw_session_config.reserved0 and reserved must be zero"));
        }
        let mode = match self.mode {
            1 => Mode::P2p,
            2 => Mode::SyncTest,
            3 => Mode::Spectator,
            4 => Mode::Replay,
            5 | 6 => {
                return Err(Failure::invalid(format!(
                    "mode {} ({}) is reserved for the relay topology and not available yet",
                    self.mode,
                    if self.mode == 5 { "TW_SESSION_MODE_RELAY_SERVER" } else { "TW_SESSION_MODE_RELAY_CLIENT" }
                )));
            }
            m => return Err(Failure::invalid(format!("mode {m} is not a tw_session_mode (1..=4)"))),
        };
        if !(self.tick_rate_hz.is_finite() && self.tick_rate_hz > 0.0 && self.tick_rate_hz <= 10_000.0) {
            return Err(Failure::invalid(format!("tick_rate_hz {} is not in (0, 10000]", self.tick_rate_hz)));
        }
        let prediction = match self.prediction {
            0 => PredictionMode::RepeatLast,
            1 => PredictionMode::Zero,
            p => return Err(Failure::invalid(format!("prediction {p} is not a tw_prediction (0..=1)"))),
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
        let bind = if mode.is_networked() { self.bind()? } else { SocketAddr::from(([0, 0, 0, 0], 0)) };
        let host: HostConfig = self.host.to_runtime(bind).map_err(|f| Failure::new(f.code, format!("host: {}", f.message)))?;
        let mut p2p = P2pConfig {
            input_size: self.input_size as usize,
            max_prediction: self.max_prediction,
            input_delay: self.input_delay,
            sparse_saving: self.sparse_saving != 0,
            desync_interval: self.desync_interval,
            notify_after_us: u64::from(self.disconnect_notify_ms) * 1000,
            disconnect_timeout_us: u64::from(self.disconnect_timeout_ms) * 1000,
            prediction,
            ..P2pConfig::default()
        };
        p2p.clock.tick_us = 1e6 / self.tick_rate_hz;
        Ok(SessionConfig {
            mode,
            players: self.num_players as usize,
            p2p,
            check_distance: self.check_distance,
            spectator_max_behind: self.spectator_max_behind,
            spectator_catchup_speed: self.spectator_catchup_speed,
            max_spectators: self.max_spectators,
            host,
        })
    }

    fn bind(&self) -> FfiResult<SocketAddr> {
        let len = self.bind_address.iter().position(|&c| c == 0).ok_or_else(|| {
            Failure::invalid("tw_session_config.bind_address is not NUL-terminated within its 64 bytes")
        })?;
        let bytes: Vec<u8> = self.bind_address[..len].iter().map(|&c| c as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        text.parse::<SocketAddr>().map_err(|_| {
            Failure::invalid(format!(
                "tw_session_config.bind_address \"{}\" is not an IP address with a port, like \"0.0.0.0:7000\"",
                text.escape_debug()
            ))
        })
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

/// Returns `sizeof(tw_session_config)` as the library sees it (320). Thread-safe;
/// never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_config_size() -> usize {
    guard::run_or("tw_session_config_size", 0, size_of::<tw_session_config>)
}
