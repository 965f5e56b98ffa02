//! `tw_security_config` (encryption, match secrets, connect keys and tokens), and the
//! backend's calls: `tw_generate_key` and `tw_connect_token_generate`.

use std::ffi::c_char;
use std::mem::size_of;
use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use super::args::{arg_bytes, arg_str};
use super::config::check_struct_size;
use super::error::{Failure, FfiResult, tw_result};
use super::guard;
use tickwire_proto::token::{self, ConnectToken, TokenParams};
use tickwire_proto::{Admission, PacketProtection, Presented, RemoteId, Secret, Security, TokenAdmission};
use tickwire_runtime::os_random_bytes;
use zeroize::Zeroizing;

/// Bytes of a key: a match secret, a spectators' secret, a connect-token key.
pub const TW_KEY_SIZE: u32 = 32;
/// Bytes of a connect token (`tw_connect_token_generate`).
pub const TW_CONNECT_TOKEN_SIZE: u32 = 1024;
/// Most server addresses one connect token names.
pub const TW_CONNECT_TOKEN_MAX_ADDRESSES: u32 = 8;
/// Most bytes of game data in a connect token.
pub const TW_CONNECT_TOKEN_USER_DATA_SIZE: u32 = 256;

/// `tw_security_config.mode`.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_security_mode {
    /// Every packet after the handshake is encrypted and authenticated (X25519 key
    /// agreement, then ChaCha20-Poly1305 with a key per connection and direction). The
    /// default.
    Encrypted = 0,
    /// Nothing is encrypted or authenticated: anyone on the path can read, forge and
    /// replay packets. For benchmarks and debugging only. Both ends must choose it;
    /// otherwise the connection is refused with `TW_DISCONNECT_REASON_SECURITY_MISMATCH`
    /// on the connecting side (the accepting side counts it in
    /// `tw_host_stats.security_mismatch`).
    InsecurePlaintext = 1,
    /// The handshake as `ENCRYPTED` (the cookie, the key agreement, the proof of the
    /// match secret or connect token), then packets without our encryption: the
    /// carrier protects them. Only for a host on an external carrier (bound to
    /// `"remote:<id>"`) that authenticates every remote and encrypts (Steam's
    /// networking, Epic's P2P): refused on a UDP host, where anyone could forge a
    /// packet. Saves the AEAD's cost (about 0.8 us per 32-byte packet sent and
    /// received, 16 bytes per packet). Both ends must choose it; otherwise the
    /// connection is refused with `TW_DISCONNECT_REASON_SECURITY_MISMATCH`.
    Carrier = 2,
}

/// Security settings, pointed to by `tw_host_config.security` (NULL: encrypted, and
/// open to anyone, which suits a LAN or a first test).
///
/// Fill it with `tw_security_config_init_default` first, then change fields. The
/// library copies it while `tw_host_create` or `tw_session_create` runs; it is not
/// kept. Keys are secrets: wipe your copy once the host or session is created.
///
/// Who may connect to this host, and what it shows when it connects:
/// - P2P: set `match_secret` (from the matchmaker) on every peer; a stranger without
///   it cannot complete a handshake. Set `spectator_secret` too to let spectators in
///   with a secret of their own; a SPECTATOR session sets only `spectator_secret`.
/// - RELAY_SERVER: set `connect_key` (the backend's 32-byte key) and `public_address`
///   (or bind a specific IP and leave it empty: the bound address, port included);
///   only clients with a valid, unexpired connect token for that address get in, one
///   connection per token at a time.
/// - RELAY_CLIENT: set `connect_token` from the backend (`tw_connect_token_generate`).
///
/// A host connecting shows its connect token if it has one, else its match secret,
/// else its spectators' secret.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct tw_security_config {
    /// `sizeof(tw_security_config)`, set by `tw_security_config_init_default`.
    pub struct_size: u32,
    /// One of `tw_security_mode` (default `TW_SECURITY_MODE_ENCRYPTED`).
    pub mode: u32,
    /// Non-zero: `match_secret` holds the match's secret.
    pub has_match_secret: u32,
    /// Non-zero: `spectator_secret` holds the spectators' secret (P2P peers with a
    /// `match_secret` also admit it; a SPECTATOR session shows it).
    pub has_spectator_secret: u32,
    /// Non-zero: `connect_key` holds the backend's key; this host admits only
    /// connect-token holders.
    pub has_connect_key: u32,
    /// 0 (no token) or `TW_CONNECT_TOKEN_SIZE`: `connect_token` holds a token to show.
    pub connect_token_size: u32,
    /// With `has_match_secret`: the players' secret, 32 bytes from a cryptographic
    /// generator (all zeros is refused).
    pub match_secret: [u8; 32],
    /// With `has_spectator_secret`: the spectators' secret, likewise (not the players').
    pub spectator_secret: [u8; 32],
    /// With `has_connect_key`: the key the game's backend seals connect tokens with.
    pub connect_key: [u8; 32],
    /// With `has_connect_key`: the address clients reach this host at, NUL-terminated,
    /// e.g. `"203.0.113.7:7000"`; tokens must name it. Empty: the address the socket
    /// is bound to (its port once bound), whose IP must then be a specific one.
    pub public_address: [c_char; 64],
    /// With `connect_token_size`: the connect token this host shows when it connects,
    /// as the backend minted it (`connect_token_size` bytes used).
    pub connect_token: [u8; 1024],
    /// Must be zero.
    pub reserved: [u8; 32],
}

impl tw_security_config {
    /// The defaults `tw_security_config_init_default` writes.
    pub fn default_values() -> Self {
        tw_security_config {
            struct_size: size_of::<tw_security_config>() as u32,
            mode: tw_security_mode::Encrypted as u32,
            has_match_secret: 0,
            has_spectator_secret: 0,
            has_connect_key: 0,
            connect_token_size: 0,
            match_secret: [0; 32],
            spectator_secret: [0; 32],
            connect_key: [0; 32],
            public_address: [0; 64],
            connect_token: [0; 1024],
            reserved: [0; 32],
        }
    }

    /// Converts to the transport's settings, checking every field. `bind` stands in
    /// for an empty `public_address`.
    pub(crate) fn security(&self, protocol_id: u32, bind: SocketAddr) -> FfiResult<Security> {
        let name = "tw_security_config";
        if self.reserved.iter().any(|&b| b != 0) {
            return Err(Failure::invalid(format!("{name}.reserved must be zero")));
        }
        let any_credential = self.has_match_secret != 0
            || self.has_spectator_secret != 0
            || self.has_connect_key != 0
            || self.connect_token_size != 0;
        let packets = match self.mode {
            0 => PacketProtection::Aead,
            2 if RemoteId::from_addr(bind).is_none() => {
                return Err(Failure::invalid(format!(
                    "{name}.mode is TW_SECURITY_MODE_CARRIER, which leaves packets to the carrier to protect: only a \
                     host on an external carrier (bound to \"remote:<id>\") may choose it, never a UDP socket"
                )));
            }
            2 => PacketProtection::Carrier,
            1 if any_credential => {
                return Err(Failure::invalid(format!(
                    "{name}.mode is TW_SECURITY_MODE_INSECURE_PLAINTEXT, which cannot prove a match secret, a \
                     connect key or a connect token: clear has_match_secret, has_spectator_secret, has_connect_key \
                     and connect_token_size, or use TW_SECURITY_MODE_ENCRYPTED"
                )));
            }
            1 => return Ok(Security::InsecurePlaintext),
            m => {
                return Err(Failure::invalid(format!(
                    "{name}.mode {m} is not TW_SECURITY_MODE_ENCRYPTED (0), TW_SECURITY_MODE_INSECURE_PLAINTEXT (1) \
                     or TW_SECURITY_MODE_CARRIER (2)"
                )));
            }
        };
        let secret = |has: u32, bytes: &[u8; 32]| (has != 0).then(|| Secret(*bytes));
        let players = secret(self.has_match_secret, &self.match_secret);
        let spectators = secret(self.has_spectator_secret, &self.spectator_secret);
        let admission = if self.has_connect_key != 0 {
            if players.is_some() || spectators.is_some() {
                return Err(Failure::invalid(format!(
                    "{name}: has_connect_key (a relay server admitting token holders) cannot be combined with \
                     has_match_secret or has_spectator_secret (P2P)"
                )));
            }
            Admission::Tokens(TokenAdmission {
                key: Secret(self.connect_key),
                // Empty: the runtime puts the bound socket's address (port included).
                public_addresses: self.public_address(bind)?.into_iter().collect(),
            })
        } else if players.is_none() {
            // Only a spectators' secret (a SPECTATOR session): the one secret it shows
            // is also the one it would require.
            Admission::Secrets { players: spectators.clone(), spectators: None }
        } else {
            Admission::Secrets { players: players.clone(), spectators: spectators.clone() }
        };
        let presented = match self.connect_token_size {
            0 => match (players, spectators) {
                (Some(s), _) | (None, Some(s)) => Presented::Secret(s),
                (None, None) => Presented::Open,
            },
            n if n == TW_CONNECT_TOKEN_SIZE => {
                let t = ConnectToken::decode(&self.connect_token)
                    .map_err(|e| Failure::invalid(format!("{name}.connect_token: {e}")))?;
                if t.protocol_id != protocol_id {
                    return Err(Failure::invalid(format!(
                        "{name}.connect_token is for protocol id {:#x}, tw_host_config.protocol_id is {protocol_id:#x}",
                        t.protocol_id
                    )));
                }
                Presented::Token(Box::new(t))
            }
            n => {
                return Err(Failure::invalid(format!(
                    "{name}.connect_token_size is {n}: it must be 0 (no token) or TW_CONNECT_TOKEN_SIZE \
                     ({TW_CONNECT_TOKEN_SIZE})"
                )));
            }
        };
        let security = Security::Encrypted { admission, presented, packets };
        Ok(security)
    }

    /// The public address, or `None` for the bound socket's (a specific IP is needed).
    fn public_address(&self, bind: SocketAddr) -> FfiResult<Option<SocketAddr>> {
        let field = "tw_security_config.public_address";
        if !self.public_address.contains(&0) {
            return Err(Failure::invalid(format!("{field} is not NUL-terminated within its 64 bytes")));
        }
        if self.public_address[0] == 0 {
            if bind.ip().is_unspecified() {
                return Err(Failure::invalid(format!(
                    "{field} is empty and the bind address {bind} is not one clients can be given: a server with a \
                     connect key needs the address clients reach it at (connect tokens name it)"
                )));
            }
            return Ok(None);
        }
        // SAFETY: a NUL-terminated array of the struct, alive for the call.
        let s = unsafe { arg_str(self.public_address.as_ptr(), field) }?;
        tickwire_proto::parse_address(s).map(Some).map_err(|_| {
            Failure::invalid(format!(
                "{field} \"{}\" is not an IP address with a port, nor remote:<id>",
                s.escape_debug()
            ))
        })
    }
}

/// A `tw_security_config` pointer: NULL means the defaults (encrypted, open).
///
/// # Safety
/// `config` must be NULL or point to at least `struct_size` readable bytes.
pub(crate) unsafe fn arg_security(
    config: *const tw_security_config,
    protocol_id: u32,
    bind: SocketAddr,
) -> FfiResult<Security> {
    if config.is_null() {
        return Ok(Security::default());
    }
    // SAFETY: non-NULL; the caller guarantees at least struct_size readable bytes.
    unsafe { check_struct_size(config, "tw_security_config") }?;
    // SAFETY: struct_size equals sizeof(tw_security_config): the whole struct is there.
    let c = unsafe { &*config };
    c.security(protocol_id, bind)
}

/// Fills `config` with the defaults: encrypted, no secret, no key, no token.
///
/// Ownership: `config` is the caller's; it is only written during the call.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`, or `TW_RESULT_NULL_ARGUMENT` if `config` is NULL.
///
/// # Safety
/// `config` must be NULL or point to writable memory of `sizeof(tw_security_config)` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_security_config_init_default(config: *mut tw_security_config) -> tw_result {
    guard::run("tw_security_config_init_default", || {
        if config.is_null() {
            return Err(Failure::null("config"));
        }
        // SAFETY: non-NULL, and the caller guarantees a writable tw_security_config.
        unsafe { config.write(tw_security_config::default_values()) };
        Ok(tw_result::Ok)
    })
}

/// Returns `sizeof(tw_security_config)` as the library sees it. A binding compares it
/// with its own size of the struct to catch a header from another library version.
///
/// Ownership: takes nothing; returns a plain value.
/// Thread-safety: may be called from any thread.
///
/// Returns the size in bytes; never fails.
///
/// # Safety
/// None: takes no arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_security_config_size() -> usize {
    guard::run_or("tw_security_config_size", 0, size_of::<tw_security_config>)
}

/// Writes `TW_KEY_SIZE` (32) bytes from the operating system's secure random generator
/// to `out`: a new match secret, spectators' secret or connect-token key.
///
/// Ownership: `out` is the caller's. Thread-safety: any thread.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT` if `out` is NULL;
/// `TW_RESULT_INVALID_ARGUMENT` if `out_size` is not 32; `TW_RESULT_IO` if the OS
/// generator failed (nothing usable was written).
///
/// # Safety
/// `out` must be NULL or point to `out_size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_generate_key(out: *mut u8, out_size: usize) -> tw_result {
    guard::run("tw_generate_key", || {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        if out_size != TW_KEY_SIZE as usize {
            return Err(Failure::invalid(format!(
                "out_size is {out_size}: a key is TW_KEY_SIZE ({TW_KEY_SIZE}) bytes"
            )));
        }
        let key: Zeroizing<[u8; 32]> =
            Zeroizing::new(os_random_bytes().map_err(|e| Failure::new(tw_result::Io, e.to_string()))?);
        // SAFETY: the caller guarantees 32 writable bytes at `out` (checked size).
        unsafe { std::ptr::copy_nonoverlapping(key.as_ptr(), out, key.len()) };
        Ok(tw_result::Ok)
    })
}

/// Mints a connect token for one client, as a game backend does (netcode.io style):
/// the client sends it to a RELAY_SERVER whose `tw_security_config.connect_key` is
/// `key`, and gets in only while the token is valid, only at one of
/// `server_addresses`, and one connection at a time. Hand the token to the client
/// over your own secure channel (HTTPS): whoever holds it can use it.
///
/// - `key`: the 32-byte key shared by the backend and the servers (`tw_generate_key`).
/// - `protocol_id`: the game's `tw_host_config.protocol_id`.
/// - `client_id`: the player's id in the backend.
/// - `server_addresses`: NUL-terminated, comma-separated, 1 to 8 addresses, e.g.
///   `"203.0.113.7:7000,[2001:db8::7]:7000"`.
/// - `expire_seconds`: how long from now the token can be used to connect, >= 1.
///   Reconnects after a dropped connection need a valid token too: cover the match.
/// - `timeout_seconds`: the connection timeout both ends use (0: each end's own).
/// - `user_data`, `user_data_size`: up to 256 bytes of game data (may be NULL with 0).
/// - `out_token`, `out_size`: receives `TW_CONNECT_TOKEN_SIZE` bytes.
///
/// Uses the system clock and the OS random generator. Ownership: every argument is
/// the caller's and only read or written during the call. Thread-safety: any thread.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (sizes, addresses, lifetime; the message names the argument); `TW_RESULT_IO` if
/// the OS generator or clock failed.
///
/// # Safety
/// Pointers must be NULL or valid for their sizes; `server_addresses` NUL-terminated.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tw_connect_token_generate(
    key: *const u8,
    key_size: usize,
    protocol_id: u32,
    client_id: u64,
    server_addresses: *const c_char,
    expire_seconds: u32,
    timeout_seconds: u32,
    user_data: *const u8,
    user_data_size: usize,
    out_token: *mut u8,
    out_size: usize,
) -> tw_result {
    guard::run("tw_connect_token_generate", || {
        // SAFETY: forwarded contracts.
        let key = unsafe { arg_bytes(key, key_size, "key") }?;
        // Copied straight into the Secret that wipes it (the caller's bytes are theirs).
        let key = Secret(
            key.try_into()
                .map_err(|_| Failure::invalid(format!("key_size is {key_size}: a key is TW_KEY_SIZE (32) bytes")))?,
        );
        // SAFETY: forwarded contract.
        let list = unsafe { arg_str(server_addresses, "server_addresses") }?;
        let addresses = parse_addresses(list)?;
        // SAFETY: forwarded contract (NULL with 0 is an empty slice).
        let user_data = unsafe { arg_bytes(user_data, user_data_size, "user_data") }?;
        if out_token.is_null() {
            return Err(Failure::null("out_token"));
        }
        if out_size != TW_CONNECT_TOKEN_SIZE as usize {
            return Err(Failure::invalid(format!(
                "out_size is {out_size}: a connect token is TW_CONNECT_TOKEN_SIZE ({TW_CONNECT_TOKEN_SIZE}) bytes"
            )));
        }
        if expire_seconds == 0 {
            return Err(Failure::invalid("expire_seconds must be at least 1"));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| Failure::new(tw_result::Io, format!("the system clock is before 1970: {e}")))?
            .as_secs();
        let params = TokenParams {
            protocol_id,
            client_id,
            created: now,
            expires: now + u64::from(expire_seconds),
            timeout_secs: timeout_seconds,
            addresses,
            user_data: user_data.to_vec(),
        };
        // Its last 32 bytes become the token's key; the minted token (wiped on drop too)
        // holds that key in clear.
        let random: Zeroizing<[u8; 56]> =
            Zeroizing::new(os_random_bytes().map_err(|e| Failure::new(tw_result::Io, e.to_string()))?);
        let bytes = token::mint(&key, &params, &random).map_err(|e| Failure::invalid(e.to_string()))?;
        // SAFETY: the caller guarantees out_size (checked: the token's size) writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out_token, bytes.len()) };
        Ok(tw_result::Ok)
    })
}

/// `"a:1,b:2"` as addresses, each checked.
pub(crate) fn parse_addresses(list: &str) -> FfiResult<Vec<SocketAddr>> {
    let parts: Vec<&str> = list.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if parts.is_empty() || parts.len() > TW_CONNECT_TOKEN_MAX_ADDRESSES as usize {
        return Err(Failure::invalid(format!(
            "server_addresses names {} addresses: 1 to {TW_CONNECT_TOKEN_MAX_ADDRESSES} allowed",
            parts.len()
        )));
    }
    parts
        .iter()
        .map(|p| {
            tickwire_proto::parse_address(p).map_err(|_| {
                Failure::invalid(format!(
                    "server_addresses: \"{}\" is not an IP address with a port, like \"203.0.113.7:7000\", nor a \
                     remote of an external carrier, like \"remote:42\"",
                    p.escape_debug()
                ))
            })
        })
        .collect()
}
