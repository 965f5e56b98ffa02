//! The decoder targets: every byte format a peer or a file controls. Decoding is
//! strict (one encoding per value), so the oracle of most is that whatever decodes
//! re-encodes to exactly the bytes it came from.

use tickwire_proto::fuzzing;
use tickwire_proto::wire::relay::{StepForm, StepRules, UpdateView};
use tickwire_proto::wire::{
    self, Frame, FrameReader, MAX_DATAGRAM_SIZE, PREFIX_SIZE, PROTOCOL_VERSION, Packet, decode_packet,
};
use tickwire_proto::{
    AdvanceStatus, BINDING_REQUEST_SIZE, DesyncDump, GameShape, InputStatus, Replay, ReplayRecorder, ReplaySession,
    Request, StepView, StunError, TRANSACTION_ID_SIZE, decode_binding_response, encode_binding_request,
};

/// The protocol id the wire targets speak.
pub(crate) const PID: u32 = 0x5457_0001;

/// Writes our version and protocol id over a datagram's prefix (the first byte of
/// the input says whether to), so that the corpus stays meaningful across version
/// bumps and the fuzzer need not guess the id.
pub(crate) fn patch_prefix(d: &mut [u8]) {
    // Connected packets have no prefix: their bytes after the kind are the salt.
    let connected = [
        wire::PacketKind::Payload as u8,
        wire::PacketKind::PayloadNoAcks as u8,
        wire::PacketKind::PayloadLong as u8,
        wire::PacketKind::PayloadLongNoAcks as u8,
    ];
    if d.len() >= PREFIX_SIZE && !connected.contains(&d[0]) {
        d[1] = PROTOCOL_VERSION;
        d[2..PREFIX_SIZE].copy_from_slice(&PID.to_le_bytes());
    }
}

/// `wire::decode_packet`, then the frame reader over every frame of a payload.
/// Input: a flags byte (bit 0: patch the prefix), then the datagram.
pub fn wire_packet(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else { return };
    let mut d = rest.to_vec();
    if flags & 1 == 1 {
        patch_prefix(&mut d);
    }
    // The frame reader alone, over raw bytes.
    for f in FrameReader::new(&d) {
        let Ok(f) = f else { break };
        check_frame(&f);
    }
    let Ok(p) = decode_packet(&d, PID) else { return };
    assert!(d.len() <= MAX_DATAGRAM_SIZE);
    let mut out = Vec::new();
    match p {
        Packet::ConnectRequest { version, client_salt, security } => {
            wire::encode_connect_request(&mut out, PID, client_salt, security);
            if version != PROTOCOL_VERSION {
                // Another version's request: only its prefix and salt are read (what it
                // puts after them is its own), so only those must match.
                out[1] = version;
                assert_eq!(out.len(), d.len());
                assert_eq!(out[..PREFIX_SIZE + 8], d[..PREFIX_SIZE + 8], "{p:?} does not re-encode to its bytes");
                return;
            }
        }
        Packet::Challenge { client_salt, cookie_time, cookie_mac } => {
            wire::encode_challenge(&mut out, PID, client_salt, cookie_time, cookie_mac);
            assert!(out.len() <= wire::MAX_HANDSHAKE_REPLY_SIZE);
        }
        Packet::ConnectResponse(r) => {
            wire::encode_connect_response(&mut out, PID, &r);
            assert_eq!(out.len(), wire::CONNECT_RESPONSE_SIZE);
        }
        Packet::Accepted { client_salt, server_salt, server_public, cipher, confirm } => {
            wire::encode_accepted_head(&mut out, PID, client_salt, server_salt, &server_public, cipher);
            out.extend_from_slice(&confirm);
            assert!(out.len() <= wire::MAX_HANDSHAKE_REPLY_SIZE);
        }
        Packet::Denied { client_salt, reason, tag } => {
            wire::encode_denied(&mut out, PID, client_salt, reason, tag.as_ref());
            out[1] = d[1]; // denials keep their layout across versions
            assert!(out.len() <= wire::MAX_HANDSHAKE_REPLY_SIZE);
        }
        Packet::Disconnect { salt, seq, reason, tag } => {
            assert!(tag.is_empty() || tag.len() == wire::TAG_SIZE);
            wire::encode_disconnect(&mut out, PID, salt, seq, reason);
            out.extend_from_slice(tag);
        }
        Packet::Payload { header, frames } => {
            wire::encode_payload_header(&mut out, &header);
            for f in FrameReader::new(frames) {
                let Ok(f) = f else { return }; // the connection drops such a packet
                check_frame(&f);
                let before = out.len();
                fuzzing::write_frame(&mut out, &f);
                assert_eq!(out.len() - before, f.encoded_len());
            }
        }
    }
    assert_eq!(out, d, "{p:?} does not re-encode to its bytes");
}

fn check_frame(f: &Frame<'_>) {
    assert!(f.channel < 64);
    if let Some((index, count)) = f.fragment {
        assert!(index < count && (2..=fuzzing::MAX_FRAGMENTS).contains(&count));
        assert!(!f.data.is_empty() && f.data.len() <= fuzzing::FRAGMENT_SIZE);
    }
}

/// `wire::p2p::decode` at a few input sizes. Input: a byte choosing the input size,
/// then the message.
pub fn p2p_message(data: &[u8]) {
    let Some((&sel, msg)) = data.split_first() else { return };
    let input_size = [1, 2, 3, 8, 16, 64][sel as usize % 6];
    let mut scratch = Vec::new();
    let Ok(d) = wire::p2p::decode(msg, input_size, &mut scratch) else { return };
    let h = d.header;
    let (count, players) = (h.count as usize, h.players as usize);
    assert_eq!(d.inputs.len(), count * players * input_size);
    let disconnects: Vec<_> = d.disconnects().collect();
    let reports: Vec<_> = d.reports().collect();
    let digests: Vec<u128> = d.digests().collect();
    // Every report the decoder validated is readable.
    let inputs = d.inputs.to_vec();
    let mut out = Vec::new();
    wire::p2p::encode(
        &mut out,
        &h,
        input_size,
        |i, p| &inputs[(i * players + p) * input_size..][..input_size],
        disconnects.iter().copied(),
        reports.iter().copied(),
        &digests,
    );
    let bound = wire::p2p::max_encoded_len(count, players, input_size, disconnects.len(), reports.len(), digests.len());
    assert!(out.len() <= bound, "{} bytes encoded, bound {bound}", out.len());
    let mut scratch2 = Vec::new();
    let back = wire::p2p::decode(&out, input_size, &mut scratch2).expect("a re-encoded message decodes");
    assert_eq!(back.header, h);
    assert_eq!(back.inputs, inputs.as_slice());
    assert_eq!(back.disconnects().collect::<Vec<_>>(), disconnects);
    assert_eq!(back.reports().collect::<Vec<_>>(), reports);
    assert_eq!(back.digests().collect::<Vec<_>>(), digests);
}

/// The relay's decoders: Hello, Welcome, ClientInputs and ServerUpdate. Input: a byte
/// choosing the decoder and its limits, then the message.
pub fn relay_messages(data: &[u8]) {
    let Some((&sel, msg)) = data.split_first() else { return };
    let mut out = Vec::new();
    match sel % 4 {
        0 => {
            let Ok(h) = wire::relay::decode_hello(msg) else { return };
            wire::relay::encode_hello(&mut out, &h);
            assert_eq!(out.len(), wire::relay::HELLO_SIZE);
        }
        1 => {
            let Ok(w) = wire::relay::decode_welcome(msg) else { return };
            assert!(w.player < w.max_players && !w.token.is_none());
            wire::relay::encode_welcome(&mut out, &w);
        }
        2 => {
            let max_input = (sel >> 2) as usize;
            let mut spans = Vec::new();
            let Ok(head) = wire::relay::decode_client_input_spans(msg, max_input, &mut spans) else {
                return;
            };
            assert!(spans.len() <= 255);
            assert!(spans.iter().all(|&(o, n)| n <= max_input && o + n <= msg.len()));
            let inputs = spans.iter().map(|&(o, n)| &msg[o..o + n]);
            wire::relay::encode_client_inputs(&mut out, head.step_ack, head.sack, head.first_tick, inputs);
        }
        _ => {
            let rules = StepRules {
                max_input: [0, 1, 2, 8, 64, 255][(sel >> 2) as usize % 6],
                input_size: (sel & 0x20 != 0).then_some(2),
                max_players: (sel & 0x40 != 0).then_some(4),
            };
            let mut view = UpdateView::with_datagram_capacity();
            if wire::relay::decode_server_update_into(msg, &rules, &mut view).is_err() {
                assert!(view.head.is_none(), "a refused update leaves no head");
                return;
            }
            let head = view.head.expect("decoded");
            let entries: Vec<_> = view.entries(msg, &rules).collect();
            assert_eq!(entries.len(), view.n_entries(), "every entry of a decoded update reads");
            for e in &entries {
                if e.fragment.is_some() || e.form != StepForm::Full {
                    continue;
                }
                let mut s = Vec::new();
                fuzzing::decode_step(e.bytes, &mut s).expect("a full step of a decoded update decodes");
                let mut prev = None;
                for p in &s {
                    assert!(prev.is_none_or(|q| p.player > q), "players in increasing order");
                    assert!(rules.max_players.is_none_or(|m| p.player < m));
                    assert_eq!(p.inputs.len(), p.accepted.max(1) as usize);
                    assert!(p.inputs.iter().all(|b| b.len() <= rules.max_input));
                    assert!(p.inputs.iter().all(|b| rules.input_size.is_none_or(|n| b.len() == n)));
                    let accepted = StepView::new(e.bytes).players().find(|q| q.player == p.player).map(|q| q.accepted);
                    assert_eq!(accepted, Some(p.accepted));
                    prev = Some(p.player);
                }
            }
            let base = view.base();
            wire::relay::encode_server_update_head(&mut out, &head, &view.margins, &view.checks, base);
            for e in &entries {
                let offset = (e.tick - base) as u16;
                match e.fragment {
                    None => wire::relay::write_entry(&mut out, offset, e.form, e.bytes),
                    Some((i, n)) => {
                        fuzzing::write_fragment_head(&mut out, offset, e.form, i, n, e.bytes.len());
                        out.extend_from_slice(e.bytes);
                    }
                }
            }
            wire::relay::set_entry_count(&mut out, view.margins.len(), view.checks.len(), entries.len() as u8);
        }
    }
    assert_eq!(out, msg, "a decoded relay message re-encodes to its bytes");
}

/// `DesyncDump::decode`; what decodes re-encodes to the same bytes (a version 1 dump,
/// which has no culprit field, to the same dump in the current version).
pub fn desync_dump(data: &[u8]) {
    let Ok(d) = DesyncDump::decode(data) else { return };
    assert_eq!(d.inputs.iter().map(Vec::len).sum::<usize>(), d.inputs.len() * d.players);
    let out = d.encode();
    if data[4..6] == 1u16.to_le_bytes() {
        assert_eq!(d.culprit, None, "a version 1 dump names no culprit");
        assert_eq!(DesyncDump::decode(&out), Ok(d), "a version 1 dump re-encodes to the same dump");
    } else {
        assert_eq!(out, data, "a decoded dump re-encodes to its bytes");
    }
}

/// `Replay::decode`, then a `ReplaySession` plays it to the end; a replay re-recorded
/// from what was played is the same bytes.
pub fn replay(data: &[u8]) {
    let Ok(r) = Replay::decode(data) else { return };
    let (players, input_size) = (r.players, r.input_size);
    let mut rec = ReplayRecorder::new(players, input_size, r.start, &r.initial_state);
    let (start, ticks) = (r.start, r.ticks);
    // Every replay that decodes is one a session of its shape plays.
    let mut s = ReplaySession::new(GameShape::new(players, input_size), r).expect("a replay that decodes plays");
    let mut played = 0u64;
    // One advance per tick, plus the one that says it is over.
    for _ in 0..=ticks as u64 {
        let status = s.advance();
        while let Some(q) = s.poll_request() {
            match q {
                Request::Restore { tick, .. } => assert_eq!(tick, start),
                Request::Advance { tick, inputs, .. } => {
                    assert_eq!(tick as u64, start as u64 + played, "ticks play in order");
                    assert_eq!(inputs.len(), players);
                    rec.begin_tick();
                    for i in 0..players {
                        let (b, st) = inputs.get(i);
                        assert_eq!(b.len(), input_size);
                        assert!(st != InputStatus::Predicted);
                        rec.push(b, st);
                    }
                    played += 1;
                }
                other => panic!("a replay asked for {other:?}"),
            }
        }
        if status == AdvanceStatus::Finished {
            break;
        }
    }
    assert_eq!(played, ticks as u64, "every recorded tick plays once");
    assert_eq!(s.advance(), AdvanceStatus::Finished);
    assert_eq!(rec.bytes(), data, "a played replay re-records to its bytes");
}

/// `decode_binding_response` over a datagram, expecting the transaction id the
/// datagram carries (bytes 8 to 20), so that the fuzzer reaches the attributes. What
/// decodes has a whole header and a length a multiple of 4, and is refused as a
/// response to any other transaction; our own request, with that id, is no response.
pub fn stun_response(data: &[u8]) {
    let mut id = [0u8; TRANSACTION_ID_SIZE];
    if let Some(carried) = data.get(8..8 + TRANSACTION_ID_SIZE) {
        id.copy_from_slice(carried);
    }
    let mut request = Vec::new();
    encode_binding_request(id, &mut request);
    assert_eq!(request.len(), BINDING_REQUEST_SIZE);
    assert_eq!(decode_binding_response(&request, id), Err(StunError::UnexpectedType(0x0001)));
    let Ok(addr) = decode_binding_response(data, id) else { return };
    assert!(data.len() >= 20 && data.len() % 4 == 0, "{} bytes decoded to {addr}", data.len());
    let mut other = id;
    other[data.len() % TRANSACTION_ID_SIZE] ^= 1;
    assert_eq!(decode_binding_response(data, other), Err(StunError::TransactionMismatch));
}
