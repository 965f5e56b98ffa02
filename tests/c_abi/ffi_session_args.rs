//! Argument and state checking of every `tw_session_*` export: NULL pointers, unknown
//! struct sizes, bad config fields (the relay fields in the relay modes), calls in the
//! wrong mode or phase, bad players, addresses and sizes, request accessors with no (or
//! the wrong) current request, the buffer contract, and poisoning after a panic.
//! Failures return the documented code, name the function in the last error, and write
//! no output.

use crate::support::abi_engine;
use crate::support::common;

use std::ffi::c_char;
use std::ptr;

use abi_engine::{SessionGuard, cstr, stats};
use common::{assert_err, last_error};
use tickwire::*;

fn config(mode: tw_session_mode, players: u32) -> tw_session_config {
    let mut c = std::mem::MaybeUninit::<tw_session_config>::uninit();
    // SAFETY: writable storage.
    assert_eq!(unsafe { tw_session_config_init_default(c.as_mut_ptr()) }, tw_result::Ok);
    // SAFETY: fully written.
    let mut c = unsafe { c.assume_init() };
    c.mode = mode as u32;
    c.num_players = players;
    for (d, s) in c.bind_address.iter_mut().zip(b"127.0.0.1:0\0") {
        *d = *s as c_char;
    }
    c
}

fn try_create(c: &tw_session_config) -> Result<SessionGuard, tw_result> {
    let sentinel = ptr::dangling_mut::<tw_session>();
    let mut s = sentinel;
    // SAFETY: valid pointers.
    let r = unsafe { tw_session_create(c, &mut s) };
    if r == tw_result::Ok {
        Ok(SessionGuard(s))
    } else {
        assert_eq!(s, sentinel, "out_session written on failure");
        Err(r)
    }
}

fn create(c: &tw_session_config) -> SessionGuard {
    try_create(c).unwrap_or_else(|r| panic!("create: {r:?}: {}", last_error()))
}

/// A one-player P2P session: it runs at once, with no peer.
fn solo() -> SessionGuard {
    let s = create(&config(tw_session_mode::P2p, 1));
    // SAFETY: live session.
    unsafe {
        assert_eq!(tw_session_add_local_player(s.0, 0), tw_result::Ok);
        assert_eq!(tw_session_start(s.0), tw_result::Ok, "{}", last_error());
    }
    s
}

#[test]
fn config_and_create_reject_bad_arguments() {
    // SAFETY (whole test): every pointer is NULL or valid.
    unsafe {
        assert_err(
            tw_session_config_init_default(ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_config_init_default",
            "config is NULL",
        );
        let good = config(tw_session_mode::P2p, 2);
        let mut s = ptr::null_mut();
        assert_err(
            tw_session_create(ptr::null(), &mut s),
            tw_result::NullArgument,
            "tw_session_create",
            "config is NULL",
        );
        assert_err(
            tw_session_create(&good, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_create",
            "out_session is NULL",
        );
    }
    type Edit = Box<dyn Fn(&mut tw_session_config)>;
    let cases: Vec<(tw_result, &str, Edit)> = vec![
        (tw_result::VersionMismatch, "struct_size is 319", Box::new(|c| c.struct_size = 319)),
        (tw_result::VersionMismatch, "host.struct_size is 0", Box::new(|c| c.host.struct_size = 0)),
        (tw_result::InvalidArgument, "mode 0 is not", Box::new(|c| c.mode = 0)),
        (tw_result::InvalidArgument, "mode 7 is not", Box::new(|c| c.mode = 7)),
        (tw_result::InvalidArgument, "tick_rate_hz", Box::new(|c| c.tick_rate_hz = 0.0)),
        (tw_result::InvalidArgument, "tick_rate_hz", Box::new(|c| c.tick_rate_hz = f64::NAN)),
        (tw_result::InvalidArgument, "tick_rate_hz", Box::new(|c| c.tick_rate_hz = 20_000.0)),
        (tw_result::InvalidArgument, "prediction 2", Box::new(|c| c.prediction = 2)),
        (tw_result::InvalidArgument, "bind_address", Box::new(|c| c.bind_address[0] = b'x' as c_char)),
        (tw_result::InvalidArgument, "NUL-terminated", Box::new(|c| c.bind_address = [b'1' as c_char; 64])),
        (tw_result::InvalidArgument, "num_players: 0 is not in 1..=255", Box::new(|c| c.num_players = 0)),
        (tw_result::InvalidArgument, "num_players: 256 is not in 1..=255", Box::new(|c| c.num_players = 256)),
        (tw_result::InvalidArgument, "input_size: 0 is not in 1..=255", Box::new(|c| c.input_size = 0)),
        (tw_result::InvalidArgument, "input_size: 256 is not in 1..=255", Box::new(|c| c.input_size = 256)),
        (
            tw_result::InvalidArgument,
            "input_size: 255 bytes for each of 8 players do not fit one datagram",
            Box::new(|c| {
                c.num_players = 8;
                c.input_size = 255;
            }),
        ),
        (tw_result::InvalidArgument, "max_prediction: 65 is above 64", Box::new(|c| c.max_prediction = 65)),
        (tw_result::InvalidArgument, "input_delay: 33 is above 32", Box::new(|c| c.input_delay = 33)),
        (
            tw_result::InvalidArgument,
            "tw_session_config.disconnect_notify_ms: 5000 must be below tw_session_config.disconnect_timeout_ms (5000)",
            Box::new(|c| c.disconnect_notify_ms = c.disconnect_timeout_ms),
        ),
        (
            tw_result::InvalidArgument,
            "tw_session_config.host.keepalive_interval_ms 0 must be above 0",
            Box::new(|c| c.host.keepalive_interval_ms = 0),
        ),
        (
            tw_result::InvalidArgument,
            "check_distance: 0 is not in 1..=32",
            Box::new(|c| {
                c.mode = tw_session_mode::Synctest as u32;
                c.check_distance = 0;
            }),
        ),
        (
            tw_result::InvalidArgument,
            "spectator_catchup_speed: 0 is not in 1..=16",
            Box::new(|c| {
                c.mode = tw_session_mode::Spectator as u32;
                c.spectator_catchup_speed = 0;
            }),
        ),
    ];
    for (code, needle, edit) in cases {
        let mut cfg = config(tw_session_mode::P2p, 2);
        edit(&mut cfg);
        let r = try_create(&cfg).err().unwrap_or_else(|| panic!("{needle}: accepted"));
        assert_err(r, code, "tw_session_create", needle);
    }
    // The relay fields, checked in the relay modes.
    let server = |edit: fn(&mut tw_session_config)| -> tw_session_config {
        let mut c = config(tw_session_mode::RelayServer, 4);
        edit(&mut c);
        c
    };
    let client = |edit: fn(&mut tw_session_config)| -> tw_session_config {
        let mut c = config(tw_session_mode::RelayClient, 4);
        edit(&mut c);
        c
    };
    let relay_cases: Vec<(&str, tw_session_config)> = vec![
        ("server_send_interval 0", server(|c| c.server_send_interval = 0)),
        ("server_send_interval 61", client(|c| c.server_send_interval = 61)),
        ("jitter_max_depth 0", server(|c| c.jitter_max_depth = 0)),
        (
            "jitter_hard_cap 7 is not in 8..=4096",
            server(|c| {
                c.jitter_max_depth = 8;
                c.jitter_hard_cap = 7
            }),
        ),
        ("jitter_max_starved_ticks 0", server(|c| c.jitter_max_starved_ticks = 0)),
        ("jitter_underflow 2", server(|c| c.jitter_underflow = 2)),
        ("jitter_late_policy 3", server(|c| c.jitter_late_policy = 3)),
        ("slot_timeout_ms 0", server(|c| c.slot_timeout_ms = 0)),
        ("hello_timeout_ms 0", server(|c| c.hello_timeout_ms = 0)),
        ("step_history 0", server(|c| c.step_history = 0)),
        ("step_window 15", server(|c| c.step_window = 15)),
        ("step_window 257", server(|c| c.step_window = 257)),
        ("max_update_datagrams 0", server(|c| c.max_update_datagrams = 0)),
        ("max_update_datagrams 65", server(|c| c.max_update_datagrams = 65)),
        ("num_players: 65 is not in 1..=64", server(|c| c.num_players = 65)),
        ("client_send_interval 0", client(|c| c.client_send_interval = 0)),
        ("max_prediction 0 is not in 1..=64", client(|c| c.max_prediction = 0)),
        ("input_delay 33", client(|c| c.input_delay = 33)),
        ("late_rate 0", client(|c| c.late_rate = 0.0)),
        ("late_rate NaN", client(|c| c.late_rate = f64::NAN)),
        ("input_delay_mode 2", client(|c| c.input_delay_mode = 2)),
        ("input_delay_rtt_percent 401", client(|c| c.input_delay_rtt_percent = 401)),
        ("input_delay_max 33", client(|c| c.input_delay_max = 33)),
        ("catchup_ticks 0", client(|c| c.catchup_ticks = 0)),
        ("num_players: 65 is not in 1..=64", client(|c| c.num_players = 65)),
        ("input_size: 256 is not in 1..=255", client(|c| c.input_size = 256)),
        ("bind_address", client(|c| c.bind_address[0] = b'x' as c_char)),
    ];
    for (needle, cfg) in relay_cases {
        let r = try_create(&cfg).err().unwrap_or_else(|| panic!("{needle}: accepted"));
        assert_err(r, tw_result::InvalidArgument, "tw_session_create", needle);
    }
    // The other modes ignore the relay fields (a caller built against the header
    // before them passes zeros there).
    let mut cfg = config(tw_session_mode::P2p, 2);
    cfg.late_rate = 0.0;
    cfg.server_send_interval = 0;
    cfg.jitter_underflow = 9;
    cfg.catchup_ticks = 0;
    create(&cfg);
    // SYNCTEST and REPLAY have no socket: their bind address is not even read.
    let mut cfg = config(tw_session_mode::Synctest, 2);
    cfg.bind_address[0] = b'x' as c_char;
    let s = create(&cfg);
    let mut n = 0usize;
    let mut buf = [0 as c_char; 64];
    // SAFETY: live session, valid buffers.
    let r = unsafe { tw_session_local_address(s.0, buf.as_mut_ptr(), buf.len(), &mut n) };
    assert_err(r, tw_result::InvalidState, "tw_session_local_address", "no socket");
}

#[test]
fn every_session_call_rejects_a_null_session() {
    let mut u = 0u32;
    let mut n = 0usize;
    let mut b = [0u8; 8];
    let a = cstr("127.0.0.1:9");
    let mut r = tw_request::zeroed();
    let mut e = tw_session_event::zeroed();
    let mut st = std::mem::MaybeUninit::<tw_session_stats>::uninit();
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    let null = ptr::null_mut();
    // SAFETY: NULL sessions are rejected before anything is touched.
    let calls: Vec<(&str, tw_result)> = unsafe {
        vec![
            ("tw_session_add_local_player", tw_session_add_local_player(null, 0)),
            ("tw_session_add_remote_player", tw_session_add_remote_player(null, 0, a.as_ptr())),
            ("tw_session_add_spectator", tw_session_add_spectator(null, a.as_ptr())),
            ("tw_session_spectate", tw_session_spectate(null, a.as_ptr())),
            ("tw_session_load_replay", tw_session_load_replay(null, b.as_ptr().cast(), b.len())),
            ("tw_session_load_replay_file", tw_session_load_replay_file(null, a.as_ptr())),
            ("tw_session_set_link_sim", tw_session_set_link_sim(null, 0, ptr::null())),
            ("tw_session_start", tw_session_start(null)),
            ("tw_session_local_address", tw_session_local_address(null, ptr::null_mut(), 0, &mut n)),
            ("tw_session_state_slots", tw_session_state_slots(null, &mut u)),
            ("tw_session_ticks_due", tw_session_ticks_due(null, &mut u)),
            ("tw_session_push_input", tw_session_push_input(null, 0, b.as_ptr().cast(), 2)),
            ("tw_session_advance", tw_session_advance(null)),
            ("tw_session_poll_request", tw_session_poll_request(null, &mut r)),
            ("tw_session_request_inputs", tw_session_request_inputs(null, b.as_mut_ptr().cast(), 8, &mut n)),
            ("tw_session_request_input_status", tw_session_request_input_status(null, b.as_mut_ptr(), 8, &mut n)),
            ("tw_session_request_state", tw_session_request_state(null, b.as_mut_ptr().cast(), 8, &mut n)),
            ("tw_session_confirm_save", tw_session_confirm_save(null, 0, 0)),
            ("tw_session_provide_state", tw_session_provide_state(null, 0, b.as_ptr().cast(), 8)),
            ("tw_session_poll_event", tw_session_poll_event(null, &mut e)),
            ("tw_session_set_input_delay", tw_session_set_input_delay(null, 1)),
            ("tw_session_set_prediction", tw_session_set_prediction(null, 0, ptr::null(), 0)),
            ("tw_session_get_stats", tw_session_get_stats(null, st.as_mut_ptr())),
            ("tw_session_peer_stats", tw_session_peer_stats(null, 1, ps.as_mut_ptr())),
            ("tw_session_player_peer", tw_session_player_peer(null, 0, &mut u)),
            ("tw_session_take_desync_dump", tw_session_take_desync_dump(null, b.as_mut_ptr().cast(), 8, &mut n)),
            ("tw_session_write_desync_dump", tw_session_write_desync_dump(null, a.as_ptr())),
            ("tw_session_start_recording", tw_session_start_recording(null, ptr::null(), 0)),
            ("tw_session_copy_replay", tw_session_copy_replay(null, b.as_mut_ptr().cast(), 8, &mut n)),
            ("tw_session_save_replay", tw_session_save_replay(null, a.as_ptr())),
            ("tw_session_set_server", tw_session_set_server(null, a.as_ptr())),
            ("tw_session_request_snapshot", tw_session_request_snapshot(null)),
            ("tw_session_player_stats", tw_session_player_stats(null, 0, ptr::null_mut())),
        ]
    };
    for (name, r) in calls {
        assert_eq!(r, tw_result::NullArgument, "{name}");
    }
    // Each call stores its own name: check one late in the list.
    // SAFETY: NULL session.
    let r = unsafe { tw_session_save_replay(null, a.as_ptr()) };
    assert_err(r, tw_result::NullArgument, "tw_session_save_replay", "session is NULL");
    // SAFETY: destroying NULL is a no-op.
    unsafe { tw_session_destroy(null) };
}

#[test]
fn setup_checks_players_addresses_modes_and_phases() {
    let s = create(&config(tw_session_mode::P2p, 3));
    let (good, bad) = (cstr("127.0.0.1:4000"), cstr("127.0.0.1"));
    // SAFETY (whole test): live sessions and valid pointers.
    unsafe {
        assert_err(
            tw_session_add_local_player(s.0, 3),
            tw_result::InvalidArgument,
            "tw_session_add_local_player",
            "player 3 does not exist",
        );
        assert_eq!(tw_session_add_local_player(s.0, 0), tw_result::Ok);
        assert_err(
            tw_session_add_local_player(s.0, 0),
            tw_result::InvalidArgument,
            "tw_session_add_local_player",
            "already added",
        );
        assert_err(
            tw_session_add_remote_player(s.0, 1, ptr::null()),
            tw_result::NullArgument,
            "tw_session_add_remote_player",
            "address is NULL",
        );
        assert_err(
            tw_session_add_remote_player(s.0, 1, bad.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_remote_player",
            "has no port",
        );
        for text in ["0.0.0.0:4000", "127.0.0.1:0", "[::]:4000"] {
            let a = cstr(text);
            assert_err(
                tw_session_add_remote_player(s.0, 1, a.as_ptr()),
                tw_result::InvalidArgument,
                "tw_session_add_remote_player",
                "concrete IP",
            );
        }
        let v6 = cstr("[::1]:4000");
        assert_err(
            tw_session_add_remote_player(s.0, 1, v6.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_remote_player",
            "cannot reach IPv6",
        );
        assert_err(
            tw_session_add_spectator(s.0, v6.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_spectator",
            "cannot reach IPv6",
        );
        // An IPv4-mapped IPv6 address is an IPv4 address: reachable, and the same
        // registration as its IPv4 spelling.
        let mapped = cstr("[::ffff:127.0.0.1]:4999");
        assert_eq!(tw_session_add_spectator(s.0, mapped.as_ptr()), tw_result::Ok, "{}", last_error());
        assert_err(
            tw_session_add_spectator(s.0, cstr("127.0.0.1:4999").as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_spectator",
            "already registered",
        );
        assert_eq!(tw_session_add_remote_player(s.0, 1, good.as_ptr()), tw_result::Ok);
        assert_err(
            tw_session_add_remote_player(s.0, 1, good.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_remote_player",
            "already added",
        );
        assert_err(
            tw_session_add_spectator(s.0, good.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_spectator",
            "already registered",
        );
        assert_err(
            tw_session_spectate(s.0, good.as_ptr()),
            tw_result::InvalidState,
            "tw_session_spectate",
            "not available in P2p mode",
        );
        assert_err(
            tw_session_load_replay(s.0, [1u8].as_ptr().cast(), 1),
            tw_result::InvalidState,
            "tw_session_load_replay",
            "not available in P2p mode",
        );
        assert_err(
            tw_session_set_link_sim(s.0, 2, ptr::null()),
            tw_result::InvalidArgument,
            "tw_session_set_link_sim",
            "direction 2",
        );
        let mut sim = common::default_link();
        sim.struct_size = 1;
        assert_err(
            tw_session_set_link_sim(s.0, 0, &sim),
            tw_result::VersionMismatch,
            "tw_session_set_link_sim",
            "struct_size is 1",
        );
        // Player 2 is missing.
        assert_err(tw_session_start(s.0), tw_result::InvalidState, "tw_session_start", "player 2 was never added");
        let mut u = 0u32;
        assert_err(tw_session_ticks_due(s.0, &mut u), tw_result::InvalidState, "tw_session_ticks_due", "not started");
        assert_err(tw_session_advance(s.0), tw_result::InvalidState, "tw_session_advance", "not started");
        assert_err(
            tw_session_push_input(s.0, 0, [0u8; 2].as_ptr().cast(), 2),
            tw_result::InvalidState,
            "tw_session_push_input",
            "not started",
        );
        assert_err(
            tw_session_confirm_save(s.0, 0, 1),
            tw_result::InvalidState,
            "tw_session_confirm_save",
            "not started",
        );
        let other = cstr("127.0.0.1:4001");
        assert_eq!(tw_session_add_remote_player(s.0, 2, other.as_ptr()), tw_result::Ok);
        assert_eq!(tw_session_start(s.0), tw_result::Ok, "{}", last_error());
        assert_err(tw_session_start(s.0), tw_result::InvalidState, "tw_session_start", "before the session is started");
        let late = cstr("127.0.0.1:4002");
        assert_err(
            tw_session_add_remote_player(s.0, 2, late.as_ptr()),
            tw_result::InvalidState,
            "tw_session_add_remote_player",
            "before the session is started",
        );
        // Spectators may be registered any time, up to max_spectators (4; the mapped
        // address above is the first).
        for port in 5000..5003 {
            let a = cstr(&format!("127.0.0.1:{port}"));
            assert_eq!(tw_session_add_spectator(s.0, a.as_ptr()), tw_result::Ok, "{}", last_error());
        }
        let fifth = cstr("127.0.0.1:5003");
        assert_err(
            tw_session_add_spectator(s.0, fifth.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_add_spectator",
            "max_spectators",
        );
        // Connecting: nothing is due, advance says NOT_SYNCHRONIZED, inputs are refused.
        assert_eq!(tw_session_ticks_due(s.0, &mut u), tw_result::Ok);
        assert_eq!(u, 0);
        assert_eq!(tw_session_advance(s.0), tw_result::NotSynchronized);
        assert_err(
            tw_session_push_input(s.0, 0, [0u8; 2].as_ptr().cast(), 2),
            tw_result::InvalidState,
            "tw_session_push_input",
            "not running yet",
        );
        let mut peer = 9u32;
        assert_eq!(tw_session_player_peer(s.0, 0, &mut peer), tw_result::Ok);
        assert_eq!(peer, 0, "a local player has no peer");
        assert_err(
            tw_session_player_peer(s.0, 3, &mut peer),
            tw_result::InvalidArgument,
            "tw_session_player_peer",
            "player 3",
        );
    }

    // No local player.
    let s = create(&config(tw_session_mode::P2p, 1));
    let a = cstr("127.0.0.1:4000");
    // SAFETY: live session, valid pointers.
    unsafe {
        assert_eq!(tw_session_add_remote_player(s.0, 0, a.as_ptr()), tw_result::Ok);
        assert_err(tw_session_start(s.0), tw_result::InvalidState, "tw_session_start", "at least one local player");
        let mut peer = 9u32;
        assert_err(
            tw_session_player_peer(s.0, 0, &mut peer),
            tw_result::InvalidState,
            "tw_session_player_peer",
            "not connected yet",
        );
        assert_eq!(peer, 9);
    }
    // Spectator without a host; replay without a replay; wrong-mode calls.
    let spec = create(&config(tw_session_mode::Spectator, 2));
    let replay = create(&config(tw_session_mode::Replay, 2));
    let sync = create(&config(tw_session_mode::Synctest, 2));
    // SAFETY: live sessions, valid pointers.
    unsafe {
        assert_err(tw_session_start(spec.0), tw_result::InvalidState, "tw_session_start", "watched host");
        assert_err(
            tw_session_spectate(spec.0, bad.as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_spectate",
            "has no port",
        );
        assert_err(
            tw_session_add_local_player(spec.0, 0),
            tw_result::InvalidState,
            "tw_session_add_local_player",
            "Spectator mode",
        );
        assert_err(
            tw_session_add_spectator(spec.0, good.as_ptr()),
            tw_result::InvalidState,
            "tw_session_add_spectator",
            "Spectator mode",
        );
        assert_err(tw_session_start(replay.0), tw_result::InvalidState, "tw_session_start", "load a replay");
        assert_err(
            tw_session_load_replay(replay.0, ptr::null(), 4),
            tw_result::NullArgument,
            "tw_session_load_replay",
            "data is NULL",
        );
        assert_err(
            tw_session_load_replay(replay.0, b"TWRPnope".as_ptr().cast(), 8),
            tw_result::InvalidArgument,
            "tw_session_load_replay",
            "replay",
        );
        let missing = cstr("/nonexistent/tickwire.twrp");
        assert_err(
            tw_session_load_replay_file(replay.0, missing.as_ptr()),
            tw_result::Io,
            "tw_session_load_replay_file",
            "/nonexistent",
        );
        assert_err(
            tw_session_load_replay_file(replay.0, ptr::null()),
            tw_result::NullArgument,
            "tw_session_load_replay_file",
            "path is NULL",
        );
        assert_err(
            tw_session_set_link_sim(sync.0, 0, ptr::null()),
            tw_result::InvalidState,
            "tw_session_set_link_sim",
            "no socket",
        );
        assert_err(
            tw_session_set_input_delay(sync.0, 1),
            tw_result::InvalidState,
            "tw_session_set_input_delay",
            "SyncTest mode",
        );
        assert_err(
            tw_session_start_recording(sync.0, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_start_recording",
            "SyncTest mode",
        );
        // SYNCTEST answers DUMP_STATE requests after a mismatch (issue 18, missing 5),
        // once started.
        assert_err(
            tw_session_provide_state(sync.0, 0, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_provide_state",
            "not started",
        );
        let mut slots = 77u32;
        assert_err(
            tw_session_state_slots(sync.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_state_slots",
            "out_slots is NULL",
        );
        assert_eq!(tw_session_state_slots(spec.0, &mut slots), tw_result::Ok);
        assert_eq!(slots, 0, "a spectator never saves");
    }
}

#[test]
fn a_replay_of_another_shape_is_refused() {
    // A real replay with 1 player, recorded by a solo P2P session.
    let s = solo();
    // SAFETY: live session, valid pointers.
    unsafe {
        assert_eq!(tw_session_start_recording(s.0, ptr::null(), 0), tw_result::Ok, "{}", last_error());
    }
    let mut n = 0usize;
    // SAFETY: as above.
    let r = unsafe { tw_session_copy_replay(s.0, ptr::null_mut(), 0, &mut n) };
    assert_err(r, tw_result::BufferTooSmall, "tw_session_copy_replay", "the replay: ");
    let mut bytes = vec![0u8; n];
    // SAFETY: buffer valid for its length.
    assert_eq!(unsafe { tw_session_copy_replay(s.0, bytes.as_mut_ptr().cast(), bytes.len(), &mut n) }, tw_result::Ok);
    let replay = create(&config(tw_session_mode::Replay, 2));
    // SAFETY: live session, valid bytes.
    let r = unsafe { tw_session_load_replay(replay.0, bytes.as_ptr().cast(), bytes.len()) };
    assert_err(r, tw_result::InvalidArgument, "tw_session_load_replay", "the replay has 1 players");
}

#[test]
fn the_loop_checks_inputs_requests_and_answers() {
    let s = solo();
    let mut u = 0u32;
    let mut n = 5usize;
    let mut buf = [0x55u8; 16];
    let mut r = tw_request::zeroed();
    // SAFETY (whole test): live session, valid pointers.
    unsafe {
        assert_err(
            tw_session_ticks_due(s.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_ticks_due",
            "out_ticks is NULL",
        );
        assert_eq!(tw_session_ticks_due(s.0, &mut u), tw_result::Ok);
        assert_err(
            tw_session_push_input(s.0, 1, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "player 1 does not exist",
        );
        assert_err(
            tw_session_push_input(s.0, 0, buf.as_ptr().cast(), 3),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "len is 3: an input is tw_session_config.input_size (2) bytes",
        );
        assert_err(
            tw_session_push_input(s.0, 0, ptr::null(), 2),
            tw_result::NullArgument,
            "tw_session_push_input",
            "input is NULL",
        );
        // No current request.
        assert_err(
            tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_inputs",
            "no current ADVANCE",
        );
        assert_err(
            tw_session_request_input_status(s.0, buf.as_mut_ptr(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_input_status",
            "no current ADVANCE",
        );
        assert_err(
            tw_session_request_state(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_state",
            "no current RESTORE",
        );
        assert_eq!(n, 5);
        assert_eq!(tw_session_push_input(s.0, 0, [3u8, 0].as_ptr().cast(), 2), tw_result::Ok);
        assert_eq!(tw_session_advance(s.0), tw_result::Ok, "{}", last_error());
        // Tick 0: SAVE 0, then ADVANCE 0.
        assert_err(
            tw_session_poll_request(s.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_poll_request",
            "out_request is NULL",
        );
        assert_eq!(tw_session_poll_request(s.0, &mut r), tw_result::Ok);
        assert_eq!((r.kind, r.tick, r.data_len), (tw_request_kind::Save as u32, 0, 0));
        assert_err(
            tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_inputs",
            "no current ADVANCE",
        );
        // Advancing with requests left is refused.
        assert_err(
            tw_session_advance(s.0),
            tw_result::InvalidState,
            "tw_session_advance",
            "1 request(s) of the previous advance were not polled",
        );
        assert_err(
            tw_session_confirm_save(s.0, 5, 1),
            tw_result::InvalidArgument,
            "tw_session_confirm_save",
            "tick 5 was not requested",
        );
        assert_eq!(tw_session_confirm_save(s.0, 0, 42), tw_result::Ok);
        assert_eq!(tw_session_poll_request(s.0, &mut r), tw_result::Ok);
        assert_eq!(
            (r.kind, r.tick, r.num_players, r.input_size, r.data_len),
            (tw_request_kind::Advance as u32, 0, 1, 2, 2)
        );
        // A lone player's own input is final: the tick is authoritative, not predicted.
        assert_eq!(r.flags, TW_REQUEST_FLAG_AUTHORITATIVE);
        // The buffer contract: too small keeps the data and gives the size.
        assert_err(
            tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), 1, &mut n),
            tw_result::BufferTooSmall,
            "tw_session_request_inputs",
            "2 bytes",
        );
        assert_eq!(n, 2);
        assert_eq!(buf[0], 0x55, "nothing written on BUFFER_TOO_SMALL");
        assert_err(
            tw_session_request_inputs(s.0, ptr::null_mut(), 4, &mut n),
            tw_result::NullArgument,
            "tw_session_request_inputs",
            "buf is NULL",
        );
        assert_err(
            tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), 4, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_request_inputs",
            "out_len is NULL",
        );
        assert_eq!(tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n), tw_result::Ok);
        assert_eq!((n, &buf[..2]), (2, &[3u8, 0][..]));
        assert_eq!(tw_session_request_input_status(s.0, buf.as_mut_ptr(), buf.len(), &mut n), tw_result::Ok);
        assert_eq!((n, buf[0]), (1, tw_input_status::Confirmed as u8));
        assert_err(
            tw_session_request_state(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_state",
            "no current RESTORE",
        );
        r.kind = 0xdead;
        assert_eq!(tw_session_poll_request(s.0, &mut r), tw_result::Empty);
        assert_eq!(r.kind, 0xdead, "untouched on EMPTY");
        assert_err(
            tw_session_request_inputs(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_request_inputs",
            "no current ADVANCE",
        );
        // Recording starts only before the first tick.
        assert_err(
            tw_session_start_recording(s.0, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_start_recording",
            "before the first tick",
        );
        assert_err(
            tw_session_copy_replay(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n),
            tw_result::InvalidState,
            "tw_session_copy_replay",
            "no replay",
        );
        let path = cstr("/nonexistent-dir/x.twrp");
        assert_err(
            tw_session_save_replay(s.0, path.as_ptr()),
            tw_result::InvalidState,
            "tw_session_save_replay",
            "no recording",
        );
        assert_err(
            tw_session_save_replay(s.0, ptr::null()),
            tw_result::NullArgument,
            "tw_session_save_replay",
            "path is NULL",
        );
        assert_err(
            tw_session_provide_state(s.0, 0, buf.as_ptr().cast(), 4),
            tw_result::InvalidArgument,
            "tw_session_provide_state",
            "tick 0 was not requested",
        );
        assert_err(
            tw_session_provide_state(s.0, 0, ptr::null(), 4),
            tw_result::NullArgument,
            "tw_session_provide_state",
            "data is NULL",
        );
        // Events and desync dumps.
        let mut e = tw_session_event::zeroed();
        assert_err(
            tw_session_poll_event(s.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_poll_event",
            "out_event is NULL",
        );
        while tw_session_poll_event(s.0, &mut e) == tw_result::Ok {}
        e.kind = 0xbeef;
        assert_eq!(tw_session_poll_event(s.0, &mut e), tw_result::Empty);
        assert_eq!(e.kind, 0xbeef);
        n = 5;
        assert_eq!(tw_session_take_desync_dump(s.0, buf.as_mut_ptr().cast(), buf.len(), &mut n), tw_result::Empty);
        assert_eq!(n, 5);
        assert_err(
            tw_session_take_desync_dump(s.0, buf.as_mut_ptr().cast(), buf.len(), ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_take_desync_dump",
            "out_len is NULL",
        );
        assert_eq!(tw_session_write_desync_dump(s.0, path.as_ptr()), tw_result::Empty);
        assert_err(
            tw_session_write_desync_dump(s.0, ptr::null()),
            tw_result::NullArgument,
            "tw_session_write_desync_dump",
            "path is NULL",
        );
        // Tuning.
        assert_err(
            tw_session_set_input_delay(s.0, 33),
            tw_result::InvalidArgument,
            "tw_session_set_input_delay",
            "above 32",
        );
        assert_eq!(tw_session_set_input_delay(s.0, 2), tw_result::Ok);
        assert_err(
            tw_session_set_prediction(s.0, 0, buf.as_ptr().cast(), 3),
            tw_result::InvalidArgument,
            "tw_session_set_prediction",
            "len is 3: an input is tw_session_config.input_size (2) bytes",
        );
        assert_err(
            tw_session_set_prediction(s.0, 0, ptr::null(), 2),
            tw_result::InvalidArgument,
            "tw_session_set_prediction",
            "NULL needs len 0",
        );
        assert_err(
            tw_session_set_prediction(s.0, 4, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_set_prediction",
            "player 4",
        );
        assert_eq!(tw_session_set_prediction(s.0, 0, ptr::null(), 0), tw_result::Ok);
        // Stats.
        assert_err(
            tw_session_get_stats(s.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_get_stats",
            "out_stats is NULL",
        );
        let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
        assert_err(
            tw_session_peer_stats(s.0, 0, ps.as_mut_ptr()),
            tw_result::InvalidArgument,
            "tw_session_peer_stats",
            "peer 0",
        );
        assert_err(
            tw_session_peer_stats(s.0, 77, ps.as_mut_ptr()),
            tw_result::UnknownPeer,
            "tw_session_peer_stats",
            "peer 77",
        );
        assert_err(
            tw_session_peer_stats(s.0, 1, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_peer_stats",
            "out_stats is NULL",
        );
        assert_err(
            tw_session_player_peer(s.0, 0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_player_peer",
            "out_peer is NULL",
        );
        let mut st = std::mem::MaybeUninit::<tw_session_stats>::uninit();
        assert_eq!(tw_session_get_stats(s.0, st.as_mut_ptr()), tw_result::Ok);
        let st = st.assume_init();
        assert_eq!((st.running, st.current_tick, st.input_delay, st.mode), (1, 1, 2, tw_session_mode::P2p as u32));
        assert_eq!(
            (st.local_player, st.players, st.rtt_us, st.lead_ticks),
            (0, 0, 0.0, 0.0),
            "no relay figures in P2P"
        );
    }
}

#[test]
fn spectator_and_replay_refuse_inputs_and_saves() {
    let spec = create(&config(tw_session_mode::Spectator, 2));
    let host = cstr("127.0.0.1:9");
    // SAFETY: live session, valid pointers.
    unsafe {
        assert_eq!(tw_session_spectate(spec.0, host.as_ptr()), tw_result::Ok);
        assert_eq!(tw_session_start(spec.0), tw_result::Ok, "{}", last_error());
        assert_err(
            tw_session_spectate(spec.0, host.as_ptr()),
            tw_result::InvalidState,
            "tw_session_spectate",
            "before the session is started",
        );
        assert_err(
            tw_session_push_input(spec.0, 0, [0u8; 2].as_ptr().cast(), 2),
            tw_result::InvalidState,
            "tw_session_push_input",
            "Spectator mode",
        );
        assert_eq!(tw_session_advance(spec.0), tw_result::NotSynchronized, "nobody at 127.0.0.1:9");
        assert_err(
            tw_session_confirm_save(spec.0, 0, 0),
            tw_result::InvalidState,
            "tw_session_confirm_save",
            "Spectator mode never requests saves",
        );
        assert_err(
            tw_session_set_prediction(spec.0, 0, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_set_prediction",
            "Spectator mode",
        );
    }
}

#[test]
fn a_panic_poisons_the_session() {
    let s = solo();
    // SAFETY: live session.
    unsafe {
        let r = tw_debug_session_panic(s.0);
        assert_eq!(r, tw_result::Panic);
        assert!(last_error().starts_with("panic: "), "{}", last_error());
        assert!(last_error().contains("tw_debug_session_panic"), "{}", last_error());
        let mut u = 0u32;
        assert_err(
            tw_session_ticks_due(s.0, &mut u),
            tw_result::Panic,
            "tw_session_ticks_due",
            "unusable after an earlier panic",
        );
        assert_eq!(tw_debug_session_panic(ptr::null_mut()), tw_result::NullArgument);
    }
}

/// Runs `sessions`' engine loops (no engine state: requests are polled and saves
/// confirmed with a dummy checksum) until `done` or 5 s.
fn pump_until(sessions: &[*mut tw_session], mut done: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !done() {
        assert!(std::time::Instant::now() < end, "timed out");
        for &s in sessions {
            let mut n = 0u32;
            // SAFETY: live sessions, valid pointers.
            unsafe {
                assert_eq!(tw_session_ticks_due(s, &mut n), tw_result::Ok, "{}", last_error());
                for _ in 0..n {
                    if stats(s).mode == tw_session_mode::RelayClient as u32 {
                        assert_eq!(
                            tw_session_push_input(s, TW_LOCAL_PLAYER, [0u8; 2].as_ptr().cast(), 2),
                            tw_result::Ok
                        );
                    }
                    let _ = tw_session_advance(s);
                    let mut r = tw_request::zeroed();
                    while tw_session_poll_request(s, &mut r) == tw_result::Ok {
                        if r.kind == tw_request_kind::Save as u32 {
                            assert_eq!(tw_session_confirm_save(s, r.tick, 7), tw_result::Ok);
                        } else if r.kind == tw_request_kind::DumpState as u32 {
                            assert_eq!(tw_session_provide_state(s, r.tick, [0u8; 4].as_ptr().cast(), 4), tw_result::Ok);
                        }
                    }
                }
                let mut e = tw_session_event::zeroed();
                while tw_session_poll_event(s, &mut e) == tw_result::Ok {}
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn relay_calls_check_mode_phase_and_arguments() {
    let server = create(&config(tw_session_mode::RelayServer, 4));
    let client = create(&config(tw_session_mode::RelayClient, 4));
    let p2p = create(&config(tw_session_mode::P2p, 2));
    let buf = [0u8; 8];
    let mut u = 77u32;
    let mut st = std::mem::MaybeUninit::<tw_relay_player_stats>::uninit();
    // SAFETY (whole test): live sessions and valid pointers.
    unsafe {
        // Setup: the server's address, on a client only, before start only.
        let good = cstr("127.0.0.1:4000");
        assert_err(
            tw_session_set_server(p2p.0, good.as_ptr()),
            tw_result::InvalidState,
            "tw_session_set_server",
            "not available in P2p mode",
        );
        assert_err(
            tw_session_set_server(server.0, good.as_ptr()),
            tw_result::InvalidState,
            "tw_session_set_server",
            "RelayServer mode",
        );
        assert_err(
            tw_session_set_server(client.0, ptr::null()),
            tw_result::NullArgument,
            "tw_session_set_server",
            "address is NULL",
        );
        assert_err(
            tw_session_set_server(client.0, cstr("127.0.0.1").as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_set_server",
            "has no port",
        );
        for text in ["0.0.0.0:4000", "127.0.0.1:0"] {
            assert_err(
                tw_session_set_server(client.0, cstr(text).as_ptr()),
                tw_result::InvalidArgument,
                "tw_session_set_server",
                "concrete IP",
            );
        }
        assert_err(
            tw_session_set_server(client.0, cstr("[::1]:4000").as_ptr()),
            tw_result::InvalidArgument,
            "tw_session_set_server",
            "cannot reach IPv6",
        );
        assert_err(tw_session_start(client.0), tw_result::InvalidState, "tw_session_start", "server's address");
        // Not started yet.
        assert_err(
            tw_session_push_input(client.0, TW_LOCAL_PLAYER, buf.as_ptr().cast(), 2),
            tw_result::InvalidState,
            "tw_session_push_input",
            "not started",
        );
        assert_err(
            tw_session_request_snapshot(client.0),
            tw_result::InvalidState,
            "tw_session_request_snapshot",
            "not started",
        );
        // The slots are known from creation: the server saves 2, the client
        // max_prediction + catchup_ticks + 4 = 8 + 16 + 4.
        assert_eq!(tw_session_state_slots(server.0, &mut u), tw_result::Ok);
        assert_eq!(u, 2);
        assert_eq!(tw_session_state_slots(client.0, &mut u), tw_result::Ok);
        assert_eq!(u, 28);
        // A prediction set before start is kept; a wrong one refused.
        assert_eq!(tw_session_set_prediction(client.0, 1, buf.as_ptr().cast(), 2), tw_result::Ok, "{}", last_error());
        assert_err(
            tw_session_set_prediction(client.0, 1, buf.as_ptr().cast(), 3),
            tw_result::InvalidArgument,
            "tw_session_set_prediction",
            "len is 3: an input is tw_session_config.input_size (2) bytes",
        );
        assert_err(
            tw_session_set_prediction(client.0, 4, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_set_prediction",
            "player 4",
        );
        assert_err(
            tw_session_set_prediction(server.0, 1, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_set_prediction",
            "RelayServer mode",
        );

        assert_eq!(tw_session_start(server.0), tw_result::Ok, "{}", last_error());
        let mut n = 0usize;
        let mut addr = [0 as c_char; 64];
        assert_eq!(tw_session_local_address(server.0, addr.as_mut_ptr(), addr.len(), &mut n), tw_result::Ok);
        assert_eq!(tw_session_set_server(client.0, addr.as_ptr()), tw_result::Ok, "{}", last_error());
        assert_eq!(tw_session_start(client.0), tw_result::Ok, "{}", last_error());
        assert_err(
            tw_session_set_server(client.0, good.as_ptr()),
            tw_result::InvalidState,
            "tw_session_set_server",
            "before the session is started",
        );

        // The server has no player of its own, provides state only when asked, and
        // has per-player figures only for connected players.
        assert_err(
            tw_session_push_input(server.0, 0, buf.as_ptr().cast(), 2),
            tw_result::InvalidState,
            "tw_session_push_input",
            "not available in RelayServer mode",
        );
        assert_err(
            tw_session_push_input(server.0, TW_LOCAL_PLAYER, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "does not exist",
        );
        assert_err(
            tw_session_provide_state(server.0, 5, buf.as_ptr().cast(), 4),
            tw_result::InvalidArgument,
            "tw_session_provide_state",
            "tick 5 was not requested",
        );
        assert_err(
            tw_session_confirm_save(server.0, 5, 1),
            tw_result::InvalidArgument,
            "tw_session_confirm_save",
            "tick 5 was not requested",
        );
        assert_err(
            tw_session_request_snapshot(server.0),
            tw_result::InvalidState,
            "tw_session_request_snapshot",
            "RelayServer mode",
        );
        assert_err(
            tw_session_player_stats(server.0, 0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_session_player_stats",
            "out_stats is NULL",
        );
        assert_err(
            tw_session_player_stats(server.0, 4, st.as_mut_ptr()),
            tw_result::InvalidArgument,
            "tw_session_player_stats",
            "player 4 does not exist",
        );
        assert_eq!(tw_session_player_stats(server.0, 0, st.as_mut_ptr()), tw_result::Empty, "nobody has joined yet");
        assert_err(
            tw_session_player_peer(server.0, 0, &mut u),
            tw_result::InvalidState,
            "tw_session_player_peer",
            "no connection",
        );
        assert_err(
            tw_session_set_input_delay(server.0, 1),
            tw_result::InvalidState,
            "tw_session_set_input_delay",
            "RelayServer mode",
        );
        assert_err(
            tw_session_start_recording(server.0, ptr::null(), 0),
            tw_result::InvalidState,
            "tw_session_start_recording",
            "RelayServer mode",
        );
        // The client: per-player server figures and peers are not its business; its
        // input names its own slot, which it does not have yet.
        assert_err(
            tw_session_player_stats(client.0, 0, st.as_mut_ptr()),
            tw_result::InvalidState,
            "tw_session_player_stats",
            "RelayClient mode",
        );
        assert_err(
            tw_session_player_peer(client.0, 0, &mut u),
            tw_result::InvalidState,
            "tw_session_player_peer",
            "one connection",
        );
        // A client answers DUMP_STATE when its server runs no game code; this one was
        // asked for nothing.
        assert_err(
            tw_session_provide_state(client.0, 0, buf.as_ptr().cast(), 4),
            tw_result::InvalidArgument,
            "tw_session_provide_state",
            "tick 0 was not requested",
        );
        assert_err(
            tw_session_push_input(client.0, 0, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "not been given a player slot yet",
        );
        assert_err(
            tw_session_push_input(client.0, TW_LOCAL_PLAYER, buf.as_ptr().cast(), 3),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "len is 3: an input is tw_session_config.input_size (2) bytes",
        );
        assert_err(
            tw_session_push_input(client.0, TW_LOCAL_PLAYER, ptr::null(), 2),
            tw_result::NullArgument,
            "tw_session_push_input",
            "input is NULL",
        );
        assert_err(
            tw_session_request_snapshot(client.0),
            tw_result::InvalidState,
            "tw_session_request_snapshot",
            "not joined yet",
        );
        assert_eq!(
            tw_session_advance(client.0),
            tw_result::NotSynchronized,
            "no tick due before the server's first update"
        );
    }
    // Once joined: its own slot is accepted as the player, another is not.
    let client_stats = |s: *mut tw_session| {
        let mut st = std::mem::MaybeUninit::<tw_session_stats>::uninit();
        // SAFETY: live session, writable storage.
        assert_eq!(unsafe { tw_session_get_stats(s, st.as_mut_ptr()) }, tw_result::Ok);
        // SAFETY: written on success.
        unsafe { st.assume_init() }
    };
    assert_eq!(client_stats(client.0).local_player, TW_NO_PLAYER);
    pump_until(&[server.0, client.0], || client_stats(client.0).running == 1);
    let me = client_stats(client.0).local_player;
    assert!(me < 4);
    // SAFETY: live sessions and valid pointers.
    unsafe {
        assert_eq!(tw_session_push_input(client.0, me, buf.as_ptr().cast(), 2), tw_result::Ok, "{}", last_error());
        let other = (me + 1) % 4;
        assert_err(
            tw_session_push_input(client.0, other, buf.as_ptr().cast(), 2),
            tw_result::InvalidArgument,
            "tw_session_push_input",
            "not this relay client's player",
        );
        assert_eq!(tw_session_request_snapshot(client.0), tw_result::Ok, "{}", last_error());
        assert_eq!(tw_session_player_stats(server.0, me, st.as_mut_ptr()), tw_result::Ok);
        let ps = st.assume_init();
        assert_eq!(ps.player, me);
        let mut peer = 0;
        assert_eq!(tw_session_player_peer(server.0, me, &mut peer), tw_result::Ok);
        assert_eq!(peer, ps.peer);
        assert_eq!(tw_session_player_stats(server.0, other, st.as_mut_ptr()), tw_result::Empty);
    }
    // The resync completes: joined and synchronized again.
    pump_until(&[server.0, client.0], || client_stats(client.0).running == 1);
    assert_eq!(client_stats(client.0).resyncs, 1);
}
