//! `cargo fuzz run generator`: see `src/checks.rs` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    flakeid_fuzz::generator(data);
});
