//! Sessions: the topologies, composed from the transport, the clocks and the sync
//! pieces. This module holds the relay (server/client) topology: its synchronisation
//! layer ([`relay_server`] with its [`step_history`], [`relay_client`] with its
//! [`step_queue`], [`messages`])
//! and, on top, the engine-facing sessions with prediction, reconciliation,
//! join-in-progress, reconnect and desync detection ([`relay_server_session`],
//! [`relay_client_session`]).

mod client_phase;
pub(crate) mod hosted;
mod hosted_client;
pub(crate) mod input_delay;
pub(crate) mod join;
pub(crate) mod messages;
pub(crate) mod prediction;
pub(crate) mod relay_client;
pub(crate) mod relay_client_session;
pub(crate) mod relay_server;
pub(crate) mod relay_server_session;
pub(crate) mod step_codec;
pub(crate) mod step_history;
mod step_queue;
mod step_receiver;

/// The largest unreliable message the relay must be able to send whole: a server
/// update with no reports carrying one piece of a step too large for one datagram
/// (pieces are 1,024 bytes on the wire). It sets the floor of an endpoint's datagram
/// limit (`wire::MIN_DATAGRAM_SIZE`).
pub(crate) const UPDATE_PIECE_SIZE: usize =
    messages::update_head_size(0, 0) + step_codec::FRAGMENT_HEAD + step_codec::FRAGMENT_BYTES;
const _: () = assert!(UPDATE_PIECE_SIZE <= crate::transport::max_unreliable_for(crate::wire::MIN_DATAGRAM_SIZE));
