//! What GGRS's own UDP socket would send for a message (bincode 1), read from its
//! `Debug` text.

use std::fmt::Write as _;

use ggrs::Message;

/// GGRS's `Message` keeps its fields private; its `Debug` text shows them all. This
/// reads that text (written into a fixed buffer, no allocation) and adds up the bytes
/// `bincode::serialize` gives the message, as GGRS's own UDP socket sends it: u16 magic,
/// u32 enum tag, u64 vector lengths, fixed-width integers.
pub(crate) struct DebugScan {
    pub(crate) buf: Box<[u8; 16_384]>,
    pub(crate) len: usize,
}

impl std::fmt::Write for DebugScan {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl DebugScan {
    pub(crate) fn new() -> Self {
        DebugScan { buf: Box::new([0; 16_384]), len: 0 }
    }

    /// The variant of the message last sized, and an input's start frame.
    pub(crate) fn variant(&self) -> (&'static str, Option<i32>) {
        let text = std::str::from_utf8(&self.buf[..self.len]).expect("utf-8");
        let body = &text[text.find("body: ").expect("message body") + 6..];
        let name = [
            "SyncRequest",
            "SyncReply",
            "InputAck",
            "QualityReport",
            "QualityReply",
            "ChecksumReport",
            "KeepAlive",
            "Input",
        ]
        .into_iter()
        .find(|v| body.starts_with(v) && !body[v.len()..].starts_with(|c: char| c.is_ascii_alphanumeric()))
        .expect("known variant");
        let start = (name == "Input").then(|| {
            let at = &body[body.find("start_frame: ").expect("start frame") + 13..];
            at[..at.find(|c: char| c != '-' && !c.is_ascii_digit()).unwrap_or(at.len())].parse().expect("frame number")
        });
        (name, start)
    }

    /// The serialized size of `msg`, and whether it is one of the messages GGRS sends on
    /// wall-clock timers (quality report or reply, keepalive).
    pub(crate) fn wire_size(&mut self, msg: &Message) -> (usize, bool) {
        self.len = 0;
        write!(self, "{msg:?}").expect("message text fits the buffer");
        let text = std::str::from_utf8(&self.buf[..self.len]).expect("utf-8");
        let body = &text[text.find("body: ").expect("message body") + 6..];
        let variant = &body[..body.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(body.len())];
        let head = 2 + 4; // magic, variant tag
        match variant {
            "SyncRequest" | "SyncReply" | "InputAck" => (head + 4, false),
            "QualityReport" => (head + 2 + 16, true),
            "QualityReply" => (head + 16, true),
            "ChecksumReport" => (head + 16 + 4, false),
            "KeepAlive" => (head, true),
            "Input" => {
                let statuses = body.matches("ConnectionStatus {").count();
                let hex = &body[body.find("bytes: 0x").expect("input bytes") + 9..];
                let digits = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
                // status vec (len + (bool, i32) each), disconnect_requested, start_frame,
                // ack_frame, bytes vec (len + bytes)
                (head + 8 + statuses * 5 + 1 + 4 + 4 + 8 + digits / 2, false)
            }
            other => panic!("unknown GGRS message variant {other}"),
        }
    }
}
