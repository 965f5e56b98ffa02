//! Helpers shared by the C ABI's tests (`tests/c_abi/`). They call the C ABI exactly as a C
//! caller would: raw pointers, result codes, caller-owned buffers.
#![allow(dead_code)]

use std::ffi::{CStr, CString, c_char};
use std::ptr;
use std::time::{Duration, Instant};

use tickwire::*;

/// This thread's last error message, as tw_last_error_message returns it.
pub fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the buffer is valid for its length.
    let n = unsafe { tw_last_error_message(buf.as_mut_ptr(), buf.len()) };
    assert!(n <= buf.len(), "message longer than the test buffer: {n}");
    // SAFETY: tw_last_error_message NUL-terminates within the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

/// Asserts a result code and that the last error names `func` and contains `needle`.
#[track_caller]
pub fn assert_err(r: tw_result, code: tw_result, func: &str, needle: &str) {
    assert_eq!(r, code, "expected {code:?}; last error: {}", last_error());
    let msg = last_error();
    assert!(msg.contains(func), "last error {msg:?} does not name {func}");
    assert!(msg.contains(needle), "last error {msg:?} does not mention {needle:?}");
}

pub fn default_config() -> tw_host_config {
    let mut c = std::mem::MaybeUninit::<tw_host_config>::uninit();
    // SAFETY: writable storage of the right size.
    assert_eq!(unsafe { tw_host_config_init_default(c.as_mut_ptr()) }, tw_result::Ok);
    // SAFETY: fully written by init_default.
    unsafe { c.assume_init() }
}

pub fn default_link() -> tw_link_sim_config {
    let mut c = std::mem::MaybeUninit::<tw_link_sim_config>::uninit();
    // SAFETY: writable storage of the right size.
    assert_eq!(unsafe { tw_link_sim_config_init_default(c.as_mut_ptr()) }, tw_result::Ok);
    // SAFETY: fully written by init_default.
    unsafe { c.assume_init() }
}

/// An owned host that is destroyed on drop (so a failing test does not leak a thread).
pub struct HostGuard(pub *mut tw_host);

impl Drop for HostGuard {
    fn drop(&mut self) {
        // SAFETY: created by tw_host_create, destroyed once here.
        unsafe { tw_host_destroy(self.0) };
    }
}

pub fn create_host(cfg: &tw_host_config, bind: &str) -> Result<HostGuard, (tw_result, String)> {
    let bind = CString::new(bind).unwrap();
    let mut h: *mut tw_host = ptr::null_mut();
    // SAFETY: valid config, NUL-terminated address, writable out pointer.
    let r = unsafe { tw_host_create(cfg, bind.as_ptr(), &mut h) };
    if r == tw_result::Ok {
        assert!(!h.is_null());
        Ok(HostGuard(h))
    } else {
        assert!(h.is_null(), "out_host written on failure");
        Err((r, last_error()))
    }
}

/// A host on 127.0.0.1 with a free port, accepting `max_clients` connections.
pub fn loopback_host(max_clients: u32) -> HostGuard {
    let mut cfg = default_config();
    cfg.max_clients = max_clients;
    create_host(&cfg, "127.0.0.1:0").unwrap_or_else(|(r, m)| panic!("tw_host_create: {r:?}: {m}"))
}

pub fn local_address(h: *mut tw_host) -> String {
    let mut buf = [0 as c_char; 64];
    let mut n = 0usize;
    // SAFETY: live host, buffer valid for its length, writable out_len.
    let r = unsafe { tw_host_local_address(h, buf.as_mut_ptr(), buf.len(), &mut n) };
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    // SAFETY: NUL-terminated by the call.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned();
    assert_eq!(n, s.len() + 1);
    s
}

pub fn connect(h: *mut tw_host, addr: &str) -> u32 {
    let a = CString::new(addr).unwrap();
    let mut peer = 0u32;
    // SAFETY: live host, NUL-terminated address, writable out pointer.
    let r = unsafe { tw_host_connect(h, a.as_ptr(), &mut peer) };
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    assert_ne!(peer, 0);
    peer
}

/// An event with its message payload (if any), as a C caller would collect it.
#[derive(Debug, Clone)]
pub struct Polled {
    pub kind: u32,
    pub peer: u32,
    pub event: tw_event,
    pub payload: Option<Vec<u8>>,
}

/// Polls `h` once; reads the payload of a message.
pub fn poll_one(h: *mut tw_host) -> Option<Polled> {
    let mut ev = tw_event::zeroed();
    // SAFETY: live host and a writable event.
    let r = unsafe { tw_host_poll_event(h, &mut ev) };
    if r == tw_result::Empty {
        return None;
    }
    assert_eq!(r, tw_result::Ok, "{}", last_error());
    let payload = if ev.kind == tw_event_kind::Message as u32 {
        // SAFETY: kind says the message member is the live one.
        let size = unsafe { ev.data.message.size } as usize;
        let mut buf = vec![0u8; size];
        let mut n = usize::MAX;
        // SAFETY: buffer valid for its length (NULL-free even when empty: Vec dangling
        // pointer is non-NULL and valid for 0 bytes).
        let r = unsafe { tw_host_read_message(h, buf.as_mut_ptr(), buf.len(), &mut n) };
        assert_eq!(r, tw_result::Ok, "{}", last_error());
        assert_eq!(n, size);
        Some(buf)
    } else {
        None
    };
    Some(Polled { kind: ev.kind, peer: ev.peer, event: ev, payload })
}

/// Drives several hosts from one thread, keeping every polled event until a test
/// asks for it.
pub struct Pump {
    pub hosts: Vec<*mut tw_host>,
    pub backlog: Vec<Vec<Polled>>,
}

impl Pump {
    pub fn new(hosts: &[*mut tw_host]) -> Self {
        Pump { hosts: hosts.to_vec(), backlog: vec![Vec::new(); hosts.len()] }
    }

    /// Flushes and drains every host once.
    pub fn step(&mut self) {
        for (i, &h) in self.hosts.iter().enumerate() {
            // SAFETY: live host.
            let r = unsafe { tw_host_flush(h) };
            assert_eq!(r, tw_result::Ok, "{}", last_error());
            while let Some(p) = poll_one(h) {
                self.backlog[i].push(p);
            }
        }
    }

    /// Returns (and removes) the first event of host `which` that `pred` accepts,
    /// pumping until `deadline` passes; panics with what was seen if none comes.
    pub fn wait(&mut self, which: usize, deadline: Duration, mut pred: impl FnMut(&Polled) -> bool) -> Polled {
        let end = Instant::now() + deadline;
        loop {
            if let Some(pos) = self.backlog[which].iter().position(&mut pred) {
                return self.backlog[which].remove(pos);
            }
            if Instant::now() >= end {
                let seen: Vec<_> = self.backlog[which].iter().map(|p| (p.kind, p.peer)).collect();
                panic!("no matching event on host {which} within {deadline:?}; unconsumed: {seen:?}");
            }
            self.step();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

pub fn is_kind(k: tw_event_kind) -> impl FnMut(&Polled) -> bool {
    move |p| p.kind == k as u32
}
