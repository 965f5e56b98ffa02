//! What the buffer reports: a push's outcome, a tick's step, a kick, its counters.

use crate::engine::Tick;

/// Why a client was kicked by its jitter buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KickReason {
    /// The queue passed the hard cap.
    Overflow,
    /// Too many consecutive ticks without an input.
    Starved,
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PushOutcome {
    /// First copy of this input; `margin` in ticks (negative = it missed its tick).
    Queued {
        /// Ticks between arrival and the tick that will consume it; negative = late.
        margin: f64,
    },
    /// A redundant copy of an input already queued or consumed.
    Duplicate,
    /// The first copy of an input whose tick was already substituted: dropped, with how
    /// late it was (`margin` < 0) so the client's lead loop still learns of it.
    Late {
        /// Ticks between arrival and the tick it missed; always negative.
        margin: f64,
    },
    /// Refused: too large.
    TooLarge,
    /// Refused: the queue already holds more than `hard_cap` inputs beyond the ticks
    /// the server has waited for this client, so the next tick kicks this client
    /// anyway. Bounds the memory and the sorted-insert work a burst can cause between
    /// two ticks.
    Overflow,
}

/// The kind of step a tick consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// One real input.
    Normal,
    /// Underflow: nothing consumed, a substitute used.
    Underflow,
    /// The next input never arrived but later ones did: substituted and skipped.
    Lost,
    /// Several steps consumed at once.
    Merged,
}

/// The result of one server tick for one client. `inputs` holds `accepted` inputs
/// (one substitute for `Underflow` and `Lost`), each as its own slice.
#[derive(Debug)]
pub struct Step<'a> {
    /// What kind of step this tick consumed.
    pub kind: StepKind,
    /// Ledger count: how many of the client's inputs this step consumed (0 on underflow).
    pub accepted: u32,
    /// The client tick of the first consumed input (or the one substituted).
    pub first_client_tick: Tick,
    /// The inputs this step delivers, in client tick order.
    pub inputs: &'a [Vec<u8>],
}

/// Counters for metrics (M1, M11): counts since the buffer was made (u64), not tick
/// numbers. `ticks` counts the pops, the others the steps and pushes of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JitterStats {
    /// Ticks popped.
    pub ticks: u64,
    /// Steps of one real input.
    pub normal: u64,
    /// Ticks with no input to consume (substituted).
    pub underflows: u64,
    /// Inputs that never arrived while later ones did (substituted and skipped).
    pub lost: u64,
    /// Merged steps.
    pub merges: u64,
    /// Inputs consumed by merged steps.
    pub merged_steps: u64,
    /// Inputs that arrived after their deadline (queued late, or dropped as [`PushOutcome::Late`]).
    pub late_arrivals: u64,
    /// Of those, the ones dropped: their tick had already run on a substitute
    /// ([`PushOutcome::Late`]). Of the `lost` inputs, the rest never arrived.
    pub late_substituted: u64,
    /// Redundant copies of inputs already queued or consumed.
    pub duplicates: u64,
    /// Inputs refused because the queue was already past the hard cap.
    pub refused: u64,
}
