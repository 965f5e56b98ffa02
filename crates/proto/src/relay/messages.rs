//! The relay session's messages, carried in the transport's unreliable channel and
//! made reliable where needed by redundancy plus acks (inputs until the server has
//! them, steps until the client has them).
//!
//! ```text
//! ClientInputs  kind=1 | step_ack u32 | n_sack u8 | n_sack bytes
//!               | first_tick u32 | count u8 | count x (len u8, bytes)
//! ServerUpdate  kind=2 | server_tick u32 | your_player u32 | shift i32 | input_ack u32 | depth u8
//!               | first_input u32 | substituted u16 | late_substituted u16
//!               | n_margins u8 | n x (tick u32, margin i16 in 1/256 tick, copy u8)
//!               | n_checks u8 | n x (tick u32, checksum u64)
//!               | base_tick u32 | n_entries u8 | n x Entry
//! ```
//! An entry carries one step, whole or a piece of it, in full or as a delta against
//! the step before it ([`super::step_codec`]). `step_ack` is the last step the client
//! took in order; bit j of sack byte i says it also holds step `step_ack + 2 + 8i + j`
//! (at most `SACK_BYTES` bytes). One update may take several datagrams: the margins
//! go in the first one only.
//! `u32::MAX` in an ack means "nothing yet". Ticks are [`Tick`]s, the sender's own
//! (u32; at 60 Hz they last 2.27 years). Decoding checks every length and count
//! against the configured maximum input size, and players in a step must be listed in
//! increasing id order (so none twice).
//!
//! `first_input` is the client tick of the first input the server consumed from this
//! client (real or substituted): with the accepted counts it tells the client exactly
//! which of its inputs every step used, even when its first inputs were lost.
//! `substituted` counts (wrapping at 2^16) the steps the server ran on a substitute
//! for a missing input of this client, and `late_substituted` (likewise) the inputs
//! whose first copy came after their step had run on a substitute: the rest of the
//! substituted ones never arrived at all. Both are running counts, so a client that
//! misses updates (or their margin reports) still counts every step exactly, unless
//! it misses 65,536 of them in a row (18 minutes of substitutions at 60 Hz).
//! `checks` are the server engine's checksums of its state at the start of a tick, for
//! desync detection.

use super::step_codec::{self, Entry};
use super::step_history::StepView;
use crate::engine::Tick;
use crate::stream::SACK_BYTES;
use crate::wire::{DecodeError, MAX_DATAGRAM_SIZE, Reader, Writer};

/// Message kind byte of a ClientInputs.
pub const KIND_CLIENT_INPUTS: u8 = 1;
/// Message kind byte of a ServerUpdate.
pub const KIND_SERVER_UPDATE: u8 = 2;
/// "Nothing yet" in an ack field.
pub const NONE: Tick = Tick::MAX;

/// One margin report: how early (ticks, negative = late) the first copy of a client
/// input arrived, and which copy it was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarginReport {
    /// The client tick of the input.
    pub tick: Tick,
    /// Ticks early (negative = late), in steps of 1/256 tick on the wire.
    pub margin: f64,
    /// Which copy arrived first: 0 is the original, 1 the next redundant send, and so on.
    pub copy: u8,
}

/// Quantises a margin to 1/256 tick, saturating.
pub(crate) fn margin_to_wire(m: f64) -> i16 {
    (m * 256.0).round().clamp(i16::MIN as f64, i16::MAX as f64) as i16
}

fn write_input(w: &mut Writer<'_>, input: &[u8]) {
    debug_assert!(input.len() <= u8::MAX as usize);
    w.u8(input.len() as u8);
    w.bytes(input);
}

/// The largest ClientInputs without its inputs: kind, step ack, sack length and the
/// most sack bytes sent, first tick, input count. Each input adds its length byte and
/// its bytes.
pub(crate) const CLIENT_INPUTS_HEAD_MAX: usize = 1 + 4 + 1 + SACK_BYTES + 4 + 1;

/// Encodes a client's inputs for ticks `first_tick ..` (at most 255), with its step
/// acknowledgement (`sack`: at most `SACK_BYTES` are sent).
pub fn encode_client_inputs<'a>(
    out: &mut Vec<u8>,
    step_ack: Tick,
    sack: &[u8],
    first_tick: Tick,
    inputs: impl ExactSizeIterator<Item = &'a [u8]>,
) {
    out.clear();
    let sack = &sack[..sack.len().min(SACK_BYTES)];
    let mut w = Writer::new(out);
    w.u8(KIND_CLIENT_INPUTS);
    w.u32(step_ack);
    w.u8(sack.len() as u8);
    w.bytes(sack);
    w.u32(first_tick);
    w.u8(inputs.len().min(255) as u8);
    for i in inputs.take(255) {
        write_input(&mut w, i);
    }
}

/// The fields of a ClientInputs besides its inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputsHead<'a> {
    pub step_ack: Tick,
    pub sack: &'a [u8],
    pub first_tick: Tick,
}

/// Decodes ClientInputs, its inputs as `(offset, len)` spans into `data` (no allocation
/// once `spans` has grown).
pub fn decode_client_input_spans<'a>(
    data: &'a [u8],
    max_input: usize,
    spans: &mut Vec<(usize, usize)>,
) -> Result<InputsHead<'a>, DecodeError> {
    let mut r = Reader::new(data);
    let kind = r.u8()?;
    if kind != KIND_CLIENT_INPUTS {
        return Err(DecodeError::UnknownKind(kind));
    }
    let step_ack = r.u32()?;
    let n_sack = r.u8()? as usize;
    if n_sack > SACK_BYTES {
        return Err(DecodeError::BadLength);
    }
    let sack = r.bytes(n_sack)?;
    let first_tick = r.u32()?;
    let n = r.u8()?;
    spans.clear();
    for _ in 0..n {
        let len = r.u8()? as usize;
        if len > max_input {
            return Err(DecodeError::BadLength);
        }
        let offset = data.len() - r.remaining();
        r.bytes(len)?;
        spans.push((offset, len));
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(InputsHead { step_ack, sack, first_tick })
}

/// One player's part of a canonical step, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerStep {
    /// The player id.
    pub player: u32,
    /// The client's accepted count for this tick (0, 1, or k for a merge).
    pub accepted: u8,
    /// The inputs applied: `accepted` of them, or one substitute when accepted is 0.
    pub inputs: Vec<Vec<u8>>,
}

/// The fixed fields of a ServerUpdate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateHead {
    /// The server's tick when it sent the update.
    pub server_tick: Tick,
    /// The receiving client's player id in the steps.
    pub your_player: u32,
    /// The server's consumption shift for this client (see `JitterBuffer::shift`).
    pub shift: i32,
    /// Highest client tick received with every earlier one.
    pub input_ack: Tick,
    /// Inputs waiting in this client's jitter buffer (saturating).
    pub depth: u8,
    /// The client tick of the first input consumed from this client, or [`NONE`].
    pub first_input: Tick,
    /// Steps run on a substitute for this client's missing input, so far (wrapping).
    pub substituted: u16,
    /// Inputs of this client whose first copy came after their step had run on a
    /// substitute, so far (wrapping).
    pub late_substituted: u16,
}

/// Encoded size of a ServerUpdate's header with `margins` margin and `checks` checksum
/// reports (before the steps).
pub(crate) const fn update_head_size(margins: usize, checks: usize) -> usize {
    33 + 7 * margins + 12 * checks
}

/// Encodes the header of a ServerUpdate with no entries yet: append them with
/// [`step_codec::write_entry`], ticks relative to `base`, then count them with
/// [`set_entry_count`].
pub fn encode_server_update_head(
    out: &mut Vec<u8>,
    head: &UpdateHead,
    margins: &[MarginReport],
    checks: &[(Tick, u64)],
    base: Tick,
) {
    out.clear();
    let mut w = Writer::new(out);
    w.u8(KIND_SERVER_UPDATE);
    w.u32(head.server_tick);
    w.u32(head.your_player);
    w.u32(head.shift as u32);
    w.u32(head.input_ack);
    w.u8(head.depth);
    w.u32(head.first_input);
    w.u16(head.substituted);
    w.u16(head.late_substituted);
    let m = margins.len().min(255);
    w.u8(m as u8);
    for r in &margins[margins.len() - m..] {
        w.u32(r.tick);
        w.u16(margin_to_wire(r.margin) as u16);
        w.u8(r.copy);
    }
    let c = checks.len().min(255);
    w.u8(c as u8);
    for &(tick, checksum) in &checks[checks.len() - c..] {
        w.u32(tick);
        w.u64(checksum);
    }
    w.u32(base);
    w.u8(0);
}

/// Sets the entry count of a ServerUpdate encoded by [`encode_server_update_head`]
/// with `margins` and `checks` reports.
pub fn set_entry_count(out: &mut [u8], margins: usize, checks: usize, n: u8) {
    out[update_head_size(margins, checks) - 1] = n;
}

/// Appends one step (players in the order given).
pub fn write_step(out: &mut Vec<u8>, players: &[PlayerStep]) {
    Writer::new(out).u8(players.len().min(255) as u8);
    for p in players.iter().take(255) {
        write_step_player(out, p.player, p.accepted, p.inputs.iter().map(Vec::as_slice));
    }
}

/// Appends one player's part of a step (a step is its player count, then these).
pub(crate) fn write_step_player<'a>(
    out: &mut Vec<u8>,
    player: u32,
    accepted: u8,
    inputs: impl ExactSizeIterator<Item = &'a [u8]>,
) {
    let mut w = Writer::new(out);
    w.u32(player);
    w.u8(accepted);
    w.u8(inputs.len() as u8);
    for i in inputs {
        write_input(&mut w, i);
    }
}

/// Encoded size of one step.
#[cfg(test)]
pub(crate) fn step_size(players: &[PlayerStep]) -> usize {
    1 + players.iter().map(|p| 6 + p.inputs.iter().map(|i| 1 + i.len()).sum::<usize>()).sum::<usize>()
}

/// A decoded ServerUpdate, owned (tests): its entries as (tick, form, piece, bytes).
#[cfg(test)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerUpdate {
    pub head: UpdateHead,
    pub margins: Vec<MarginReport>,
    pub checks: Vec<(Tick, u64)>,
    pub entries: Vec<OwnedEntry>,
}

/// One entry, owned (tests): tick, form, piece, bytes.
#[cfg(test)]
pub(crate) type OwnedEntry = (Tick, step_codec::StepForm, Option<(u8, u8)>, Vec<u8>);

/// What a step may contain, beyond the wire format's own limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepRules {
    /// Largest input.
    pub max_input: usize,
    /// Every input must be exactly this long (sessions with fixed-size inputs).
    pub input_size: Option<usize>,
    /// Player ids must be below this.
    pub max_players: Option<u32>,
}

impl StepRules {
    /// Rules that check only the input size limit `max_input`.
    pub fn any(max_input: usize) -> Self {
        StepRules { max_input, input_size: None, max_players: None }
    }
}

/// A ServerUpdate decoded without allocating (once its vectors have grown, or from
/// the start with [`UpdateView::with_datagram_capacity`]): the fixed fields are copied
/// out, the entries stay in the datagram. Reuse one per receiver.
#[derive(Debug, Clone, Default)]
pub struct UpdateView {
    /// The fixed fields, once an update was decoded.
    pub head: Option<UpdateHead>,
    /// The margin reports (first datagram of an update only).
    pub margins: Vec<MarginReport>,
    /// The server's state checksums, as (tick, checksum).
    pub checks: Vec<(Tick, u64)>,
    /// Where the entries start in the datagram, their base tick and count.
    entries_at: usize,
    base: Tick,
    n_entries: u8,
}

impl UpdateView {
    /// How many entries the update carries.
    pub fn n_entries(&self) -> usize {
        self.n_entries as usize
    }

    /// The tick the entries' offsets count from.
    pub fn base(&self) -> Tick {
        self.base
    }

    /// The entries of `data` (the datagram this view was decoded from), checked when
    /// it was decoded.
    pub fn entries<'a>(&self, data: &'a [u8], rules: &StepRules) -> impl Iterator<Item = Entry<'a>> + 'a {
        let mut r = Reader::new(data.get(self.entries_at..).unwrap_or(&[]));
        let (base, rules) = (self.base, *rules);
        (0..self.n_entries).map_while(move |_| step_codec::read_entry(&mut r, base, &rules).ok())
    }

    /// A view whose vectors hold any ServerUpdate that fits in a datagram, so decoding
    /// never allocates: every count is bounded by the bytes its entries take.
    pub fn with_datagram_capacity() -> Self {
        const MARGIN_BYTES: usize = 7;
        const CHECK_BYTES: usize = 12;
        UpdateView {
            head: None,
            margins: Vec::with_capacity((MAX_DATAGRAM_SIZE / MARGIN_BYTES).min(255)),
            checks: Vec::with_capacity((MAX_DATAGRAM_SIZE / CHECK_BYTES).min(255)),
            entries_at: 0,
            base: 0,
            n_entries: 0,
        }
    }
}

/// Spare parts for steps built by [`decode_step_into`]: player entries (their input
/// lists emptied, capacity kept) and cleared input buffers.
#[derive(Debug, Default)]
pub(crate) struct StepParts {
    pub players: Vec<PlayerStep>,
    pub inputs: Vec<Vec<u8>>,
}

impl StepParts {
    /// `players` player entries with room for `inputs_per_player` inputs each, and
    /// `inputs` input buffers of `input_size` bytes, all made now.
    pub(crate) fn prefilled(players: usize, inputs_per_player: usize, inputs: usize, input_size: usize) -> Self {
        let mut p = Vec::with_capacity(players);
        p.extend((0..players).map(|_| PlayerStep {
            player: 0,
            accepted: 0,
            inputs: Vec::with_capacity(inputs_per_player),
        }));
        let mut i = Vec::with_capacity(inputs);
        i.extend((0..inputs).map(|_| Vec::with_capacity(input_size)));
        StepParts { players: p, inputs: i }
    }

    /// Takes `step` apart: its player entries and input buffers become spare parts.
    pub(crate) fn recycle(&mut self, step: &mut Vec<PlayerStep>) {
        for mut p in step.drain(..) {
            for mut buf in p.inputs.drain(..) {
                buf.clear();
                self.inputs.push(buf);
            }
            self.players.push(p);
        }
    }
}

/// Decodes one encoded step (see the module docs) into `out`, whose old contents go to
/// `parts` first; its player entries and input buffers come from `parts` (made only
/// when `parts` runs short, so a step that fits the parts allocates nothing).
pub(crate) fn decode_step_into(
    bytes: &[u8],
    out: &mut Vec<PlayerStep>,
    parts: &mut StepParts,
) -> Result<(), DecodeError> {
    parts.recycle(out);
    let mut r = Reader::new(bytes);
    for _ in 0..r.u8()? {
        let ps = parts.players.pop().unwrap_or_else(|| PlayerStep {
            player: 0,
            accepted: 0,
            inputs: Vec::with_capacity(STEP_INPUTS_RESERVED),
        });
        // Back in `out` before anything can fail, so nothing is lost on an error.
        out.push(ps);
        let ps = out.last_mut().expect("just pushed");
        ps.player = r.u32()?;
        ps.accepted = r.u8()?;
        for _ in 0..r.u8()? {
            let len = r.u8()? as usize;
            let mut buf = parts.inputs.pop().unwrap_or_default();
            buf.extend_from_slice(r.bytes(len)?);
            ps.inputs.push(buf);
        }
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    Ok(())
}

/// `player`'s accepted count in one encoded step, if the step lists that player.
pub(crate) fn step_accepted(bytes: &[u8], player: u32) -> Option<u8> {
    StepView::new(bytes).players().find(|p| p.player == player).map(|p| p.accepted)
}

/// Input slots a new [`PlayerStep`] reserves: a merge of a few inputs fits without
/// growing the list.
pub(crate) const STEP_INPUTS_RESERVED: usize = 4;

/// Decodes a ServerUpdate into `out` (all or nothing: on error `out.head` is None).
/// Every entry is checked (see `step_codec::read_entry`).
pub fn decode_server_update_into(data: &[u8], rules: &StepRules, out: &mut UpdateView) -> Result<(), DecodeError> {
    out.head = None;
    out.margins.clear();
    out.checks.clear();
    out.n_entries = 0;
    let mut r = Reader::new(data);
    let kind = r.u8()?;
    if kind != KIND_SERVER_UPDATE {
        return Err(DecodeError::UnknownKind(kind));
    }
    let head = UpdateHead {
        server_tick: r.u32()?,
        your_player: r.u32()?,
        shift: r.u32()? as i32,
        input_ack: r.u32()?,
        depth: r.u8()?,
        first_input: r.u32()?,
        substituted: r.u16()?,
        late_substituted: r.u16()?,
    };
    for _ in 0..r.u8()? {
        let tick = r.u32()?;
        let margin = r.u16()? as i16 as f64 / 256.0;
        let copy = r.u8()?;
        out.margins.push(MarginReport { tick, margin, copy });
    }
    for _ in 0..r.u8()? {
        let tick = r.u32()?;
        out.checks.push((tick, r.u64()?));
    }
    let base = r.u32()?;
    let n = r.u8()?;
    let entries_at = data.len() - r.remaining();
    for _ in 0..n {
        step_codec::read_entry(&mut r, base, rules)?;
    }
    if !r.is_empty() {
        return Err(DecodeError::Trailing);
    }
    out.entries_at = entries_at;
    out.base = base;
    out.n_entries = n;
    out.head = Some(head);
    Ok(())
}

/// Decodes a ServerUpdate into owned values (allocates; tests).
#[cfg(test)]
pub(crate) fn decode_server_update(data: &[u8], max_input: usize) -> Result<ServerUpdate, DecodeError> {
    let mut v = UpdateView::default();
    let rules = StepRules::any(max_input);
    decode_server_update_into(data, &rules, &mut v)?;
    let entries = v.entries(data, &rules).map(|e| (e.tick, e.form, e.fragment, e.bytes.to_vec())).collect();
    Ok(ServerUpdate { head: v.head.expect("decoded"), margins: v.margins, checks: v.checks, entries })
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
