//! An engine driving a `tw_session` through the C ABI exactly as a C engine would: a
//! toy deterministic game (8 x i64 of state per player, 2-byte inputs), snapshots in
//! engine-owned slots, and every request run through the exported functions.
#![allow(dead_code)]

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use tickwire::*;

pub const INPUT_SIZE: usize = 2;
const WORDS: usize = 8;

/// This thread's last error message.
pub fn last_error() -> String {
    let mut buf = [0 as c_char; 512];
    // SAFETY: the buffer is valid for its length.
    unsafe { tw_last_error_message(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated within the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

#[track_caller]
pub fn ok(r: tw_result) {
    assert_eq!(r, tw_result::Ok, "{}", last_error());
}

pub fn session_config(mode: tw_session_mode, players: u32) -> tw_session_config {
    let mut c = std::mem::MaybeUninit::<tw_session_config>::uninit();
    // SAFETY: writable storage of the right size.
    ok(unsafe { tw_session_config_init_default(c.as_mut_ptr()) });
    // SAFETY: fully written.
    let mut c = unsafe { c.assume_init() };
    c.mode = mode as u32;
    c.num_players = players;
    c.input_size = INPUT_SIZE as u32;
    c.host.sim_seed = 7;
    let bind = b"127.0.0.1:0\0";
    for (d, s) in c.bind_address.iter_mut().zip(bind) {
        *d = *s as c_char;
    }
    c
}

/// An owned session, destroyed on drop.
pub struct SessionGuard(pub *mut tw_session);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        // SAFETY: created by tw_session_create, destroyed once here.
        unsafe { tw_session_destroy(self.0) };
    }
}

pub fn create(cfg: &tw_session_config) -> SessionGuard {
    let mut s = ptr::null_mut();
    // SAFETY: valid config and out pointer.
    ok(unsafe { tw_session_create(cfg, &mut s) });
    SessionGuard(s)
}

pub fn local_address(s: *mut tw_session) -> String {
    let mut buf = [0 as c_char; 64];
    let mut n = 0;
    // SAFETY: live session, buffer valid for its length.
    ok(unsafe { tw_session_local_address(s, buf.as_mut_ptr(), buf.len(), &mut n) });
    // SAFETY: NUL-terminated by the call.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned()
}

pub fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

pub fn stats(s: *mut tw_session) -> tw_session_stats {
    let mut st = std::mem::MaybeUninit::<tw_session_stats>::uninit();
    // SAFETY: live session, writable storage.
    ok(unsafe { tw_session_get_stats(s, st.as_mut_ptr()) });
    // SAFETY: written on success.
    unsafe { st.assume_init() }
}

pub fn link(latency_us: u64, jitter_us: f64, loss: f64) -> tw_link_sim_config {
    let mut c = std::mem::MaybeUninit::<tw_link_sim_config>::uninit();
    // SAFETY: writable storage.
    ok(unsafe { tw_link_sim_config_init_default(c.as_mut_ptr()) });
    // SAFETY: written.
    let mut c = unsafe { c.assume_init() };
    c.latency_us = latency_us;
    if jitter_us > 0.0 {
        c.jitter_kind = tw_jitter_kind::Uniform as u32;
        c.jitter_us = jitter_us;
    }
    if loss > 0.0 {
        c.loss_kind = tw_loss_kind::Bernoulli as u32;
        c.loss_probability = loss;
    }
    c
}

/// Player `p`'s input for tick `t`: changes every `period` ticks, from a hash.
pub fn input_for(seed: u64, p: usize, t: u32, period: u32) -> [u8; 2] {
    let mut x = seed
        ^ (p as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ ((t / period) as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    [(x & 0x1f) as u8, ((x >> 8) & 0x3) as u8]
}

/// The engine: game state, snapshot slots, and what it has seen.
pub struct Engine {
    pub state: Vec<i64>,
    slots: Vec<Vec<i64>>,
    /// The checksum of each tick's starting state, from the last SAVE of it.
    pub checksums: Vec<Option<u64>>,
    pub record: bool,
    /// Record the checksum after every ADVANCE (as the state at the start of the next
    /// tick) rather than at SAVEs: a relay server saves only now and then.
    pub record_after_advance: bool,
    /// Injected nondeterminism: reads a counter outside the state.
    pub nondeterministic: bool,
    hidden: i64,
    /// From this tick on, player 0's update differs (a real desync on one peer).
    pub desync_from: Option<u32>,
    inputs: Vec<u8>,
    statuses: Vec<u8>,
    blob: Vec<u8>,
    pub advances: u64,
    pub resimulated: u64,
    pub predicted: u64,
    pub restored_at: Option<u32>,
    pub dumps_provided: u32,
    /// The last ADVANCE's tick, and the state checksum after it.
    pub last_advanced: Option<(u32, u64)>,
    /// The session's confirmed tick as `frame`'s last advance began: every tick before
    /// it has been (re)simulated with confirmed inputs. One read later may include
    /// inputs received since, whose corrections wait for the next advance.
    pub confirmed_at_advance: u32,
    /// Inputs the ADVANCE requests marked `TW_INPUT_STATUS_DISCONNECTED`.
    pub disconnected_inputs: u64,
}

impl Engine {
    pub fn new(players: usize, slots: usize) -> Self {
        let state: Vec<i64> = (0..players * WORDS).map(|i| i as i64 * 1_000_003).collect();
        Engine {
            slots: vec![state.clone(); slots.max(1)],
            state,
            checksums: Vec::with_capacity(100_000),
            record: true,
            record_after_advance: false,
            nondeterministic: false,
            hidden: 0,
            desync_from: None,
            inputs: vec![0; 256 * INPUT_SIZE],
            statuses: vec![0; 256],
            blob: vec![0; 4096],
            advances: 0,
            resimulated: 0,
            predicted: 0,
            restored_at: None,
            dumps_provided: 0,
            last_advanced: None,
            confirmed_at_advance: 0,
            disconnected_inputs: 0,
        }
    }

    pub fn checksum(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &w in &self.state {
            h = (h ^ w as u64).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        }
        h ^ (h >> 31)
    }

    pub fn serialize(&self) -> Vec<u8> {
        self.state.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn step(&mut self, tick: u32, players: usize) {
        let n = self.state.len();
        for p in 0..players {
            let b = &self.inputs[p * INPUT_SIZE..(p + 1) * INPUT_SIZE];
            let mut v = u16::from_le_bytes([b[0], b[1]]) as i64;
            if self.statuses[p] == tw_input_status::Disconnected as u8 {
                self.disconnected_inputs += 1;
                v = -1;
            }
            if p == 0 && self.desync_from.is_some_and(|d| tick >= d) {
                v += 1;
            }
            for k in 0..WORDS {
                let i = p * WORDS + k;
                let next = self.state[(i + 1) % n];
                self.state[i] = self.state[i].wrapping_mul(31).wrapping_add(v * (k as i64 + 1)) ^ (next >> 7);
            }
        }
        if self.nondeterministic {
            self.hidden += 1;
            if self.hidden % 7 == 0 {
                self.state[0] ^= self.hidden;
            }
        }
    }

    fn record_checksum(&mut self, tick: u32, c: u64) {
        let t = tick as usize;
        if self.checksums.len() <= t {
            self.checksums.resize(t + 1, None);
        }
        self.checksums[t] = Some(c);
    }

    /// Polls and runs every pending request of `s`, answering through the ABI.
    pub fn run_requests(&mut self, s: *mut tw_session) {
        let mut r = tw_request::zeroed();
        // SAFETY (whole function): `s` is a live session; every buffer is valid for
        // the length passed.
        while unsafe { tw_session_poll_request(s, &mut r) } == tw_result::Ok {
            match r.kind {
                k if k == tw_request_kind::Save as u32 => {
                    let slot = r.slot as usize;
                    self.slots[slot].copy_from_slice(&self.state);
                    let c = self.checksum();
                    if self.record && !self.record_after_advance {
                        self.record_checksum(r.tick, c);
                    }
                    ok(unsafe { tw_session_confirm_save(s, r.tick, c) });
                }
                k if k == tw_request_kind::Load as u32 => self.state.copy_from_slice(&self.slots[r.slot as usize]),
                k if k == tw_request_kind::Advance as u32 => {
                    let players = r.num_players as usize;
                    assert_eq!(r.input_size as usize, INPUT_SIZE);
                    assert_eq!(r.data_len as usize, players * INPUT_SIZE);
                    let mut n = 0;
                    ok(unsafe {
                        tw_session_request_inputs(s, self.inputs.as_mut_ptr().cast(), self.inputs.len(), &mut n)
                    });
                    assert_eq!(n, players * INPUT_SIZE);
                    ok(unsafe {
                        tw_session_request_input_status(s, self.statuses.as_mut_ptr(), self.statuses.len(), &mut n)
                    });
                    assert_eq!(n, players);
                    let any_predicted = self.statuses[..players].contains(&(tw_input_status::Predicted as u8));
                    assert_eq!(any_predicted, r.flags & TW_REQUEST_FLAG_PREDICTED != 0, "PREDICTED flag");
                    // Rollback modes: final exactly when nothing is predicted.
                    assert_eq!(!any_predicted, r.flags & TW_REQUEST_FLAG_AUTHORITATIVE != 0, "AUTHORITATIVE flag");
                    self.advances += 1;
                    self.resimulated += u64::from(r.flags & TW_REQUEST_FLAG_RESIMULATING != 0);
                    self.predicted += u64::from(any_predicted);
                    self.step(r.tick, players);
                    let c = self.checksum();
                    self.last_advanced = Some((r.tick, c));
                    if self.record && self.record_after_advance {
                        self.record_checksum(r.tick + 1, c);
                    }
                }
                k if k == tw_request_kind::Restore as u32 => {
                    let mut n = 0;
                    ok(unsafe { tw_session_request_state(s, self.blob.as_mut_ptr().cast(), self.blob.len(), &mut n) });
                    assert_eq!(n as u64, r.data_len);
                    assert_eq!(n, self.state.len() * 8, "state blob size");
                    for (w, c) in self.state.iter_mut().zip(self.blob[..n].chunks_exact(8)) {
                        *w = i64::from_le_bytes(c.try_into().unwrap());
                    }
                    self.restored_at = Some(r.tick);
                }
                k if k == tw_request_kind::DumpState as u32 => {
                    let bytes: Vec<u8> = self.slots[r.slot as usize].iter().flat_map(|w| w.to_le_bytes()).collect();
                    ok(unsafe { tw_session_provide_state(s, r.tick, bytes.as_ptr().cast(), bytes.len()) });
                    self.dumps_provided += 1;
                }
                k => panic!("unknown request kind {k}"),
            }
        }
    }
}

/// Two P2P sessions made from `cfg_a` and `cfg_b`, each told of the other (player 0
/// local on the first, player 1 on the second); not started.
pub fn p2p_pair(cfg_a: &tw_session_config, cfg_b: &tw_session_config) -> (SessionGuard, SessionGuard) {
    let (a, b) = (create(cfg_a), create(cfg_b));
    let (addr_a, addr_b) = (cstr(&local_address(a.0)), cstr(&local_address(b.0)));
    // SAFETY: live sessions, NUL-terminated addresses.
    unsafe {
        ok(tw_session_add_local_player(a.0, 0));
        ok(tw_session_add_remote_player(a.0, 1, addr_b.as_ptr()));
        ok(tw_session_add_remote_player(b.0, 0, addr_a.as_ptr()));
        ok(tw_session_add_local_player(b.0, 1));
    }
    (a, b)
}

/// One engine frame of the DESIGN.md loop: ticks due, inputs, advance, requests,
/// events. Returns the events polled.
pub fn frame(
    s: *mut tw_session,
    engine: &mut Engine,
    local: &[usize],
    seed: u64,
    period: u32,
    events: &mut Vec<tw_session_event>,
) {
    let mut n = 0u32;
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
    for _ in 0..n {
        let st = stats(s);
        engine.confirmed_at_advance = st.confirmed_tick;
        let t = st.current_tick + st.input_delay;
        for &p in local {
            let input = input_for(seed, p, t, period);
            ok(unsafe { tw_session_push_input(s, p as u32, input.as_ptr().cast(), input.len()) });
        }
        let r = unsafe { tw_session_advance(s) };
        assert!(!r.is_err(), "advance failed: {r:?}: {}", last_error());
        engine.run_requests(s);
    }
    let mut e = tw_session_event::zeroed();
    while unsafe { tw_session_poll_event(s, &mut e) } == tw_result::Ok {
        events.push(e);
    }
}

/// One engine frame of a relay client: for each tick due, its next input
/// (`input_for(seed, index, *pushed, period)`) as `TW_LOCAL_PLAYER`, an advance (OK,
/// NOT_SYNCHRONIZED until it has joined, or WINDOW_FULL at the prediction cap) and its
/// requests; then the events.
pub fn relay_client_frame(
    s: *mut tw_session,
    engine: &mut Engine,
    index: usize,
    pushed: &mut u32,
    (seed, period): (u64, u32),
    events: &mut Vec<tw_session_event>,
) {
    let mut n = 0u32;
    // SAFETY (whole function): live session, valid pointers.
    ok(unsafe { tw_session_ticks_due(s, &mut n) });
    for _ in 0..n {
        let input = input_for(seed, index, *pushed, period);
        *pushed += 1;
        ok(unsafe { tw_session_push_input(s, TW_LOCAL_PLAYER, input.as_ptr().cast(), input.len()) });
        let r = unsafe { tw_session_advance(s) };
        assert!(
            matches!(r, tw_result::Ok | tw_result::NotSynchronized | tw_result::WindowFull),
            "advance: {r:?}: {}",
            last_error()
        );
        engine.run_requests(s);
    }
    let mut e = tw_session_event::zeroed();
    while unsafe { tw_session_poll_event(s, &mut e) } == tw_result::Ok {
        events.push(e);
    }
}

pub trait ResultExt {
    fn is_err(&self) -> bool;
}

impl ResultExt for tw_result {
    fn is_err(&self) -> bool {
        (*self as i32) < 0
    }
}
