#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickwire_proto::fuzz::handshake(data));
