//! Packet formats and strict decoding. STUB.
