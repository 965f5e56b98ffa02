//! Sessions: the topologies, composed from the transport, the clocks and the sync
//! pieces. This module holds the relay (server/client) topology: its synchronisation
//! layer ([`relay_server`] with its [`step_history`], [`relay_client`] with its
//! [`step_queue`], [`messages`])
//! and, on top, the engine-facing sessions with prediction, reconciliation,
//! join-in-progress, reconnect and desync detection ([`relay_server_session`],
//! [`relay_client_session`]).

pub mod input_delay;
pub mod join;
pub mod messages;
pub mod prediction;
pub mod relay_client;
pub mod relay_client_session;
pub mod relay_server;
pub mod relay_server_session;
pub mod step_history;
pub mod step_queue;
