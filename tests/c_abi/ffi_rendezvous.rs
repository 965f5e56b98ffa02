//! P2P matches met through a rendezvous, through the C ABI: `tw_rendezvous` in this
//! process, tickets minted with `tw_connect_token_generate` and `tw_match_claim_write`,
//! `tw_session_set_rendezvous`, NULL-address remote players, the PATH_CHANGED events
//! and `tw_network_stats.path`; every argument refused by name.

use crate::support::abi_engine;

use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

use abi_engine::*;
use tickwire::*;

fn key() -> [u8; 32] {
    let mut k = [0u8; 32];
    // SAFETY: 32 writable bytes.
    ok(unsafe { tw_generate_key(k.as_mut_ptr(), k.len()) });
    k
}

struct Rdv(*mut tw_rendezvous);

impl Drop for Rdv {
    fn drop(&mut self) {
        // SAFETY: created by tw_rendezvous_create, destroyed once here.
        unsafe { tw_rendezvous_destroy(self.0) };
    }
}

fn protocol_id() -> u32 {
    session_config(tw_session_mode::P2p, 2).host.protocol_id
}

fn rendezvous(key: &[u8; 32]) -> (Rdv, String) {
    let mut r = std::ptr::null_mut();
    let bind = cstr("127.0.0.1:0");
    // SAFETY: valid pointers and sizes.
    ok(unsafe { tw_rendezvous_create(bind.as_ptr(), key.as_ptr(), 32, protocol_id(), 0, 0, &mut r) });
    let mut buf = [0 as std::ffi::c_char; 64];
    let mut len = 0usize;
    // SAFETY: live handle, writable buffer and length.
    ok(unsafe { tw_rendezvous_local_address(r, buf.as_mut_ptr(), buf.len(), &mut len) });
    // SAFETY: NUL-terminated by the call.
    let addr = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_string();
    (Rdv(r), addr)
}

fn ticket(key: &[u8; 32], rdv: &str, match_id: u64, slot: u32, players: u32) -> [u8; 1024] {
    let mut claim = [0u8; TW_MATCH_CLAIM_SIZE as usize];
    // SAFETY: writable buffer of its size.
    ok(unsafe { tw_match_claim_write(match_id, slot, players, claim.as_mut_ptr(), claim.len()) });
    let mut t = [0u8; 1024];
    let a = CString::new(rdv).unwrap();
    // SAFETY: valid pointers and sizes.
    ok(unsafe {
        tw_connect_token_generate(
            key.as_ptr(),
            32,
            protocol_id(),
            100 + u64::from(slot),
            a.as_ptr(),
            600,
            0,
            claim.as_ptr(),
            claim.len(),
            t.as_mut_ptr(),
            t.len(),
        )
    });
    t
}

fn secured(secret: Option<&[u8; 32]>) -> Box<tw_security_config> {
    let mut s = std::mem::MaybeUninit::<tw_security_config>::uninit();
    // SAFETY: writable storage of the right size.
    ok(unsafe { tw_security_config_init_default(s.as_mut_ptr()) });
    // SAFETY: fully written.
    let mut s = Box::new(unsafe { s.assume_init() });
    if let Some(secret) = secret {
        s.has_match_secret = 1;
        s.match_secret = *secret;
    }
    s
}

fn text(a: &[std::ffi::c_char]) -> String {
    // SAFETY: the library NUL-terminates every address it writes.
    unsafe { CStr::from_ptr(a.as_ptr()) }.to_str().unwrap().to_string()
}

/// Two peers through the rendezvous at `rdv` with `flags`; returns each one's path
/// events as (path, address) and the last network stats of each for the other.
fn play(
    service_key: &[u8; 32],
    rdv: &str,
    match_id: u64,
    flags: u32,
) -> (Vec<Vec<(u32, String)>>, Vec<tw_network_stats>) {
    let secret = key();
    let sec = secured(Some(&secret));
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.security = &*sec;
    let sessions = [create(&cfg), create(&cfg)];
    let rdv_c = cstr(rdv);
    for (i, s) in sessions.iter().enumerate() {
        let t = ticket(service_key, rdv, match_id, i as u32, 2);
        // SAFETY: live session, valid pointers.
        unsafe {
            ok(tw_session_set_rendezvous(s.0, rdv_c.as_ptr(), t.as_ptr(), t.len(), flags));
            ok(tw_session_add_local_player(s.0, i as u32));
            ok(tw_session_add_remote_player(s.0, 1 - i as u32, std::ptr::null()));
        }
    }
    for s in &sessions {
        // SAFETY: live session.
        ok(unsafe { tw_session_start(s.0) });
    }
    let mut engines = [Engine::new(2, 18), Engine::new(2, 18)];
    let mut events = [Vec::new(), Vec::new()];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        for i in 0..2 {
            frame(sessions[i].0, &mut engines[i], &[i], 9, 5, &mut events[i]);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut paths = vec![Vec::new(), Vec::new()];
    let mut stats = Vec::new();
    for i in 0..2 {
        for e in &events[i] {
            let kind = e.kind;
            assert_ne!(kind, tw_session_event_kind::Desync as u32);
            assert_ne!(kind, tw_session_event_kind::Fatal as u32);
            assert_ne!(kind, tw_session_event_kind::PeerDisconnected as u32);
            if kind == tw_session_event_kind::PathChanged as u32 {
                // SAFETY: the union member PATH_CHANGED sets.
                let p = unsafe { e.data.path };
                assert_eq!(p.player, 1 - i as u32);
                paths[i].push((p.path, text(&p.address)));
            }
        }
        assert!(events[i].iter().any(|e| e.kind == tw_session_event_kind::Synchronized as u32));
        // SAFETY: zeroed plain-old-data struct; live session, writable output.
        let mut st: tw_network_stats = unsafe { std::mem::zeroed() };
        ok(unsafe { tw_session_network_stats(sessions[i].0, 1 - i as u32, &mut st) });
        stats.push(st);
    }
    (paths, stats)
}

#[test]
fn two_peers_meet_through_a_rendezvous_go_direct_and_a_private_match_is_relayed() {
    let k = key();
    let (r, rdv) = rendezvous(&k);
    let (paths, stats) = play(&k, &rdv, 1, 0);
    for i in 0..2 {
        assert_eq!(paths[i].first(), Some(&(tw_path::Relayed as u32, rdv.clone())), "{:?}", paths[i]);
        let (last, addr) = paths[i].last().unwrap();
        assert_eq!(*last, tw_path::Direct as u32, "{:?}", paths[i]);
        assert_eq!((stats[i].path, text(&stats[i].path_address)), (tw_path::Direct as u32, addr.clone()));
    }
    let (paths, stats) = play(&k, &rdv, 2, TW_RENDEZVOUS_PRIVATE);
    for i in 0..2 {
        assert_eq!(paths[i], vec![(tw_path::Relayed as u32, rdv.clone())]);
        assert_eq!((stats[i].path, text(&stats[i].path_address)), (tw_path::Relayed as u32, rdv.clone()));
    }
    let mut st = tw_rendezvous_stats::default();
    // SAFETY: live handle, writable output.
    ok(unsafe { tw_rendezvous_get_stats(r.0, &mut st) });
    assert_eq!(unsafe { tw_rendezvous_stats_size() }, std::mem::size_of::<tw_rendezvous_stats>());
    assert_eq!((st.matches_made, st.refused, st.strangers), (2, 0, 0), "{st:?}");
    assert!(st.relayed_datagrams > 100, "{st:?}");
}

#[test]
fn every_rendezvous_argument_is_checked_and_named() {
    let k = key();
    let (_r, rdv) = rendezvous(&k);
    let t = ticket(&k, &rdv, 3, 0, 2);
    let rdv_c = cstr(&rdv);
    let secret = key();
    let sec = secured(Some(&secret));
    let mut cfg = session_config(tw_session_mode::P2p, 2);
    cfg.host.security = &*sec;
    let s = create(&cfg);
    let set = |addr: *const std::ffi::c_char, ticket: *const u8, len: usize, flags: u32| {
        // SAFETY: live session; the pointers are NULL or valid for their sizes.
        unsafe { tw_session_set_rendezvous(s.0, addr, ticket, len, flags) }
    };
    assert_eq!(set(std::ptr::null(), t.as_ptr(), t.len(), 0), tw_result::NullArgument);
    assert_eq!(set(rdv_c.as_ptr(), std::ptr::null(), t.len(), 0), tw_result::NullArgument);
    assert_eq!(set(rdv_c.as_ptr(), t.as_ptr(), 100, 0), tw_result::InvalidArgument);
    assert!(last_error().contains("ticket"), "{}", last_error());
    assert_eq!(set(rdv_c.as_ptr(), t.as_ptr(), t.len(), 2), tw_result::InvalidArgument);
    assert!(last_error().contains("flags"), "{}", last_error());
    assert_eq!(set(cstr("nowhere").as_ptr(), t.as_ptr(), t.len(), 0), tw_result::InvalidArgument);
    // A remote player with no address and no rendezvous: NULL is still refused.
    // SAFETY: live session, NULL on purpose.
    assert_eq!(unsafe { tw_session_add_remote_player(s.0, 1, std::ptr::null()) }, tw_result::NullArgument);
    ok(set(rdv_c.as_ptr(), t.as_ptr(), t.len(), 0));
    // Started: too late.
    // SAFETY: live session.
    unsafe {
        ok(tw_session_add_local_player(s.0, 0));
        ok(tw_session_add_remote_player(s.0, 1, std::ptr::null()));
        ok(tw_session_start(s.0));
    }
    assert_eq!(set(rdv_c.as_ptr(), t.as_ptr(), t.len(), 0), tw_result::InvalidState);

    // Without the players' secret: the relay could read the match.
    let open = create(&session_config(tw_session_mode::P2p, 2));
    // SAFETY: live session, valid pointers.
    let r = unsafe { tw_session_set_rendezvous(open.0, rdv_c.as_ptr(), t.as_ptr(), t.len(), 0) };
    assert_eq!(r, tw_result::InvalidArgument);
    assert!(last_error().contains("secret"), "{}", last_error());
    // Not P2P.
    let sync = create(&session_config(tw_session_mode::Synctest, 2));
    // SAFETY: live session, valid pointers.
    let r = unsafe { tw_session_set_rendezvous(sync.0, rdv_c.as_ptr(), t.as_ptr(), t.len(), 0) };
    assert_eq!(r, tw_result::InvalidState);

    // The match claim: players 2..=8, the slot below them, room for 18 bytes.
    let mut out = [0u8; 18];
    // SAFETY: writable buffers of the sizes given; NULL on purpose.
    unsafe {
        assert_eq!(tw_match_claim_write(1, 0, 1, out.as_mut_ptr(), 18), tw_result::InvalidArgument);
        assert_eq!(tw_match_claim_write(1, 0, 9, out.as_mut_ptr(), 18), tw_result::InvalidArgument);
        assert_eq!(tw_match_claim_write(1, 2, 2, out.as_mut_ptr(), 18), tw_result::InvalidArgument);
        assert_eq!(tw_match_claim_write(1, 0, 300, out.as_mut_ptr(), 18), tw_result::InvalidArgument);
        assert_eq!(tw_match_claim_write(1, 0, 2, out.as_mut_ptr(), 17), tw_result::InvalidArgument);
        assert_eq!(tw_match_claim_write(1, 0, 2, std::ptr::null_mut(), 18), tw_result::NullArgument);
        ok(tw_match_claim_write(0x0102, 1, 2, out.as_mut_ptr(), 18));
    }
    assert_eq!(&out[..8], b"twmatch1");
    assert_eq!((out[8], out[9], out[16], out[17]), (0x02, 0x01, 1, 2));

    // The service: a key that is no secret, a size that is no key, a NULL output.
    let mut r = std::ptr::null_mut();
    let bind = cstr("127.0.0.1:0");
    // SAFETY: valid pointers and sizes, or NULL on purpose.
    unsafe {
        assert_eq!(
            tw_rendezvous_create(bind.as_ptr(), [0u8; 32].as_ptr(), 32, 1, 0, 0, &mut r),
            tw_result::InvalidArgument
        );
        assert_eq!(tw_rendezvous_create(bind.as_ptr(), k.as_ptr(), 31, 1, 0, 0, &mut r), tw_result::InvalidArgument);
        assert_eq!(
            tw_rendezvous_create(bind.as_ptr(), k.as_ptr(), 32, 1, 0, 0, std::ptr::null_mut()),
            tw_result::NullArgument
        );
        assert_eq!(tw_rendezvous_create(std::ptr::null(), k.as_ptr(), 32, 1, 0, 0, &mut r), tw_result::NullArgument);
        let taken = cstr(&rdv);
        assert_eq!(tw_rendezvous_create(taken.as_ptr(), k.as_ptr(), 32, 1, 0, 0, &mut r), tw_result::AddressInUse);
        assert_eq!(tw_rendezvous_get_stats(std::ptr::null_mut(), std::ptr::null_mut()), tw_result::NullArgument);
        tw_rendezvous_destroy(std::ptr::null_mut());
    }
    assert!(r.is_null());
}
