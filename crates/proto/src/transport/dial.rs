//! The initiating side of the handshake (`handshake.rs` has the accepting side and the
//! layout): the request, the answers to challenges, and what a `Challenge`, `Accepted`
//! or `Denied` from the other end may change.
//!
//! Nothing the other end sends before its `Accepted` is authenticated except what says
//! so, so nothing else may decide the outcome:
//! - a `Challenge` is answered, and another one with another cookie is kept too (up
//!   to [`MAX_COOKIES`]) and answered in turn at the next resend: a forged challenge
//!   that arrives first no longer shuts the genuine one out (it costs one resend
//!   interval), and an honest handshake sends no more than with one cookie;
//! - a `Denied` ends the handshake at once only when its tag proves the server knows
//!   the key we prove (it refused a proof that held: full, token in use, expired), or
//!   on an insecure-plaintext endpoint, which authenticates nothing anyway. (With
//!   carrier packet protection the handshake is the encrypted one, and so is this rule:
//!   the carrier proves who the remote is, not that it admits us.) Any other
//!   `Denied` is advisory: we keep trying until the connect timeout, then report
//!   [`DisconnectReason::DeniedUnverified`], never its stated reason as fact (that is
//!   kept for the log, `Endpoint::unverified_denial`).

use std::net::SocketAddr;

use zeroize::Zeroizing;

use super::connection::{Cookies, Handshake, Sealing};
use super::crypto::{KEY_SIZE, KeyContext, PacketKeys, ProofInput, denial_holds, proof};
use super::endpoint::{Endpoint, Event};
use super::security::{Presented, Security};
use super::{DisconnectReason, PeerId};
use crate::clock::Micros;
use crate::wire::{self, Cipher, CipherOffer, ConnectResponse, TokenPart};

/// Challenges answered at once in one handshake: the genuine one and a few forged.
pub(crate) const MAX_COOKIES: usize = 4;

/// Refusals of handshakes whose stated reasons are kept for the log, at most.
const CLAIMS_KEPT: usize = 16;

impl Endpoint {
    /// The connection we are initiating to `from` with this salt.
    fn initiating_peer(&self, from: SocketAddr, client_salt: u64) -> Option<PeerId> {
        let peer = *self.by_addr.get(&from)?;
        self.conns.get(&peer).filter(|c| c.initiator && c.client_salt == client_salt).map(|c| c.peer)
    }

    /// The server address a client bound into its proof and keys: the one it dialled,
    /// when it shows a connect token (a token server checks it is one of its own).
    fn dialled(&self, addr: SocketAddr) -> Option<SocketAddr> {
        match &self.cfg.security {
            Security::Encrypted { presented: Presented::Token(_), .. } => Some(addr),
            _ => None,
        }
    }

    pub(super) fn on_challenge(
        &mut self,
        now: Micros,
        from: SocketAddr,
        client_salt: u64,
        cookie_time: u64,
        cookie_mac: u64,
    ) {
        let Some(peer) = self.initiating_peer(from, client_salt) else {
            self.stats.unknown_sender += 1;
            return;
        };
        let c = super::endpoint::touched(&mut self.conns, &mut self.changed, peer).expect("looked up above");
        let cookie = (cookie_time, cookie_mac);
        match &mut c.state {
            Handshake::Requesting => {
                c.state = Handshake::Responding { cookies: Cookies::one(cookie) };
                c.last_recv = now;
                self.send_handshake(now, peer);
            }
            // Unauthenticated: a challenge with another cookie may be the genuine one
            // behind a forged one (or a later answer to a request we resent). Kept, and
            // answered in turn at the next resend.
            Handshake::Responding { cookies } => {
                cookies.add(cookie);
            }
            Handshake::Connected => {} // a late copy
        }
    }

    /// The server's `Accepted`: on an encrypted endpoint it must carry a confirmation
    /// that the server derived our keys (so it knew our secret, and agreed to our
    /// packet protection); a forged one is counted and ignored, and the genuine one may
    /// still come. With carrier protection the keys are dropped once they confirmed it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_accepted(
        &mut self,
        now: Micros,
        from: SocketAddr,
        client_salt: u64,
        server_salt: u64,
        server_public: &[u8; KEY_SIZE],
        cipher: Cipher,
        head: &[u8],
        confirm: &[u8; wire::TAG_SIZE],
    ) {
        let Some(peer) = self.initiating_peer(from, client_salt) else {
            self.stats.unknown_sender += 1;
            return;
        };
        let offer = self.cipher_offer();
        if !offer.has(cipher) {
            // Not what we offered: only a forger picks that.
            self.stats.forged += 1;
            return;
        }
        let protocol_id = self.cfg.protocol_id;
        let psk = match &self.cfg.security {
            Security::Encrypted { presented, .. } => Some(Zeroizing::new(*presented.psk())),
            Security::InsecurePlaintext => None,
        };
        let credential = self.cfg.security.proven_by_responder();
        let (security, seals) = (self.cfg.security.mode() as u8, self.cfg.security.seals_packets());
        let dialled = self.dialled(from);
        let c = super::endpoint::touched(&mut self.conns, &mut self.changed, peer).expect("looked up above");
        if c.is_connected() {
            return;
        }
        let binding = c.binding;
        if let (Some(psk), Some(ephemeral)) = (psk, &c.ephemeral) {
            let Some(shared) = ephemeral.agree(server_public) else {
                self.stats.forged += 1;
                return;
            };
            let client_public = &ephemeral.public;
            let cx = KeyContext {
                protocol_id,
                client_salt,
                server_salt,
                client_public,
                server_public,
                dialled,
                binding,
                security,
                ciphers: offer.bits(),
                cipher,
            };
            let keys = PacketKeys::derive(&shared, &psk, &cx, true, self.cfg.aead.as_ref());
            if !keys.confirmed(head, confirm) {
                self.stats.forged += 1;
                return;
            }
            // Carrier protection: the handshake is proven, and the packets are the
            // carrier's to protect (see `handshake.rs`, where the server drops its keys).
            if seals {
                c.sealing = Some(Sealing { keys, replay: Default::default() });
            }
            c.ephemeral = None;
        }
        c.state = Handshake::Connected;
        c.claimed_denial = None;
        c.salt = wire::session_salt(client_salt, server_salt);
        c.last_recv = now;
        let addr = c.addr;
        self.inbox.push(Event::Connected { peer, addr, credential, binding });
    }

    /// A refusal. Final only when authenticated (module docs); otherwise noted, and the
    /// handshake goes on until its timeout.
    pub(super) fn on_denied(
        &mut self,
        from: SocketAddr,
        client_salt: u64,
        reason: DisconnectReason,
        tag: Option<[u8; wire::TAG_SIZE]>,
    ) {
        let Some(peer) = self.initiating_peer(from, client_salt).filter(|p| !self.conns[p].is_connected()) else {
            self.stats.unknown_sender += 1;
            return;
        };
        let proven = match (&self.cfg.security, tag) {
            (Security::InsecurePlaintext, _) => true,
            (Security::Encrypted { presented, .. }, Some(tag)) => {
                let c = &self.conns[&peer];
                let client_public = c.ephemeral.as_ref().map_or([0; KEY_SIZE], |e| e.public);
                let cookies = match &c.state {
                    Handshake::Responding { cookies } => *cookies,
                    _ => Cookies::default(),
                };
                cookies.iter().any(|(cookie_time, cookie_mac)| {
                    let input = ProofInput {
                        protocol_id: self.cfg.protocol_id,
                        client_salt,
                        cookie_time,
                        cookie_mac,
                        security: self.cfg.security.mode() as u8,
                        client_public: &client_public,
                        dialled: self.dialled(from),
                        binding: c.binding,
                        ciphers: self.cipher_offer().bits(),
                    };
                    denial_holds(presented.psk(), &input, reason as u8, &tag)
                })
            }
            (Security::Encrypted { .. }, None) => false,
        };
        if proven {
            return self.close(peer, reason, false);
        }
        self.stats.unverified_denials += 1;
        if let Some(c) = self.conns.get_mut(&peer) {
            c.claimed_denial = Some(reason);
        }
    }

    /// The ciphers this endpoint offers as a client (`EndpointConfig::aes_gcm`).
    fn cipher_offer(&self) -> CipherOffer {
        CipherOffer::new(self.cfg.aes_gcm)
    }

    /// How a handshake that never completed ends: `DeniedUnverified` if something
    /// refused it without proof on the way, else `Timeout`. The stated reason is kept.
    pub(super) fn handshake_timed_out(&mut self, peer: PeerId) {
        let claimed = self.conns.get(&peer).and_then(|c| c.claimed_denial);
        let reason = match claimed {
            Some(claim) => {
                if self.claims.len() == CLAIMS_KEPT {
                    self.claims.pop_front();
                }
                self.claims.push_back((peer, claim));
                DisconnectReason::DeniedUnverified
            }
            None => DisconnectReason::Timeout,
        };
        self.close(peer, reason, false);
    }

    /// What the other end said, without proof, when it refused `peer`'s handshake,
    /// which then ended [`DisconnectReason::DeniedUnverified`]: a hint for the log,
    /// never a fact (anyone on the path could have said it). Kept for the last 16.
    pub fn unverified_denial(&self, peer: PeerId) -> Option<DisconnectReason> {
        self.claims.iter().rev().find(|(p, _)| *p == peer).map(|&(_, r)| r)
    }

    pub(super) fn send_handshake(&mut self, now: Micros, peer: PeerId) {
        let Some(c) = self.conns.get_mut(&peer) else { return };
        let turn = match &mut c.state {
            Handshake::Responding { cookies } => Some(cookies.take_turn()),
            _ => None,
        };
        let (addr, state, client_salt, binding) = (c.addr, c.state, c.client_salt, c.binding);
        let client_public = c.ephemeral.as_ref().map_or([0; KEY_SIZE], |e| e.public);
        let pid = self.cfg.protocol_id;
        let security = self.cfg.security.mode();
        match state {
            Handshake::Requesting => {
                let mut buf = self.pool.get();
                wire::encode_connect_request(&mut buf, pid, client_salt, security);
                self.transmits.push(addr, &buf);
                self.pool.put(buf);
            }
            Handshake::Responding { .. } => {
                let dialled = self.dialled(addr);
                if let Some((cookie_time, cookie_mac)) = turn {
                    let mut response = ConnectResponse {
                        client_salt,
                        cookie_time,
                        cookie_mac,
                        security,
                        client_public,
                        proof: [0; 16],
                        token: None,
                        binding,
                        ciphers: self.cipher_offer(),
                    };
                    if let Security::Encrypted { presented, .. } = &self.cfg.security {
                        let input = ProofInput {
                            protocol_id: pid,
                            client_salt,
                            cookie_time,
                            cookie_mac,
                            security: security as u8,
                            client_public: &client_public,
                            dialled,
                            binding,
                            ciphers: response.ciphers.bits(),
                        };
                        response.proof = proof(presented.psk(), &input);
                        if let Presented::Token(t) = presented {
                            response.token = Some(TokenPart { expires: t.expires, nonce: &t.nonce, sealed: &t.sealed });
                        }
                    }
                    let mut buf = self.pool.get();
                    wire::encode_connect_response(&mut buf, pid, &response);
                    self.transmits.push(addr, &buf);
                    self.pool.put(buf);
                }
            }
            Handshake::Connected => return,
        }
        if let Some(c) = super::endpoint::touched(&mut self.conns, &mut self.changed, peer) {
            c.last_send = now;
        }
    }
}
