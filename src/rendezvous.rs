//! P2P matches behind NATs: `tw_session_set_rendezvous`, the path to each remote
//! player (`tw_path`, the PATH_CHANGED event's data, `tw_network_stats.path`), and the
//! match claim a backend puts in a ticket's user data (`tw_match_claim_write`).

use std::ffi::c_char;
use std::net::SocketAddr;

use super::args::{arg_addr, arg_bytes};
use super::error::{Failure, copy_c_string, tw_result};
use super::guard;
use super::session::{session_failure, tw_session, with_session};
use super::session_kind::SessionKind;
use tickwire_proto::token::ConnectToken;
use tickwire_proto::{MATCH_CLAIM_SIZE, MatchClaim, PeerPath, RefusedReason};
use tickwire_runtime::Rendezvous;

/// `tw_session_set_rendezvous` flag: relay everything, so that no peer learns another's
/// address (nor this side theirs). Every pair with a private peer is relayed.
pub const TW_RENDEZVOUS_PRIVATE: u32 = 1;

/// Bytes of the match claim at the start of a rendezvous ticket's user data
/// (`tw_match_claim_write`).
pub const TW_MATCH_CLAIM_SIZE: u32 = 18;
const _: () = assert!(TW_MATCH_CLAIM_SIZE as usize == MATCH_CLAIM_SIZE);

/// How a remote player's datagrams go (`tw_session_event_path.path`,
/// `tw_network_stats.path`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_path {
    /// No rendezvous, or the rendezvous has not introduced the peer yet.
    None = 0,
    /// Straight to the peer (`address` is where).
    Direct = 1,
    /// Through the rendezvous's relay (`address` is the relay's): the relay forwards
    /// what it cannot read (sealed end to end).
    Relayed = 2,
}

/// Why a rendezvous refused this side's ticket (`tw_session_event_refusal.reason`).
/// Advisory: a refusal is not authenticated, and the session keeps trying.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tw_rendezvous_refusal {
    /// The ticket does not open with the rendezvous's key, does not name it, or its
    /// proof fails.
    BadTicket = 1,
    /// The ticket has expired.
    Expired = 2,
    /// The ticket's user data holds no match claim.
    NoMatch = 3,
    /// Another player (another client id) holds this slot of the match.
    SlotTaken = 4,
    /// The match's time is up, or the service holds all the matches it may.
    Closed = 5,
    /// The ticket's player count disagrees with the match's other tickets.
    Mismatch = 6,
}

/// PATH_CHANGED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_path {
    /// The remote player.
    pub player: u32,
    /// A `tw_path`.
    pub path: u32,
    /// Where its datagrams go now: the peer's address (DIRECT) or the relay's
    /// (RELAYED), as text, NUL-terminated.
    pub address: [c_char; 64],
}

/// RENDEZVOUS_REFUSED.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tw_session_event_refusal {
    /// A `tw_rendezvous_refusal`.
    pub reason: u32,
    /// Must be ignored.
    pub reserved0: u32,
}

/// A path's kind and address as the C structs hold them.
pub(crate) fn path_parts(p: Option<PeerPath>) -> (tw_path, Option<SocketAddr>) {
    match p {
        None | Some(PeerPath::Pending) => (tw_path::None, None),
        Some(PeerPath::Direct(a)) => (tw_path::Direct, Some(a)),
        Some(PeerPath::Relayed(a)) => (tw_path::Relayed, Some(a)),
    }
}

/// Writes `addr`'s text into `out` (NUL-terminated; empty for none).
pub(crate) fn write_address<const N: usize>(addr: Option<SocketAddr>, out: &mut [c_char; N]) {
    let text = addr.map(|a| a.to_string()).unwrap_or_default();
    // SAFETY: `out` is an array of exactly the length passed.
    unsafe { copy_c_string(text.as_bytes(), out.as_mut_ptr(), N) };
}

pub(crate) fn path_event(player: usize, path: PeerPath) -> tw_session_event_path {
    let (kind, addr) = path_parts(Some(path));
    let mut e = tw_session_event_path { player: player as u32, path: kind as u32, address: [0; 64] };
    write_address(addr, &mut e.address);
    e
}

pub(crate) fn refusal(r: RefusedReason) -> tw_session_event_refusal {
    let reason = match r {
        RefusedReason::BadTicket => tw_rendezvous_refusal::BadTicket,
        RefusedReason::Expired => tw_rendezvous_refusal::Expired,
        RefusedReason::NoMatch => tw_rendezvous_refusal::NoMatch,
        RefusedReason::SlotTaken => tw_rendezvous_refusal::SlotTaken,
        RefusedReason::Closed => tw_rendezvous_refusal::Closed,
        RefusedReason::Mismatch => tw_rendezvous_refusal::Mismatch,
    };
    tw_session_event_refusal { reason: reason as u32, reserved0: 0 }
}

/// P2P, before `tw_session_start`: meet the match's other peers through the rendezvous
/// at `address` (IP and port) with this player's `ticket` (a connect token minted with
/// the rendezvous's key whose user data starts with a match claim,
/// `tw_match_claim_write`), rather than at addresses given. Then add each remote player
/// with `tw_session_add_remote_player(session, player, NULL)`: one player per peer.
///
/// At `tw_session_start` the session registers with the rendezvous, learns the other
/// peers' candidate addresses (their local address and the one the rendezvous sees),
/// checks every candidate from both sides at once (authenticated with the players'
/// secret, which the rendezvous never has), and keeps each peer's best working path:
/// direct, else through the rendezvous's relay, which forwards packets it cannot read
/// (they are sealed end to end). The relay carries a peer as soon as it is introduced;
/// the path goes direct when a check succeeds, moves to a peer's new address when its
/// NAT maps it anew, and goes back to the relay when a direct path stops answering for
/// 1 s (a NAT mapping timed out, a route went): the match goes on.
/// `TW_SESSION_EVENT_KIND_PATH_CHANGED` reports each change; `tw_network_stats.path`
/// the path now. Checks every 250 ms keep a direct path's NAT mappings open.
///
/// `flags`: `TW_RENDEZVOUS_PRIVATE` relays everything and tells nobody this side's
/// address (any pair with a private peer is relayed).
///
/// Needs the players' secret (`tw_security_config.match_secret`) and exactly one
/// local player, the ticket's slot (checked at `tw_session_start`; a rendezvous that
/// says the ticket is for another slot ends the session with a FATAL event).
///
/// Ownership: `address` and `ticket` are only read during the call.
///
/// Thread-safety: a session is used from one thread at a time (it may move between
/// threads between calls).
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT` (an
/// unparsable address, a ticket that is not `TW_CONNECT_TOKEN_SIZE` bytes or does not
/// read, unknown flags, no players' secret, an IPv6 address from an IPv4 socket);
/// `TW_RESULT_INVALID_STATE` (not P2P, or started); `TW_RESULT_BUSY` (another call on
/// the session is in progress); `TW_RESULT_PANIC`.
///
/// # Safety
/// `session` must be NULL or a live handle. `address` must be NULL or a
/// NUL-terminated string. `ticket` must be NULL or valid for reading `ticket_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_session_set_rendezvous(
    session: *mut tw_session,
    address: *const c_char,
    ticket: *const u8,
    ticket_len: usize,
    flags: u32,
) -> tw_result {
    with_session("tw_session_set_rendezvous", session, |s| {
        // SAFETY: NULL or NUL-terminated per the contract.
        let address = unsafe { arg_addr(address, "address") }?;
        if ticket.is_null() {
            return Err(Failure::null("ticket"));
        }
        // SAFETY: non-NULL and valid for `ticket_len` bytes per the contract.
        let bytes = unsafe { arg_bytes(ticket, ticket_len, "ticket") }?;
        let ticket = ConnectToken::decode(bytes).map_err(|e| Failure::invalid(format!("ticket: {e}")))?;
        if flags & !TW_RENDEZVOUS_PRIVATE != 0 {
            return Err(Failure::invalid(format!("flags {flags:#x}: only TW_RENDEZVOUS_PRIVATE is defined")));
        }
        let SessionKind::P2p(p) = &mut s.kind else { return Err(s.kind.unavailable("a rendezvous")) };
        let private = flags & TW_RENDEZVOUS_PRIVATE != 0;
        p.set_rendezvous(Rendezvous { address, ticket, private }).map_err(session_failure)?;
        Ok(tw_result::Ok)
    })
}

/// Writes the match claim a rendezvous ticket's user data starts with: the match
/// (`match_id`, the backend's name for it), the player's `slot` (below `players`) and
/// the match's `players` (2..=8), in `TW_MATCH_CLAIM_SIZE` bytes. Put them first in the
/// `user_data` of `tw_connect_token_generate`, the game's own bytes after.
///
/// Ownership: `out` is caller memory, written only on success.
/// Thread-safety: may be called from any thread.
///
/// Returns `TW_RESULT_OK`; `TW_RESULT_NULL_ARGUMENT`; `TW_RESULT_INVALID_ARGUMENT`
/// (`players` out of range, `slot` not below it, `out_size` below
/// `TW_MATCH_CLAIM_SIZE`); `TW_RESULT_PANIC`.
///
/// # Safety
/// `out` must be NULL or valid for writing `out_size` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tw_match_claim_write(
    match_id: u64,
    slot: u32,
    players: u32,
    out: *mut u8,
    out_size: usize,
) -> tw_result {
    guard::run("tw_match_claim_write", || {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        if out_size < MATCH_CLAIM_SIZE {
            return Err(Failure::invalid(format!("out_size {out_size} is below TW_MATCH_CLAIM_SIZE")));
        }
        let (slot, players) = match (u8::try_from(slot), u8::try_from(players)) {
            (Ok(s), Ok(p)) => (s, p),
            _ => return Err(Failure::invalid(format!("slot {slot} of players {players}: players are 2..=8"))),
        };
        let bytes =
            MatchClaim { match_id, slot, players }.user_data(&[]).map_err(|e| Failure::invalid(e.to_string()))?;
        // SAFETY: `out` is non-NULL and valid for `out_size` >= MATCH_CLAIM_SIZE bytes
        // per the contract; `bytes` is exactly MATCH_CLAIM_SIZE long and ours.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
        Ok(tw_result::Ok)
    })
}
