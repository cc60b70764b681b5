//! Arbitrary bytes as a shared-memory region: `decode_stream` over an aligned
//! and a misaligned copy (a peer chooses the region's offset), compared with
//! what `StreamReader` makes of the same bytes; and `decode_region`, which also
//! takes a region holding only the batch (and dictionary) messages of a stream
//! whose schema the pointer batch gave.
#![no_main]

use arrow_buffer::Buffer;
use libfuzzer_sys::fuzz_target;
use quiver_wire::{WireError, END_OF_STREAM};

fuzz_target!(
    init: quiver_fuzz::install_panic_hook(),
    |data: &[u8]| {
        quiver_fuzz::run(|| check(data));
    }
);

fn check(data: &[u8]) {
    let aligned = quiver_fuzz::read_region(Buffer::from(data));

    // The same bytes at an odd address inside a larger region.
    let shift = 1 + data.len() % 7;
    let mut padded = vec![0u8; shift];
    padded.extend_from_slice(data);
    let misaligned = quiver_fuzz::read_region(Buffer::from(padded).slice(shift));
    assert_eq!(
        aligned.as_ref().ok(),
        misaligned.as_ref().ok(),
        "decoding depends on the region's alignment: {:?} vs {:?}",
        aligned.as_ref().err(),
        misaligned.as_ref().err()
    );

    // StreamReader must make the same of the region's stream. A region may end
    // without the end marker, where a byte stream must have one: then StreamReader
    // stops at the end of input, and agrees once the marker is appended.
    let streamed = quiver_fuzz::read_first_stream(data);
    match (&aligned, &streamed) {
        (Ok(region), Ok(Some(stream))) => assert_eq!(region, stream, "the two decoders disagree"),
        (Err(_), Err(_)) => {}
        (Err(_), Ok(None)) if data.is_empty() => {}
        (Ok(region), Err(WireError::Truncated(_))) => {
            let completed = quiver_fuzz::read_first_stream(&[data, &END_OF_STREAM].concat());
            assert!(
                matches!(&completed, Ok(Some(stream)) if stream == region),
                "the region decoded without an end marker, StreamReader disagrees: {region:?} vs {completed:?}"
            );
        }
        (region, stream) => {
            panic!("the two decoders disagree: region {region:?}, StreamReader {stream:?}")
        }
    }

    // The schema-less form, against a schema with a dictionary, strings and lists.
    let _ = quiver_fuzz::read_region_with_schema(Buffer::from(data));
}
