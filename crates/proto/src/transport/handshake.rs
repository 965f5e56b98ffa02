//! The handshake (the initiator is the "client" of a connection):
//! ```text
//! client                                        server
//! ConnectRequest(client_salt, security, padded) ->  no state kept; cookie = SipHash(secret; addr, salt, time)
//!                                               <-  Challenge(client_salt, time, cookie)    (far smaller)
//! ConnectResponse(cookie, security, client_pub,  ->  cookie verified and fresh; then the proof (and the
//!   proof, [connect token], padded)                  token) checked; then X25519 and a slot
//!                                               <-  Accepted(client_salt, server_salt, server_pub, confirm)
//!                                                   or Denied(reason)
//! ```
//! Until a response echoes a valid cookie the server holds nothing and computes nothing
//! costly per client, so a spoofed source address costs it a SipHash, and no reply is
//! larger than the request it answers. The keys, the proof and the confirmation are in
//! `crypto.rs`; the client's first encrypted packet is its first payload, so the
//! handshake takes two round trips before it, as netcode's does.

use std::collections::{HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};

use zeroize::Zeroizing;

use super::budget::BackoffKey;
use super::connection::{Connection, Sealing};
use super::credential::{Credential, TokenIdentity};
use super::crypto::{Ephemeral, KEY_SIZE, KeyContext, OPEN_PSK, PacketKeys, ProofInput, denial_tag, proof_holds};
use super::endpoint::{COOKIE_LIFETIME_US, Endpoint, Event};
use super::security::{Admission, Presented, Security};
use super::token::{self, TOKEN_NONCE_SIZE};
use super::{DisconnectReason, PeerId};
use crate::clock::Micros;
use crate::wire::{self, Cipher, ConnectResponse, PROTOCOL_VERSION, SecurityMode, siphash::siphash24};

/// Cookies that opened a connection, until they expire anyway. Bounded: past
/// [`SPENT_COOKIES_MAX`] the oldest is forgotten (it has the least life left).
#[derive(Default)]
pub(super) struct SpentCookies {
    order: VecDeque<(Micros, u64)>,
    set: HashSet<u64>,
}

/// Cookies remembered at most: more connections than one endpoint accepts in a cookie
/// lifetime.
const SPENT_COOKIES_MAX: usize = 65_536;

impl SpentCookies {
    fn contains(&self, mac: u64) -> bool {
        self.set.contains(&mac)
    }

    fn spend(&mut self, mac: u64, expires: Micros) {
        if self.order.len() == SPENT_COOKIES_MAX {
            self.forget_oldest();
        }
        if self.set.insert(mac) {
            self.order.push_back((expires, mac));
        }
    }

    fn forget_before(&mut self, now: Micros) {
        while self.order.front().is_some_and(|&(expires, _)| expires < now) {
            self.forget_oldest();
        }
    }

    fn forget_oldest(&mut self) {
        if let Some((_, mac)) = self.order.pop_front() {
            self.set.remove(&mac);
        }
    }
}

/// What a verified connect response lets in.
struct Admitted {
    /// A copy of the secret proved: wiped when dropped.
    psk: Zeroizing<[u8; KEY_SIZE]>,
    token: Option<([u8; TOKEN_NONCE_SIZE], u32)>,
    credential: Credential,
    /// The server address the client bound into its proof (connect tokens).
    dialled: Option<SocketAddr>,
}

/// Why a connect response is refused, and the key its proof held under, if it did:
/// the refusal is then tagged with it, so that the client can take it as fact.
struct Refusal {
    reason: DisconnectReason,
    proven: Option<(Zeroizing<[u8; KEY_SIZE]>, Option<SocketAddr>)>,
}

impl Refusal {
    /// Nothing was proven (a wrong secret, a forged token): the refusal is advisory.
    fn unproven(reason: DisconnectReason) -> Self {
        Refusal { reason, proven: None }
    }
}

impl Endpoint {
    /// Gives a new outgoing connection its ephemeral key (when encrypted) and the
    /// timeout its connect token names.
    pub(super) fn prepare_initiator(&mut self, c: &mut Connection) {
        if let Security::Encrypted { presented, .. } = &self.cfg.security {
            c.ephemeral = Some(Box::new(Ephemeral::generate(&mut self.rng)));
            if let Presented::Token(t) = presented {
                c.timeout_us = self.token_timeout(t.timeout_secs);
            }
        }
    }

    /// A token's timeout, at most an hour (0: ours). Keepalives follow any timeout.
    fn token_timeout(&self, secs: u32) -> Micros {
        if secs == 0 {
            return self.cfg.timeout_us;
        }
        (secs as Micros * 1_000_000).min(3_600_000_000)
    }

    fn cookie(&self, from: SocketAddr, client_salt: u64, time: u64) -> u64 {
        let mut msg = [0u8; 16 + 2 + 8 + 8 + 4];
        let ip = match from.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        msg[..16].copy_from_slice(&ip);
        msg[16..18].copy_from_slice(&from.port().to_le_bytes());
        msg[18..26].copy_from_slice(&client_salt.to_le_bytes());
        msg[26..34].copy_from_slice(&time.to_le_bytes());
        msg[34..38].copy_from_slice(&self.cfg.protocol_id.to_le_bytes());
        siphash24(self.cookie_secret.0, self.cookie_secret.1, &msg)
    }

    /// Replies to a handshake packet. Every such reply is smaller than the padded
    /// request it answers.
    fn reply(&mut self, to: SocketAddr, encode: impl FnOnce(&mut Vec<u8>, u32)) {
        let mut buf = self.pool.get();
        encode(&mut buf, self.cfg.protocol_id);
        debug_assert!(buf.len() <= wire::MAX_HANDSHAKE_REPLY_SIZE);
        self.transmits.push(to, &buf);
        self.pool.put(buf);
    }

    /// An unauthenticated refusal: an encrypted client takes it as advisory only.
    fn deny(&mut self, to: SocketAddr, client_salt: u64, reason: DisconnectReason) {
        self.stats.denied += 1;
        self.reply(to, |b, pid| wire::encode_denied(b, pid, client_salt, reason, None));
    }

    /// Refuses the connect response `r`; tagged with the key its proof held under, if
    /// it held, so that the client knows it is us and takes the reason as fact.
    fn refuse(&mut self, to: SocketAddr, r: &ConnectResponse, refusal: Refusal) {
        let Some((psk, dialled)) = refusal.proven else { return self.deny(to, r.client_salt, refusal.reason) };
        let input = self.proof_input(r, dialled);
        let tag = denial_tag(&psk, &input, refusal.reason as u8);
        self.stats.denied += 1;
        self.reply(to, |b, pid| wire::encode_denied(b, pid, r.client_salt, refusal.reason, Some(&tag)));
    }

    /// What a response's proof covers, for a client that dialled `dialled`.
    fn proof_input<'a>(&self, r: &'a ConnectResponse, dialled: Option<SocketAddr>) -> ProofInput<'a> {
        ProofInput {
            protocol_id: self.cfg.protocol_id,
            client_salt: r.client_salt,
            cookie_time: r.cookie_time,
            cookie_mac: r.cookie_mac,
            security: r.security as u8,
            client_public: &r.client_public,
            dialled,
            binding: r.binding,
            ciphers: r.ciphers.bits(),
        }
    }

    /// Whether the other end's choice of protection (plaintext, AEAD packets, carrier
    /// packets) is ours; counts a mismatch. An AEAD endpoint never accepts a carrier
    /// handshake, nor the reverse.
    fn same_security(&mut self, theirs: SecurityMode) -> bool {
        let same = theirs == self.cfg.security.mode();
        self.stats.security_mismatch += !same as u64;
        same
    }

    pub(super) fn on_request(
        &mut self,
        now: Micros,
        from: SocketAddr,
        version: u8,
        client_salt: u64,
        security: SecurityMode,
    ) {
        if self.cfg.max_incoming == 0 {
            self.stats.unknown_sender += 1;
            return;
        }
        if let Some(c) = self.by_addr.get(&from).and_then(|p| self.conns.get(p)) {
            if c.initiator || c.client_salt == client_salt {
                // We are dialling that address ourselves, or this is a stale copy from a
                // client we already accepted: say nothing.
                return;
            }
        }
        if version != PROTOCOL_VERSION {
            return self.deny(from, client_salt, DisconnectReason::VersionMismatch);
        }
        if !self.same_security(security) {
            return self.deny(from, client_salt, DisconnectReason::SecurityMismatch);
        }
        // A full server still challenges (stateless, and smaller than the request): it
        // refuses the response once its proof holds, with a tag the client can check,
        // so that "full" cannot be forged.
        let mac = self.cookie(from, client_salt, now);
        self.stats.challenges_sent += 1;
        self.reply(from, |b, pid| wire::encode_challenge(b, pid, client_salt, now, mac));
    }

    pub(super) fn on_response(&mut self, now: Micros, from: SocketAddr, r: &ConnectResponse) {
        if self.cfg.max_incoming == 0 {
            self.stats.unknown_sender += 1;
            return;
        }
        let fresh = r.cookie_time <= now && now - r.cookie_time <= COOKIE_LIFETIME_US;
        if !fresh || r.cookie_mac != self.cookie(from, r.client_salt, r.cookie_time) {
            self.stats.bad_cookie += 1;
            return;
        }
        // The address is proven: from here on, work for this client is allowed.
        if !self.same_security(r.security) {
            return self.deny(from, r.client_salt, DisconnectReason::SecurityMismatch);
        }
        let mut replacing = None;
        if let Some(&peer) = self.by_addr.get(&from) {
            let c = &self.conns[&peer];
            if c.initiator {
                return;
            }
            if c.client_salt == r.client_salt {
                // Our Accepted was lost: say it again (the same bytes).
                if let Some(accepted) = self.accepted.get(&peer) {
                    self.transmits.push(from, accepted);
                }
                return;
            }
            // The same address proved itself with a new salt: the client restarted. Its
            // old connection makes way only once the new one passes admission: someone
            // on the path who can send from that address, but holds no credential, must
            // not end it. (It frees the slot the new one takes.) Its owner hears
            // `Replaced`, not `Client`: the client did not leave (a relay server keeps
            // its player's slot for the token the new connection brings).
            replacing = Some(peer);
        }
        // A cookie that already opened a connection opens no other: a response
        // captured on the path and replayed from the same address after that
        // connection ended would otherwise open one that holds its slot and its
        // token until it times out.
        self.spent_cookies.forget_before(now);
        if self.spent_cookies.contains(r.cookie_mac) {
            self.stats.bad_cookie += 1;
            return;
        }
        let admitted = match self.admit(now, r, replacing) {
            Ok(a) => a,
            Err(refusal) => {
                self.stats.auth_refused += 1;
                return self.refuse(from, r, refusal);
            }
        };
        // A peer dropped for misbehaving waits out its backoff. Checked once the cookie
        // proved the address (a spoofer cannot make a victim's address wait) and the
        // proof held (the refusal is authenticated, and the client id known).
        let waiting = |k| self.backoffs.waiting(now, k);
        if waiting(BackoffKey::Address(address_key(from.ip())))
            || admitted.credential.client_id().is_some_and(|id| waiting(BackoffKey::ClientId(id)))
        {
            self.stats.backoff_refused += 1;
            let proven = Some((admitted.psk.clone(), admitted.dialled));
            return self.refuse(from, r, Refusal { reason: DisconnectReason::ServerFull, proven });
        }
        // Checked once the proof held, so that the refusal can be authenticated.
        if replacing.is_none() && (self.incoming >= self.cfg.max_incoming || self.address_full(from)) {
            let proven = Some((admitted.psk.clone(), admitted.dialled));
            return self.refuse(from, r, Refusal { reason: DisconnectReason::ServerFull, proven });
        }
        let server_salt = self.rng.next_u64();
        // AES-256-GCM when both ends run it in hardware, else the fallback everyone has.
        let cipher = if self.cfg.aes_gcm && r.ciphers.has(Cipher::Aes256Gcm) {
            Cipher::Aes256Gcm
        } else {
            Cipher::ChaCha20Poly1305
        };
        let mut keys = None;
        let mut server_public = [0u8; KEY_SIZE];
        // `r.security` is ours (checked above): every mode but plaintext agrees on keys.
        if r.security.proves() {
            let ephemeral = Ephemeral::generate(&mut self.rng);
            let Some(shared) = ephemeral.agree(&r.client_public) else {
                self.stats.auth_refused += 1;
                return self.deny(from, r.client_salt, DisconnectReason::AuthFailed);
            };
            server_public = ephemeral.public;
            let cx = KeyContext {
                protocol_id: self.cfg.protocol_id,
                client_salt: r.client_salt,
                server_salt,
                client_public: &r.client_public,
                server_public: &server_public,
                dialled: admitted.dialled,
                binding: r.binding,
                security: r.security as u8,
                ciphers: r.ciphers.bits(),
                cipher,
            };
            keys = Some(PacketKeys::derive(&shared, &admitted.psk, &cx, false, self.cfg.aead.as_ref()));
        }
        if let Some(old) = replacing {
            self.close(old, DisconnectReason::Replaced, false);
        }
        let mut accepted = self.pool.get();
        let pid = self.cfg.protocol_id;
        wire::encode_accepted_head(&mut accepted, pid, r.client_salt, server_salt, &server_public, cipher);
        let confirm = keys.as_ref().map_or([0; wire::TAG_SIZE], |k| k.confirm(&accepted));
        accepted.extend_from_slice(&confirm);
        // With carrier protection the keys have done their work (the confirmation) and
        // are dropped: the connection's packets go as a plaintext connection's do
        // (`Connection::sealing`), which is safe only because the carrier lets nobody
        // but this admitted peer send on it (`PacketProtection::Carrier`).
        let sealing =
            keys.filter(|_| self.cfg.security.seals_packets()).map(|keys| Sealing { keys, replay: Default::default() });

        self.spent_cookies.spend(r.cookie_mac, r.cookie_time + COOKIE_LIFETIME_US);
        let peer = self.free_peer_id();
        let mut conn = Connection::new(peer, from, false, r.client_salt, &self.cfg, now);
        conn.salt = wire::session_salt(r.client_salt, server_salt);
        conn.sealing = sealing;
        if let Some((nonce, timeout_secs)) = admitted.token {
            conn.timeout_us = self.token_timeout(timeout_secs);
            self.tokens_in_use.insert(nonce, peer);
            self.token_of.insert(peer, nonce);
        }
        if let Some(client_id) = admitted.credential.client_id() {
            self.clients_in_use.insert(client_id, peer);
            self.client_of.insert(peer, client_id);
        }
        self.insert_connection(conn);
        self.by_addr.insert(from, peer);

        self.incoming += 1;
        *self.incoming_per_ip.entry(address_key(from.ip())).or_insert(0) += 1;
        self.inbox.push(Event::Connected { peer, addr: from, credential: admitted.credential, binding: r.binding });
        debug_assert!(accepted.len() <= wire::MAX_HANDSHAKE_REPLY_SIZE);
        self.transmits.push(from, &accepted);
        self.accepted.insert(peer, accepted);
    }

    /// Checks a response's proof (and token) against our admission; on success, the
    /// key it proved. `replacing`: the connection the client restarted from, which may
    /// hold the same token. A refusal after the proof held carries the key, so that it
    /// can be authenticated.
    fn admit(&mut self, now: Micros, r: &ConnectResponse, replacing: Option<PeerId>) -> Result<Admitted, Refusal> {
        use DisconnectReason::{AuthFailed, ClientIdInUse, TokenExpired, TokenInUse};
        // A handshake bound to someone else (or to anyone, while we have no id) was
        // meant for another peer: a man in the middle redirected it.
        if r.binding.is_some_and(|b| Some(b.responder) != self.local_id) {
            return Err(Refusal::unproven(AuthFailed));
        }
        let Security::Encrypted { admission, .. } = &self.cfg.security else {
            let psk = Zeroizing::new(OPEN_PSK);
            return Ok(Admitted { psk, token: None, credential: Credential::Open, dialled: None });
        };
        match admission {
            Admission::Secrets { players, spectators } => {
                if r.token.is_some() {
                    return Err(Refusal::unproven(AuthFailed)); // we take no tokens
                }
                let input = self.proof_input(r, None);
                // Which secret the client proved is its class: the owner gives roles by
                // it, never by address. (An open endpoint's "secret" is public.)
                let players = match players {
                    Some(s) => (&s.0, Credential::PlayerSecret),
                    None => (&OPEN_PSK, Credential::Open),
                };
                std::iter::once(players)
                    .chain(spectators.as_ref().map(|s| (&s.0, Credential::SpectatorSecret)))
                    .find(|(psk, _)| proof_holds(psk, &input, &r.proof))
                    .map(|(psk, credential)| Admitted {
                        psk: Zeroizing::new(*psk),
                        token: None,
                        credential,
                        dialled: None,
                    })
                    .ok_or(Refusal::unproven(AuthFailed))
            }
            Admission::Tokens(t) => {
                let part = r.token.as_ref().ok_or(Refusal::unproven(AuthFailed))?;
                // The expiry is bound to the seal: a changed one does not open.
                let claims = token::open(&t.key, self.cfg.protocol_id, part.expires, part.nonce, part.sealed)
                    .map_err(|_| Refusal::unproven(AuthFailed))?;
                // The proof binds the server address the client dialled: one of ours
                // that the token names. A connection redirected to another server of the
                // same backend proves nothing there.
                let dialled = t
                    .public_addresses
                    .iter()
                    .copied()
                    .filter(|a| claims.addresses.contains(a))
                    .find(|a| proof_holds(&claims.key.0, &self.proof_input(r, Some(*a)), &r.proof));
                let Some(dialled) = dialled else {
                    // Read off the wire (no key), or for another server of ours.
                    return Err(Refusal::unproven(AuthFailed));
                };
                let proven = |reason| Refusal { reason, proven: Some((Zeroizing::new(claims.key.0), Some(dialled))) };
                // With the wall clock unknown no token can be shown unexpired: refused
                // (the client hears "expired"; the server counts why).
                let Some(unix_now) = self.unix_secs(now) else {
                    self.stats.tokens_refused_clock_unknown += 1;
                    return Err(proven(TokenExpired));
                };
                if part.expires <= unix_now {
                    return Err(proven(TokenExpired));
                }
                if self.tokens_in_use.get(part.nonce).is_some_and(|&p| Some(p) != replacing) {
                    return Err(proven(TokenInUse));
                }
                // One live connection per backend identity, as netcode: a second token
                // for the same player waits until the first connection ends (a client
                // restarting from the same address replaces its own).
                if self.clients_in_use.get(&claims.client_id).is_some_and(|&p| Some(p) != replacing) {
                    return Err(proven(ClientIdInUse));
                }
                let identity = TokenIdentity { client_id: claims.client_id, user_data: *claims.user_data };
                Ok(Admitted {
                    psk: Zeroizing::new(claims.key.0),
                    token: Some((*part.nonce, claims.timeout_secs)),
                    credential: Credential::ConnectToken(Box::new(identity)),
                    dialled: Some(dialled),
                })
            }
        }
    }

    /// Whether `from`'s IP already holds its share of the incoming connections.
    fn address_full(&self, from: SocketAddr) -> bool {
        let limit = self.cfg.max_incoming_per_ip;
        limit > 0 && self.incoming_per_ip.get(&address_key(from.ip())).is_some_and(|&n| n >= limit)
    }
}

/// The host an address counts for under `max_incoming_per_ip`: an IPv4 address (also
/// when it arrives IPv4-mapped, as on a dual-stack socket), or an IPv6 address's /64
/// prefix. One IPv6 host is routinely given a whole /64 and picks its low 64 bits at
/// will (privacy addresses), so counting whole IPv6 addresses would let it take every
/// place by changing them.
pub(super) fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !(u128::from(u64::MAX))).into()),
        },
    }
}
