//! Two threads calling one handle at once (issue 13, item 6): every call returns a
//! code a lone caller could get, or `TW_RESULT_BUSY` with a message naming the
//! function; never a panic, a crash or heap corruption.

use crate::support::abi_engine;

use std::ffi::{CStr, c_char};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

/// A raw handle that the test hands to several threads on purpose.
struct Shared<T>(*mut T);
// SAFETY: the point of these tests is to share one handle between threads; the library
// must cope (BUSY), which is what they check.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

const CALLS_PER_THREAD: usize = 20_000;

/// What the hammering threads saw: every result, counted.
#[derive(Default)]
struct Tally {
    busy: usize,
    ok: usize,
    other: Vec<(tw_result, String)>,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        self.busy += o.busy;
        self.ok += o.ok;
        self.other.extend(o.other);
    }

    /// Counts `r` of call `name`: BUSY must come with a message naming `name`.
    fn count(&mut self, name: &str, r: tw_result, allowed: &[tw_result]) {
        match r {
            tw_result::Busy => {
                let msg = last_error();
                assert!(msg.starts_with(&format!("{name}: ")) && msg.contains("in use"), "{name}: BUSY with {msg:?}");
                self.busy += 1;
            }
            r if allowed.contains(&r) => self.ok += 1,
            r => self.other.push((r, last_error())),
        }
    }
}

/// Runs `work` on two threads at once, each `CALLS_PER_THREAD` times, and merges what
/// they saw.
fn hammer(work: impl Fn(&mut Tally) + Sync) -> Tally {
    let start = Barrier::new(2);
    let mut total = Tally::default();
    std::thread::scope(|sc| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    let mut t = Tally::default();
                    start.wait();
                    for _ in 0..CALLS_PER_THREAD {
                        work(&mut t);
                    }
                    t
                })
            })
            .collect();
        for th in threads {
            total.merge(th.join().expect("a hammering thread panicked"));
        }
    });
    total
}

#[test]
fn two_threads_on_one_session_get_ok_or_busy() {
    let mut cfg = session_config(tw_session_mode::Synctest, 2);
    cfg.check_distance = 2;
    let s = create(&cfg);
    // SAFETY: live session.
    ok(unsafe { tw_session_start(s.0) });
    let shared = Shared(s.0);
    let tally = hammer(|t| {
        let s = &shared;
        let input = [1u8, 2];
        let mut ticks = 0u32;
        let mut req = tw_request::zeroed();
        let mut ev = tw_session_event::zeroed();
        let mut st = std::mem::MaybeUninit::<tw_session_stats>::uninit();
        // SAFETY: a live session (destroyed after both threads end); valid pointers.
        unsafe {
            t.count("tw_session_ticks_due", tw_session_ticks_due(s.0, &mut ticks), &[tw_result::Ok]);
            // Interleaved with the other thread, an input may be given twice for a tick
            // or an advance may find requests left unpolled: the codes a lone caller gets
            // for that order of calls.
            let given = [tw_result::Ok, tw_result::InvalidArgument, tw_result::InvalidState];
            t.count("tw_session_push_input", tw_session_push_input(s.0, 0, input.as_ptr().cast(), 2), &given);
            t.count("tw_session_push_input", tw_session_push_input(s.0, 1, input.as_ptr().cast(), 2), &given);
            t.count("tw_session_advance", tw_session_advance(s.0), &[tw_result::Ok, tw_result::InvalidState]);
            let polled = [tw_result::Ok, tw_result::Empty];
            t.count("tw_session_poll_request", tw_session_poll_request(s.0, &mut req), &polled);
            t.count("tw_session_poll_event", tw_session_poll_event(s.0, &mut ev), &polled);
            t.count("tw_session_get_stats", tw_session_get_stats(s.0, st.as_mut_ptr()), &[tw_result::Ok]);
        }
    });
    assert!(tally.other.is_empty(), "unexpected results: {:?}", &tally.other[..tally.other.len().min(5)]);
    assert!(tally.ok > 0, "no call got through");
    println!("session: {} calls through, {} BUSY", tally.ok, tally.busy);
    // The session still works from one thread.
    let mut n = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_ticks_due(s.0, &mut n) });
}

#[test]
fn two_threads_on_one_host_get_ok_or_busy() {
    let h = host();
    let shared = Shared(h);
    let tally = hammer(|t| {
        let h = &shared;
        let mut ev = tw_event::zeroed();
        let mut st = std::mem::MaybeUninit::<tw_host_stats>::uninit();
        let mut addr = [0 as c_char; 64];
        let mut n = 0usize;
        let data = [7u8; 3];
        // SAFETY: a live host (destroyed after both threads end); valid pointers.
        unsafe {
            // Flushing faster than the network thread drains its queue: QUEUE_FULL, as
            // for a lone caller.
            t.count("tw_host_flush", tw_host_flush(h.0), &[tw_result::Ok, tw_result::QueueFull]);
            t.count("tw_host_poll_event", tw_host_poll_event(h.0, &mut ev), &[tw_result::Ok, tw_result::Empty]);
            t.count("tw_host_get_stats", tw_host_get_stats(h.0, st.as_mut_ptr()), &[tw_result::Ok]);
            t.count(
                "tw_host_send",
                tw_host_send(h.0, 99, TW_CHANNEL_RELIABLE, data.as_ptr(), data.len()),
                &[tw_result::UnknownPeer, tw_result::QueueFull],
            );
            t.count(
                "tw_host_local_address",
                tw_host_local_address(h.0, addr.as_mut_ptr(), addr.len(), &mut n),
                &[tw_result::Ok],
            );
        }
    });
    assert!(tally.other.is_empty(), "unexpected results: {:?}", &tally.other[..tally.other.len().min(5)]);
    assert!(tally.ok > 0, "no call got through");
    println!("host: {} calls through, {} BUSY", tally.ok, tally.busy);
    // SAFETY: live host, destroyed once.
    unsafe {
        // Right after the hammering the command queue may still be full (the network
        // thread is behind, as under Wine): that is QUEUE_FULL, a single caller's result.
        let mut r = tw_host_flush(h);
        for _ in 0..1000 {
            if r != tw_result::QueueFull {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            r = tw_host_flush(h);
        }
        ok(r);
        tw_host_destroy(h);
    }
}

/// Polls `call` until it answers BUSY (another thread is inside a call on the handle);
/// panics if it never does within 5 s.
#[track_caller]
fn wait_for_busy(what: &str, mut call: impl FnMut() -> tw_result) -> String {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let r = call();
        if r == tw_result::Busy {
            return last_error();
        }
        assert_eq!(r, tw_result::Ok, "{what}: {}", last_error());
        assert!(Instant::now() < end, "{what} never answered TW_RESULT_BUSY while another call was in progress");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs a hold hook until it gets in: the other thread's polling call may itself hold
/// the handle at that moment (then the hook answers BUSY).
fn hold(call: impl Fn() -> tw_result) -> tw_result {
    loop {
        match call() {
            tw_result::Busy => std::thread::yield_now(),
            r => return r,
        }
    }
}

/// Binding `addr` again tells whether the handle that had it has released it.
fn port_free(addr: &str) -> bool {
    std::net::UdpSocket::bind(addr).is_ok()
}

#[test]
fn a_session_call_during_another_is_busy_and_names_both() {
    let s = create(&session_config(tw_session_mode::Synctest, 2));
    let shared = Shared(s.0);
    std::thread::scope(|sc| {
        let holder = sc.spawn(|| {
            let s = &shared;
            // SAFETY: live session.
            hold(|| unsafe { tw_debug_hold_session(s.0, 400) })
        });
        let mut slots = 0u32;
        // SAFETY: live session, writable out.
        let msg = wait_for_busy("tw_session_state_slots", || unsafe { tw_session_state_slots(s.0, &mut slots) });
        assert!(msg.starts_with("tw_session_state_slots: "), "{msg}");
        assert!(msg.contains("session is in use by another call"), "{msg}");
        assert_eq!(holder.join().unwrap(), tw_result::Ok);
    });
    // Free again once the other call has returned.
    let mut slots = 0u32;
    // SAFETY: live session, writable out.
    ok(unsafe { tw_session_state_slots(s.0, &mut slots) });
    assert_eq!(name(tw_result::Busy), "TW_RESULT_BUSY");
}

#[test]
fn a_host_call_during_another_is_busy() {
    let h = host();
    let shared = Shared(h);
    std::thread::scope(|sc| {
        let holder = sc.spawn(|| {
            let h = &shared;
            // SAFETY: live host.
            hold(|| unsafe { tw_debug_hold_host(h.0, 400) })
        });
        // SAFETY: live host.
        let msg = wait_for_busy("tw_host_flush", || unsafe { tw_host_flush(h) });
        assert!(msg.starts_with("tw_host_flush: ") && msg.contains("host is in use by another call"), "{msg}");
        assert_eq!(holder.join().unwrap(), tw_result::Ok);
    });
    // SAFETY: live host, destroyed once.
    unsafe {
        ok(tw_host_flush(h));
        tw_host_destroy(h);
    }
}

/// `tw_session_destroy` while another thread is inside a call on the session returns
/// at once; the session (here its socket) is freed when that call returns.
#[test]
fn destroying_a_session_during_a_call_frees_it_when_the_call_returns() {
    let s = create(&session_config(tw_session_mode::P2p, 2));
    let addr = local_address(s.0);
    let s = std::mem::ManuallyDrop::new(s); // destroyed below, by hand
    let shared = Shared(s.0);
    std::thread::scope(|sc| {
        let holder = sc.spawn(|| {
            let s = &shared;
            // SAFETY: live session (destroyed during this call, which must be safe).
            hold(|| unsafe { tw_debug_hold_session(s.0, 600) })
        });
        let mut slots = 0u32;
        // SAFETY: live session, writable out.
        wait_for_busy("tw_session_state_slots", || unsafe { tw_session_state_slots(s.0, &mut slots) });
        let t = Instant::now();
        // SAFETY: a live session destroyed once; no call starts on it after this.
        unsafe { tw_session_destroy(s.0) };
        assert!(t.elapsed() < Duration::from_millis(300), "destroy waited {:?} for the other call", t.elapsed());
        assert!(!port_free(&addr), "the session was freed while a call was still inside it");
        assert_eq!(holder.join().unwrap(), tw_result::Ok);
    });
    assert!(port_free(&addr), "the session was not freed when the call in progress returned");
}

#[test]
fn destroying_a_host_during_a_call_frees_it_when_the_call_returns() {
    let h = host();
    let addr = host_address(h);
    let shared = Shared(h);
    std::thread::scope(|sc| {
        let holder = sc.spawn(|| {
            let h = &shared;
            // SAFETY: live host (destroyed during this call, which must be safe).
            hold(|| unsafe { tw_debug_hold_host(h.0, 600) })
        });
        // SAFETY: live host.
        wait_for_busy("tw_host_flush", || unsafe { tw_host_flush(h) });
        // SAFETY: a live host destroyed once; no call starts on it after this.
        unsafe { tw_host_destroy(h) };
        assert!(!port_free(&addr), "the host was freed while a call was still inside it");
        assert_eq!(holder.join().unwrap(), tw_result::Ok);
    });
    assert!(port_free(&addr), "the host was not freed when the call in progress returned");
}

fn host() -> *mut tw_host {
    let mut cfg = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage of the right size.
    ok(unsafe { tw_host_config_init_default(cfg.as_mut_ptr()) });
    // SAFETY: written by init_default.
    let cfg = unsafe { cfg.assume_init() };
    let mut h = std::ptr::null_mut();
    // SAFETY: valid config, address and out pointer.
    ok(unsafe { tw_host_create(&cfg, c"127.0.0.1:0".as_ptr(), &mut h) });
    h
}

fn host_address(h: *mut tw_host) -> String {
    let mut buf = [0 as c_char; 64];
    let mut n = 0usize;
    // SAFETY: live host, buffer valid for its length.
    ok(unsafe { tw_host_local_address(h, buf.as_mut_ptr(), buf.len(), &mut n) });
    // SAFETY: NUL-terminated by the call.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned()
}

/// The C name of a result, for messages.
fn name(r: tw_result) -> String {
    // SAFETY: tw_result_str returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(tw_result_str(r as i32)) }.to_string_lossy().into_owned()
}
