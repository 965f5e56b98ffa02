//! The panic guard: no panic crosses the ABI; a panicking host call poisons the host.

use crate::support::common;

use std::ptr;

use common::*;
use tickwire::*;

#[test]
fn a_panic_becomes_a_result_and_a_message() {
    // SAFETY: NULL is accepted: panic in a plain call.
    let r = unsafe { tw_debug_panic(ptr::null_mut()) };
    assert_eq!(r, tw_result::Panic);
    let msg = last_error();
    assert!(msg.starts_with("panic: "), "{msg}");
    assert!(msg.contains("tw_debug_panic was called"), "{msg}");
    assert!(msg.contains("(in tw_debug_panic)"), "{msg}");
    // The process and the library keep working.
    assert_eq!(default_config().struct_size as usize, std::mem::size_of::<tw_host_config>());
}

#[test]
fn a_panic_inside_a_host_call_poisons_that_host_only() {
    let poisoned = loopback_host(0);
    let healthy = loopback_host(0);
    // SAFETY: live host.
    assert_eq!(unsafe { tw_debug_panic(poisoned.0) }, tw_result::Panic);
    assert!(last_error().starts_with("panic: "), "{}", last_error());
    let mut ev = tw_event::zeroed();
    // SAFETY: live hosts, valid pointers.
    unsafe {
        assert_err(tw_host_flush(poisoned.0), tw_result::Panic, "tw_host_flush", "earlier panic");
        assert_err(tw_host_poll_event(poisoned.0, &mut ev), tw_result::Panic, "tw_host_poll_event", "earlier panic");
        assert_eq!(tw_host_flush(healthy.0), tw_result::Ok, "{}", last_error());
        assert_eq!(tw_host_poll_event(healthy.0, &mut ev), tw_result::Empty);
    }
    // Destroying the poisoned host still works (HostGuard drops it).
}

#[test]
fn a_dead_network_thread_is_reported_as_fatal_then_thread_gone() {
    let h = loopback_host(0);
    // SAFETY: live host.
    assert_eq!(unsafe { tw_debug_kill_network_thread(h.0) }, tw_result::Ok, "{}", last_error());
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let fatal = loop {
        assert!(std::time::Instant::now() < end, "no FATAL event");
        if let Some(p) = poll_one(h.0) {
            if p.kind == tw_event_kind::Fatal as u32 {
                break p;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    assert_eq!(fatal.peer, 0);
    // SAFETY: FATAL event; NUL-terminated text.
    let text = unsafe { std::ffi::CStr::from_ptr(fatal.event.data.fatal.message.as_ptr()) };
    assert!(!text.to_bytes().is_empty());
    let data = [1u8];
    // SAFETY: live (but broken) host, valid pointers.
    unsafe {
        assert_err(tw_host_flush(h.0), tw_result::NetworkThreadGone, "tw_host_flush", "stopped");
        assert_err(
            tw_host_send(h.0, 1, TW_CHANNEL_RELIABLE, data.as_ptr(), 1),
            tw_result::NetworkThreadGone,
            "tw_host_send",
            "",
        );
        let a = std::ffi::CString::new("127.0.0.1:9").unwrap();
        let mut p = 0u32;
        assert_err(tw_host_connect(h.0, a.as_ptr(), &mut p), tw_result::NetworkThreadGone, "tw_host_connect", "");
        assert_eq!(p, 0);
    }
    // Destroy (HostGuard) must still work.
}
