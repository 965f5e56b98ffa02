//! Issue 18, defect 9: every message a C caller reads from `tw_last_error_message`
//! names the field it set, as the header spells it (`tw_session_config.
//! disconnect_notify_ms`, `tw_host_config.keepalive_interval_ms`, `len`, `buf_len`),
//! never a field of the Rust crates underneath (`notify_after_us`, `max_players`,
//! `limits.burst_us`, `max_frame_us`).

use crate::support::abi_engine;

use std::ffi::c_char;
use std::ptr;

use abi_engine::*;
use tickwire::*;

/// Words that only the Rust crates use: a C caller never set anything by these names.
const INTERNAL: [&str; 14] = [
    "_us ",
    "_us:",
    "notify_after_us",
    "disconnect_timeout_us",
    "max_players",
    "max_incoming",
    "burst_us",
    "max_frame_us",
    "limits.",
    "invalid endpoint config",
    "invalid relay",
    " players:",
    "the inputs has",
    "the buffer",
];

#[track_caller]
fn assert_names(message: &str, fields: &[&str]) {
    for f in fields {
        assert!(message.contains(f), "{message:?} does not name {f}");
    }
    for w in INTERNAL {
        assert!(!message.contains(w), "{message:?} names {w:?}, which the C caller never set");
    }
}

fn create_error(c: &tw_session_config) -> String {
    let mut s = ptr::null_mut();
    // SAFETY: valid config and out pointer.
    let r = unsafe { tw_session_create(c, &mut s) };
    assert_eq!(r, tw_result::InvalidArgument, "{}", last_error());
    last_error()
}

fn with(mode: tw_session_mode, edit: impl FnOnce(&mut tw_session_config)) -> tw_session_config {
    let mut c = session_config(mode, 2);
    edit(&mut c);
    c
}

#[test]
fn a_bad_session_config_is_named_by_its_c_fields() {
    use tw_session_mode::*;
    let cases: Vec<(tw_session_config, &[&str])> = vec![
        (
            with(P2p, |c| c.disconnect_notify_ms = c.disconnect_timeout_ms),
            &["tw_session_config.disconnect_notify_ms", "tw_session_config.disconnect_timeout_ms", "5000"],
        ),
        (with(P2p, |c| c.num_players = 0), &["tw_session_config.num_players", "1..=255"]),
        (with(RelayServer, |c| c.num_players = 65), &["tw_session_config.num_players", "1..=64"]),
        (with(RelayClient, |c| c.input_size = 256), &["tw_session_config.input_size"]),
        (with(P2p, |c| c.max_prediction = 65), &["tw_session_config.max_prediction"]),
        (with(RelayClient, |c| c.max_prediction = 0), &["tw_session_config.max_prediction"]),
        (with(RelayServer, |c| c.server_send_interval = 0), &["tw_session_config.server_send_interval"]),
        (with(RelayClient, |c| c.late_rate = 0.7), &["tw_session_config.late_rate"]),
        (with(P2p, |c| c.prediction = 2), &["tw_session_config.prediction"]),
        (with(P2p, |c| c.mode = 9), &["tw_session_config.mode"]),
        (with(Spectator, |c| c.spectator_catchup_speed = 0), &["tw_session_config.spectator_catchup_speed"]),
        (with(Synctest, |c| c.check_distance = 0), &["tw_session_config.check_distance"]),
        // The tick clock's frame limit (250 ms): too slow a tick is refused at create,
        // by its C name (a P2P session used to be accepted, then die when its peers
        // connected, on "max_frame_us").
        (with(RelayServer, |c| c.tick_rate_hz = 0.5), &["tw_session_config.tick_rate_hz", "0.5"]),
        (with(RelayClient, |c| c.tick_rate_hz = 0.5), &["tw_session_config.tick_rate_hz"]),
        (with(P2p, |c| c.tick_rate_hz = 0.5), &["tw_session_config.tick_rate_hz"]),
        // The transport, in milliseconds as the caller set it.
        (with(P2p, |c| c.host.timeout_ms = 0), &["tw_session_config.host.timeout_ms", "0"]),
        (
            with(RelayClient, |c| c.host.handshake_retry_ms = 0),
            &["tw_session_config.host.handshake_retry_ms", "tw_session_config.host.connect_timeout_ms"],
        ),
        (with(P2p, |c| c.host.max_clients = 70_000), &["tw_session_config.host.max_clients", "65536"]),
        (
            with(P2p, |c| c.host.max_messages_per_sec = 100),
            &["tw_session_config.host.max_messages_per_sec", "tw_session_config.host.max_frames_per_datagram", "171"],
        ),
        (with(P2p, |c| c.host.max_bytes_per_sec = 100), &["tw_session_config.host.max_bytes_per_sec", "3200"]),
        (
            with(RelayServer, |c| c.host.send_queue_limit_bytes = 10),
            &["tw_session_config.host.send_queue_limit_bytes", "tw_session_config.host.max_message_size"],
        ),
        (with(P2p, |c| c.host.max_recv_queue_bytes = 10), &["tw_session_config.host.max_recv_queue_bytes"]),
        (with(P2p, |c| c.host.max_frames_per_datagram = 0), &["tw_session_config.host.max_frames_per_datagram"]),
        (with(P2p, |c| c.host.reserved[0] = 1), &["tw_session_config.host.reserved"]),
    ];
    for (cfg, fields) in cases {
        assert_names(&create_error(&cfg), fields);
    }
}

#[test]
fn a_bad_host_config_is_named_by_its_c_fields() {
    let mut c = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage.
    ok(unsafe { tw_host_config_init_default(c.as_mut_ptr()) });
    // SAFETY: fully written.
    let good = unsafe { c.assume_init() };
    type Edit = fn(&mut tw_host_config);
    let cases: [(Edit, &[&str]); 4] = [
        (|c| c.keepalive_interval_ms = 0, &["tw_host_config.keepalive_interval_ms", "above 0"]),
        (|c| c.max_message_size = 0, &["tw_host_config.max_message_size", "1..=1048576"]),
        (|c| c.max_clients = 70_000, &["tw_host_config.max_clients"]),
        (|c| c.max_messages_per_sec = 1, &["tw_host_config.max_messages_per_sec"]),
    ];
    let bind = cstr("127.0.0.1:0");
    for (edit, fields) in cases {
        let mut cfg = good;
        edit(&mut cfg);
        let mut h = ptr::null_mut();
        // SAFETY: valid config, address and out pointer.
        assert_eq!(unsafe { tw_host_create(&cfg, bind.as_ptr(), &mut h) }, tw_result::InvalidArgument);
        assert_names(&last_error(), fields);
    }
}

#[test]
fn input_lengths_and_buffers_are_named_by_their_arguments() {
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.input_size = 2;
    let s = create(&cfg);
    let input = [0u8; 3];
    // SAFETY (whole test): live session, valid pointers.
    unsafe {
        assert_eq!(tw_session_push_input(s.0, 0, input.as_ptr().cast(), 3), tw_result::InvalidArgument);
        assert_names(&last_error(), &["len", "3", "tw_session_config.input_size", "2"]);
        ok(tw_session_start(s.0));
        for p in 0..2 {
            ok(tw_session_push_input(s.0, p, input.as_ptr().cast(), 2));
        }
        ok(tw_session_advance(s.0));
        let mut r = tw_request::zeroed();
        let mut buf = [0u8; 64];
        let mut n = 0usize;
        loop {
            ok(tw_session_poll_request(s.0, &mut r));
            if r.kind == tw_request_kind::Advance as u32 {
                break;
            }
            if r.kind == tw_request_kind::Save as u32 {
                ok(tw_session_confirm_save(s.0, r.tick, 1));
            }
        }
        let small = buf.as_mut_ptr().cast::<std::ffi::c_void>();
        assert_eq!(tw_session_request_inputs(s.0, small, 2, &mut n), tw_result::BufferTooSmall);
        assert_eq!(n, 4);
        assert_names(&last_error(), &["buf_len", "2", "4"]);
        let mut text = [0 as c_char; 4];
        assert_eq!(
            tw_session_local_address(s.0, text.as_mut_ptr(), text.len(), &mut n),
            tw_result::InvalidState,
            "SYNCTEST has no socket"
        );
    }
}

/// The C checks of `tw_host_config` are the transport's own rules in C terms: around
/// every boundary, either the host is created or the message names `tw_host_config`
/// fields only (the transport's own words, behind "please report this", never show).
#[test]
fn host_config_checks_cover_the_transports_rules() {
    let mut c = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage.
    ok(unsafe { tw_host_config_init_default(c.as_mut_ptr()) });
    // SAFETY: fully written.
    let good = unsafe { c.assume_init() };
    type Field = (&'static str, fn(&mut tw_host_config) -> &mut u32, &'static [u32]);
    let fields: [Field; 10] = [
        ("max_message_size", |c| &mut c.max_message_size, &[0, 1, 1200, 1 << 20, (1 << 20) + 1]),
        ("keepalive_interval_ms", |c| &mut c.keepalive_interval_ms, &[0, 1, 4999, 5000, 5001]),
        ("timeout_ms", |c| &mut c.timeout_ms, &[0, 1, 100, 101, 5000]),
        ("connect_timeout_ms", |c| &mut c.connect_timeout_ms, &[0, 1, 100, 101, 5000]),
        ("handshake_retry_ms", |c| &mut c.handshake_retry_ms, &[0, 1, 100, 4999, 5000]),
        ("send_queue_limit_bytes", |c| &mut c.send_queue_limit_bytes, &[0, 1199, 1200, (1 << 20) - 1, 1 << 20]),
        ("max_clients", |c| &mut c.max_clients, &[0, 65_536, 65_537]),
        ("max_frames_per_datagram", |c| &mut c.max_frames_per_datagram, &[0, 1, 64, 582, 583]),
        ("max_messages_per_sec", |c| &mut c.max_messages_per_sec, &[0, 2, 3, 170, 171, 1552, 1553]),
        ("max_bytes_per_sec", |c| &mut c.max_bytes_per_sec, &[0, 3199, 3200]),
    ];
    let bind = cstr("127.0.0.1:0");
    let (mut created, mut refused) = (0, 0);
    let mut try_config = |cfg: &tw_host_config| {
        let mut h = ptr::null_mut();
        // SAFETY: valid config, address and out pointer.
        match unsafe { tw_host_create(cfg, bind.as_ptr(), &mut h) } {
            tw_result::Ok => {
                // SAFETY: just created.
                unsafe { tw_host_destroy(h) };
                created += 1;
            }
            r => {
                let m = last_error();
                assert_eq!(r, tw_result::InvalidArgument, "{m}");
                assert!(m.starts_with("tw_host_create: tw_host_config."), "{m}");
                assert!(!m.contains("please report"), "{m}");
                assert_names(&m, &[]);
                refused += 1;
            }
        }
    };
    // Each field alone, and each pair of fields, around their boundaries.
    for (i, (_, fa, va)) in fields.iter().enumerate() {
        for &a in *va {
            let mut cfg = good;
            *fa(&mut cfg) = a;
            try_config(&cfg);
            for (_, fb, vb) in &fields[i + 1..] {
                for &b in *vb {
                    let mut cfg = good;
                    *fa(&mut cfg) = a;
                    *fb(&mut cfg) = b;
                    try_config(&cfg);
                }
            }
        }
    }
    assert!(created > 100 && refused > 100, "{created} created, {refused} refused");
}
