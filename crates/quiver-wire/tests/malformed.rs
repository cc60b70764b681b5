//! Bad input to quiver-wire's decoders: truncation at every byte, oversized
//! announced lengths, messages in the wrong place, garbage and bit flips. Every
//! case must end in a clean `Err`, never a panic, an abort or a large allocation.
//! And the other side of the coin: streams with per-batch custom metadata
//! round-trip with pyarrow (the oracle's Python) in both directions.

mod common;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, UnionArray,
};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, UnionFields};
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
fn dense_union_decodes_from_a_misaligned_region() {
    // arrow-rs rejects misaligned dense-union offsets (it realigns most other
    // buffers itself); a region at an odd offset must decode all the same.
    let fields = UnionFields::try_new(
        vec![0, 1],
        vec![
            Field::new("i", DataType::Int64, false),
            Field::new("f", DataType::Float64, false),
        ],
    )
    .unwrap();
    let union = UnionArray::try_new(
        fields,
        ScalarBuffer::from(vec![0_i8, 1, 0]),
        Some(ScalarBuffer::from(vec![0_i32, 0, 1])),
        vec![
            Arc::new(Int64Array::from(vec![10, 20])) as ArrayRef,
            Arc::new(Float64Array::from(vec![2.5])) as ArrayRef,
        ],
    )
    .unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new(
        "u",
        union.data_type().clone(),
        false,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(union) as ArrayRef]).unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    writer
        .write(&batch, &BatchMetadata::from_pairs([("k", "v")]), &mut bytes)
        .unwrap();
    writer.finish(&mut bytes);

    for shift in 0..8 {
        let mut padded = vec![0u8; shift];
        padded.extend_from_slice(&bytes);
        let region = Buffer::from(padded).slice(shift);
        let (_, batches) =
            decode_stream(region, SMALL).unwrap_or_else(|e| panic!("shift {shift}: {e}"));
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].0, batch, "shift {shift}");
        assert_eq!(batches[0].1.get("k"), Some("v"));
    }
}

/// The Python that has pyarrow: the oracle's, as the rest of the test suite uses.
fn oracle_python() -> std::path::PathBuf {
    if let Some(python) = std::env::var_os("QUIVER_ORACLE_PYTHON") {
        return python.into();
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for candidate in [
        root.join(".venv-oracle/bin/python"),
        "/tmp/vgi313/bin/python".into(),
    ] {
        if candidate.exists() {
            return candidate;
        }
    }
    panic!(
        "no Python with pyarrow for the compatibility test: set QUIVER_ORACLE_PYTHON, \
         or run tools/setup.sh to create .venv-oracle"
    );
}

/// pyarrow reads what quiver writes (custom metadata on every batch, strings,
/// dictionaries, nested lists, sliced arrays, zero-row batches), and quiver
/// reads what pyarrow writes, metadata intact both ways.
#[test]
fn pyarrow_round_trip_keeps_custom_metadata() {
    let python = oracle_python();
    let dir = common::TempDir::new("pyarrow");
    let streams = common::compat_streams();
    let mut command = std::process::Command::new(&python);
    command.arg("-c").arg(common::PYARROW_SCRIPT);
    for (index, (bytes, _)) in streams.iter().enumerate() {
        let path = dir.path().join(format!("quiver-{index}.arrows"));
        std::fs::write(&path, bytes).unwrap();
        command.arg(path);
    }
    let theirs = dir.path().join("pyarrow.arrows");
    let output = command
        .arg(&theirs)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        output.status.success(),
        "{} failed:\n{}",
        python.display(),
        String::from_utf8_lossy(&output.stderr)
    );

    // What pyarrow saw in our streams.
    let seen: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the script prints JSON");
    let seen = seen.as_array().expect("one entry per stream");
    assert_eq!(seen.len(), streams.len());
    for (stream, (entries, (_, expected))) in seen.iter().zip(&streams).enumerate() {
        let entries = entries.as_array().unwrap();
        assert_eq!(
            entries.len(),
            expected.len(),
            "stream {stream}: pyarrow saw {entries:?}"
        );
        for (index, (entry, (rows, metadata, ints))) in entries.iter().zip(expected).enumerate() {
            let at = format!("stream {stream} batch {index}");
            assert_eq!(entry["rows"].as_u64(), Some(*rows as u64), "{at}");
            let got: Vec<(String, String)> = entry["metadata"]
                .as_array()
                .unwrap()
                .iter()
                .map(|pair| {
                    (
                        pair[0].as_str().unwrap().to_string(),
                        pair[1].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let want: Vec<(String, String)> = metadata
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            assert_eq!(got, want, "{at}: custom metadata as pyarrow reads it");
            let got_ints: Vec<Option<i64>> = entry["ints"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64())
                .collect();
            assert_eq!(&got_ints, ints, "{at}: values as pyarrow reads them");
        }
    }
    // Spot checks of the other columns: sliced strings, booleans and lists, and
    // the replaced dictionary.
    let sliced = &seen[0][2]["columns"];
    assert_eq!(sliced["s"], serde_json::json!(["s3", "s4", "s5", "s6"]));
    assert_eq!(sliced["b"], serde_json::json!([false, true, false, true]));
    assert_eq!(sliced["l"], serde_json::json!([null, [40], [50, 51], []]));
    assert_eq!(
        seen[0][1]["columns"]["s"],
        serde_json::json!(["s8", "s9", "s10", "s11", "s12"])
    );
    assert_eq!(
        seen[0][1]["columns"]["l"],
        serde_json::json!([null, [], [100], [110, 111], []])
    );
    assert_eq!(
        seen[1][0]["columns"]["d"],
        serde_json::json!(["red", "blue", "red"])
    );
    assert_eq!(seen[1][2]["columns"]["d"], serde_json::json!([null]));

    // What we see in pyarrow's two back-to-back streams.
    let theirs = std::fs::read(&theirs).unwrap();
    let mut input = theirs.as_slice();
    let mut reader = StreamReader::begin(&mut input, Limits::DEFAULT)
        .unwrap()
        .expect("a first stream");
    let mut first = Vec::new();
    while let Some(batch) = reader.next(&mut input).unwrap() {
        first.push(batch);
    }
    assert_eq!(first.len(), 3);
    let (batch, metadata) = &first[0];
    assert_eq!(metadata.get(keys::METHOD), Some("from_python"));
    assert_eq!(metadata.get("unicode ключ"), Some("値 ✓"));
    assert_eq!(metadata.get("empty"), Some(""));
    assert_eq!(batch.num_rows(), 3);
    assert_eq!(
        batch.column(0).as_primitive::<Int64Type>().values(),
        &[1, 2, 3]
    );
    let words = batch.column(1).as_string::<i32>();
    assert_eq!(
        words.iter().collect::<Vec<_>>(),
        vec![Some("a"), None, Some("ccc")]
    );
    let colours = arrow_cast_free_dictionary_values(batch.column(2));
    assert_eq!(
        colours,
        vec![
            Some("red".to_string()),
            Some("blue".to_string()),
            Some("red".to_string())
        ]
    );
    let (log, log_metadata) = &first[1];
    assert_eq!(log.num_rows(), 0);
    assert_eq!(log_metadata.get(keys::LOG_LEVEL), Some("EXCEPTION"));
    let (_, no_metadata) = &first[2];
    assert!(no_metadata.is_empty());

    let mut second_reader = StreamReader::begin(&mut input, Limits::DEFAULT)
        .unwrap()
        .expect("a second stream");
    let (tick, tick_metadata) = second_reader.next(&mut input).unwrap().unwrap();
    assert_eq!(tick.num_columns(), 0);
    assert_eq!(tick_metadata.get(keys::CANCEL), Some("1"));
    assert!(second_reader.next(&mut input).unwrap().is_none());
    assert!(
        StreamReader::begin(&mut input, Limits::DEFAULT)
            .unwrap()
            .is_none(),
        "nothing after the second stream"
    );

    // And the same bytes as a region.
    let (_, region) = decode_stream(Buffer::from(theirs.as_slice()), Limits::DEFAULT).unwrap();
    assert_eq!(region, first);
}

/// The values of a dictionary<int8, utf8> column, looked up.
fn arrow_cast_free_dictionary_values(column: &ArrayRef) -> Vec<Option<String>> {
    let dictionary = column.as_dictionary::<arrow_array::types::Int8Type>();
    let values = dictionary.values().as_string::<i32>();
    dictionary
        .keys()
        .iter()
        .map(|key| key.map(|k| values.value(k as usize).to_string()))
        .collect()
}

#[test]
fn float_and_string_columns_survive_unusual_slices() {
    // The writer frames bodies over the arrays' own buffers; slices at offsets
    // that are and are not multiples of 8 must read back equal.
    let schema = Arc::new(Schema::new(vec![
        Field::new("f", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("i", DataType::Int32, true),
    ]));
    let n = 40;
    let floats: Float64Array = (0..n)
        .map(|i| (i % 3 != 0).then_some(i as f64 / 2.0))
        .collect();
    let strings: StringArray = (0..n)
        .map(|i| (i % 4 != 1).then(|| "x".repeat(i % 5)))
        .collect();
    let ints: Int32Array = (0..n).map(|i| (i % 5 != 2).then_some(i as i32)).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(floats), Arc::new(strings), Arc::new(ints)],
    )
    .unwrap();
    for (offset, len) in [(0, 40), (8, 16), (3, 11), (16, 0), (39, 1)] {
        let slice = batch.slice(offset, len);
        let mut bytes = Vec::new();
        let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
        writer
            .write(
                &slice,
                &BatchMetadata::from_pairs([("offset", offset.to_string())]),
                &mut bytes,
            )
            .unwrap();
        writer.finish(&mut bytes);
        let (_, batches) = read_io(&bytes, SMALL).unwrap().unwrap();
        assert_eq!(batches[0].0, slice, "slice ({offset}, {len})");
        assert_eq!(
            batches[0].0.column(0).as_primitive::<Float64Type>().len(),
            len
        );
        assert_eq!(
            batches[0].1.get("offset"),
            Some(offset.to_string().as_str())
        );
    }
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
