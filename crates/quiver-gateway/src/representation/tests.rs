//! Every format written from the same batches, read back, and held to design.md's body rules.

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, MapBuilder, StringBuilder};
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array, ListArray,
    RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use serde_json::{json, Value};

use super::columnar::META_KEY;
use super::*;

fn meta(next_cursor: Option<&str>) -> BodyMeta {
    BodyMeta {
        endpoint: "orders_by_region".to_string(),
        version: 2,
        snapshot_id: "snap-7".to_string(),
        serving_mode: ServingMode::LocalTable,
        freshness: Freshness {
            watermark: Some("2026-11-24T06:00:00Z".to_string()),
            max_staleness_minutes: Some(90),
        },
        next_cursor: next_cursor.map(str::to_string),
    }
}

/// Two rows of every type a snapshot holds: flat, temporal, decimal (DuckDB's HUGEINT sums),
/// nested; the second row null wherever a column may be.
fn batch() -> RecordBatch {
    let tags =
        ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1), None]), None]);
    let address = StructArray::from(vec![
        (
            Arc::new(Field::new("city", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec![Some("Oslo"), None])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("zip", DataType::Int64, true)),
            Arc::new(Int64Array::from(vec![Some(150), Some(7)])) as ArrayRef,
        ),
    ]);
    let mut counts = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    counts.keys().append_value("a");
    counts.values().append_value(1);
    counts.append(true).unwrap();
    counts.append(false).unwrap();
    let counts = counts.finish();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![Some(1), None])),
        Arc::new(StringArray::from(vec![Some("eu \"west\",1"), None])),
        Arc::new(Date32Array::from(vec![Some(20_416), None])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(1_763_971_200_000_000),
            Some(1_763_971_200_250_000),
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_763_971_200_000_000), None])
                .with_timezone("Europe/Oslo"),
        ),
        Arc::new(BooleanArray::from(vec![Some(true), None])),
        Arc::new(Float64Array::from(vec![Some(2.5), Some(f64::NAN)])),
        Arc::new(
            Decimal128Array::from(vec![Some(12_345), None])
                .with_precision_and_scale(38, 0)
                .unwrap(),
        ),
        Arc::new(tags),
        Arc::new(address),
        Arc::new(counts),
    ];
    let fields: Vec<Field> = [
        "id", "region", "day", "at", "at_tz", "paid", "ratio", "total", "tags", "address", "counts",
    ]
    .iter()
    .zip(&columns)
    .map(|(name, column)| Field::new(*name, column.data_type().clone(), true))
    .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn schema() -> SchemaRef {
    batch().schema()
}

fn expected_rows() -> Value {
    json!([
        {
            "id": 1, "region": "eu \"west\",1", "day": "2025-11-24",
            "at": "2025-11-24T08:00:00.000000", "at_tz": "2025-11-24T08:00:00.000000Z", "paid": true,
            "ratio": 2.5, "total": 12345, "tags": [1, null],
            "address": {"city": "Oslo", "zip": 150}, "counts": {"a": 1}
        },
        {
            "id": null, "region": null, "day": null,
            "at": "2025-11-24T08:00:00.250000", "at_tz": null, "paid": null,
            "ratio": null, "total": null, "tags": null,
            "address": {"city": null, "zip": 7}, "counts": null
        }
    ])
}

fn facts(cache: &str) -> RequestFacts<'_> {
    RequestFacts {
        request_id: "req-1",
        generated_at: "2026-11-24T07:00:00.123456Z".to_string(),
        cache,
        age_seconds: Some(3600),
        stale: true,
    }
}

/// The JSON body a handler sends: the encoded head and the request's tail.
fn envelope(batches: &[RecordBatch], meta: &BodyMeta, row_count: u64) -> Vec<u8> {
    let head = encode(Format::Json, &schema(), batches, meta).unwrap();
    [
        head.to_vec(),
        envelope_tail(meta, &facts("miss"), row_count),
    ]
    .concat()
}

#[test]
fn json_envelope_holds_rows_in_select_order_and_meta() {
    let head = encode(Format::Json, &schema(), &[batch()], &meta(None)).unwrap();
    assert!(
        serde_json::from_slice::<Value>(&head).is_err(),
        "the cached head is not a whole body"
    );
    let body = envelope(&[batch()], &meta(None), 2);
    let text = std::str::from_utf8(&body).unwrap();
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["data"], expected_rows());
    assert_eq!(
        value["meta"],
        json!({
            "request_id": "req-1", "endpoint": "orders_by_region", "version": 2,
            "snapshot_id": "snap-7", "generated_at": "2026-11-24T07:00:00.123456Z",
            "row_count": 2, "serving_mode": "local_table", "cache": "miss",
            "freshness": {"watermark": "2026-11-24T06:00:00Z", "age_seconds": 3600,
                          "max_staleness_minutes": 90, "stale": true}
        })
    );
    // The wire order: data first, then meta; columns as selected; meta's keys in offloader's
    // order; no next_cursor key on a last page.
    assert!(text.starts_with("{\"data\":[{\"id\":1,\"region\":"));
    assert!(text.contains(
        "\"meta\":{\"request_id\":\"req-1\",\"endpoint\":\"orders_by_region\",\"version\":2,\
         \"snapshot_id\":\"snap-7\",\"generated_at\":"
    ));
    assert!(!text.contains("next_cursor"));
}

#[test]
fn json_envelope_carries_the_next_cursor_and_survives_no_rows() {
    let body = envelope(&[batch()], &meta(Some("abc")), 2);
    let value: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(value["meta"]["next_cursor"], "abc");

    let mut no_freshness = meta(None);
    no_freshness.freshness = Freshness {
        watermark: None,
        max_staleness_minutes: None,
    };
    for batches in [vec![], vec![RecordBatch::new_empty(schema())]] {
        let head = encode(Format::Json, &schema(), &batches, &no_freshness).unwrap();
        let unaged = RequestFacts {
            age_seconds: None,
            stale: false,
            ..facts("off")
        };
        let body = [head.to_vec(), envelope_tail(&no_freshness, &unaged, 0)].concat();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["data"], json!([]));
        assert_eq!(value["meta"]["row_count"], 0);
        assert_eq!(value["meta"]["cache"], "off");
        assert_eq!(
            value["meta"]["freshness"],
            json!({"watermark": null, "age_seconds": null, "max_staleness_minutes": null, "stale": false})
        );
    }
}

#[test]
fn ndjson_is_one_object_per_line_and_streams_batch_by_batch() {
    let batches = [batch(), batch().slice(1, 1)];
    let body = encode(Format::Ndjson, &schema(), &batches, &meta(None)).unwrap();
    let text = std::str::from_utf8(&body).unwrap();
    assert!(text.ends_with('\n'));
    let rows: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let expected = expected_rows();
    assert_eq!(
        rows,
        vec![
            expected[0].clone(),
            expected[1].clone(),
            expected[1].clone()
        ]
    );

    let streamed: Vec<u8> = batches
        .iter()
        .flat_map(|batch| ndjson_batch(batch).unwrap())
        .collect();
    assert_eq!(streamed, body.to_vec());
    assert!(encode(Format::Ndjson, &schema(), &[], &meta(None))
        .unwrap()
        .is_empty());
}

#[test]
fn csv_has_a_header_quotes_text_and_writes_nested_columns_as_json() {
    let body = encode(Format::Csv, &schema(), &[batch()], &meta(None)).unwrap();
    let text = std::str::from_utf8(&body).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        lines[0],
        "id,region,day,at,at_tz,paid,ratio,total,tags,address,counts"
    );
    assert_eq!(
        lines[1],
        "1,\"eu \"\"west\"\",1\",2025-11-24,2025-11-24T08:00:00.000000,2025-11-24T08:00:00.000000Z,\
         true,2.5,12345,\"[1,null]\",\"{\"\"city\"\":\"\"Oslo\"\",\"\"zip\"\":150}\",\
         \"{\"\"a\"\":1}\""
    );
    assert_eq!(
        lines[2],
        ",,,2025-11-24T08:00:00.250000,,,NaN,,,\"{\"\"city\"\":null,\"\"zip\"\":7}\","
    );

    let empty = encode(Format::Csv, &schema(), &[], &meta(None)).unwrap();
    assert_eq!(
        std::str::from_utf8(&empty).unwrap(),
        "id,region,day,at,at_tz,paid,ratio,total,tags,address,counts\n"
    );
}

fn meta_of(metadata: &arrow_schema::Metadata) -> Value {
    serde_json::from_str(metadata.get(META_KEY).expect("the meta key")).unwrap()
}

#[test]
fn arrow_stream_reads_back_with_meta_in_the_schema() {
    let batches = [batch(), batch()];
    let body = encode(Format::ArrowStream, &schema(), &batches, &meta(Some("c1"))).unwrap();
    let reader =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(body.to_vec()), None)
            .unwrap();
    let read_meta = meta_of(reader.schema().metadata());
    assert_eq!(read_meta["snapshot_id"], "snap-7");
    assert_eq!(read_meta["row_count"], 4);
    assert_eq!(read_meta["next_cursor"], "c1");
    let read: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(read.len(), 2);
    for (read, written) in read.iter().zip(&batches) {
        assert_eq!(read.columns(), written.columns());
    }

    // No rows: still a schema, so a client knows the columns.
    let empty = encode(Format::ArrowStream, &schema(), &[], &meta(None)).unwrap();
    let reader =
        arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(empty.to_vec()), None)
            .unwrap();
    assert_eq!(reader.schema().fields(), schema().fields());
    assert_eq!(reader.count(), 0);
}

#[test]
fn parquet_is_one_row_group_that_reads_back() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    // Three batches (one of them empty) and one row group.
    let batches = [batch(), RecordBatch::new_empty(schema()), batch()];
    let body = encode(Format::Parquet, &schema(), &batches, &meta(None)).unwrap();
    assert_eq!(&body[..4], b"PAR1");
    let builder = ParquetRecordBatchReaderBuilder::try_new(body.clone()).unwrap();
    assert_eq!(builder.metadata().num_row_groups(), 1);
    assert_eq!(builder.metadata().file_metadata().num_rows(), 4);
    assert_eq!(meta_of(builder.schema().metadata())["row_count"], 4);
    let read: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].num_rows(), 4);
    let written = batch();
    for half in [read[0].slice(0, 2), read[0].slice(2, 2)] {
        for name in [
            "id", "region", "day", "at", "total", "tags", "address", "counts",
        ] {
            assert_eq!(
                half.column_by_name(name).unwrap(),
                written.column_by_name(name).unwrap(),
                "{name}"
            );
        }
    }
}

#[test]
fn a_batch_unlike_the_result_schema_is_refused() {
    let other = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, true)])),
        vec![Arc::new(StringArray::from(vec!["1"]))],
    )
    .unwrap();
    let one_column = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    for format in format::FORMATS {
        let error = encode(
            format,
            &one_column,
            std::slice::from_ref(&other),
            &meta(None),
        )
        .unwrap_err();
        assert!(
            matches!(error, EncodeError::SchemaMismatch { index: 0, .. }),
            "{error}"
        );
        let error = encode(format, &one_column, &[batch()], &meta(None)).unwrap_err();
        assert!(
            matches!(
                error,
                EncodeError::ColumnCount {
                    expected: 1,
                    found: 11
                }
            ),
            "{error}"
        );
    }
}

/// One batch's rows as NDJSON lines: the lines of every batch of a result, in order, are
/// [`encode`]'s NDJSON body.
fn ndjson_batch(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut body = Vec::new();
    json::ndjson_rows(batch, &mut body)?;
    Ok(body)
}
