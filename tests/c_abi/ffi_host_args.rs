//! Argument and state checking on a live host: NULL outputs, bad addresses for
//! connect, unknown directions and link settings, too-small buffers, unknown peers.

use crate::support::common;

use std::ffi::{CString, c_char};
use std::ptr;

use common::*;
use tickwire::*;

#[test]
fn null_outputs_on_a_live_host() {
    let h = loopback_host(0);
    let addr = CString::new("127.0.0.1:9").unwrap();
    let mut n = 5usize;
    // SAFETY: live host; NULL outputs must be rejected before anything is written.
    unsafe {
        assert_err(
            tw_host_connect(h.0, addr.as_ptr(), ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_connect",
            "out_peer is NULL",
        );
        let mut p = 0u32;
        assert_err(
            tw_host_connect(h.0, ptr::null(), &mut p),
            tw_result::NullArgument,
            "tw_host_connect",
            "address is NULL",
        );
        assert_eq!(p, 0);
        assert_err(
            tw_host_send(h.0, 1, TW_CHANNEL_RELIABLE, ptr::null(), 4),
            tw_result::NullArgument,
            "tw_host_send",
            "data is NULL",
        );
        assert_err(
            tw_host_poll_event(h.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_poll_event",
            "out_event is NULL",
        );
        let mut buf = [0u8; 4];
        assert_err(
            tw_host_read_message(h.0, buf.as_mut_ptr(), buf.len(), ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_read_message",
            "out_len is NULL",
        );
        assert_err(
            tw_host_read_message(h.0, ptr::null_mut(), 4, &mut n),
            tw_result::NullArgument,
            "tw_host_read_message",
            "buf is NULL",
        );
        assert_err(
            tw_host_peer_stats(h.0, 1, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_peer_stats",
            "out_stats is NULL",
        );
        assert_err(
            tw_host_get_stats(h.0, ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_get_stats",
            "out_stats is NULL",
        );
        let mut cbuf = [0 as c_char; 64];
        assert_err(
            tw_host_local_address(h.0, cbuf.as_mut_ptr(), cbuf.len(), ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_local_address",
            "out_len is NULL",
        );
        assert_err(
            tw_host_local_address(h.0, ptr::null_mut(), 64, &mut n),
            tw_result::NullArgument,
            "tw_host_local_address",
            "buf is NULL",
        );
    }
    assert_eq!(n, 5);
}

#[test]
fn connect_rejects_bad_addresses() {
    let h = loopback_host(0);
    for text in
        ["", "nonsense", "127.0.0.1", "example..com:80", "127.0.0.1:0", "0.0.0.0:7777", "[::]:7777", "[::1]:70000"]
    {
        let c = CString::new(text).unwrap();
        let mut peer = 42u32;
        // SAFETY: live host, valid pointers.
        let r = unsafe { tw_host_connect(h.0, c.as_ptr(), &mut peer) };
        assert_eq!(r, tw_result::InvalidArgument, "{text:?}: {}", last_error());
        assert!(last_error().starts_with("tw_host_connect: "), "{}", last_error());
        assert_eq!(peer, 42, "out_peer written on failure for {text:?}");
    }
}

#[test]
fn local_address_reports_the_bound_port_and_checks_the_buffer() {
    let h = loopback_host(0);
    let text = local_address(h.0);
    assert!(text.starts_with("127.0.0.1:"), "{text}");
    assert_ne!(text, "127.0.0.1:0", "port 0 must be replaced by the real port");
    let need = text.len() + 1;
    for len in [0, 1, need - 1] {
        let mut buf = [0x55 as c_char; 64];
        let mut n = 0usize;
        let p = if len == 0 { ptr::null_mut() } else { buf.as_mut_ptr() };
        // SAFETY: live host; buf NULL only with length 0.
        let r = unsafe { tw_host_local_address(h.0, p, len, &mut n) };
        assert_err(r, tw_result::BufferTooSmall, "tw_host_local_address", "more than buf_len");
        assert_eq!(n, need, "out_len must give the size needed");
        assert!(buf.iter().all(|&c| c == 0x55), "buffer written on BUFFER_TOO_SMALL");
    }
}

#[test]
fn address_in_use() {
    let a = loopback_host(0);
    let addr = local_address(a.0);
    match create_host(&default_config(), &addr) {
        Ok(_) => panic!("a second host bound to {addr}"),
        Err((r, msg)) => {
            assert_eq!(r, tw_result::AddressInUse, "{msg}");
            assert!(msg.starts_with("tw_host_create: "), "{msg}");
        }
    }
}

#[test]
fn poll_on_an_idle_host_is_empty_and_leaves_the_event_alone() {
    let h = loopback_host(0);
    let mut ev = tw_event::zeroed();
    ev.kind = 0xDEAD;
    // SAFETY: live host, writable event.
    assert_eq!(unsafe { tw_host_poll_event(h.0, &mut ev) }, tw_result::Empty);
    assert_eq!(ev.kind, 0xDEAD);
}

#[test]
fn read_message_without_a_message_is_invalid_state() {
    let h = loopback_host(0);
    let mut buf = [0u8; 16];
    let mut n = 7usize;
    // SAFETY: live host, valid buffers.
    let r = unsafe { tw_host_read_message(h.0, buf.as_mut_ptr(), buf.len(), &mut n) };
    assert_err(r, tw_result::InvalidState, "tw_host_read_message", "no unread message");
    assert_eq!(n, 7);
    // Also with the "size query" form.
    // SAFETY: NULL buffer with length 0 is allowed.
    let r = unsafe { tw_host_read_message(h.0, ptr::null_mut(), 0, &mut n) };
    assert_err(r, tw_result::InvalidState, "tw_host_read_message", "no unread message");
}

#[test]
fn unknown_and_invalid_peers() {
    let h = loopback_host(0);
    let data = [1u8, 2, 3];
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    // SAFETY: live host, valid pointers.
    unsafe {
        assert_err(
            tw_host_send(h.0, 0, TW_CHANNEL_RELIABLE, data.as_ptr(), 3),
            tw_result::InvalidArgument,
            "tw_host_send",
            "peer 0",
        );
        assert_err(tw_host_disconnect(h.0, 0), tw_result::InvalidArgument, "tw_host_disconnect", "peer 0");
        assert_err(
            tw_host_peer_stats(h.0, 0, ps.as_mut_ptr()),
            tw_result::InvalidArgument,
            "tw_host_peer_stats",
            "peer 0",
        );
        assert_err(
            tw_host_send(h.0, 4242, TW_CHANNEL_RELIABLE, data.as_ptr(), 3),
            tw_result::UnknownPeer,
            "tw_host_send",
            "4242",
        );
        assert_err(
            tw_host_peer_stats(h.0, 4242, ps.as_mut_ptr()),
            tw_result::UnknownPeer,
            "tw_host_peer_stats",
            "4242",
        );
        assert_err(
            tw_host_send(h.0, 4242, 300, data.as_ptr(), 3),
            tw_result::InvalidArgument,
            "tw_host_send",
            "channel 300",
        );
    }
}

#[test]
fn host_stats_on_a_fresh_host() {
    let h = loopback_host(0);
    let mut s = std::mem::MaybeUninit::<tw_host_stats>::uninit();
    // SAFETY: live host, writable stats.
    assert_eq!(unsafe { tw_host_get_stats(h.0, s.as_mut_ptr()) }, tw_result::Ok);
    // SAFETY: written on OK.
    let s = unsafe { s.assume_init() };
    assert_eq!(s.connections, 0);
    assert!(s.reserved.iter().all(|&v| v == 0));
}

#[test]
fn link_sim_arguments() {
    let h = loopback_host(0);
    let out = tw_direction::Outbound as u32;
    let set = |dir: u32, cfg: Option<&tw_link_sim_config>| {
        let p = cfg.map_or(ptr::null(), |c| c as *const _);
        // SAFETY: live host; config NULL or valid.
        unsafe { tw_host_set_link_sim(h.0, dir, p) }
    };
    // Valid: on, then off, both directions.
    let mut good = default_link();
    good.latency_us = 20_000;
    good.jitter_kind = tw_jitter_kind::Uniform as u32;
    good.jitter_us = 5_000.0;
    good.loss_kind = tw_loss_kind::GilbertElliott as u32;
    good.loss_p_good_to_bad = 0.01;
    good.loss_p_bad_to_good = 0.3;
    good.loss_in_bad = 0.5;
    assert_eq!(set(out, Some(&good)), tw_result::Ok, "{}", last_error());
    assert_eq!(set(tw_direction::Inbound as u32, Some(&good)), tw_result::Ok, "{}", last_error());
    assert_eq!(set(out, None), tw_result::Ok, "{}", last_error());
    assert_eq!(set(tw_direction::Inbound as u32, None), tw_result::Ok, "{}", last_error());

    for dir in [2u32, 7, u32::MAX] {
        assert_err(set(dir, None), tw_result::InvalidArgument, "tw_host_set_link_sim", &format!("direction {dir}"));
    }
    type Edit = Box<dyn Fn(&mut tw_link_sim_config)>;
    let cases: Vec<(tw_result, &str, Edit)> = vec![
        (tw_result::VersionMismatch, "struct_size is 0", Box::new(|c| c.struct_size = 0)),
        (tw_result::VersionMismatch, "struct_size is 161", Box::new(|c| c.struct_size = 161)),
        (tw_result::InvalidArgument, "jitter_kind 4", Box::new(|c| c.jitter_kind = 4)),
        (tw_result::InvalidArgument, "loss_kind 3", Box::new(|c| c.loss_kind = 3)),
        (tw_result::InvalidArgument, "loss_probability", Box::new(|c| c.loss_probability = 1.5)),
        (tw_result::InvalidArgument, "loss_in_bad", Box::new(|c| c.loss_in_bad = -0.1)),
        (tw_result::InvalidArgument, "duplicate", Box::new(|c| c.duplicate = f64::NAN)),
        (tw_result::InvalidArgument, "reorder", Box::new(|c| c.reorder = 2.0)),
        (tw_result::InvalidArgument, "reorder_delay_us", Box::new(|c| c.reorder = 0.5)),
        (tw_result::InvalidArgument, "jitter_us", Box::new(|c| c.jitter_us = -1.0)),
        (tw_result::InvalidArgument, "jitter_us", Box::new(|c| c.jitter_us = f64::INFINITY)),
        (
            tw_result::InvalidArgument,
            "jitter_shape",
            Box::new(|c| {
                c.jitter_kind = tw_jitter_kind::Pareto as u32;
                c.jitter_us = 1000.0;
                c.jitter_shape = 0.0;
            }),
        ),
        (tw_result::InvalidArgument, "seed", Box::new(|c| c.seed = 1)),
        (tw_result::InvalidArgument, "reserved0", Box::new(|c| c.reserved0 = 1)),
        (tw_result::InvalidArgument, "reserved", Box::new(|c| c.reserved[0] = 1)),
    ];
    for (code, needle, edit) in cases {
        let mut c = default_link();
        edit(&mut c);
        assert_err(set(out, Some(&c)), code, "tw_host_set_link_sim", needle);
    }
}

#[test]
fn send_of_an_empty_message_with_a_null_pointer_is_allowed() {
    // data == NULL with len == 0 is a valid empty message (a C# empty span pins to
    // NULL): it gets past argument checking and fails only on the unknown peer.
    let h = loopback_host(0);
    // SAFETY: live host; NULL with length 0 is allowed.
    let r = unsafe { tw_host_send(h.0, 99, TW_CHANNEL_UNRELIABLE, ptr::null(), 0) };
    assert_err(r, tw_result::UnknownPeer, "tw_host_send", "99");
}
