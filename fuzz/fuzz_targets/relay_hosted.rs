#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tickwire_fuzzing::relay_hosted(data));
