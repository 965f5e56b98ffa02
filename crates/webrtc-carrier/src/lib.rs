//! Test only: tickwire's external carrier proved with a real WebRTC stack.
//!
//! The binary `tickwire-webrtc-peer` plays one peer of a two-player P2P match: a
//! [str0m](https://crates.io/crates/str0m) `Rtc` (sans-IO) driven over a UDP socket on
//! loopback, one unordered data channel without retransmissions, and a tickwire
//! `P2pSession` bound to an external carrier whose datagrams that channel carries. The
//! integration test (`tests/webrtc_match.rs`) starts two of them, relays their
//! signaling, and compares what they report.
//!
//! What the two processes and the test share lives here: the line protocol of the
//! signaling and of the report, and the game (its inputs and its state).
//!
//! Signaling, one line each on the peers' standard streams:
//! - the offerer prints `OFFER <hex of the SDP>`; the test writes it to the answerer's
//!   standard input, which prints `ANSWER <hex>`, written back to the offerer's. The
//!   SDPs carry the host candidates, so nothing else is exchanged.
//! - once a peer's confirmed tick passed the match's length it prints one
//!   `TICK <tick> <checksum>` line per tick, then `RESULT key=value ...`, then `DONE`;
//!   it keeps playing (its peer may still need its resends) until the test writes
//!   `STOP`, then exits 0.
//!
//! Logs go to standard error.

/// The hex form of `bytes` (signaling lines carry an SDP, which has line breaks).
pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// The bytes of a hex string; None if it is not one.
pub fn hex_decode(text: &str) -> Option<Vec<u8>> {
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let t = text.as_bytes();
    if t.len() % 2 != 0 {
        return None;
    }
    t.chunks(2).map(|p| Some(digit(p[0])? << 4 | digit(p[1])?)).collect()
}

/// SplitMix64's finaliser: the game's one mixing function.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Bytes per input.
pub const INPUT_SIZE: usize = 2;

/// The input `player` gives at `tick` in the match seeded `seed`.
pub fn input_of(seed: u64, player: usize, tick: u32) -> [u8; INPUT_SIZE] {
    let h = mix(seed ^ mix(((player as u64) << 32) | u64::from(tick)));
    [h as u8, (h >> 8) as u8]
}

/// The game's state after simulating `tick` with `inputs` (every player's, in order)
/// from `state`: a rolling hash, so that any input applied differently shows.
pub fn step(state: u64, tick: u32, inputs: &[u8]) -> u64 {
    let mut s = mix(state ^ u64::from(tick));
    for chunk in inputs.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        s = mix(s ^ u64::from_le_bytes(w));
    }
    s
}

/// The digest of a run of per-tick checksums (the report's `digest`).
pub fn digest(checksums: &[u64]) -> u64 {
    checksums.iter().fold(0, |d, &c| mix(d ^ c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_junk() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&b)), Some(b));
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
    }

    #[test]
    fn the_state_depends_on_every_input_and_tick() {
        let a = step(1, 5, &[1, 2, 3, 4]);
        assert_ne!(a, step(1, 5, &[1, 2, 3, 5]));
        assert_ne!(a, step(1, 6, &[1, 2, 3, 4]));
        assert_ne!(input_of(7, 0, 3), input_of(7, 1, 3));
    }
}
