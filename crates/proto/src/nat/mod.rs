//! NAT traversal. For now its first pieces: the reflexive address a STUN server sees us
//! at (`stun.rs`, a binding client codec per RFC 8489), and the probes that ask for it
//! over a host's own socket (`probe.rs`: retransmissions, deadlines, and telling the
//! answers from the connections' datagrams).

mod probe;
mod stun;

pub use probe::{MAX_PROBES, ProbeError, Probes};
pub use stun::{
    BINDING_REQUEST_SIZE, MAGIC_COOKIE, StunError, TRANSACTION_ID_SIZE, decode_binding_response, encode_binding_request,
};
