//! Sessions: the topologies, composed from the transport, the clocks and the sync
//! pieces. This module holds the relay topology's synchronisation layer.

pub mod messages;
pub mod relay_client;
pub mod relay_server;
