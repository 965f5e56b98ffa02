//! Which ticks the engine has saved, in which slot, with which checksum.
//!
//! The engine owns the snapshots (see the module docs of [`super`]); this ring is the
//! library's ledger of them. It has `rollback_slots` slots for rolling back plus
//! `check_slots` that keep the snapshots of desync-check ticks *pinned* until a newer
//! check tick replaces them, so that a desync found a few ticks later can still ask
//! the engine for that tick's state bytes.

use std::collections::VecDeque;

use crate::engine::Tick;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    tick: Option<Tick>,
    /// The snapshot reflects the current timeline (cleared when a rollback goes
    /// before it, until it is saved again).
    valid: bool,
    checksum: Option<u64>,
    pinned: bool,
}

/// The ledger of engine-held snapshots. Allocates only in [`StateRing::new`].
#[derive(Debug, Clone)]
pub(crate) struct StateRing {
    entries: Vec<Entry>,
    pins: VecDeque<Tick>,
    max_pins: usize,
}

impl StateRing {
    /// `rollback_slots` for rollback plus up to `check_slots` pinned ones.
    pub(crate) fn new(rollback_slots: usize, check_slots: usize) -> Self {
        StateRing {
            entries: vec![Entry::default(); rollback_slots.max(1) + check_slots],
            pins: VecDeque::with_capacity(check_slots + 1),
            max_pins: check_slots,
        }
    }

    /// Forgets every saved tick and pin, as a new ring of the same size (without
    /// allocating).
    pub(crate) fn clear(&mut self) {
        self.entries.fill(Entry::default());
        self.pins.clear();
    }

    /// Number of slots: the engine keeps this many snapshots.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    fn find(&self, tick: Tick) -> Option<usize> {
        self.entries.iter().position(|e| e.tick == Some(tick))
    }

    /// Chooses the slot for saving `tick`: its current slot if it has one, else a free
    /// one, else the oldest unpinned one. The checksum is cleared until confirmed.
    pub(crate) fn slot_for_save(&mut self, tick: Tick) -> usize {
        let i = self.find(tick).or_else(|| self.entries.iter().position(|e| e.tick.is_none())).unwrap_or_else(|| {
            let mut best = 0;
            let mut oldest = None;
            for (i, e) in self.entries.iter().enumerate() {
                if !e.pinned && oldest.is_none_or(|o| e.tick < o) {
                    oldest = Some(e.tick);
                    best = i;
                }
            }
            best
        });
        let pinned = self.entries[i].tick == Some(tick) && self.entries[i].pinned;
        self.entries[i] = Entry { tick: Some(tick), valid: true, checksum: None, pinned };
        i
    }

    /// Keeps `tick`'s snapshot until `check_slots` newer ticks have been pinned.
    pub(crate) fn pin(&mut self, tick: Tick) {
        let Some(i) = self.find(tick) else { return };
        if self.entries[i].pinned || self.max_pins == 0 {
            return;
        }
        self.entries[i].pinned = true;
        self.pins.push_back(tick);
        while self.pins.len() > self.max_pins {
            let old = self.pins.pop_front().expect("non-empty");
            if let Some(j) = self.find(old) {
                self.entries[j].pinned = false;
            }
        }
    }

    /// Records the engine's checksum for a saved tick. Returns false if the tick is not
    /// in the ring (evicted, or never saved).
    pub(crate) fn set_checksum(&mut self, tick: Tick, checksum: u64) -> bool {
        match self.find(tick) {
            Some(i) => {
                self.entries[i].checksum = Some(checksum);
                true
            }
            None => false,
        }
    }

    /// The checksum of a valid saved tick, if the engine confirmed one.
    pub(crate) fn checksum(&self, tick: Tick) -> Option<u64> {
        self.find(tick).filter(|&i| self.entries[i].valid).and_then(|i| self.entries[i].checksum)
    }

    /// The slot of a valid saved tick.
    pub(crate) fn slot_of(&self, tick: Tick) -> Option<usize> {
        self.find(tick).filter(|&i| self.entries[i].valid)
    }

    /// The newest valid saved tick at or before `tick`, with its slot.
    pub(crate) fn latest_at_or_before(&self, tick: Tick) -> Option<(Tick, usize)> {
        let mut best: Option<(Tick, usize)> = None;
        for (i, e) in self.entries.iter().enumerate() {
            match e.tick.filter(|&t| e.valid && t <= tick) {
                Some(t) if best.is_none_or(|(b, _)| t > b) => best = Some((t, i)),
                _ => {}
            }
        }
        best
    }

    /// A rollback to `tick` makes every later snapshot stale: unpinned ones are freed,
    /// pinned ones keep their slot but are invalid until saved again.
    pub(crate) fn invalidate_after(&mut self, tick: Tick) {
        for e in &mut self.entries {
            if e.tick.is_some_and(|t| t > tick) {
                e.valid = false;
                e.checksum = None;
                if !e.pinned {
                    e.tick = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_unpinned_and_keeps_pins() {
        let mut r = StateRing::new(3, 1);
        for t in 0..3 {
            r.slot_for_save(t);
            r.set_checksum(t, t as u64 * 10);
        }
        r.pin(1);
        r.slot_for_save(3);
        r.slot_for_save(4);
        assert_eq!(r.checksum(1), Some(10), "pinned survives");
        assert_eq!(r.slot_of(0), None);
        assert_eq!(r.latest_at_or_before(2), Some((2, r.slot_of(2).unwrap())));
        r.slot_for_save(5);
        assert_eq!(r.slot_of(2), None, "oldest unpinned evicted");
        r.invalidate_after(3);
        assert_eq!(r.slot_of(4), None);
        assert_eq!(r.latest_at_or_before(9).map(|x| x.0), Some(3));
    }

    #[test]
    fn resave_reuses_slot_and_clears_checksum() {
        let mut r = StateRing::new(4, 2);
        let s = r.slot_for_save(7);
        r.set_checksum(7, 1);
        r.pin(7);
        r.invalidate_after(6);
        assert_eq!(r.latest_at_or_before(7), None);
        assert_eq!(r.slot_for_save(7), s);
        assert_eq!(r.checksum(7), None);
        r.set_checksum(7, 2);
        assert_eq!(r.checksum(7), Some(2));
    }

    #[test]
    fn clear_forgets_saves_and_pins_like_a_new_ring() {
        let mut r = StateRing::new(2, 1);
        for t in 0..3 {
            r.slot_for_save(t);
            r.set_checksum(t, 1);
        }
        r.pin(2);
        r.clear();
        assert_eq!((r.len(), r.slot_of(2), r.checksum(2), r.latest_at_or_before(9)), (3, None, None, None));
        // Slots fill from the first again, and nothing pinned survives eviction.
        let fresh: Vec<usize> = (10..14).map(|t| r.slot_for_save(t)).collect();
        let mut n = StateRing::new(2, 1);
        assert_eq!(fresh, (10..14).map(|t| n.slot_for_save(t)).collect::<Vec<_>>());
    }
}
