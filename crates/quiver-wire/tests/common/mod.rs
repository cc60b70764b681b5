//! Helpers of quiver-wire's integration tests: sample streams, hand-built
//! messages, a frame walker, and an allocator that remembers the largest single
//! allocation made on the current thread.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow_array::{ArrayRef, DictionaryArray, Int64Array, Int8Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use flatbuffers::FlatBufferBuilder;
use quiver_wire::{keys, BatchMetadata, Limits, StreamReader, StreamWriter, WireError};

// ---------------------------------------------------------------------------
// Allocation tracking

struct Tracking;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    let _ = LARGEST.try_with(|largest| {
        if size > largest.get() {
            largest.set(size);
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: the caller's contract for this method is the system allocator's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Tracking = Tracking;

/// Runs `f` and returns the largest single allocation it made on this thread.
pub fn largest_allocation_during<R>(f: impl FnOnce() -> R) -> (usize, R) {
    LARGEST.with(|largest| largest.set(0));
    let result = f();
    (LARGEST.with(Cell::get), result)
}

// ---------------------------------------------------------------------------
// Reading

/// Decoded stream: its schema and batches.
pub type Decoded = (SchemaRef, Vec<(RecordBatch, BatchMetadata)>);

/// Reads one stream from a byte stream with `StreamReader` (`Ok(None)`: empty input).
pub fn read_io(bytes: &[u8], limits: Limits) -> Result<Option<Decoded>, WireError> {
    let mut input = bytes;
    let Some(mut reader) = StreamReader::begin(&mut input, limits)? else {
        return Ok(None);
    };
    let mut batches = Vec::new();
    while let Some(batch) = reader.next(&mut input)? {
        batches.push(batch);
    }
    Ok(Some((reader.schema().clone(), batches)))
}

/// Byte offsets at which a message of `bytes` starts or the stream ends: 0, after
/// the schema, after each dictionary and batch, after the end marker.
pub fn frame_boundaries(bytes: &[u8]) -> Vec<usize> {
    let mut boundaries = vec![0];
    let mut position = 0;
    while position + 8 <= bytes.len() {
        assert_eq!(
            bytes[position..position + 4],
            [0xff; 4],
            "sample streams use the continuation marker"
        );
        let len =
            i32::from_le_bytes(bytes[position + 4..position + 8].try_into().unwrap()) as usize;
        if len == 0 {
            boundaries.push(position + 8);
            break;
        }
        let header = &bytes[position + 8..position + 8 + len];
        let body = arrow_ipc::root_as_message(header).unwrap().bodyLength() as usize;
        position += 8 + len + body;
        boundaries.push(position);
    }
    boundaries
}

// ---------------------------------------------------------------------------
// Building messages by hand

/// Frames a message header: continuation, padded length, header, zero padding.
pub fn frame(header: &[u8]) -> Vec<u8> {
    let padded = (header.len() + 8).div_ceil(8) * 8 - 8;
    let mut out = vec![0xff; 4];
    out.extend_from_slice(&(padded as i32).to_le_bytes());
    out.extend_from_slice(header);
    out.resize(8 + padded, 0);
    out
}

/// A RecordBatch message header announcing `body_len` bytes of body.
pub fn record_batch_header(
    length: i64,
    body_len: i64,
    nodes: &[(i64, i64)],
    buffers: &[(i64, i64)],
) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let nodes: Vec<_> = nodes
        .iter()
        .map(|&(len, nulls)| arrow_ipc::FieldNode::new(len, nulls))
        .collect();
    let buffers: Vec<_> = buffers
        .iter()
        .map(|&(offset, len)| arrow_ipc::Buffer::new(offset, len))
        .collect();
    let nodes = fbb.create_vector(&nodes);
    let buffers = fbb.create_vector(&buffers);
    let batch = arrow_ipc::RecordBatch::create(
        &mut fbb,
        &arrow_ipc::RecordBatchArgs {
            length,
            nodes: Some(nodes),
            buffers: Some(buffers),
            compression: None,
            variadicBufferCounts: None,
        },
    );
    let message = arrow_ipc::Message::create(
        &mut fbb,
        &arrow_ipc::MessageArgs {
            version: arrow_ipc::MetadataVersion::V5,
            header_type: arrow_ipc::MessageHeader::RecordBatch,
            header: Some(batch.as_union_value()),
            bodyLength: body_len,
            custom_metadata: None,
        },
    );
    fbb.finish(message, None);
    fbb.finished_data().to_vec()
}

/// The framed schema message of a stream on `schema` (no end marker).
pub fn schema_frame(schema: &SchemaRef) -> Vec<u8> {
    let mut out = Vec::new();
    StreamWriter::begin(schema, &mut out).unwrap();
    out
}

// ---------------------------------------------------------------------------
// Sample data

/// Batches of one schema with strings, a dictionary, nested list<struct>, a
/// zero-row log batch, per-batch metadata and one batch without any.
pub fn sample_batches() -> Vec<(RecordBatch, BatchMetadata)> {
    let point = Fields::from(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("tag", DataType::Utf8, true),
    ]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new(
            "d",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new(
            "l",
            DataType::List(Arc::new(Field::new(
                "item",
                DataType::Struct(point.clone()),
                true,
            ))),
            true,
        ),
    ]));
    let batch = |n: Vec<Option<i64>>,
                 s: Vec<Option<&str>>,
                 keys: Vec<Option<i8>>,
                 words: Vec<&str>,
                 lists: &[Option<Vec<(f64, &str)>>]| {
        let mut list = ListBuilder::new(StructBuilder::from_fields(point.clone(), 0));
        for entry in lists {
            match entry {
                Some(points) => {
                    for (x, tag) in points {
                        let fields = list.values();
                        fields
                            .field_builder::<Float64Builder>(0)
                            .unwrap()
                            .append_value(*x);
                        fields
                            .field_builder::<StringBuilder>(1)
                            .unwrap()
                            .append_value(tag);
                        fields.append(true);
                    }
                    list.append(true);
                }
                None => list.append(false),
            }
        }
        let dictionary = DictionaryArray::<arrow_array::types::Int8Type>::try_new(
            Int8Array::from(keys),
            Arc::new(StringArray::from(words)),
        )
        .unwrap();
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from(n)) as ArrayRef,
                Arc::new(StringArray::from(s)),
                Arc::new(dictionary),
                Arc::new(list.finish()),
            ],
        )
        .unwrap()
    };
    let request = BatchMetadata::from_pairs([
        (keys::METHOD, "sample"),
        (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        ("unicode ключ", "値 ✓"),
    ]);
    let log =
        BatchMetadata::from_pairs([(keys::LOG_LEVEL, "INFO"), (keys::LOG_MESSAGE, "working")]);
    vec![
        (
            batch(
                vec![Some(1), None, Some(3)],
                vec![Some("a"), Some(""), None],
                vec![Some(0), Some(1), None],
                vec!["red", "blue"],
                &[Some(vec![(1.5, "p")]), None, Some(vec![])],
            ),
            request,
        ),
        (RecordBatch::new_empty(schema.clone()), log),
        (
            batch(
                vec![Some(-7)],
                vec![Some("zz")],
                vec![Some(0)],
                vec!["green"],
                &[Some(vec![(0.0, ""), (2.0, "q")])],
            ),
            BatchMetadata::new(),
        ),
    ]
}

/// The encoded [`sample_batches`] stream.
pub fn sample_stream() -> Vec<u8> {
    let batches = sample_batches();
    let mut out = Vec::new();
    quiver_wire::encode_stream(&batches[0].0.schema(), &batches, &mut out).unwrap();
    out
}

/// What pyarrow should see in each batch of [`compat_streams`]: row count,
/// custom metadata in order, and the `i` column.
pub type Expected = (usize, Vec<(&'static str, String)>, Vec<Option<i64>>);

fn i_value(row: usize) -> Option<i64> {
    (row % 4 != 2).then_some(row as i64 * 3 - 7)
}

/// Two streams for pyarrow: one without dictionaries (so the writer frames bodies
/// over the arrays' own buffers, slices included), one with a dictionary column
/// whose dictionary is replaced between batches. Returns each stream's bytes and
/// what pyarrow should read in it.
pub fn compat_streams() -> Vec<(Vec<u8>, Vec<Expected>)> {
    let rows = 20;
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Boolean, true),
        Field::new(
            "l",
            DataType::List(Arc::new(Field::new("item", DataType::Int64, true))),
            true,
        ),
    ]));
    let mut lists = ListBuilder::new(arrow_array::builder::Int64Builder::new());
    for row in 0..rows {
        if row % 5 == 3 {
            lists.append(false);
        } else {
            for k in 0..row % 3 {
                lists.values().append_value((row * 10 + k) as i64);
            }
            lists.append(true);
        }
    }
    let mut bools = BooleanBuilder::new();
    for row in 0..rows {
        bools.append_option((row % 7 != 0).then_some(row % 2 == 0));
    }
    let base = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new((0..rows).map(i_value).collect::<Int64Array>()) as ArrayRef,
            Arc::new(
                (0..rows)
                    .map(|row| (row % 6 != 1).then(|| format!("s{row}")))
                    .collect::<StringArray>(),
            ),
            Arc::new(bools.finish()) as ArrayRef,
            Arc::new(lists.finish()),
        ],
    )
    .unwrap();
    let plain: Vec<(RecordBatch, Vec<(&'static str, String)>)> = vec![
        (
            base.clone(),
            vec![
                (keys::METHOD, "echo".into()),
                ("unicode ключ", "値 ✓".into()),
                ("empty", String::new()),
            ],
        ),
        (base.slice(8, 5), vec![("slice", "8+5".into())]),
        (base.slice(3, 4), vec![("slice", "3+4".into())]),
        (
            RecordBatch::new_empty(schema.clone()),
            vec![
                (keys::LOG_LEVEL, "INFO".into()),
                (keys::LOG_MESSAGE, "hi".into()),
            ],
        ),
        (base.slice(0, 2), vec![]),
    ];
    let plain_expected = [(0, 20), (8, 5), (3, 4), (0, 0), (0, 2)];

    let dict_schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, true),
        Field::new(
            "d",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            true,
        ),
    ]));
    let dict_batch = |i: Vec<Option<i64>>, keys: Vec<Option<i8>>, words: Vec<&str>| {
        let dictionary = DictionaryArray::<arrow_array::types::Int8Type>::try_new(
            Int8Array::from(keys),
            Arc::new(StringArray::from(words)),
        )
        .unwrap();
        RecordBatch::try_new(
            dict_schema.clone(),
            vec![
                Arc::new(Int64Array::from(i)) as ArrayRef,
                Arc::new(dictionary),
            ],
        )
        .unwrap()
    };
    let dictionary: Vec<(RecordBatch, Vec<(&'static str, String)>)> = vec![
        (
            dict_batch(
                vec![Some(1), Some(2), None],
                vec![Some(0), Some(1), Some(0)],
                vec!["red", "blue"],
            ),
            vec![(keys::METHOD, "colours".into())],
        ),
        (
            RecordBatch::new_empty(dict_schema.clone()),
            vec![
                (keys::LOG_LEVEL, "EXCEPTION".into()),
                (keys::LOG_MESSAGE, "E: x".into()),
            ],
        ),
        (
            dict_batch(vec![Some(9)], vec![None], vec!["other"]),
            vec![("replaced", "yes".into())],
        ),
    ];

    let encode = |schema: &SchemaRef, batches: &[(RecordBatch, Vec<(&'static str, String)>)]| {
        let mut out = Vec::new();
        let mut writer = StreamWriter::begin(schema, &mut out).unwrap();
        for (batch, metadata) in batches {
            let metadata = BatchMetadata::from_pairs(metadata.iter().map(|(k, v)| (*k, v.clone())));
            writer.write(batch, &metadata, &mut out).unwrap();
        }
        writer.finish(&mut out);
        out
    };
    let expect = |batches: &[(RecordBatch, Vec<(&'static str, String)>)],
                  ints: Vec<Vec<Option<i64>>>|
     -> Vec<Expected> {
        batches
            .iter()
            .zip(ints)
            .map(|((batch, metadata), ints)| (batch.num_rows(), metadata.clone(), ints))
            .collect()
    };
    let plain_ints = plain_expected
        .iter()
        .map(|&(offset, len)| (offset..offset + len).map(i_value).collect())
        .collect();
    let dict_ints = vec![vec![Some(1), Some(2), None], vec![], vec![Some(9)]];
    vec![
        (encode(&schema, &plain), expect(&plain, plain_ints)),
        (
            encode(&dict_schema, &dictionary),
            expect(&dictionary, dict_ints),
        ),
    ]
}

/// Reads each stream file named on its command line (all arguments but the
/// last) and prints, per stream, per batch: rows, custom metadata pairs and the
/// `i` column; then writes two back-to-back streams to the last argument.
pub const PYARROW_SCRIPT: &str = r#"
import json, sys
import pyarrow as pa
import pyarrow.ipc as ipc

*inputs, output = sys.argv[1:]
streams = []
for path in inputs:
    with open(path, "rb") as f:
        reader = ipc.open_stream(f.read())
    batches = []
    while True:
        try:
            batch, metadata = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        pairs = [] if metadata is None else [[k.decode(), v.decode()] for k, v in metadata.items()]
        batches.append({"rows": batch.num_rows, "metadata": pairs, "ints": batch.column("i").to_pylist(),
                        "columns": {name: batch.column(name).to_pylist() for name in batch.schema.names}})
    streams.append(batches)
print(json.dumps(streams))

colours = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), pa.array(["red", "blue"]))
data = pa.record_batch({"n": pa.array([1, 2, 3]), "s": pa.array(["a", None, "ccc"]), "c": colours})
sink = pa.BufferOutputStream()
with ipc.new_stream(sink, data.schema) as writer:
    writer.write_batch(data, custom_metadata={"vgi_rpc.method": "from_python", "unicode ключ": "値 ✓", "empty": ""})
    writer.write_batch(data.slice(0, 0), custom_metadata={"vgi_rpc.log_level": "EXCEPTION",
                                                         "vgi_rpc.log_message": "ValueError: no"})
    writer.write_batch(data.slice(1, 2))
empty = pa.record_batch([], schema=pa.schema([]))
with ipc.new_stream(sink, empty.schema) as writer:
    writer.write_batch(empty, custom_metadata={"vgi_rpc.cancel": "1"})
with open(output, "wb") as f:
    f.write(sink.getvalue().to_pybytes())
"#;

// ---------------------------------------------------------------------------
// Odds and ends

/// A small deterministic random generator (xorshift64*).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("quiver-wire-{name}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
