//! Shared pieces of the fuzz targets: the limits they decode under, what they do
//! with every decoded batch, and a panic hook that lets `guard_panics` work.
//!
//! libfuzzer-sys installs a panic hook that aborts on *every* panic, including
//! those quiver-wire deliberately catches around arrow-rs (`guard_panics` turns
//! them into `WireError::Malformed`). [`install_panic_hook`] replaces it with one
//! that only remembers the message; a panic that escapes the target is still
//! reported as a crash (the target aborts, printing that message).

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::{Array, RecordBatch};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_wire::{
    classify, BatchMetadata, BatchRole, ErrorReport, Limits, LogLevel, LogRecord, StreamReader,
    WireError,
};

/// Small limits: every allocation an input can cause is bounded by these (plus
/// arrow-rs's own copies for alignment), so an out-of-memory report from
/// libFuzzer is a real amplification bug rather than a large announced size.
pub const LIMITS: Limits = Limits {
    metadata_bytes_max: 64 << 10,
    body_bytes_max: 1 << 20,
    messages_per_stream_max: 512,
    skip_body_bytes_max: 0,
};

/// Most back-to-back streams decoded from one input.
pub const STREAMS_MAX: usize = 64;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replaces libfuzzer-sys's abort-on-any-panic hook (call from `init`).
pub fn install_panic_hook() {
    let verbose = std::env::var_os("QUIVER_FUZZ_VERBOSE").is_some();
    std::panic::set_hook(Box::new(move |info| {
        let message = format!("{info}");
        if verbose {
            eprintln!("quiver-fuzz: caught panic: {message}");
        }
        let _ = LAST_PANIC.try_with(|last| *last.borrow_mut() = Some(message));
    }));
}

/// Runs one fuzz input; a panic escaping `body` aborts with its message.
pub fn run(body: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(body)).is_err() {
        let message = LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .unwrap_or_default();
        eprintln!("quiver-fuzz: panic escaped the decoder: {message}");
        std::process::abort();
    }
}

/// What a server or client does with a decoded batch: classify it, and read a
/// log record back when it is one.
pub fn exercise(batch: &RecordBatch, metadata: &BatchMetadata) {
    if let Ok(BatchRole::Log(record)) = classify(batch, metadata) {
        let again = LogRecord::from_metadata(&record.to_metadata());
        assert!(again.is_some(), "a log record must survive re-encoding");
        if record.level == LogLevel::Exception {
            let report = ErrorReport::from_record(&record);
            let _ = report.to_record().to_metadata();
        }
    }
    // Touch every column the way a consumer would.
    for column in batch.columns() {
        assert_eq!(
            column.len(),
            batch.num_rows(),
            "column length differs from the batch's row count"
        );
        let _ = column.logical_null_count();
    }
}

/// Decodes back-to-back streams from a byte stream, as a connection does.
/// Returns, per stream, its schema's field count and its batches' metadata, or
/// the error that stopped decoding.
pub fn read_streams(mut input: &[u8]) -> (Vec<Summary>, Option<WireError>) {
    let mut streams = Vec::new();
    for _ in 0..STREAMS_MAX {
        let mut reader = match StreamReader::begin(&mut input, LIMITS) {
            Ok(Some(reader)) => reader,
            Ok(None) => return (streams, None),
            Err(error) => return (streams, Some(error)),
        };
        let mut summary = Summary {
            fields: reader.schema().fields().len(),
            batches: Vec::new(),
        };
        loop {
            match reader.next(&mut input) {
                Ok(Some((batch, metadata))) => {
                    exercise(&batch, &metadata);
                    summary.batches.push((batch.num_rows(), metadata));
                }
                Ok(None) => break,
                Err(error) => {
                    // A caller may drain a failed stream (a server does, to reply);
                    // that must fail again at once, without touching the input.
                    let before = input.len();
                    if let Err(again) = reader.drain(&mut input) {
                        let poisoned = again.to_string().contains("earlier error");
                        assert!(!poisoned || input.len() == before, "read on after {error}");
                    }
                    streams.push(summary);
                    return (streams, Some(error));
                }
            }
        }
        streams.push(summary);
    }
    (streams, None)
}

/// Decodes only the first stream of a byte stream with `StreamReader`.
pub fn read_first_stream(mut input: &[u8]) -> Result<Option<Summary>, WireError> {
    let Some(mut reader) = StreamReader::begin(&mut input, LIMITS)? else {
        return Ok(None);
    };
    let mut summary = Summary {
        fields: reader.schema().fields().len(),
        batches: Vec::new(),
    };
    while let Some((batch, metadata)) = reader.next(&mut input)? {
        exercise(&batch, &metadata);
        summary.batches.push((batch.num_rows(), metadata));
    }
    Ok(Some(summary))
}

/// Decodes one stream held in memory, zero-copy, as a shared-memory region is.
pub fn read_region(region: Buffer) -> Result<Summary, WireError> {
    let (schema, batches) = quiver_wire::decode_stream(region, LIMITS)?;
    let mut summary = Summary {
        fields: schema.fields().len(),
        batches: Vec::new(),
    };
    for (batch, metadata) in batches {
        exercise(&batch, &metadata);
        summary.batches.push((batch.num_rows(), metadata));
    }
    Ok(summary)
}

/// The schema `decode_region` is given for regions without a schema message.
pub fn region_schema() -> SchemaRef {
    let item = Arc::new(Field::new("item", DataType::Int64, true));
    Arc::new(Schema::new(vec![
        Field::new(
            "d",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new("s", DataType::Utf8, true),
        Field::new("l", DataType::List(item), true),
        Field::new("f", DataType::Float64, false),
    ]))
}

/// Decodes a region with `decode_region` against [`region_schema`].
pub fn read_region_with_schema(region: Buffer) -> Result<Summary, WireError> {
    let (schema, batches) = quiver_wire::decode_region(region, &region_schema(), LIMITS)?;
    let mut summary = Summary {
        fields: schema.fields().len(),
        batches: Vec::new(),
    };
    for (batch, metadata) in batches {
        exercise(&batch, &metadata);
        summary.batches.push((batch.num_rows(), metadata));
    }
    Ok(summary)
}

/// What one decoded stream looked like, for comparing the two decoders.
#[derive(Debug, PartialEq)]
pub struct Summary {
    /// Number of top-level fields of the schema.
    pub fields: usize,
    /// Row count and custom metadata of each batch.
    pub batches: Vec<(usize, BatchMetadata)>,
}
