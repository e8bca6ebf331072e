#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| burrow::fuzz::search_query(data));
