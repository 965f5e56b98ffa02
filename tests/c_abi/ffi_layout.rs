//! The ABI layout: sizes, offsets, alignments, constants and numbering. Any change here
//! is an ABI change: bump TW_ABI_VERSION and the bindings.

use std::ffi::CStr;
use std::mem::{align_of, offset_of, size_of};

use tickwire::*;
use tickwire_proto::{CHANNEL_RELIABLE, CHANNEL_SEQUENCED, CHANNEL_UNRELIABLE, DisconnectReason};

#[test]
fn host_config_layout() {
    assert_eq!(size_of::<tw_host_config>(), 96);
    assert_eq!(align_of::<tw_host_config>(), 8);
    assert_eq!(offset_of!(tw_host_config, struct_size), 0);
    assert_eq!(offset_of!(tw_host_config, protocol_id), 4);
    assert_eq!(offset_of!(tw_host_config, max_clients), 8);
    assert_eq!(offset_of!(tw_host_config, max_message_size), 12);
    assert_eq!(offset_of!(tw_host_config, keepalive_interval_ms), 16);
    assert_eq!(offset_of!(tw_host_config, timeout_ms), 20);
    assert_eq!(offset_of!(tw_host_config, connect_timeout_ms), 24);
    assert_eq!(offset_of!(tw_host_config, handshake_retry_ms), 28);
    assert_eq!(offset_of!(tw_host_config, send_queue_limit_bytes), 32);
    assert_eq!(offset_of!(tw_host_config, recv_buffer_bytes), 36);
    assert_eq!(offset_of!(tw_host_config, send_buffer_bytes), 40);
    assert_eq!(offset_of!(tw_host_config, auto_flush_interval_us), 44);
    assert_eq!(offset_of!(tw_host_config, sim_seed), 48);
    assert_eq!(offset_of!(tw_host_config, security), 56);
    assert_eq!(offset_of!(tw_host_config, max_clients_per_ip), 64);
    assert_eq!(offset_of!(tw_host_config, max_messages_per_sec), 68);
    assert_eq!(offset_of!(tw_host_config, max_bytes_per_sec), 72);
    assert_eq!(offset_of!(tw_host_config, max_recv_queue_bytes), 76);
    assert_eq!(offset_of!(tw_host_config, max_frames_per_datagram), 80);
    assert_eq!(offset_of!(tw_host_config, max_datagram_size), 84);
    assert_eq!(offset_of!(tw_host_config, reserved), 88);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_host_config_size() }, size_of::<tw_host_config>());
}

#[test]
fn datagram_layout() {
    // The engine builds arrays of these for every push and pull (C#: an unmanaged
    // struct of the same layout, pinned once).
    assert_eq!(size_of::<tw_datagram>(), 8 + size_of::<*const u8>() + 8);
    assert_eq!(offset_of!(tw_datagram, remote), 0);
    assert_eq!(offset_of!(tw_datagram, data), 8);
    assert_eq!(offset_of!(tw_datagram, len), 8 + size_of::<*const u8>());
    assert_eq!(offset_of!(tw_datagram, age_us), 12 + size_of::<*const u8>());
}

#[test]
fn security_config_layout() {
    assert_eq!(size_of::<tw_security_config>(), 1240);
    assert_eq!(align_of::<tw_security_config>(), 4);
    let offsets = [
        (offset_of!(tw_security_config, struct_size), 0),
        (offset_of!(tw_security_config, mode), 4),
        (offset_of!(tw_security_config, has_match_secret), 8),
        (offset_of!(tw_security_config, has_spectator_secret), 12),
        (offset_of!(tw_security_config, has_connect_key), 16),
        (offset_of!(tw_security_config, connect_token_size), 20),
        (offset_of!(tw_security_config, match_secret), 24),
        (offset_of!(tw_security_config, spectator_secret), 56),
        (offset_of!(tw_security_config, connect_key), 88),
        (offset_of!(tw_security_config, public_address), 120),
        (offset_of!(tw_security_config, connect_token), 184),
        (offset_of!(tw_security_config, reserved), 1208),
    ];
    for (i, (got, want)) in offsets.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_security_config_size() }, size_of::<tw_security_config>());
    assert_eq!(TW_CONNECT_TOKEN_SIZE as usize, tickwire_proto::token::CONNECT_TOKEN_SIZE);
    assert_eq!(TW_KEY_SIZE as usize, tickwire_proto::KEY_SIZE);
    assert_eq!(TW_CONNECT_TOKEN_MAX_ADDRESSES as usize, tickwire_proto::token::MAX_TOKEN_ADDRESSES);
    assert_eq!(TW_CONNECT_TOKEN_USER_DATA_SIZE as usize, tickwire_proto::token::USER_DATA_SIZE);
    assert_eq!(tw_security_mode::Encrypted as u32, 0);
    assert_eq!(tw_security_mode::InsecurePlaintext as u32, 1);
}

#[test]
fn link_sim_config_layout() {
    assert_eq!(size_of::<tw_link_sim_config>(), 160);
    assert_eq!(align_of::<tw_link_sim_config>(), 8);
    let offsets = [
        (offset_of!(tw_link_sim_config, struct_size), 0),
        (offset_of!(tw_link_sim_config, jitter_kind), 4),
        (offset_of!(tw_link_sim_config, loss_kind), 8),
        (offset_of!(tw_link_sim_config, reserved0), 12),
        (offset_of!(tw_link_sim_config, latency_us), 16),
        (offset_of!(tw_link_sim_config, jitter_us), 24),
        (offset_of!(tw_link_sim_config, jitter_shape), 32),
        (offset_of!(tw_link_sim_config, loss_probability), 40),
        (offset_of!(tw_link_sim_config, loss_p_good_to_bad), 48),
        (offset_of!(tw_link_sim_config, loss_p_bad_to_good), 56),
        (offset_of!(tw_link_sim_config, loss_in_good), 64),
        (offset_of!(tw_link_sim_config, loss_in_bad), 72),
        (offset_of!(tw_link_sim_config, duplicate), 80),
        (offset_of!(tw_link_sim_config, reorder), 88),
        (offset_of!(tw_link_sim_config, reorder_delay_us), 96),
        (offset_of!(tw_link_sim_config, bandwidth_bytes_per_sec), 104),
        (offset_of!(tw_link_sim_config, queue_limit_bytes), 112),
        (offset_of!(tw_link_sim_config, seed), 120),
        (offset_of!(tw_link_sim_config, reserved), 128),
    ];
    for (i, (got, want)) in offsets.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_link_sim_config_size() }, size_of::<tw_link_sim_config>());
}

#[test]
fn event_layout() {
    assert_eq!(size_of::<tw_event>(), 128);
    assert_eq!(align_of::<tw_event>(), 8);
    assert_eq!(offset_of!(tw_event, kind), 0);
    assert_eq!(offset_of!(tw_event, peer), 4);
    assert_eq!(offset_of!(tw_event, data), 8);
    assert_eq!(size_of::<tw_event_data>(), 120);
    assert_eq!(align_of::<tw_event_data>(), 8);
    assert_eq!(size_of::<tw_event_connected>(), 80);
    assert_eq!(offset_of!(tw_event_connected, credential), 64);
    assert_eq!(offset_of!(tw_event_connected, client_id), 72);
    assert_eq!(size_of::<tw_event_disconnected>(), 4);
    assert_eq!(offset_of!(tw_event_message, channel), 0);
    assert_eq!(offset_of!(tw_event_message, size), 4);
    assert_eq!(size_of::<tw_event_fatal>(), 120);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_event_size() }, 128);
}

#[test]
fn stats_layout() {
    assert_eq!(size_of::<tw_peer_stats>(), 256);
    assert_eq!(offset_of!(tw_peer_stats, srtt_us), 0);
    assert_eq!(offset_of!(tw_peer_stats, rto_us), 32);
    assert_eq!(offset_of!(tw_peer_stats, loss), 40);
    assert_eq!(offset_of!(tw_peer_stats, recv_packets_per_sec), 72);
    assert_eq!(offset_of!(tw_peer_stats, packets_sent), 80);
    assert_eq!(offset_of!(tw_peer_stats, send_queue_bytes), 128);
    assert_eq!(offset_of!(tw_peer_stats, replayed), 136);
    assert_eq!(offset_of!(tw_peer_stats, forged), 144);
    assert_eq!(offset_of!(tw_peer_stats, reserved), 152);
    assert_eq!(size_of::<tw_host_stats>(), 256);
    assert_eq!(offset_of!(tw_host_stats, datagrams_received), 0);
    assert_eq!(offset_of!(tw_host_stats, connections), 88);
    assert_eq!(offset_of!(tw_host_stats, sends_rejected), 96);
    assert_eq!(offset_of!(tw_host_stats, event_backlog), 136);
    assert_eq!(offset_of!(tw_host_stats, security_mismatch), 144);
    assert_eq!(offset_of!(tw_host_stats, forged), 168);
    assert_eq!(offset_of!(tw_host_stats, reserved), 176);
    // SAFETY: no arguments.
    unsafe {
        assert_eq!(tw_peer_stats_size(), 256);
        assert_eq!(tw_host_stats_size(), 256);
    }
}

#[test]
fn result_codes_are_stable() {
    let expected: [(tw_result, i32, &str); 19] = [
        (tw_result::Ok, 0, "TW_RESULT_OK"),
        (tw_result::Empty, 1, "TW_RESULT_EMPTY"),
        (tw_result::NotSynchronized, 2, "TW_RESULT_NOT_SYNCHRONIZED"),
        (tw_result::WindowFull, 3, "TW_RESULT_WINDOW_FULL"),
        (tw_result::WaitingForInput, 4, "TW_RESULT_WAITING_FOR_INPUT"),
        (tw_result::Finished, 5, "TW_RESULT_FINISHED"),
        (tw_result::NullArgument, -1, "TW_RESULT_NULL_ARGUMENT"),
        (tw_result::InvalidArgument, -2, "TW_RESULT_INVALID_ARGUMENT"),
        (tw_result::BufferTooSmall, -3, "TW_RESULT_BUFFER_TOO_SMALL"),
        (tw_result::InvalidState, -4, "TW_RESULT_INVALID_STATE"),
        (tw_result::VersionMismatch, -5, "TW_RESULT_VERSION_MISMATCH"),
        (tw_result::Io, -6, "TW_RESULT_IO"),
        (tw_result::AddressInUse, -7, "TW_RESULT_ADDRESS_IN_USE"),
        (tw_result::QueueFull, -8, "TW_RESULT_QUEUE_FULL"),
        (tw_result::UnknownPeer, -9, "TW_RESULT_UNKNOWN_PEER"),
        (tw_result::NetworkThreadGone, -10, "TW_RESULT_NETWORK_THREAD_GONE"),
        (tw_result::Panic, -11, "TW_RESULT_PANIC"),
        (tw_result::MessageTooLarge, -12, "TW_RESULT_MESSAGE_TOO_LARGE"),
        (tw_result::Busy, -13, "TW_RESULT_BUSY"),
    ];
    assert_eq!(size_of::<tw_result>(), 4);
    for (r, n, name) in expected {
        assert_eq!(r as i32, n);
        assert_eq!(tw_result::try_from(n), Ok(r));
        // SAFETY: any integer is accepted; the result is a static string.
        let s = unsafe { CStr::from_ptr(tw_result_str(n)) };
        assert_eq!(s.to_str().unwrap(), name);
    }
    assert_eq!(tw_result::all().len(), expected.len(), "every code is listed here");
    for unknown in [6, -14, 1000, i32::MIN, i32::MAX] {
        // SAFETY: as above.
        let s = unsafe { CStr::from_ptr(tw_result_str(unknown)) };
        assert_eq!(s.to_str().unwrap(), "TW_RESULT_UNKNOWN");
    }
}

#[test]
fn constants_match_the_core() {
    assert_eq!(TW_CHANNEL_UNRELIABLE, u32::from(CHANNEL_UNRELIABLE));
    assert_eq!(TW_CHANNEL_SEQUENCED, u32::from(CHANNEL_SEQUENCED));
    assert_eq!(TW_CHANNEL_RELIABLE, u32::from(CHANNEL_RELIABLE));
    assert_eq!(TW_MAX_UNRELIABLE_SIZE as usize, tickwire_proto::MAX_UNRELIABLE);
    assert_eq!(TW_MAX_REPLAY_SIZE as usize, tickwire_runtime::MAX_REPLAY_SIZE);
    for n in 1..=14u8 {
        let core = DisconnectReason::from_u8(n).unwrap();
        assert_eq!(tw_disconnect_reason::from(core) as u32, u32::from(n), "{core:?}");
    }
    assert!(DisconnectReason::from_u8(0).is_none());
    // 15, RESOLVE_FAILED, is this side's own finding: never sent, so never decoded.
    assert_eq!(tw_disconnect_reason::from(DisconnectReason::ResolveFailed) as u32, 15);
    assert!(DisconnectReason::from_u8(15).is_none());
    assert_eq!(TW_MAX_PENDING_RESOLUTIONS as usize, tickwire_runtime::MAX_PENDING_RESOLUTIONS);
    assert_eq!(tw_direction::Outbound as u32, 0);
    assert_eq!(tw_direction::Inbound as u32, 1);
    assert_eq!(tw_jitter_kind::Pareto as u32, 3);
    assert_eq!(tw_loss_kind::GilbertElliott as u32, 2);
    assert_eq!(tw_event_kind::Connected as u32, 1);
    assert_eq!(tw_event_kind::Fatal as u32, 4);
}

#[test]
fn versions() {
    // SAFETY: no arguments; static string.
    let (v, s, abi) = unsafe { (tw_version(), CStr::from_ptr(tw_version_string()), tw_abi_version()) };
    let major: u32 = env!("CARGO_PKG_VERSION_MAJOR").parse().unwrap();
    let minor: u32 = env!("CARGO_PKG_VERSION_MINOR").parse().unwrap();
    let patch: u32 = env!("CARGO_PKG_VERSION_PATCH").parse().unwrap();
    assert_eq!(v, (major << 16) | (minor << 8) | patch);
    assert_eq!(s.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    assert_eq!(abi, TW_ABI_VERSION);
    assert!(abi >= 1);
}

#[test]
fn defaults_match_the_core_and_are_self_consistent() {
    let c = {
        let mut c = std::mem::MaybeUninit::<tw_host_config>::uninit();
        // SAFETY: writable storage.
        assert_eq!(unsafe { tw_host_config_init_default(c.as_mut_ptr()) }, tw_result::Ok);
        // SAFETY: fully written.
        unsafe { c.assume_init() }
    };
    let e = tickwire_proto::EndpointConfig::default();
    assert_eq!(c.struct_size as usize, size_of::<tw_host_config>());
    assert_eq!(c.protocol_id, e.protocol_id);
    assert_eq!(c.max_clients, e.max_incoming);
    assert_eq!(u64::from(c.keepalive_interval_ms) * 1000, e.keepalive_interval_us);
    assert_eq!(u64::from(c.timeout_ms) * 1000, e.timeout_us);
    assert_eq!(u64::from(c.connect_timeout_ms) * 1000, e.connect_timeout_us);
    assert_eq!(u64::from(c.handshake_retry_ms) * 1000, e.handshake_retry_us);
    assert_eq!(c.max_message_size as usize, e.max_message_size);
    assert_eq!(c.send_queue_limit_bytes as usize, e.send_queue_limit_bytes);
    // 256 KiB, as ENet's hosts ask for (`DEFAULT_RECV_BUFFER_BYTES`); the OS's send buffer.
    assert_eq!((c.recv_buffer_bytes, c.send_buffer_bytes, c.auto_flush_interval_us, c.sim_seed), (262_144, 0, 0, 0));
    assert!(c.reserved.iter().all(|&b| b == 0));

    let l = {
        let mut l = std::mem::MaybeUninit::<tw_link_sim_config>::uninit();
        // SAFETY: writable storage.
        assert_eq!(unsafe { tw_link_sim_config_init_default(l.as_mut_ptr()) }, tw_result::Ok);
        // SAFETY: fully written.
        unsafe { l.assume_init() }
    };
    assert_eq!(l.struct_size as usize, size_of::<tw_link_sim_config>());
    assert_eq!(l.jitter_kind, tw_jitter_kind::None as u32);
    assert_eq!(l.loss_kind, tw_loss_kind::None as u32);
    assert_eq!((l.latency_us, l.loss_probability, l.duplicate, l.reorder, l.seed), (0, 0.0, 0.0, 0.0, 0));
}

#[test]
fn handle_is_send() {
    // A tw_host may move between threads between calls.
    fn assert_send<T: Send>() {}
    assert_send::<tickwire_runtime::Host>();
}

#[test]
fn session_config_layout() {
    assert_eq!(size_of::<tw_session_config>(), 320);
    assert_eq!(align_of::<tw_session_config>(), 8);
    let offsets = [
        (offset_of!(tw_session_config, struct_size), 0),
        (offset_of!(tw_session_config, mode), 4),
        (offset_of!(tw_session_config, num_players), 8),
        (offset_of!(tw_session_config, input_size), 12),
        (offset_of!(tw_session_config, tick_rate_hz), 16),
        (offset_of!(tw_session_config, max_prediction), 24),
        (offset_of!(tw_session_config, input_delay), 28),
        (offset_of!(tw_session_config, check_distance), 32),
        (offset_of!(tw_session_config, desync_interval), 36),
        (offset_of!(tw_session_config, disconnect_timeout_ms), 40),
        (offset_of!(tw_session_config, disconnect_notify_ms), 44),
        (offset_of!(tw_session_config, spectator_catchup_speed), 48),
        (offset_of!(tw_session_config, spectator_max_behind), 52),
        (offset_of!(tw_session_config, max_spectators), 56),
        (offset_of!(tw_session_config, sparse_saving), 60),
        (offset_of!(tw_session_config, prediction), 64),
        (offset_of!(tw_session_config, progress_timeout_ms), 68),
        (offset_of!(tw_session_config, host), 72),
        (offset_of!(tw_session_config, bind_address), 168),
        // The relay fields, in what were reserved bytes: nothing above moved.
        (offset_of!(tw_session_config, late_rate), 232),
        (offset_of!(tw_session_config, server_send_interval), 240),
        (offset_of!(tw_session_config, client_send_interval), 244),
        (offset_of!(tw_session_config, jitter_max_depth), 248),
        (offset_of!(tw_session_config, jitter_hard_cap), 252),
        (offset_of!(tw_session_config, jitter_max_starved_ticks), 256),
        (offset_of!(tw_session_config, jitter_underflow), 260),
        (offset_of!(tw_session_config, jitter_late_policy), 264),
        (offset_of!(tw_session_config, input_delay_mode), 268),
        (offset_of!(tw_session_config, input_delay_rtt_percent), 272),
        (offset_of!(tw_session_config, input_delay_max), 276),
        (offset_of!(tw_session_config, catchup_ticks), 280),
        (offset_of!(tw_session_config, slot_timeout_ms), 284),
        (offset_of!(tw_session_config, hello_timeout_ms), 288),
        (offset_of!(tw_session_config, reconnect_window_ms), 292),
        (offset_of!(tw_session_config, step_history), 296),
        (offset_of!(tw_session_config, step_window), 300),
        (offset_of!(tw_session_config, bandwidth_cap), 304),
        (offset_of!(tw_session_config, max_update_datagrams), 308),
        (offset_of!(tw_session_config, max_catch_up_ms), 312),
        (offset_of!(tw_session_config, loading_grace_ms), 316),
    ];
    for (i, (got, want)) in offsets.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_session_config_size() }, size_of::<tw_session_config>());
}

#[test]
fn request_layout() {
    assert_eq!(size_of::<tw_request>(), 64);
    assert_eq!(align_of::<tw_request>(), 8);
    assert_eq!(offset_of!(tw_request, kind), 0);
    assert_eq!(offset_of!(tw_request, tick), 4);
    assert_eq!(offset_of!(tw_request, slot), 8);
    assert_eq!(offset_of!(tw_request, flags), 12);
    assert_eq!(offset_of!(tw_request, num_players), 16);
    assert_eq!(offset_of!(tw_request, input_size), 20);
    assert_eq!(offset_of!(tw_request, data_len), 24);
    assert_eq!(offset_of!(tw_request, reserved), 32);
    assert_eq!(size_of::<tw_input_status>(), 1);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_request_size() }, size_of::<tw_request>());
}

#[test]
fn player_identity_layout() {
    assert_eq!(size_of::<tw_player_identity>(), 304);
    assert_eq!(align_of::<tw_player_identity>(), 8);
    assert_eq!(offset_of!(tw_player_identity, credential), 0);
    assert_eq!(offset_of!(tw_player_identity, client_id), 8);
    assert_eq!(offset_of!(tw_player_identity, user_data), 16);
    assert_eq!(offset_of!(tw_player_identity, reserved), 272);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_player_identity_size() }, size_of::<tw_player_identity>());
}

#[test]
fn session_event_layout() {
    assert_eq!(size_of::<tw_session_event>(), 128);
    assert_eq!(align_of::<tw_session_event>(), 8);
    assert_eq!(offset_of!(tw_session_event, kind), 0);
    assert_eq!(offset_of!(tw_session_event, peer), 4);
    assert_eq!(offset_of!(tw_session_event, data), 8);
    assert_eq!(size_of::<tw_session_event_data>(), 120);
    assert_eq!(size_of::<tw_session_event_peer>(), 24);
    assert_eq!(offset_of!(tw_session_event_peer, disconnect_in_us), 8);
    assert_eq!(offset_of!(tw_session_event_peer, credential), 16);
    assert_eq!(size_of::<tw_session_event_player>(), 8);
    assert_eq!(size_of::<tw_session_event_tick>(), 4);
    assert_eq!(size_of::<tw_session_event_desync>(), 24);
    assert_eq!(offset_of!(tw_session_event_desync, local_checksum), 8);
    assert_eq!(offset_of!(tw_session_event_desync, remote_checksum), 16);
    assert_eq!(size_of::<tw_session_event_mismatch>(), 24);
    assert_eq!(offset_of!(tw_session_event_mismatch, actual_checksum), 16);
    assert_eq!(size_of::<tw_session_event_fatal>(), 120);
    assert_eq!(size_of::<tw_session_event_path>(), 72);
    assert_eq!(offset_of!(tw_session_event_path, path), 4);
    assert_eq!(offset_of!(tw_session_event_path, address), 8);
    assert_eq!(size_of::<tw_session_event_refusal>(), 8);
    assert_eq!(size_of::<tw_session_event_relay>(), 32);
    assert_eq!(offset_of!(tw_session_event_relay, credential), 20);
    assert_eq!(offset_of!(tw_session_event_relay, client_id), 24);
    assert_eq!(offset_of!(tw_session_event_relay, player), 0);
    assert_eq!(offset_of!(tw_session_event_relay, tick), 4);
    assert_eq!(offset_of!(tw_session_event_relay, reason), 8);
    assert_eq!(offset_of!(tw_session_event_relay, reconnect), 12);
    assert_eq!(offset_of!(tw_session_event_relay, code), 16);
    assert_eq!(size_of::<tw_session_event_rejected>(), 4);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_session_event_size() }, size_of::<tw_session_event>());
}

#[test]
fn session_stats_layout() {
    assert_eq!(size_of::<tw_session_stats>(), 256);
    assert_eq!(align_of::<tw_session_stats>(), 8);
    assert_eq!(offset_of!(tw_session_stats, running), 0);
    assert_eq!(offset_of!(tw_session_stats, current_tick), 8);
    assert_eq!(offset_of!(tw_session_stats, confirmed_tick), 12);
    assert_eq!(offset_of!(tw_session_stats, frames_ahead), 16);
    assert_eq!(offset_of!(tw_session_stats, max_rollback), 20);
    assert_eq!(offset_of!(tw_session_stats, time_scale), 24);
    assert_eq!(offset_of!(tw_session_stats, rollbacks), 32);
    assert_eq!(offset_of!(tw_session_stats, bytes_received), 112);
    assert_eq!(offset_of!(tw_session_stats, frames_behind), 120);
    assert_eq!(offset_of!(tw_session_stats, state_slots), 132);
    // The relay figures, in what was reserved space: nothing above moved.
    let relay = [
        (offset_of!(tw_session_stats, lead_ticks), 136),
        (offset_of!(tw_session_stats, interp_delay_ticks), 144),
        (offset_of!(tw_session_stats, rtt_us), 152),
        (offset_of!(tw_session_stats, late_inputs), 160),
        (offset_of!(tw_session_stats, merged_steps), 168),
        (offset_of!(tw_session_stats, empty_steps), 176),
        (offset_of!(tw_session_stats, clock_corrections), 184),
        (offset_of!(tw_session_stats, local_mispredictions), 192),
        (offset_of!(tw_session_stats, remote_mispredictions), 200),
        (offset_of!(tw_session_stats, server_buffer_depth), 208),
        (offset_of!(tw_session_stats, prediction_distance), 212),
        (offset_of!(tw_session_stats, players), 216),
        (offset_of!(tw_session_stats, local_player), 220),
        (offset_of!(tw_session_stats, reconnects), 224),
        (offset_of!(tw_session_stats, resyncs), 228),
        (offset_of!(tw_session_stats, input_send_interval), 232),
        (offset_of!(tw_session_stats, input_copies), 236),
        (offset_of!(tw_session_stats, reserved), 240),
    ];
    for (i, (got, want)) in relay.iter().enumerate() {
        assert_eq!(got, want, "relay field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_session_stats_size() }, size_of::<tw_session_stats>());
}

#[test]
fn relay_player_stats_layout() {
    assert_eq!(size_of::<tw_relay_player_stats>(), 128);
    assert_eq!(align_of::<tw_relay_player_stats>(), 8);
    let offsets = [
        (offset_of!(tw_relay_player_stats, player), 0),
        (offset_of!(tw_relay_player_stats, peer), 4),
        (offset_of!(tw_relay_player_stats, joined_tick), 8),
        (offset_of!(tw_relay_player_stats, buffer_depth), 12),
        (offset_of!(tw_relay_player_stats, ticks), 16),
        (offset_of!(tw_relay_player_stats, normal_steps), 24),
        (offset_of!(tw_relay_player_stats, empty_steps), 32),
        (offset_of!(tw_relay_player_stats, substituted_steps), 40),
        (offset_of!(tw_relay_player_stats, merges), 48),
        (offset_of!(tw_relay_player_stats, merged_inputs), 56),
        (offset_of!(tw_relay_player_stats, late_inputs), 64),
        (offset_of!(tw_relay_player_stats, duplicates), 72),
        (offset_of!(tw_relay_player_stats, rtt_us), 80),
        (offset_of!(tw_relay_player_stats, update_bytes), 88),
        (offset_of!(tw_relay_player_stats, steps_resent), 96),
        (offset_of!(tw_relay_player_stats, step_copies), 104),
        (offset_of!(tw_relay_player_stats, copies_capped), 112),
        (offset_of!(tw_relay_player_stats, reserved), 120),
    ];
    for (i, (got, want)) in offsets.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_relay_player_stats_size() }, 128);
}

#[test]
fn session_constants_are_stable() {
    let modes = [
        (tw_session_mode::P2p, 1),
        (tw_session_mode::Synctest, 2),
        (tw_session_mode::Spectator, 3),
        (tw_session_mode::Replay, 4),
        (tw_session_mode::RelayServer, 5),
        (tw_session_mode::RelayClient, 6),
    ];
    for (m, n) in modes {
        assert_eq!(m as u32, n, "{m:?}");
    }
    assert_eq!(tw_request_kind::Save as u32, 1);
    assert_eq!(tw_request_kind::DumpState as u32, 5);
    assert_eq!((TW_REQUEST_FLAG_RESIMULATING, TW_REQUEST_FLAG_PREDICTED, TW_REQUEST_FLAG_AUTHORITATIVE), (1, 2, 4));
    // The statuses are the core's InputStatus numbers.
    use tickwire_proto::InputStatus;
    assert_eq!(tw_input_status::Confirmed as u8, InputStatus::Confirmed as u8);
    assert_eq!(tw_input_status::Predicted as u8, InputStatus::Predicted as u8);
    assert_eq!(tw_input_status::Disconnected as u8, InputStatus::Disconnected as u8);
    assert_eq!(tw_session_event_kind::Synchronized as u32, 1);
    assert_eq!(tw_session_event_kind::Fatal as u32, 14);
    let relay_kinds = [
        (tw_session_event_kind::PlayerJoined, 15),
        (tw_session_event_kind::PlayerReconnected, 16),
        (tw_session_event_kind::PlayerLeft, 17),
        (tw_session_event_kind::PlayerSlotFreed, 18),
        (tw_session_event_kind::PlayerKicked, 19),
        (tw_session_event_kind::Joined, 20),
        (tw_session_event_kind::Reconnecting, 21),
        (tw_session_event_kind::Resyncing, 22),
        (tw_session_event_kind::ServerLost, 23),
    ];
    for (k, n) in relay_kinds {
        assert_eq!(k as u32, n, "{k:?}");
    }
    assert_eq!(tw_prediction::Zero as u32, 1);
    assert_eq!(TW_NO_PLAYER, u32::MAX);
    assert_eq!(TW_LOCAL_PLAYER, u32::MAX - 1);
    assert_eq!((tw_underflow_policy::RepeatLast as u32, tw_underflow_policy::Empty as u32), (0, 1));
    assert_eq!(
        (tw_late_policy::Delay as u32, tw_late_policy::Substitute as u32, tw_late_policy::Adaptive as u32),
        (0, 1, 2)
    );
    assert_eq!((tw_input_delay_mode::Fixed as u32, tw_input_delay_mode::FromRtt as u32), (0, 1));
    assert_eq!(
        (tw_kick_reason::Overflow as u32, tw_kick_reason::Starved as u32, tw_kick_reason::FellBehind as u32),
        (1, 2, 3)
    );
    let rejects = [
        (tw_reject_reason::UnexpectedAddress, 0),
        (tw_reject_reason::Malformed, 1),
        (tw_reject_reason::WrongGame, 2),
        (tw_reject_reason::BadToken, 3),
        (tw_reject_reason::Full, 4),
        (tw_reject_reason::NoHello, 5),
    ];
    for (r, n) in rejects {
        assert_eq!(r as u32, n, "{r:?}");
    }
}

#[test]
fn session_defaults_match_the_core() {
    let c = {
        let mut c = std::mem::MaybeUninit::<tw_session_config>::uninit();
        // SAFETY: writable storage.
        assert_eq!(unsafe { tw_session_config_init_default(c.as_mut_ptr()) }, tw_result::Ok);
        // SAFETY: fully written.
        unsafe { c.assume_init() }
    };
    let p = tickwire_proto::P2pConfig::default();
    assert_eq!(c.struct_size as usize, size_of::<tw_session_config>());
    assert_eq!(c.host.struct_size as usize, size_of::<tw_host_config>());
    assert_eq!(c.mode, tw_session_mode::P2p as u32);
    assert_eq!(c.input_size as usize, p.game.input_size);
    assert_eq!(c.max_prediction, p.max_prediction);
    assert_eq!(c.desync_interval, p.desync_interval);
    assert_eq!(u64::from(c.disconnect_timeout_ms) * 1000, p.disconnect_timeout_us);
    assert_eq!(u64::from(c.disconnect_notify_ms) * 1000, p.notify_after_us);
    assert!((1e6 / c.tick_rate_hz - p.game.tick_us()).abs() < 1e-6);
    assert_eq!(u64::from(c.max_catch_up_ms) * 1000, p.game.max_frame_us);
    assert_eq!(c.max_catch_up_ms, 250);
    // SAFETY: init_default NUL-terminates the text.
    let bind = unsafe { std::ffi::CStr::from_ptr(c.bind_address.as_ptr()) };
    assert_eq!(bind.to_str().unwrap(), "0.0.0.0:0");
    assert_eq!(u64::from(c.progress_timeout_ms) * 1000, p.progress_timeout_us);
    assert_eq!(u64::from(c.loading_grace_ms) * 1000, p.loading_grace_us);
    // The relay defaults are the cores' own.
    use tickwire_proto::RelayClientSessionConfig;
    use tickwire_proto::RelayServerSessionConfig;
    let (rs, rc) = (RelayServerSessionConfig::default(), RelayClientSessionConfig::default());
    assert_eq!(c.late_rate, rc.sync.lead.late_rate);
    assert_eq!(c.server_send_interval, rs.relay.send_interval);
    assert_eq!(
        c.server_send_interval, rc.sync.interp.send_interval,
        "the client's interpolation follows the server's interval"
    );
    assert_eq!(c.client_send_interval, rc.sync.send_interval);
    assert_eq!(c.jitter_max_depth as usize, rs.relay.jitter.max_depth);
    assert_eq!(c.jitter_hard_cap as usize, rs.relay.jitter.hard_cap);
    assert_eq!(c.jitter_max_starved_ticks, rs.relay.jitter.max_starved_ticks);
    assert_eq!((c.jitter_underflow, c.input_delay_mode), (0, 0));
    // The core's default late policy is adaptive (substitute a short gap, then wait).
    assert_eq!(rs.relay.jitter.late, tickwire_proto::LatePolicy::Adaptive { substitute_run: 2 });
    assert_eq!(c.jitter_late_policy, tw_late_policy::Adaptive as u32);
    assert_eq!(c.catchup_ticks, rc.max_catchup_ticks);
    assert_eq!(u64::from(c.slot_timeout_ms) * 1000, rs.reconnect_timeout_us);
    assert_eq!(u64::from(c.hello_timeout_ms) * 1000, rs.hello_timeout_us);
    assert_eq!(u64::from(c.reconnect_window_ms) * 1000, rc.reconnect_window_us);
    assert_eq!(c.step_history as usize, rs.relay.step_history);
    assert_eq!(c.step_window as usize, rs.relay.step_window);
    assert_eq!(u64::from(c.bandwidth_cap), rs.relay.bandwidth_cap);
    assert_eq!(c.max_update_datagrams as usize, rs.relay.max_update_datagrams);
}

#[test]
fn session_handle_is_send() {
    fn assert_send<T: Send>() {}
    // A tw_session may move between threads between calls: every kind it can hold
    // must be Send.
    use tickwire_runtime::*;
    assert_send::<P2pSession>();
    assert_send::<SyncTest>();
    assert_send::<Spectator>();
    assert_send::<ReplayPlayer>();
    assert_send::<RelayServer>();
    assert_send::<RelayClient>();
}

#[test]
fn rendezvous_stats_layout() {
    assert_eq!(size_of::<tw_rendezvous_stats>(), 80);
    assert_eq!(align_of::<tw_rendezvous_stats>(), 8);
    assert_eq!(offset_of!(tw_rendezvous_stats, members), 8);
    assert_eq!(offset_of!(tw_rendezvous_stats, dropped), 72);
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_rendezvous_stats_size() }, 80);
}

#[test]
fn network_stats_layout() {
    assert_eq!(size_of::<tw_network_stats>(), 128);
    assert_eq!(align_of::<tw_network_stats>(), 8);
    let offsets = [
        (offset_of!(tw_network_stats, player), 0),
        (offset_of!(tw_network_stats, peer), 4),
        (offset_of!(tw_network_stats, rtt_us), 8),
        (offset_of!(tw_network_stats, loss), 16),
        (offset_of!(tw_network_stats, kbps_sent), 24),
        (offset_of!(tw_network_stats, kbps_received), 32),
        (offset_of!(tw_network_stats, local_frame_advantage), 40),
        (offset_of!(tw_network_stats, remote_frame_advantage), 44),
        (offset_of!(tw_network_stats, frames_ahead), 48),
        (offset_of!(tw_network_stats, send_queue), 52),
        (offset_of!(tw_network_stats, recv_queue), 56),
        (offset_of!(tw_network_stats, predicted_ticks), 60),
        (offset_of!(tw_network_stats, silent_us), 64),
        // The path took the first 52 of the 56 reserved bytes.
        (offset_of!(tw_network_stats, path), 72),
        (offset_of!(tw_network_stats, path_address), 76),
        (offset_of!(tw_network_stats, reserved), 124),
    ];
    for (i, (got, want)) in offsets.iter().enumerate() {
        assert_eq!(got, want, "field #{i}");
    }
    // SAFETY: no arguments.
    assert_eq!(unsafe { tw_network_stats_size() }, 128);
}
