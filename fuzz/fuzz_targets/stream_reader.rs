//! Arbitrary bytes as a connection's input: back-to-back streams decoded with
//! `StreamReader::begin` / `next` until a clean end or an error, every batch
//! classified. Any outcome is fine except a panic escaping quiver-wire, an abort,
//! a huge allocation or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: quiver_fuzz::install_panic_hook(),
    |data: &[u8]| {
        quiver_fuzz::run(|| {
            let _ = quiver_fuzz::read_streams(data);
        });
    }
);
