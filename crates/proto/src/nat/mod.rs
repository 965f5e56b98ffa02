//! NAT traversal. For now its first piece: the reflexive address a STUN server sees us
//! at (`stun.rs`, a binding client codec per RFC 8489).

mod stun;

pub use stun::{
    BINDING_REQUEST_SIZE, MAGIC_COOKIE, StunError, TRANSACTION_ID_SIZE, decode_binding_response, encode_binding_request,
};
