//! Bad input to quiver-wire's decoders: truncation at every byte, oversized
//! announced lengths, messages in the wrong place, garbage and bit flips. Every
//! case must end in a clean `Err`, never a panic, an abort or a large allocation.
//! Good input that looks unusual is `round_trip.rs`'s.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use quiver_wire::{
    decode_stream, keys, BatchMetadata, Limits, StreamReader, StreamWriter, WireError,
    END_OF_STREAM,
};

use common::{
    frame, frame_boundaries, largest_allocation_during, read_io, record_batch_header,
    sample_batches, sample_stream, schema_frame, XorShift,
};

/// Limits small enough that a mutated length field cannot make a test allocate much.
const SMALL: Limits = Limits {
    metadata_bytes_max: 64 << 10,
    body_bytes_max: 1 << 20,
    messages_per_stream_max: 64,
    skip_body_bytes_max: 4 << 30,
};

fn assert_clean_error(error: &WireError, context: &str) {
    assert!(
        matches!(
            error,
            WireError::Truncated(_)
                | WireError::Malformed(_)
                | WireError::LimitExceeded { .. }
                | WireError::Arrow(_)
        ),
        "{context}: unexpected error kind {error:?}"
    );
}

#[test]
fn the_sample_stream_is_valid() {
    let bytes = sample_stream();
    let (schema, batches) = read_io(&bytes, SMALL).unwrap().unwrap();
    assert_eq!(batches.len(), sample_batches().len());
    let (region_schema, region_batches) =
        decode_stream(Buffer::from(bytes.as_slice()), SMALL).unwrap();
    assert_eq!(schema, region_schema);
    assert_eq!(batches, region_batches);
}

#[test]
fn truncation_at_every_offset_is_an_error() {
    let bytes = sample_stream();
    let boundaries = frame_boundaries(&bytes);
    let full_batches = sample_batches().len();
    for cut in 0..bytes.len() {
        let prefix = &bytes[..cut];

        // On a byte stream the end marker is required: every cut is an error,
        // except an empty input, which is a clean close before any stream.
        match read_io(prefix, SMALL) {
            Ok(None) => assert_eq!(cut, 0, "only an empty input reads as a clean close"),
            Ok(Some(_)) => panic!("a stream cut at byte {cut} of {} decoded", bytes.len()),
            Err(error) => {
                assert!(
                    matches!(error, WireError::Truncated(_) | WireError::Malformed(_)),
                    "cut at {cut}: {error:?}"
                );
                assert!(
                    error.is_disconnect(),
                    "cut at {cut}: a truncated stream reads as the peer going away: {error:?}"
                );
            }
        }

        // A region may omit the end marker, so a cut between two messages decodes
        // the batches before it; a cut inside a message never does.
        match decode_stream(Buffer::from(prefix), SMALL) {
            Ok((_, batches)) => {
                assert!(
                    boundaries.contains(&cut) && cut > 0,
                    "a region cut inside a message at {cut} decoded"
                );
                assert!(batches.len() <= full_batches);
            }
            Err(error) => {
                assert!(
                    !boundaries.contains(&cut) || cut == 0,
                    "a region cut between messages at {cut} failed: {error:?}"
                );
                assert!(
                    matches!(error, WireError::Truncated(_) | WireError::Malformed(_)),
                    "cut at {cut}: {error:?}"
                );
            }
        }
    }
}

#[test]
fn oversized_metadata_length_is_too_large_before_allocating() {
    let limits = Limits {
        metadata_bytes_max: 1024,
        ..SMALL
    };
    for announced in [1025_i32, 16 << 20, i32::MAX - 7] {
        let mut bytes = vec![0xff; 4];
        bytes.extend_from_slice(&announced.to_le_bytes());
        // Nothing follows: the limit must be checked before reading (or allocating).
        let (largest, result) = largest_allocation_during(|| read_io(&bytes, limits));
        match result {
            Err(WireError::LimitExceeded {
                what,
                size_bytes,
                limit_bytes,
            }) => {
                assert_eq!(what, "message metadata");
                assert_eq!(size_bytes, announced as u64);
                assert_eq!(limit_bytes, 1024);
            }
            other => panic!("announced {announced}: expected LimitExceeded, got {other:?}"),
        }
        assert!(
            largest < 64 << 10,
            "announced {announced}: allocated {largest} bytes at once"
        );

        // The region decoder checks the limit before the region's length.
        let region = decode_stream(Buffer::from(bytes.as_slice()), limits);
        assert!(
            matches!(region, Err(WireError::LimitExceeded { .. })),
            "{region:?}"
        );
    }

    // The same in the middle of a stream, after a valid schema.
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let mut bytes = schema_frame(&schema);
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    bytes.extend_from_slice(&(i32::MAX - 7).to_le_bytes());
    let (largest, result) = largest_allocation_during(|| read_io(&bytes, Limits::DEFAULT));
    assert!(
        matches!(
            result,
            Err(WireError::LimitExceeded {
                what: "message metadata",
                ..
            })
        ),
        "{result:?}"
    );
    assert!(largest < 1 << 20, "allocated {largest} bytes at once");
}

#[test]
fn oversized_body_length_is_too_large_before_allocating() {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    // Within 4 GiB a reader reads past the body (keeping none of it) to answer the peer: here the
    // body never arrives, so the stream is cut short. Beyond, it refuses at the header.
    for announced in [(1_i64 << 20) + 8, 3 << 30, 1 << 62] {
        let mut bytes = schema_frame(&schema);
        bytes.extend_from_slice(&frame(&record_batch_header(
            1,
            announced,
            &[(1, 0)],
            &[(0, 0), (0, 8)],
        )));
        bytes.extend_from_slice(&[0; 8]); // a little of the announced body, then nothing
        let (largest, result) = largest_allocation_during(|| read_io(&bytes, SMALL));
        match result {
            Err(WireError::Truncated(message)) if announced <= 4 << 30 => {
                assert!(message.contains("message body"), "{message}");
            }
            Err(WireError::LimitExceeded {
                what,
                size_bytes,
                limit_bytes,
            }) if announced > 4 << 30 => {
                assert_eq!(what, "message body");
                assert_eq!(size_bytes, announced as u64);
                assert_eq!(limit_bytes, SMALL.body_bytes_max);
            }
            other => panic!("announced {announced}: got {other:?}"),
        }
        assert!(
            largest < 256 << 10,
            "announced {announced}: allocated {largest} bytes at once"
        );
        let region = decode_stream(Buffer::from(bytes.as_slice()), SMALL);
        assert!(
            matches!(
                region,
                Err(WireError::LimitExceeded {
                    what: "message body",
                    ..
                })
            ),
            "{region:?}"
        );
    }

    // A negative body length is malformed, not a huge unsigned one.
    let mut bytes = schema_frame(&schema);
    bytes.extend_from_slice(&frame(&record_batch_header(
        1,
        -8,
        &[(1, 0)],
        &[(0, 0), (0, 8)],
    )));
    let result = read_io(&bytes, SMALL);
    assert!(
        matches!(result, Err(WireError::Malformed(ref m)) if m.contains("negative")),
        "{result:?}"
    );
}

#[test]
fn too_many_messages_in_one_stream() {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    for _ in 0..10 {
        writer
            .write(&batch, &BatchMetadata::new(), &mut bytes)
            .unwrap();
    }
    writer.finish(&mut bytes);
    let limits = Limits {
        messages_per_stream_max: 5,
        ..SMALL
    };
    let result = read_io(&bytes, limits);
    assert!(
        matches!(
            result,
            Err(WireError::LimitExceeded {
                what: "messages in a stream",
                ..
            })
        ),
        "{result:?}"
    );
    assert!(read_io(&bytes, SMALL).unwrap().is_some());
}

#[test]
fn a_stream_must_start_with_a_schema() {
    // A record batch where the schema belongs.
    let mut bytes = frame(&record_batch_header(1, 8, &[(1, 0)], &[(0, 0), (0, 8)]));
    bytes.extend_from_slice(&[0; 8]);
    bytes.extend_from_slice(&END_OF_STREAM);
    let result = read_io(&bytes, SMALL);
    assert!(
        matches!(result, Err(WireError::Malformed(ref m)) if m.contains("not a schema")),
        "{result:?}"
    );
    let region = decode_stream(Buffer::from(bytes.as_slice()), SMALL);
    assert!(
        matches!(region, Err(WireError::Malformed(ref m)) if m.contains("not a schema")),
        "{region:?}"
    );

    // An end marker where the schema belongs.
    let result = read_io(&END_OF_STREAM, SMALL);
    assert!(
        matches!(result, Err(WireError::Malformed(ref m)) if m.contains("before its schema")),
        "{result:?}"
    );
    let region = decode_stream(Buffer::from(END_OF_STREAM.as_slice()), SMALL);
    assert!(matches!(region, Err(WireError::Malformed(_))), "{region:?}");
}

#[test]
fn a_second_schema_mid_stream_is_malformed() {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let batch =
        RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![7]))]).unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    writer
        .write(
            &batch,
            &BatchMetadata::from_pairs([(keys::METHOD, "m")]),
            &mut bytes,
        )
        .unwrap();
    bytes.extend_from_slice(&schema_frame(&schema));
    writer
        .write(&batch, &BatchMetadata::new(), &mut bytes)
        .unwrap();
    writer.finish(&mut bytes);

    let mut input = bytes.as_slice();
    let mut reader = StreamReader::begin(&mut input, SMALL).unwrap().unwrap();
    let (first, metadata) = reader.next(&mut input).unwrap().unwrap();
    assert_eq!(first, batch);
    assert_eq!(metadata.get(keys::METHOD), Some("m"));
    let second = reader.next(&mut input);
    assert!(
        matches!(second, Err(WireError::Malformed(ref m)) if m.contains("second schema")),
        "{second:?}"
    );

    let region = decode_stream(Buffer::from(bytes.as_slice()), SMALL);
    assert!(
        matches!(region, Err(WireError::Malformed(ref m)) if m.contains("second schema")),
        "{region:?}"
    );
}

#[test]
fn garbage_bytes_are_rejected() {
    let valid = sample_stream();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("text", b"GET / HTTP/1.1\r\nHost: quiver\r\n\r\n".to_vec()),
        ("json", br#"{"method": "add", "params": [1, 2]}"#.to_vec()),
        ("all ones", vec![0xff; 64]),
        ("all zeros", vec![0; 64]),
        (
            "continuation, then a length, then noise",
            [&[0xff, 0xff, 0xff, 0xff, 16, 0, 0, 0][..], &[0x5a; 24]].concat(),
        ),
        (
            "legacy length, then noise",
            [&[24, 0, 0, 0][..], &[0xa5; 32]].concat(),
        ),
        ("one byte", vec![0x42]),
        (
            "a valid schema, then noise",
            [
                &schema_frame(&sample_batches()[0].0.schema())[..],
                &[0x13; 40],
            ]
            .concat(),
        ),
        (
            "a valid stream, reversed",
            valid.iter().rev().copied().collect(),
        ),
    ];
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for i in 0..200 {
        let len = (rng.next() % 512) as usize;
        let mut noise: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if i % 2 == 0 && noise.len() >= 8 {
            // Half of them start like a message, to get past the prefix.
            noise[..4].copy_from_slice(&[0xff; 4]);
            noise[4..8].copy_from_slice(&((rng.next() % 600) as i32).to_le_bytes());
        }
        cases.push(("random", noise));
    }
    for (name, bytes) in &cases {
        let streamed = read_io(bytes, SMALL);
        let region = decode_stream(Buffer::from(bytes.as_slice()), SMALL);
        if *name == "random" {
            if let Err(error) = &streamed {
                assert_clean_error(error, name);
            }
            if let Err(error) = &region {
                assert_clean_error(error, name);
            }
            continue;
        }
        let error = streamed.expect_err(name);
        assert_clean_error(&error, name);
        let error = region.expect_err(name);
        assert_clean_error(&error, name);
    }
}

#[test]
fn every_single_bit_flip_fails_cleanly_or_decodes() {
    // Flips one bit in every byte of a valid stream (a deterministic mini-fuzz):
    // whatever the decoders make of it, they return instead of panicking.
    let valid = sample_stream();
    let mut outcomes = [0usize; 2];
    for position in 0..valid.len() {
        let mut bytes = valid.clone();
        bytes[position] ^= 1 << (position % 8);
        let streamed = read_io(&bytes, SMALL);
        let region = decode_stream(Buffer::from(bytes.as_slice()), SMALL);
        for result in [streamed.map(|_| ()), region.map(|_| ())] {
            match result {
                Ok(()) => outcomes[0] += 1,
                Err(error) => {
                    assert_clean_error(&error, &format!("bit flip at {position}"));
                    outcomes[1] += 1;
                }
            }
        }
    }
    assert!(outcomes[1] > 0, "no bit flip was detected at all");
}

#[test]
fn a_body_over_the_limit_sent_whole_is_read_past_and_the_stream_goes_on() {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let rows = (SMALL.body_bytes_max / 8 + 1) as usize; // one row more than the limit holds
    let large = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(vec![7; rows])) as ArrayRef],
    )
    .unwrap();
    let small = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef],
    )
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    writer
        .write(&large, &BatchMetadata::new(), &mut bytes)
        .unwrap();
    writer
        .write(&small, &BatchMetadata::new(), &mut bytes)
        .unwrap();
    writer.finish(&mut bytes);

    let mut input = bytes.as_slice();
    let (largest, outcome) = largest_allocation_during(|| {
        let mut reader = StreamReader::begin(&mut input, SMALL).unwrap().unwrap();
        let error = reader.next(&mut input).unwrap_err();
        assert!(reader.framing_intact());
        let (next, _) = reader
            .next(&mut input)
            .unwrap()
            .expect("the batch after it");
        let end = reader.next(&mut input).unwrap();
        (error, next, end.is_none())
    });
    let (error, next, ended) = outcome;
    match error {
        WireError::BodySkipped {
            size_bytes,
            limit_bytes,
        } => {
            assert!(size_bytes > SMALL.body_bytes_max, "{size_bytes}");
            assert_eq!(limit_bytes, SMALL.body_bytes_max);
        }
        other => panic!("expected BodySkipped, got {other:?}"),
    }
    assert_eq!(next, small);
    assert!(ended && input.is_empty());
    assert!(largest < 256 << 10, "allocated {largest} bytes at once");
}

#[test]
fn after_a_framing_error_the_reader_reads_no_further() {
    // A header announcing a body too large even to read past, then bytes that would read as the
    // prefix of a huge message: a caller that drains the stream after the error
    // (as a server does with a rejected request) must not consume them, or it
    // would wait for input that never comes.
    struct Counting<'a>(&'a [u8], usize);
    impl std::io::Read for Counting<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.1 += 1;
            self.0.read(buf)
        }
    }
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let mut bytes = schema_frame(&schema);
    bytes.extend_from_slice(&frame(&record_batch_header(
        1,
        1 << 40,
        &[(1, 0)],
        &[(0, 0), (0, 8)],
    )));
    bytes.extend_from_slice(&[0x40, 0x42, 0x0f, 0x00]); // would read as a 1 MB legacy length

    let mut input = Counting(&bytes, 0);
    let mut reader = StreamReader::begin(&mut input, SMALL).unwrap().unwrap();
    let error = reader.next(&mut input).unwrap_err();
    assert!(
        matches!(
            error,
            WireError::LimitExceeded {
                what: "message body",
                ..
            }
        ),
        "{error:?}"
    );
    let reads = input.1;
    let again = reader.drain(&mut input).unwrap_err();
    assert!(
        matches!(again, WireError::Malformed(ref m) if m.contains("earlier error")),
        "{again:?}"
    );
    assert!(!again.is_disconnect());
    assert_eq!(
        input.1, reads,
        "the reader touched the input after losing its framing"
    );

    // A stream cut short stays a disconnect on every later call.
    let mut short = &bytes[..bytes.len() - 30];
    let mut reader = StreamReader::begin(&mut short, SMALL).unwrap().unwrap();
    assert!(reader.next(&mut short).unwrap_err().is_disconnect());
    assert!(reader.next(&mut short).unwrap_err().is_disconnect());
}

#[test]
fn the_allocation_tracker_sees_allocations() {
    let (largest, buffer) = largest_allocation_during(|| vec![1u8; 3 << 20]);
    assert!(largest >= 3 << 20, "{largest}");
    drop(buffer);
}

#[test]
fn a_large_body_cut_short_is_truncated_and_holds_only_what_arrived() {
    // Within the default limits a body of 512 MiB is announced; 3 MiB of it arrive, then the
    // input ends. The error names the body, and the memory held never passed the first chunk a
    // body is read in (64 MiB), far below what was announced.
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let announced: i64 = 512 << 20;
    let mut bytes = schema_frame(&schema);
    bytes.extend_from_slice(&frame(&record_batch_header(
        announced / 8,
        announced,
        &[(announced / 8, 0)],
        &[(0, 0), (0, announced)],
    )));
    bytes.resize(bytes.len() + (3 << 20), 7);
    let (largest, result) = largest_allocation_during(|| read_io(&bytes, Limits::DEFAULT));
    match result {
        Err(WireError::Truncated(message)) => {
            assert!(message.contains("message body"), "{message}")
        }
        other => panic!("expected a truncated body, got {other:?}"),
    }
    assert!(largest <= 64 << 20, "allocated {largest} bytes at once");
}
