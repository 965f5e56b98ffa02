//! Replay sizes and files from the caller (issue 13, item 4): a huge initial state for
//! `tw_session_start_recording` and a replay file that is a FIFO, a directory or larger
//! than `TW_MAX_REPLAY_SIZE` are refused with a code and a message, without reading,
//! allocating or blocking.

use crate::support::abi_engine;
use crate::support::common;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use abi_engine::{SessionGuard, create, ok, session_config};
use common::assert_err;
use tickwire::*;

const MAX_REPLAY_SIZE: usize = TW_MAX_REPLAY_SIZE as usize;

/// A fresh directory for this test's files, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("tickwire-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn c_path(p: &Path) -> CString {
    CString::new(p.to_str().unwrap()).unwrap()
}

fn replay_session() -> SessionGuard {
    create(&session_config(tw_session_mode::Replay, 2))
}

/// `tw_session_load_replay_file` on another thread, so that a call that blocks fails
/// the test instead of hanging it: `unblock` is run if no answer comes within 5 s.
fn load_file_or_unblock(s: &SessionGuard, path: &Path, unblock: impl FnOnce()) -> (tw_result, String) {
    struct Send(*mut tw_session);
    // SAFETY: the session is used by the spawned thread only, while this one waits.
    unsafe impl std::marker::Send for Send {}
    let handle = Send(s.0);
    let path = c_path(path);
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let handle = handle;
        // SAFETY: live session (this thread is its only user now), NUL-terminated path.
        let r = unsafe { tw_session_load_replay_file(handle.0, path.as_ptr()) };
        let _ = tx.send((r, common::last_error()));
    });
    match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(answer) => {
            t.join().unwrap();
            answer
        }
        Err(_) => {
            unblock();
            t.join().unwrap();
            panic!("tw_session_load_replay_file blocked for 5 s");
        }
    }
}

#[test]
fn start_recording_refuses_a_huge_initial_state_without_reading_it() {
    let s = create(&session_config(tw_session_mode::P2p, 1));
    // SAFETY: live session.
    ok(unsafe { tw_session_add_local_player(s.0, 0) });
    let state = [7u8; 16];
    // Before start (the state is kept until the session runs), then at tick 0 of the
    // running session (the recorder is made at once).
    for running in [false, true] {
        if running {
            // SAFETY: live session.
            ok(unsafe { tw_session_start(s.0) });
        }
        for len in [MAX_REPLAY_SIZE, 1 << 40, isize::MAX as usize] {
            // SAFETY: `len` overstates the buffer on purpose: the call must refuse the
            // length before reading any of it.
            let r = unsafe { tw_session_start_recording(s.0, state.as_ptr().cast(), len) };
            assert_err(r, tw_result::InvalidArgument, "tw_session_start_recording", "initial_state");
            assert!(common::last_error().contains("TW_MAX_REPLAY_SIZE"), "{}", common::last_error());
        }
    }
    // A state that fits is accepted.
    // SAFETY: live session, valid buffer.
    ok(unsafe { tw_session_start_recording(s.0, state.as_ptr().cast(), state.len()) });
}

#[cfg(unix)]
#[test]
fn load_replay_file_refuses_a_fifo_without_blocking() {
    let dir = TempDir::new("fifo");
    let fifo = dir.0.join("replay.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let s = replay_session();
    let (r, msg) = load_file_or_unblock(&s, &fifo, || {
        // Open the other end (and close it) so the blocked reader sees end of file.
        let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
    });
    assert_eq!(r, tw_result::InvalidArgument, "{msg}");
    assert!(msg.starts_with("tw_session_load_replay_file: ") && msg.contains("not a regular file"), "{msg}");
}

#[test]
fn load_replay_file_refuses_a_directory_and_a_device() {
    let dir = TempDir::new("dir");
    let s = replay_session();
    let mut paths = vec![dir.0.clone()];
    if cfg!(unix) {
        // Endless: reading it whole would never finish.
        paths.push(PathBuf::from("/dev/zero"));
    }
    for path in paths {
        let (r, msg) = load_file_or_unblock(&s, &path, || {});
        assert_eq!(r, tw_result::InvalidArgument, "{msg}");
        assert!(msg.contains("not a regular file"), "{msg}");
    }
}

#[test]
fn load_replay_file_refuses_a_file_above_the_limit_without_reading_it() {
    let dir = TempDir::new("big");
    let s = replay_session();
    // Sparse files: they take no disk, and reading one would take its size in memory.
    for size in [MAX_REPLAY_SIZE as u64 + 1, 1 << 40] {
        let path = dir.0.join(format!("replay-{size}.twrp"));
        std::fs::File::create(&path).unwrap().set_len(size).unwrap();
        let (r, msg) = load_file_or_unblock(&s, &path, || {});
        assert_eq!(r, tw_result::InvalidArgument, "{msg}");
        assert!(msg.contains(&size.to_string()) && msg.contains(&TW_MAX_REPLAY_SIZE.to_string()), "{msg}");
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn load_replay_file_still_reads_a_replay_and_reports_a_missing_one() {
    let dir = TempDir::new("ok");
    // A replay of 2 players with 2-byte inputs, 3 ticks, no initial state.
    let mut bytes = b"TWRP".to_vec();
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    for v in [2u32, 2, 0, 3, 0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    for t in 0..3u8 {
        bytes.extend_from_slice(&[0, t, 1, 0, t, 2]);
    }
    let path = dir.0.join("good.twrp");
    std::fs::write(&path, &bytes).unwrap();
    let s = replay_session();
    let (r, msg) = load_file_or_unblock(&s, &dir.0.join("missing.twrp"), || {});
    assert_eq!(r, tw_result::Io, "{msg}");
    assert!(msg.contains("missing.twrp"), "{msg}");
    let (r, msg) = load_file_or_unblock(&s, &path, || {});
    assert_eq!(r, tw_result::Ok, "{msg}");
}

#[test]
fn a_replay_whose_ticks_run_past_the_last_tick_number_is_refused() {
    let mut bytes = b"TWRP".to_vec();
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&0u16.to_le_bytes());
    for v in [2u32, 2, u32::MAX - 1, 3, 0] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    bytes.extend_from_slice(&[0; 18]);
    let s = replay_session();
    // SAFETY: live session, valid buffer.
    let r = unsafe { tw_session_load_replay(s.0, bytes.as_ptr().cast(), bytes.len()) };
    assert_err(r, tw_result::InvalidArgument, "tw_session_load_replay", "past the last tick");
}
