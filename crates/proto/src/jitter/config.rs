//! What the buffer is told to do: its policies for missing and late inputs, its limits.

/// What the server uses when a client's input is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnderflowPolicy {
    /// Repeat the client's last input (keys held stay held).
    RepeatLast,
    /// An empty (zero-length) input.
    Empty,
}

/// What a tick does when the client's next input has not arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatePolicy {
    /// Hypersomnia's ledger: accept nothing this tick (accepted 0) and consume the
    /// input when it comes, one tick later. Nothing is lost, but every later input
    /// shifts a tick, which the client's lead loop then removes.
    Delay,
    /// Tick-aligned: substitute the missing input (accepted 1) and move on; if the real
    /// one arrives later it is dropped, reporting how late it was. Consumption never
    /// shifts, so the lead stays steadier, at the price of a misprediction per late input.
    Substitute,
    /// Substitute while at most `substitute_run` consecutive inputs are missing, then
    /// delay. One packet late by less than its send interval is jitter: substituting
    /// costs one step per missing input and no slip. A longer silence means the
    /// client's stream itself is late (a latency step, a hitch, a burst of loss, a
    /// drifting clock): substituting would drop every input until the client's lead
    /// catches up, while waiting costs one step per tick of delay and keeps the rest.
    ///
    /// Except from a client that sends every tick: the product's relay client does so
    /// when its uplink loses packets ([`every_tick_when_lossy`]), and its silences are
    /// then mostly bursts of loss, which end when a packet gets through with every
    /// input since. Waiting for those would raise its lead by the wait, for the seconds
    /// its clock takes to give it back, each burst; substituting costs the same steps
    /// and no slip. So from such a client a silence of up to [`LOSSY_SUBSTITUTE_RUN`]
    /// ticks (the most copies a tick stream plans to cover one) is substituted, and a
    /// longer one waited for; for a second after a wait (its stream was itself late)
    /// the short run holds again. (In the lab, seeds 1000-1099: the lossy scenarios'
    /// excess 0.01-0.16 tick lower at the same late rate, a run of 8 and of 16 alike;
    /// the other scenarios unchanged.)
    ///
    /// [`every_tick_when_lossy`]: crate::RelayClientConfig::every_tick_when_lossy
    Adaptive {
        /// The longest run of consecutive missing inputs that is still substituted.
        substitute_run: u32,
    },
}

/// The longest silence [`LatePolicy::Adaptive`] substitutes from a client that sends
/// every tick: the most copies of a tick a stream plans
/// ([`MAX_COPIES`](crate::MAX_COPIES)), the longest burst of loss
/// they are sent to cover.
pub const LOSSY_SUBSTITUTE_RUN: u32 = crate::sync::redundancy::MAX_COPIES;

#[derive(Debug, Clone, Copy, PartialEq)]
/// The jitter buffer's policies and limits.
pub struct JitterConfig {
    /// Ticks queued (from the next input to the newest, gaps included) beyond this
    /// many *above the queue's usual span* are merged into the current tick. That cuts
    /// a pile-up (a client that hitched and then sent a burst) but leaves alone a queue
    /// that a long lead keeps deep (on a lossy link the lead covers late copies, ten
    /// ticks or more): merging there would take back the very lead the client's loop
    /// asked for, every few ticks. The usual span is a one-second average.
    pub max_depth: usize,
    /// A client is kicked (flooding, or far ahead) whose queue holds more inputs than
    /// this, or reaches more ticks than this, beyond the ticks the server has waited
    /// for it. Merges take at most this many inputs (and at most 255) per step.
    pub hard_cap: usize,
    /// What substitutes a missing input.
    pub underflow: UnderflowPolicy,
    /// A client with this many consecutive underflows is kicked (it cannot keep up).
    pub max_starved_ticks: u32,
    /// Largest input in bytes.
    pub max_input_size: usize,
    /// What a tick does when the next input has not arrived.
    pub late: LatePolicy,
}

impl Default for JitterConfig {
    fn default() -> Self {
        JitterConfig {
            max_depth: 64,
            hard_cap: 120,
            underflow: UnderflowPolicy::RepeatLast,
            max_starved_ticks: 300,
            max_input_size: 256,
            late: LatePolicy::Adaptive { substitute_run: 2 },
        }
    }
}
