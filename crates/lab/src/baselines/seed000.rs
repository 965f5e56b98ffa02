//! Baseline (a): seed 000's fixed rule at the server (/work/shared/seeds/000, lines
//! 85-146; /work/shared/reference/ticksync.md line 32). The server keeps a remote
//! tick per client that advances one per server tick and is corrected when a new
//! packet arrives (stall one tick, skip forward, step back a packet, or reset, aiming
//! 2 send intervals behind the newest packet; [`FixedRuleInterpolation`] runs it).
//! A packet stamped `P` carries the inputs `P − (k − 1) ..= P` and is integrated as a
//! whole once the remote tick reaches `P − (k − 1)` (the seed's
//! `remoteTick >= queueHead->remoteTick - 2` at k = 3, line 141): its newest input is
//! consumed `k − 1` ticks before the remote tick reaches it. There is one copy of
//! each input (the seed sends each packet once).
//!
//! [`FixedRuleInterpolation`]: tickwire_proto::FixedRuleInterpolation

use tickwire_proto::Tick;

/// Copies of each input: the seed sends each packet once.
pub const COPIES: u32 = 1;

/// The newest input the server has integrated once its remote tick is `remote`: the
/// end of the packet that holds `remote` (packets leave at ticks that are multiples of
/// `k_c` and carry the `k_c` inputs ending there).
pub fn integrated_through(remote: Tick, k_c: u32) -> Tick {
    remote.div_ceil(k_c) * k_c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_is_integrated_when_the_remote_tick_reaches_its_first_input() {
        // k = 2: the packet stamped 10 carries 9 and 10; at remote tick 9 both are in.
        assert_eq!(integrated_through(9, 2), 10);
        assert_eq!(integrated_through(10, 2), 10);
        assert_eq!(integrated_through(11, 2), 12);
        // The seed's own k = 3: packet 12 carries 10..=12, in at remote tick 10.
        assert_eq!(integrated_through(10, 3), 12);
        assert_eq!(integrated_through(9, 3), 9);
    }
}
