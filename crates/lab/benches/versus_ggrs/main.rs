//! tickwire's P2P rollback against GGRS 0.13, side by side in one process (issue 5,
//! item 11). Not part of the test suite: it prints a table and asserts nothing about
//! speed.
//!
//! Run it with
//!
//! ```sh
//! cargo bench -p tickwire-lab --bench versus_ggrs                 # 3,000 measured frames per run
//! BENCH_FRAMES=600 cargo bench -p tickwire-lab --bench versus_ggrs   # a quicker look
//! BENCH_ONLY='*/*/10,4/1/0' cargo bench -p tickwire-lab --bench versus_ggrs   # rows P/period/latency
//! BENCH_DETAIL=1 cargo bench -p tickwire-lab --bench versus_ggrs   # what each library sends, and stalls
//! BENCH_TW_ENCRYPTED=1 cargo bench -p tickwire-lab --bench versus_ggrs   # tickwire encrypted, as it ships
//! BENCH_TW_REDUNDANCY=0 cargo bench -p tickwire-lab --bench versus_ggrs   # diagnostic: tickwire with a
//!                                  # non-default P2pConfig::input_redundancy (0 = GGRS's way)
//! ```
//!
//! # What runs
//! The same toy game for both libraries (8 x i64 of state per player, a 2-byte input per
//! player from a seeded generator that changes every `period` frames), one player per
//! peer, 2 and 4 peers in a full mesh, input change period 1 and 5 and 30 frames, link
//! latency 0, 3, 6 and 10 ticks one way with uniform jitter of 0-4 ms and 5% Bernoulli
//! loss. Both libraries use their defaults otherwise: prediction window 8, input delay
//! 0, every frame saved, repeat-last prediction, checksums compared every 10 frames.
//!
//! # The network
//! Both libraries go through the same in-process simulated network: one
//! `tickwire_proto::LinkConditioner` per direction, with the same
//! `LinkConfig` and the same seed per direction for both libraries. Time is simulated:
//! engine frame `f` happens at `f * 16,666.7` µs. Each frame first delivers every
//! datagram due by then, on every peer, then runs each peer's engine frame.
//! - tickwire: a `P2pSession` over a `tickwire_proto::Endpoint` per peer (the
//!   transport's handshake, acks and headers included), in plaintext
//!   (`Security::InsecurePlaintext` on every peer), because GGRS neither encrypts nor
//!   authenticates: the same work on both sides. `BENCH_TW_ENCRYPTED=1` runs it as it
//!   ships (ChaCha20-Poly1305 on every packet after the handshake), which the header
//!   line says; the datagrams the endpoints emit
//!   are carried by the links in preallocated buffers. Each datagram is handed to its
//!   endpoint at its arrival time and the session gets every message with that time,
//!   as tickwire's runtime does (its network thread receives while the engine runs and
//!   stamps `received_at`); time sync measures from it. `BENCH_TW_FRAME_TIMES=1` hands
//!   everything over at the frame time instead, as a game thread polling once a frame.
//! - GGRS: a `NonBlockingSocket<usize>` whose `send_to` puts a clone of the `Message` on
//!   the link and whose `receive_all_messages` returns what the link delivered. Its
//!   wire size is what GGRS's own UDP socket would send (bincode 1, fixed-width
//!   integers), computed from the message's fields (checked once, outside this repo,
//!   against `bincode::serialize` on 87,000 messages of 2-4 player sessions: equal).
//!
//! # Time and GGRS's wall-clock timers
//! tickwire's core is sans-IO and sees only the simulated time. GGRS reads the wall
//! clock itself (`instant::Instant`, `SystemTime`) for its 200 ms timers (quality
//! reports, keepalives, resending when no input arrived) and its ping. Running in real
//! time would take 50 s per run, so the runs are simulated as fast as the machine goes
//! and GGRS's timers fire far less often per frame than at a real 60 Hz: its quality
//! reports (two messages per peer pair per 200 ms, 46 bytes) are mostly missing from its
//! wire bytes, which flatters GGRS by about 3.8 B per frame per remote peer at 60 Hz (the
//! table prints the bytes measured; the note under it gives the corrected figure) and
//! its ping reads ~0 on every peer, which only shifts both sides' frame-advantage
//! estimates alike. GGRS's sync handshake (retried every 200 ms of wall time) is run
//! before the measured frames with a 1 ms sleep per simulated frame, and no GGRS peer
//! advances before all are synchronized. The engine honours GGRS's `WaitRecommendation`
//! by skipping that many frames; tickwire dilates its own tick clock.
//!
//! Two more differences in GGRS's favour: its peers all start on the same frame (the
//! harness waits for every session to be synchronized, which a real engine cannot
//! know), while tickwire's sessions each start when they have heard from every peer,
//! as they would in a game; and GGRS's "prediction window 8" stops at 7 predicted
//! frames (`current - confirmed < 8`, with `confirmed` the last confirmed frame) where
//! tickwire's goes to 8, so at 6 and 10 ticks of latency GGRS stalls more and
//! simulates fewer ticks per frame (column tick/f) and rolls back less deep.
//!
//! # What is measured (after a warm-up of 300 frames, per engine frame per peer)
//! - library CPU: the time spent inside the library's calls made from the engine loop,
//!   timed with `Instant` around each call (the calibrated cost of the timer itself is
//!   subtracted), the game's own work (copying and hashing its state, stepping it)
//!   excluded. tickwire: every session *and* endpoint call (receive, timers, events,
//!   encode, send, packetize) since its transport is part of it. GGRS: `add_local_input`,
//!   `advance_frame` (which polls the socket), the `GameStateCell` save and load, the
//!   request and event handling; the time spent inside our socket (cloning messages,
//!   the link) is subtracted, so GGRS is charged nothing for serializing its messages,
//!   which its real UDP socket does with bincode. p50 and p99 over all (peer, frame).
//! - heap allocations: counted by the counting global allocator inside the same calls;
//!   the game allocates nothing. For GGRS the allocations inside our socket are
//!   subtracted too (a real socket allocates there as well).
//! - wire bytes: the sizes of the datagrams offered to the links (lost ones included),
//!   payload only (no IP/UDP headers), divided by frames and peers; datagrams likewise.
//! - rollbacks seen by the engine: a `Load` of frame `s` when the next frame to simulate
//!   is `c` is a rollback of depth `c - s`; mean and max depth, rollbacks per second of
//!   game time per peer.
//! - ticks/f: ticks actually simulated per frame (below 1 when the prediction window is
//!   full or frames were skipped).
//!
//! Every run must end with the same checksum on every peer at every frame confirmed
//! everywhere, and no desync reported; otherwise it is printed as VOID.

mod game;
mod ggrs_wire_size;
mod measure;
mod scenario;
mod with_ggrs;
mod with_tickwire;

use std::time::Instant;

use tickwire_testkit::counting_alloc;

use measure::{Results, calibrate, percentile};
use scenario::{JITTER_MAX_US, LOSS, Scenario};
use with_ggrs::run_ggrs;
use with_tickwire::{detail_wanted, run_tickwire};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// One simulated engine frame, in microseconds (60 Hz).
const TICK_US: f64 = 1e6 / 60.0;
/// Frames run before measuring starts.
const WARMUP: u64 = 300;
const DESYNC_INTERVAL: u32 = 10;

fn frame_time(f: u64) -> u64 {
    (f as f64 * TICK_US).round() as u64
}

fn show(r: &Results, f: impl Fn(&Results) -> String) -> String {
    if r.void.is_some() { "VOID".into() } else { f(r) }
}

fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 { if a == 0.0 { "-".into() } else { "inf".into() } } else { format!("{:.2}", a / b) }
}

struct Tally {
    runs: usize,
    cpu50: usize,
    cpu99: usize,
    raw50: usize,
    raw99: usize,
    zero_allocs: usize,
    bytes: usize,
    bytes_corrected: usize,
    void: usize,
}

/// BENCH_ONLY="P/per/L,..." (each part a number or `*`) runs only those rows.
fn selected(only: &str, peers: usize, period: u64, latency: u64) -> bool {
    let want = [peers as u64, period, latency];
    only.is_empty()
        || only.split(',').any(|pat| {
            let parts: Vec<&str> = pat.trim().split('/').collect();
            parts.len() == 3 && parts.iter().zip(want).all(|(p, w)| *p == "*" || p.parse() == Ok(w))
        })
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` (the test suite) runs this
    // binary without it: then a smoke run of two short rows checks that the harness
    // still works and both libraries still agree, without the suite paying for the
    // full table (minutes in a debug build).
    let smoke = !std::env::args().any(|a| a == "--bench");
    let frames: u64 =
        std::env::var("BENCH_FRAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(if smoke { 120 } else { 3_000 });
    let only = std::env::var("BENCH_ONLY").unwrap_or(if smoke { "2/1/3,4/5/0".to_string() } else { String::new() });
    if smoke {
        println!(
            "smoke run (no --bench): figures mean nothing here; `cargo bench -p tickwire-lab --bench versus_ggrs` measures"
        );
    }
    let detail = detail_wanted();
    let calib = calibrate();
    let security = match with_tickwire::tw_encrypted() {
        true => "tickwire encrypted (ChaCha20-Poly1305, as it ships; BENCH_TW_ENCRYPTED=1)",
        false => "tickwire in plaintext like GGRS (BENCH_TW_ENCRYPTED=1: encrypted, as it ships)",
    };
    println!(
        "tickwire vs GGRS 0.13.0: {frames} measured frames per run after {WARMUP} warm-up frames, 60 Hz, one player per peer; {security}"
    );
    println!(
        "link per direction: latency L ticks + uniform jitter 0-{} ms, {}% loss, same seeds for both; timer overhead {calib:.1} ns per timed call subtracted",
        JITTER_MAX_US / 1000,
        LOSS * 100.0
    );
    println!();
    println!(
        "{:>2} {:>3} {:>3} | {:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | sync",
        "P",
        "per",
        "L",
        "library",
        "cpu p50",
        "cpu p99",
        "allocs/f",
        "B/f/peer",
        "dg/f",
        "rb mean",
        "max",
        "rb/s",
        "tick/f"
    );
    println!("{}", "-".repeat(120));
    let mut tally = Tally {
        runs: 0,
        cpu50: 0,
        cpu99: 0,
        raw50: 0,
        raw99: 0,
        zero_allocs: 0,
        bytes: 0,
        bytes_corrected: 0,
        void: 0,
    };
    let wall = Instant::now();
    let mut seed = 1;
    for peers in [2usize, 4] {
        for period in [1u64, 5, 30] {
            for latency_ticks in [0u64, 3, 6, 10] {
                seed += 1;
                if !selected(&only, peers, period, latency_ticks) {
                    continue;
                }
                let s = Scenario { peers, period, latency_ticks, seed };
                let tw = run_tickwire(&s, frames, calib);
                let gg = run_ggrs(&s, frames, calib);
                for (name, r) in [("tickwire", &tw), ("ggrs", &gg)] {
                    let lead = if name == "tickwire" {
                        format!("{peers:>2} {period:>3} {latency_ticks:>3}")
                    } else {
                        " ".repeat(10)
                    };
                    println!(
                        "{lead} | {name:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | {}",
                        show(r, |r| format!("{:.2}µs", r.percentile(0.50) / 1e3)),
                        show(r, |r| format!("{:.2}µs", r.percentile(0.99) / 1e3)),
                        show(r, |r| if r.allocs < 100 {
                            format!("{:.3} ({})", r.per_peer_frame(r.allocs), r.allocs)
                        } else {
                            format!("{:.2}", r.per_peer_frame(r.allocs))
                        }),
                        show(r, |r| format!("{:.1}", r.per_peer_frame(r.bytes))),
                        show(r, |r| format!("{:.2}", r.per_peer_frame(r.datagrams))),
                        show(r, |r| format!("{:.2}", r.depth_mean())),
                        show(r, |r| format!("{}", r.depth_max)),
                        show(r, |r| format!("{:.1}", r.rollbacks_per_sec())),
                        show(r, |r| format!("{:.3}", r.ticks as f64 / (r.frames as f64 * r.peers as f64))),
                        match &r.void {
                            None => format!("ok ({} frames equal)", r.compared),
                            Some(why) => format!("VOID: {why}"),
                        },
                    );
                    if detail {
                        println!("{:>23} {}", "", r.detail());
                    }
                }
                tally.runs += 1;
                if tw.void.is_some() || gg.void.is_some() {
                    tally.void += 1;
                    println!("{:>10} | {:<8} | VOID", "", "tw/ggrs");
                    continue;
                }
                let (c50, c99) = (tw.percentile(0.5) / gg.percentile(0.5), tw.percentile(0.99) / gg.percentile(0.99));
                let (tb, gb) = (tw.per_peer_frame(tw.bytes), gg.per_peer_frame(gg.bytes));
                // GGRS's quality traffic at a real 60 Hz: one report (24 B) and one reply
                // (22 B) per remote peer per 200 ms = 12 frames; the measured part replaced.
                let gb_corrected = gb - gg.per_peer_frame(gg.timed_bytes) + (peers - 1) as f64 * 46.0 / 12.0;
                tally.cpu50 += (c50 <= 0.5) as usize;
                tally.cpu99 += (c99 <= 0.5) as usize;
                tally.raw50 += (percentile(&tw.cpu_raw_ns, 0.5) <= 0.5 * percentile(&gg.cpu_raw_ns, 0.5)) as usize;
                tally.raw99 += (percentile(&tw.cpu_raw_ns, 0.99) <= 0.5 * percentile(&gg.cpu_raw_ns, 0.99)) as usize;
                tally.zero_allocs += (tw.allocs == 0) as usize;
                tally.bytes += (tb <= gb) as usize;
                tally.bytes_corrected += (tb <= gb_corrected) as usize;
                println!(
                    "{:>10} | {:<8} | {:>9} {:>9} | {:>11} | {:>8} {:>6} | {:>7} {:>4} {:>6} | {:>6} | GGRS B/f/peer with 60 Hz quality reports: {gb_corrected:.1} (ratio {})",
                    "",
                    "tw/ggrs",
                    format!("{c50:.2}"),
                    format!("{c99:.2}"),
                    ratio(tw.per_peer_frame(tw.allocs), gg.per_peer_frame(gg.allocs)),
                    ratio(tb, gb),
                    ratio(tw.per_peer_frame(tw.datagrams), gg.per_peer_frame(gg.datagrams)),
                    ratio(tw.depth_mean(), gg.depth_mean()),
                    ratio(tw.depth_max as f64, gg.depth_max as f64),
                    ratio(tw.rollbacks_per_sec(), gg.rollbacks_per_sec()),
                    ratio(tw.ticks as f64, gg.ticks as f64),
                    ratio(tb, gb_corrected),
                );
            }
        }
    }
    println!();
    let ok = tally.runs - tally.void;
    println!("targets over the {ok} runs not void ({} void):", tally.void);
    println!("  library CPU p50 <= 0.5 x GGRS: {}/{ok};  p99 <= 0.5 x GGRS: {}/{ok}", tally.cpu50, tally.cpu99);
    println!(
        "    (the same with the timer overhead left in, which charges tickwire for its more numerous timed calls: p50 {}/{ok}, p99 {}/{ok})",
        tally.raw50, tally.raw99
    );
    println!("  0 heap allocations per frame in steady state (tickwire): {}/{ok}", tally.zero_allocs);
    println!(
        "  wire bytes per frame <= GGRS: {}/{ok} as measured, {}/{ok} against GGRS with its quality reports at a real 60 Hz",
        tally.bytes, tally.bytes_corrected
    );
    println!("total wall time {:.1} s", wall.elapsed().as_secs_f64());
    if smoke && (tally.runs == 0 || tally.void > 0) {
        eprintln!(
            "smoke run failed: {} of {} runs void (checksums differ or a library stalled)",
            tally.void, tally.runs
        );
        std::process::exit(1);
    }
}
