//! NAT traversal: the reflexive address a STUN server sees us at (`stun.rs`, a binding
//! client codec per RFC 8489) and the probes that ask for it over a host's own socket
//! (`probe.rs`); the rendezvous service that introduces a match's peers and relays what
//! cannot go direct (`rendezvous.rs`), its tickets (`ticket.rs`) and datagrams
//! (`messages.rs`); and a peer's side (`traversal.rs`: registration, connectivity
//! checks, the path to each peer; `paths.rs`: what it and its owner speak in).

mod messages;
mod paths;
mod probe;
mod rendezvous;
mod stun;
mod ticket;
mod traversal;

pub use messages::{HELLO_SIZE, MAX_HOSTS, MAX_RENDEZVOUS_PLAYERS, RELAY_HEADER_SIZE, RefusedReason, canonical};
pub use paths::{
    Claimed, PEER_PORT, PeerPath, Route, TraversalConfig, TraversalEvent, TraversalStats, peer_address, peer_slot,
    relay_header,
};
pub use probe::{MAX_PROBES, ProbeError, Probes};
pub use rendezvous::{Rendezvous, RendezvousConfig, RendezvousStats, relayed_payload};
pub use stun::{
    BINDING_REQUEST_SIZE, MAGIC_COOKIE, StunError, TRANSACTION_ID_SIZE, decode_binding_response, encode_binding_request,
};
pub use ticket::{ClaimError, MATCH_CLAIM_SIZE, MatchClaim};
pub use traversal::Traversal;
