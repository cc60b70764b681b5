//! What the stream reader says when a message is bad: where in the stream it
//! starts, and whether the reader still knows where the next one begins. A message
//! whose custom metadata is not UTF-8 is refused but read whole, so the rest of the
//! stream can be drained and the transport stays in step.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_wire::{BatchMetadata, Limits, StreamReader, StreamWriter, WireError};

const PLACEHOLDER: &str = "<placeholder for bytes that are not UTF-8>";

fn batch(value: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![value]))]).unwrap()
}

/// One stream of three batches; the second's metadata value is not UTF-8.
fn stream_with_bad_metadata() -> Vec<u8> {
    let mut out = Vec::new();
    let first = batch(1);
    let mut writer = StreamWriter::begin(first.schema_ref(), &mut out).unwrap();
    let plain = BatchMetadata::from_pairs([("k", "v")]);
    writer.write(&first, &plain, &mut out).unwrap();
    let bad = BatchMetadata::from_pairs([("k", PLACEHOLDER)]);
    writer.write(&batch(2), &bad, &mut out).unwrap();
    writer.write(&batch(3), &plain, &mut out).unwrap();
    writer.finish(&mut out);
    let at = out
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER.as_bytes())
        .unwrap();
    out[at] = 0xff;
    out[at + 1] = 0xfe;
    out
}

fn value(batch: &RecordBatch) -> i64 {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .value(0)
}

#[test]
fn metadata_that_is_not_utf8_is_refused_and_framing_survives() {
    let bytes = stream_with_bad_metadata();
    let mut input = Cursor::new(bytes.clone());
    let mut reader = StreamReader::begin(&mut input, Limits::DEFAULT)
        .unwrap()
        .unwrap();
    let (first, metadata) = reader.next(&mut input).unwrap().unwrap();
    assert_eq!((value(&first), metadata.get("k")), (1, Some("v")));
    let error = reader.next(&mut input).unwrap_err();
    let WireError::Malformed(message) = &error else {
        panic!("expected Malformed, got {error:?}");
    };
    assert!(message.contains("not UTF-8"), "{message}");
    assert!(message.contains("stream byte"), "{message}");
    assert!(
        reader.framing_intact(),
        "the refused message was read whole"
    );
    let (third, _) = reader.next(&mut input).unwrap().unwrap();
    assert_eq!(value(&third), 3);
    assert!(reader.next(&mut input).unwrap().is_none());
    assert_eq!(
        input.position() as usize,
        bytes.len(),
        "stopped at the end marker"
    );
}

#[test]
fn a_truncated_message_names_the_stream_byte_where_it_starts() {
    let mut bytes = Vec::new();
    let first = batch(1);
    let mut writer = StreamWriter::begin(first.schema_ref(), &mut bytes).unwrap();
    let schema_end = bytes.len();
    writer
        .write(&first, &BatchMetadata::new(), &mut bytes)
        .unwrap();
    let cut = bytes.len() - 5;
    let mut input = Cursor::new(bytes[..cut].to_vec());
    let mut reader = StreamReader::begin(&mut input, Limits::DEFAULT)
        .unwrap()
        .unwrap();
    let error = reader.next(&mut input).unwrap_err();
    let WireError::Truncated(message) = &error else {
        panic!("expected Truncated, got {error:?}");
    };
    assert!(
        message.contains(&format!("stream byte {schema_end}")),
        "{message} should name byte {schema_end}"
    );
    assert!(!reader.framing_intact());
}

#[test]
fn a_schema_that_is_not_utf8_is_refused_with_its_offset() {
    let schema = Arc::new(Schema::new(vec![Field::new(
        PLACEHOLDER,
        DataType::Int64,
        false,
    )]));
    let mut bytes = Vec::new();
    let writer = StreamWriter::begin(&schema, &mut bytes).unwrap();
    writer.finish(&mut bytes);
    let at = bytes
        .windows(PLACEHOLDER.len())
        .position(|w| w == PLACEHOLDER.as_bytes())
        .unwrap();
    bytes[at] = 0xff;
    let error = StreamReader::begin(&mut Cursor::new(bytes), Limits::DEFAULT)
        .err()
        .expect("refused");
    let text = error.to_string();
    assert!(
        text.contains("not UTF-8") && text.contains("stream byte 0"),
        "{text}"
    );
}
