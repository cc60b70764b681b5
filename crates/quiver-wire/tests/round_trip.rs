//! Unusual but valid streams: per-batch custom metadata round-trips with pyarrow (the oracle's
//! Python) in both directions, unions from misaligned regions, slices at odd offsets.

mod common;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, UnionArray,
};
use arrow_buffer::{Buffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, UnionFields};
use quiver_wire::{decode_stream, keys, BatchMetadata, Limits, StreamReader, StreamWriter};

use common::read_io;

/// Limits small enough that a mutated length field cannot make a test allocate much.
const SMALL: Limits = Limits {
    metadata_bytes_max: 64 << 10,
    body_bytes_max: 1 << 20,
    messages_per_stream_max: 64,
    skip_body_bytes_max: 4 << 30,
};

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
fn a_body_larger_than_one_read_chunk_arrives_whole() {
    // 72 MiB of values: read as a first 64 MiB chunk, then grown to the rest; every value is
    // where it was written, and the arrays lie over the buffer read (8-byte aligned).
    let values = 9 << 20;
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    let column: ArrayRef = Arc::new(Int64Array::from_iter_values(0..values));
    let batch = RecordBatch::try_new(schema.clone(), vec![column]).unwrap();
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    writer
        .write(&batch, &BatchMetadata::new(), &mut bytes)
        .unwrap();
    writer.finish(&mut bytes);
    let (_, batches) = read_io(&bytes, Limits::DEFAULT).unwrap().unwrap();
    assert_eq!(batches.len(), 1);
    let read = batches[0].0.column(0).as_primitive::<Int64Type>();
    assert_eq!(read.len(), values as usize);
    assert!(read.values().iter().copied().eq(0..values));
    assert_eq!(read.values().as_ptr().align_offset(8), 0);
}
