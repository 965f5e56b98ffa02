//! What a relay client owes a relay-only server ([`super::hosted`]): its checksum at
//! every check tick, and the digest (or the whole) of its authoritative state at the
//! ticks the server asks for. A client learns it owes them from its Welcome
//! (`report_interval` > 0).

use super::hosted::{self, MAX_CHECKS, StateAsk, StateDigest, StateReport};
use super::prediction::{DumpOutcome, Predictor};
use crate::engine::Tick;
use crate::transport::{PeerId, SendError, Transport};

/// Checksum reports kept while the transport refuses them; the oldest go first.
const REPORTS_KEPT: usize = 4 * MAX_CHECKS;

/// A state ask being answered.
#[derive(Debug, Clone, Copy)]
struct Ask {
    ask: StateAsk,
    /// The `DumpState` went to the engine; its answer is awaited.
    dumped: bool,
}

/// A relay client's duties to a relay-only server.
#[derive(Debug)]
pub(crate) struct ServerDuties {
    interval: u32,
    /// The next check tick to report: a multiple of `interval`. Wider than a tick, so
    /// that one past the last tick has a value.
    next_report: u64,
    reports: Vec<(Tick, u64)>,
    ask: Option<Ask>,
    /// The answer to send: the tick, the digest, and the state when it was asked for.
    answer: Option<(Tick, StateDigest, Vec<u8>)>,
    buf: Vec<u8>,
    /// Asks whose tick had left the engine's snapshots before it came (none answered).
    pub(crate) asks_missed: u64,
}

impl ServerDuties {
    /// Duties with checksum reports every `interval` (> 0) ticks; reports start at the
    /// first [`ServerDuties::restart`].
    pub(crate) fn new(interval: u32) -> Self {
        ServerDuties {
            interval: interval.max(1),
            next_report: u64::MAX,
            reports: Vec::with_capacity(MAX_CHECKS),
            ask: None,
            answer: None,
            buf: Vec::new(),
            asks_missed: 0,
        }
    }

    /// A timeline starts at `tick` (a snapshot was restored): reports go on from
    /// there, and an ask for a tick before it can no longer be answered (one that
    /// came with the Welcome, for a later tick, can).
    pub(crate) fn restart(&mut self, tick: Tick) {
        let i = u64::from(self.interval);
        self.next_report = u64::from(tick).div_ceil(i) * i;
        if self.ask.is_some_and(|a| a.ask.tick < tick) {
            self.asks_missed += 1;
            self.ask = None;
        }
    }

    /// The timeline is dropped: a dump asked of it is void, and the ask waits for
    /// the next timeline.
    pub(crate) fn forget_timeline(&mut self) {
        if let Some(a) = &mut self.ask {
            a.dumped = false;
        }
    }

    /// A StateAsk from the server; false if it is malformed. A newer ask replaces the
    /// one being answered (the server asks one at a time).
    pub(crate) fn on_ask(&mut self, data: &[u8]) -> bool {
        match hosted::decode_state_ask(data) {
            Ok(ask) => {
                self.ask = Some(Ask { ask, dumped: false });
                true
            }
            Err(_) => false,
        }
    }

    /// Right after the predictor's `begin_batch`: the dump of an asked tick that has
    /// become authoritative goes first in the batch.
    pub(crate) fn before_batch(&mut self, predictor: &mut Predictor) {
        let Some(a) = self.ask.as_mut().filter(|a| !a.dumped) else { return };
        match predictor.dump_authoritative(a.ask.tick) {
            DumpOutcome::Asked => a.dumped = true,
            DumpOutcome::NotYet => {}
            DumpOutcome::Gone => {
                self.asks_missed += 1;
                self.ask = None;
            }
        }
    }

    /// After the batch: the checksums of check ticks that became authoritative.
    pub(crate) fn after_batch(&mut self, predictor: &Predictor) {
        let i = u64::from(self.interval);
        while self.next_report <= u64::from(predictor.authoritative_tick()) {
            let t = self.next_report as Tick;
            match predictor.authoritative_checksum(t) {
                Some(c) => {
                    if self.reports.len() == REPORTS_KEPT {
                        self.reports.remove(0);
                    }
                    self.reports.push((t, c));
                }
                // Passed over (too old to be kept): nothing to report.
                None if predictor.checksums_logged_past(t) => {}
                // Saved, not confirmed yet.
                None => break,
            }
            self.next_report += i;
        }
    }

    /// The engine's answer to the `DumpState` of an ask; false if none was asked for
    /// `tick`.
    pub(crate) fn provide_state(&mut self, tick: Tick, state: &[u8]) -> bool {
        match self.ask {
            Some(Ask { ask, dumped: true }) if ask.tick == tick => {
                let bytes = if ask.upload { state.to_vec() } else { Vec::new() };
                self.answer = Some((tick, StateDigest::of(state), bytes));
                self.ask = None;
                true
            }
            _ => false,
        }
    }

    /// Sends the reports and the answer due, on `channel` to `server`; what the
    /// transport refuses waits for the next call.
    pub(crate) fn send<T: Transport + ?Sized>(&mut self, transport: &mut T, server: PeerId, channel: u8) {
        while !self.reports.is_empty() {
            let n = self.reports.len().min(MAX_CHECKS);
            hosted::encode_checks(&mut self.buf, &self.reports[..n]);
            if transport.send(server, channel, &self.buf).is_err() {
                break;
            }
            self.reports.drain(..n);
        }
        if let Some((tick, digest, state)) = &self.answer {
            hosted::encode_state_report(&mut self.buf, &StateReport { tick: *tick, digest: *digest, state });
            match transport.send(server, channel, &self.buf) {
                // Too large for the reliable channel: it never will fit (the server
                // asks another client after its timeout).
                Ok(()) | Err(SendError::TooLarge { .. }) => self.answer = None,
                Err(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Micros;
    use crate::transport::{Binding, ConnectionStats, DisconnectReason};

    /// A transport that takes messages up to `max` bytes, or refuses all as full.
    struct Limited {
        max: usize,
        full: bool,
        sent: Vec<Vec<u8>>,
    }

    impl Transport for Limited {
        fn connect_bound(
            &mut self,
            _: Micros,
            _: std::net::SocketAddr,
            _: Option<Binding>,
        ) -> Result<PeerId, SendError> {
            Ok(1)
        }
        fn set_local_id(&mut self, _: Option<u32>) {}
        fn disconnect(&mut self, _: Micros, _: PeerId) {}
        fn disconnect_with(&mut self, _: Micros, _: PeerId, _: DisconnectReason) {}
        fn send(&mut self, _: PeerId, _: u8, data: &[u8]) -> Result<(), SendError> {
            if data.len() > self.max {
                return Err(SendError::TooLarge { size: data.len(), max: self.max });
            }
            if self.full {
                return Err(SendError::QueueFull { queued: 1, limit: 1 });
            }
            self.sent.push(data.to_vec());
            Ok(())
        }
        fn flush(&mut self, _: Micros) {}
        fn recycle(&mut self, _: Vec<u8>) {}
        fn stats(&mut self, _: PeerId) -> Option<ConnectionStats> {
            None
        }
    }

    fn asked(d: &mut ServerDuties, tick: Tick, upload: bool) {
        let mut b = Vec::new();
        hosted::encode_state_ask(&mut b, &StateAsk { tick, upload });
        assert!(d.on_ask(&b));
        d.ask.as_mut().expect("an ask").dumped = true; // as `before_batch` marks it
    }

    #[test]
    fn an_answer_too_large_for_the_channel_is_dropped_and_one_refused_as_full_waits() {
        let mut d = ServerDuties::new(30);
        asked(&mut d, 90, true);
        assert!(d.provide_state(90, &[7; 500]));
        let mut t = Limited { max: 100, full: false, sent: Vec::new() };
        d.send(&mut t, 1, 2);
        assert!(d.answer.is_none() && t.sent.is_empty(), "never fits: dropped, not retried every frame");
        asked(&mut d, 120, false);
        assert!(!d.provide_state(119, &[7; 50]), "not the tick asked");
        assert!(d.provide_state(120, &[7; 50]));
        t.full = true;
        d.send(&mut t, 1, 2);
        assert!(d.answer.is_some(), "a full queue: the answer waits");
        t.full = false;
        d.send(&mut t, 1, 2);
        let r = hosted::decode_state_report(&t.sent[0]).unwrap();
        assert_eq!((r.tick, r.digest, r.state.len()), (120, StateDigest::of(&[7; 50]), 0), "a digest only");
    }

    #[test]
    fn a_restart_keeps_an_ask_for_a_later_tick_and_voids_an_earlier_one() {
        let mut d = ServerDuties::new(30);
        let mut b = Vec::new();
        hosted::encode_state_ask(&mut b, &StateAsk { tick: 100, upload: true });
        assert!(d.on_ask(&b));
        d.restart(95);
        assert!(d.ask.is_some(), "the ask came with the Welcome, for a tick after it");
        assert_eq!(d.next_report, 120);
        d.restart(101);
        assert!(d.ask.is_none() && d.asks_missed == 1);
        assert!(!d.on_ask(&[hosted::KIND_STATE_ASK, 1]), "a malformed ask");
    }
}
