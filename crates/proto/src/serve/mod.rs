//! A server of many relay-only matches on one transport, made by connect tokens
//! ([`match_server`], what `tickwire serve` runs), and the match claim in those
//! tokens ([`claim`]).

pub(crate) mod claim;
pub(crate) mod match_server;
