//! Argument checking that needs no running host: NULL pointers, unknown struct sizes,
//! bad configs and bad address strings, the last-error buffer contract.

use crate::support::common;

use std::ffi::{CString, c_char};
use std::ptr;

use common::*;
use tickwire::*;

fn sentinel_host() -> *mut tw_host {
    // Never dereferenced: only compared, to prove that out_host is not written.
    ptr::dangling_mut::<tw_host>()
}

#[test]
fn init_default_rejects_null() {
    // SAFETY: NULL is an accepted argument.
    unsafe {
        assert_err(
            tw_host_config_init_default(ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_config_init_default",
            "config is NULL",
        );
        assert_err(
            tw_link_sim_config_init_default(ptr::null_mut()),
            tw_result::NullArgument,
            "tw_link_sim_config_init_default",
            "config is NULL",
        );
    }
}

#[test]
fn host_create_rejects_null_arguments_and_writes_nothing() {
    let cfg = default_config();
    let addr = CString::new("127.0.0.1:0").unwrap();
    let mut h = sentinel_host();
    // SAFETY: every pointer is NULL or valid.
    unsafe {
        assert_err(
            tw_host_create(ptr::null(), addr.as_ptr(), &mut h),
            tw_result::NullArgument,
            "tw_host_create",
            "config is NULL",
        );
        // (A NULL bind_address is the automatic bind: ffi_addresses.rs.)
        assert_err(
            tw_host_create(&cfg, addr.as_ptr(), ptr::null_mut()),
            tw_result::NullArgument,
            "tw_host_create",
            "out_host is NULL",
        );
    }
    assert_eq!(h, sentinel_host(), "out_host must not be written on failure");
}

#[test]
fn host_create_rejects_unknown_struct_size() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    for size in [0u32, 4, 95, 97, 200, u32::MAX] {
        let mut cfg = default_config();
        cfg.struct_size = size;
        let mut h = sentinel_host();
        // SAFETY: valid pointers; struct_size lies, but the whole struct is readable.
        let r = unsafe { tw_host_create(&cfg, addr.as_ptr(), &mut h) };
        assert_err(r, tw_result::VersionMismatch, "tw_host_create", &format!("struct_size is {size}"));
        assert_eq!(h, sentinel_host());
    }
}

#[test]
fn host_create_rejects_bad_bind_addresses() {
    let cfg = default_config();
    // ("" is the automatic bind; names are never looked up for binding.)
    let bad: &[&[u8]] = &[
        b"localhost:7777",
        b"127.0.0.1",
        b"127.0.0.1:",
        b"127.0.0.1:99999",
        b"127.0.0.1:-1",
        b"1.2.3.4.5:80",
        b"256.0.0.1:80",
        b"::1:80",
        b"[::1]",
        b" 127.0.0.1:80",
        b"127.0.0.1:80 ",
        b"\xff\xfe:80",
    ];
    for text in bad {
        let c = CString::new(*text).unwrap();
        let mut h = sentinel_host();
        // SAFETY: valid pointers.
        let r = unsafe { tw_host_create(&cfg, c.as_ptr(), &mut h) };
        assert_eq!(r, tw_result::InvalidArgument, "{:?}: {}", String::from_utf8_lossy(text), last_error());
        let msg = last_error();
        assert!(msg.starts_with("tw_host_create: bind_address"), "{msg}");
        assert_eq!(h, sentinel_host());
    }
}

#[test]
fn host_create_rejects_bad_config_fields() {
    let addr = CString::new("127.0.0.1:0").unwrap();
    type Edit = Box<dyn Fn(&mut tw_host_config)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("tw_host_config.reserved", Box::new(|c| c.reserved[7] = 1)),
        ("tw_host_config.max_datagram_size", Box::new(|c| c.max_datagram_size = 1170)),
        ("tw_host_config.timeout_ms 0", Box::new(|c| c.timeout_ms = 0)),
        ("tw_host_config.keepalive_interval_ms 0", Box::new(|c| c.keepalive_interval_ms = 0)),
        ("tw_host_config.handshake_retry_ms 0", Box::new(|c| c.handshake_retry_ms = 0)),
        ("tw_host_config.handshake_retry_ms 5000", Box::new(|c| c.handshake_retry_ms = c.connect_timeout_ms)),
        ("tw_host_config.max_message_size 0", Box::new(|c| c.max_message_size = 0)),
        ("tw_host_config.max_message_size 1048577", Box::new(|c| c.max_message_size = (1 << 20) + 1)),
        ("tw_host_config.send_queue_limit_bytes", Box::new(|c| c.send_queue_limit_bytes = c.max_message_size - 1)),
        ("tw_host_config.max_clients 65537", Box::new(|c| c.max_clients = 65_537)),
        ("tw_host_config.max_frames_per_datagram 0", Box::new(|c| c.max_frames_per_datagram = 0)),
        ("tw_host_config.max_frames_per_datagram 583", Box::new(|c| c.max_frames_per_datagram = 583)),
        ("tw_host_config.max_messages_per_sec 10", Box::new(|c| c.max_messages_per_sec = 10)),
        ("tw_host_config.max_bytes_per_sec 100", Box::new(|c| c.max_bytes_per_sec = 100)),
        ("tw_host_config.max_recv_queue_bytes 100", Box::new(|c| c.max_recv_queue_bytes = 100)),
    ];
    for (needle, edit) in cases {
        let mut cfg = default_config();
        edit(&mut cfg);
        let mut h = sentinel_host();
        // SAFETY: valid pointers.
        let r = unsafe { tw_host_create(&cfg, addr.as_ptr(), &mut h) };
        assert_err(r, tw_result::InvalidArgument, "tw_host_create", needle);
        assert_eq!(h, sentinel_host());
    }
}

#[test]
fn null_host_is_rejected_by_every_host_call() {
    let addr = CString::new("127.0.0.1:1").unwrap();
    let mut peer = 77u32;
    let mut ev = tw_event::zeroed();
    let mut buf = [0u8; 8];
    let mut cbuf = [0 as c_char; 8];
    let mut n = 99usize;
    let mut ps = std::mem::MaybeUninit::<tw_peer_stats>::uninit();
    let mut hs = std::mem::MaybeUninit::<tw_host_stats>::uninit();
    let link = default_link();
    let null = ptr::null_mut();
    // SAFETY: the host is NULL, which every call must reject before touching anything.
    unsafe {
        assert_err(
            tw_host_connect(null, addr.as_ptr(), &mut peer),
            tw_result::NullArgument,
            "tw_host_connect",
            "host is NULL",
        );
        assert_err(
            tw_host_send(null, 1, TW_CHANNEL_RELIABLE, buf.as_ptr(), 1),
            tw_result::NullArgument,
            "tw_host_send",
            "host is NULL",
        );
        assert_err(tw_host_flush(null), tw_result::NullArgument, "tw_host_flush", "host is NULL");
        assert_err(tw_host_disconnect(null, 1), tw_result::NullArgument, "tw_host_disconnect", "host is NULL");
        assert_err(tw_host_poll_event(null, &mut ev), tw_result::NullArgument, "tw_host_poll_event", "host is NULL");
        assert_err(
            tw_host_read_message(null, buf.as_mut_ptr(), buf.len(), &mut n),
            tw_result::NullArgument,
            "tw_host_read_message",
            "host is NULL",
        );
        assert_err(
            tw_host_peer_stats(null, 1, ps.as_mut_ptr()),
            tw_result::NullArgument,
            "tw_host_peer_stats",
            "host is NULL",
        );
        assert_err(
            tw_host_get_stats(null, hs.as_mut_ptr()),
            tw_result::NullArgument,
            "tw_host_get_stats",
            "host is NULL",
        );
        assert_err(
            tw_host_set_link_sim(null, tw_direction::Outbound as u32, &link),
            tw_result::NullArgument,
            "tw_host_set_link_sim",
            "host is NULL",
        );
        assert_err(
            tw_host_local_address(null, cbuf.as_mut_ptr(), cbuf.len(), &mut n),
            tw_result::NullArgument,
            "tw_host_local_address",
            "host is NULL",
        );
        tw_host_destroy(null); // a no-op
    }
    assert_eq!((peer, ev.kind, n), (77, 0, 99), "outputs must not be written on failure");
}

#[test]
fn last_error_buffer_contract() {
    // Make a known error on this thread.
    // SAFETY: NULL is accepted.
    let r = unsafe { tw_host_config_init_default(ptr::null_mut()) };
    assert_eq!(r, tw_result::NullArgument);
    let full = "tw_host_config_init_default: config is NULL";
    // SAFETY: NULL with length 0 asks for the length only.
    let need = unsafe { tw_last_error_message(ptr::null_mut(), 0) };
    assert_eq!(need, full.len() + 1);
    // Exactly enough.
    let mut buf = vec![0x55 as c_char; need];
    // SAFETY: valid buffer.
    assert_eq!(unsafe { tw_last_error_message(buf.as_mut_ptr(), buf.len()) }, need);
    assert_eq!(buf[need - 1], 0);
    assert_eq!(last_error(), full);
    // Too small: cut short, NUL-terminated, nothing written past the end.
    let mut small = [0x55 as c_char; 10];
    // SAFETY: valid buffer of 8 bytes inside a larger one.
    assert_eq!(unsafe { tw_last_error_message(small.as_mut_ptr(), 8) }, need);
    let got: Vec<u8> = small[..7].iter().map(|&c| c as u8).collect();
    assert_eq!(&got, &full.as_bytes()[..7]);
    assert_eq!(small[7], 0);
    assert_eq!((small[8], small[9]), (0x55, 0x55));
    // Length 1: only the NUL.
    let mut one = [0x55 as c_char; 2];
    // SAFETY: valid buffer.
    assert_eq!(unsafe { tw_last_error_message(one.as_mut_ptr(), 1) }, need);
    assert_eq!((one[0], one[1]), (0, 0x55));
    // Success does not clear it.
    let _ = default_config();
    assert_eq!(last_error(), full);
}

#[test]
fn last_error_is_per_thread() {
    // SAFETY: NULL is accepted.
    unsafe { tw_host_flush(ptr::null_mut()) };
    assert!(last_error().starts_with("tw_host_flush"));
    std::thread::spawn(|| {
        // SAFETY: asking for the length only.
        assert_eq!(unsafe { tw_last_error_message(ptr::null_mut(), 0) }, 0, "a fresh thread has no error");
        let mut buf = [0x55 as c_char; 4];
        // SAFETY: valid buffer; an empty message is written as "".
        assert_eq!(unsafe { tw_last_error_message(buf.as_mut_ptr(), buf.len()) }, 0);
        assert_eq!(buf[0], 0);
        // SAFETY: NULL is accepted.
        unsafe { tw_host_disconnect(ptr::null_mut(), 3) };
        assert!(last_error().starts_with("tw_host_disconnect"));
    })
    .join()
    .unwrap();
    assert!(last_error().starts_with("tw_host_flush"), "another thread's error leaked in");
}

#[test]
fn long_messages_are_cut_on_a_character_boundary() {
    // A bind address with multi-byte characters makes a long message with UTF-8 in it.
    let cfg = default_config();
    let text = "é".repeat(100);
    let c = CString::new(text).unwrap();
    let mut h = ptr::null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { tw_host_create(&cfg, c.as_ptr(), &mut h) }, tw_result::InvalidArgument);
    for len in 1..80 {
        let mut buf = vec![0 as c_char; len];
        // SAFETY: valid buffer.
        unsafe { tw_last_error_message(buf.as_mut_ptr(), len) };
        let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        assert!(String::from_utf8(bytes).is_ok(), "cut inside a character at buf_len {len}");
    }
}
