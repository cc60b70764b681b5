//! quiver's Rust client against two servers: vgi-rpc's reference worker
//! (`vgi-rpc-conformance`, Python) and our own conformance worker. The same
//! scenarios run against both, inline and through shared memory; the reference
//! proves the client speaks the wire, ours proves the two servers agree.

mod common;

use common::{connect, our_worker, reference_worker};

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{ArrayRef, Float64Array, Int64Array, LargeBinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

fn params(fields: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let schema = Schema::new(
        fields
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), false))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(
        Arc::new(schema),
        fields.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap()
}

fn empty_params() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

fn value_batch(values: Vec<f64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Float64,
        true,
    )]));
    RecordBatch::try_new(schema, vec![Arc::new(Float64Array::from(values))]).unwrap()
}

fn scenarios(worker: &Path, shm: bool) {
    let (_child, mut client) = connect(worker, shm);

    // Unary echo, with non-ASCII and an embedded NUL.
    let text = "héllo\0世界";
    let reply = client
        .call(
            "echo_string",
            &params(vec![("value", Arc::new(StringArray::from(vec![text])))]),
        )
        .unwrap();
    assert_eq!(reply.unwrap().column(0).as_string::<i32>().value(0), text);

    // Logs arrive in order before the result.
    client
        .call(
            "echo_with_multi_logs",
            &params(vec![("value", Arc::new(StringArray::from(vec!["m"])))]),
        )
        .unwrap();
    let levels: Vec<_> = client
        .take_logs()
        .iter()
        .map(|r| r.level.as_str())
        .collect();
    assert_eq!(levels, ["DEBUG", "INFO", "WARN"]);

    // A remote error keeps its type, and the connection keeps serving.
    let error = client
        .call(
            "raise_value_error",
            &params(vec![("message", Arc::new(StringArray::from(vec!["bad"])))]),
        )
        .unwrap_err();
    let report = error.remote().expect("remote error");
    assert_eq!(report.error_type, "ValueError");
    assert!(report.message.contains("bad"));

    // Void.
    assert!(client
        .call("void_noop", &empty_params())
        .unwrap()
        .is_none_or(|b| b.num_rows() == 0));

    // 4 MiB both ways (through the segment when shm is on).
    let payload = vec![0xa5u8; 4 << 20];
    let reply = client
        .call(
            "echo_large_binary",
            &params(vec![(
                "value",
                Arc::new(LargeBinaryArray::from(vec![payload.as_slice()])),
            )]),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        reply.column(0).as_binary::<i64>().value(0),
        payload.as_slice()
    );
    drop(reply);

    // Producer with a header.
    let seed_count = params(vec![
        ("seed", Arc::new(Int64Array::from(vec![7]))),
        ("count", Arc::new(Int64Array::from(vec![2]))),
    ]);
    let mut stream = client
        .stream("produce_with_rich_header", &seed_count, true)
        .unwrap();
    let header = stream.header().expect("header").clone();
    assert_eq!(
        header
            .column_by_name("str_field")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "seed-7"
    );
    assert_eq!(
        header
            .column_by_name("int_field")
            .unwrap()
            .as_primitive::<Int64Type>()
            .value(0),
        49
    );
    let mut values = Vec::new();
    while let Some(batch) = stream.tick().unwrap() {
        values.push(
            batch
                .column_by_name("value")
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(0),
        );
    }
    assert_eq!(values, [0, 10]);
    stream.close().unwrap();

    // Exchange with a batch large enough for the segment (both directions).
    let factor = params(vec![("factor", Arc::new(Float64Array::from(vec![2.0])))]);
    let mut stream = client.stream("exchange_scale", &factor, false).unwrap();
    let input: Vec<f64> = (0..50_000).map(f64::from).collect();
    let output = stream
        .exchange(&value_batch(input.clone()))
        .unwrap()
        .unwrap();
    let doubled: Vec<f64> = input.iter().map(|v| v * 2.0).collect();
    assert_eq!(
        output
            .column(0)
            .as_primitive::<Float64Type>()
            .values()
            .as_ref(),
        doubled.as_slice()
    );
    drop(output);
    stream.close().unwrap();

    // Cancel mid-exchange, then the counters agree.
    client.call("reset_cancel_probe", &empty_params()).unwrap();
    let mut stream = client
        .stream("cancellable_exchange", &empty_params(), false)
        .unwrap();
    stream.exchange(&value_batch(vec![1.0])).unwrap().unwrap();
    stream.exchange(&value_batch(vec![2.0])).unwrap().unwrap();
    stream.cancel().unwrap();
    let counters = client
        .call("cancel_probe_counters", &empty_params())
        .unwrap()
        .unwrap();
    let counters = counters.column(0).as_list::<i32>().value(0);
    assert_eq!(
        counters.as_primitive::<Int64Type>().values().as_ref(),
        &[0, 2, 1]
    );

    // A mid-stream error, then the connection is still usable.
    let fail = params(vec![("fail_on", Arc::new(Int64Array::from(vec![2])))]);
    let mut stream = client
        .stream("exchange_error_on_nth", &fail, false)
        .unwrap();
    stream.exchange(&value_batch(vec![1.0])).unwrap().unwrap();
    let error = stream.exchange(&value_batch(vec![2.0])).unwrap_err();
    assert_eq!(error.remote().expect("remote").error_type, "RuntimeError");
    drop(stream);
    let reply = client
        .call(
            "echo_int",
            &params(vec![("value", Arc::new(Int64Array::from(vec![42])))]),
        )
        .unwrap();
    assert_eq!(
        reply
            .unwrap()
            .column(0)
            .as_primitive::<Int64Type>()
            .value(0),
        42
    );

    if shm {
        let stats = &client.shm_route().expect("shm on").stats;
        assert!(
            stats.inbound_shm >= 2,
            "replies came through the segment: {stats:?}"
        );
        assert!(
            stats.outbound_shm >= 1,
            "inputs went through the segment: {stats:?}"
        );
        let segment = client.shm_route().unwrap().segment();
        assert_eq!(segment.allocation_count(), 0, "every region was freed");
        // The name went with the first data reply; everything above still used the segment.
        assert!(!segment.is_name_linked(), "the name outlived the attach");
        assert!(!Path::new("/dev/shm").join(segment.name()).exists());
    }
}

#[test]
fn against_reference_inline() {
    scenarios(&reference_worker(), false);
}

#[test]
fn against_reference_shm() {
    scenarios(&reference_worker(), true);
}

#[test]
fn against_ours_inline() {
    scenarios(&our_worker(), false);
}

#[test]
fn against_ours_shm() {
    scenarios(&our_worker(), true);
}
