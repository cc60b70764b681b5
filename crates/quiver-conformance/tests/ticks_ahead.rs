//! A producer read with ticks sent ahead (`ClientStream::set_ticks_ahead`), against
//! vgi-rpc's reference worker (`vgi-rpc-conformance`, Python, which reads one tick at a
//! time and cannot tell) and our own conformance worker. Batches, logs and a mid-stream
//! error arrive in tick order; closing or cancelling early leaves the worker serving;
//! ticks stay lockstep over shared memory and within the byte bound however many are asked.

mod common;

use common::{connect, our_worker, reference_worker};

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{Field, Schema};
use quiver_rpc::{Client, RpcError, TICK_BYTES_AHEAD_MAX};
use quiver_wire::BatchMetadata;

/// Ticks kept unanswered in these scenarios.
const AHEAD: usize = 8;

/// A generous bound on a scenario that must not hang (a noisy 2-core machine).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(120);

fn ints(fields: &[(&str, i64)]) -> RecordBatch {
    let schema = Schema::new(
        fields
            .iter()
            .map(|(name, _)| Field::new(*name, arrow_schema::DataType::Int64, false))
            .collect::<Vec<_>>(),
    );
    let columns: Vec<ArrayRef> = fields
        .iter()
        .map(|(_, value)| Arc::new(Int64Array::from(vec![*value])) as ArrayRef)
        .collect();
    RecordBatch::try_new(Arc::new(schema), columns).unwrap()
}

fn no_params() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

fn index(batch: &RecordBatch) -> i64 {
    batch
        .column_by_name("index")
        .expect("an index column")
        .as_primitive::<Int64Type>()
        .value(0)
}

/// The connection is in step: a unary call answers.
fn assert_serving(client: &mut Client) {
    let reply = client
        .call("echo_int", &ints(&[("value", 42)]))
        .unwrap()
        .expect("a result");
    assert_eq!(reply.column(0).as_primitive::<Int64Type>().value(0), 42);
}

/// `[produce_calls, exchange_calls, on_cancel_calls]` of the worker's cancel probe.
fn cancel_probe(client: &mut Client) -> Vec<i64> {
    let counters = client
        .call("cancel_probe_counters", &no_params())
        .unwrap()
        .expect("counters");
    let list = counters.column(0).as_list::<i32>().value(0);
    list.as_primitive::<Int64Type>().values().to_vec()
}

/// Runs `scenario` on a fresh connection to `worker`, failing if it outlives the deadline
/// (a deadlock between ticks and batches would otherwise hang the test).
fn within_deadline(worker: PathBuf, shm: bool, scenario: fn(&mut Client)) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let (_child, mut client) = connect(&worker, shm);
        scenario(&mut client);
        done.send(()).unwrap();
    });
    match finished.recv_timeout(SCENARIO_DEADLINE) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the scenario failed (see above)"),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the scenario hung"),
    }
}

fn whole_stream_in_order(client: &mut Client) {
    let mut stream = client
        .stream("produce_n", &ints(&[("count", 100)]), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    let mut seen = Vec::new();
    while let Some(batch) = stream.tick().unwrap() {
        seen.push(index(&batch));
    }
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
    assert!(stream.is_done());
    stream.close().unwrap();
    assert_serving(client);
}

fn logs_arrive_with_their_batches(client: &mut Client) {
    let mut stream = client
        .stream("produce_with_logs", &ints(&[("count", 5)]), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    for expected in 0..5 {
        let batch = stream.tick().unwrap().expect("a batch");
        assert_eq!(index(&batch), expected);
        let logs = stream.take_logs();
        let messages: Vec<&str> = logs.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(messages, [format!("producing batch {expected}")]);
    }
    assert!(stream.tick().unwrap().is_none());
    stream.close().unwrap();
    assert_serving(client);
}

fn error_after_its_batches(client: &mut Client) {
    let mut stream = client
        .stream(
            "produce_error_mid_stream",
            &ints(&[("emit_before_error", 3)]),
            false,
        )
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    for expected in 0..3 {
        assert_eq!(index(&stream.tick().unwrap().expect("a batch")), expected);
    }
    let error = stream.tick().unwrap_err();
    let report = error.remote().expect("the worker's error");
    assert_eq!(report.error_type, "RuntimeError");
    assert!(report.message.contains("after 3 batches"), "{report:?}");
    assert!(stream.is_done());
    drop(stream);
    assert_serving(client);
}

fn early_close_and_drop(client: &mut Client) {
    let mut stream = client
        .stream("produce_n", &ints(&[("count", 1000)]), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    for expected in 0..3 {
        assert_eq!(index(&stream.tick().unwrap().expect("a batch")), expected);
    }
    stream.close().unwrap();
    assert_serving(client);

    let mut stream = client
        .stream("produce_n", &ints(&[("count", 1000)]), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    stream.tick().unwrap().expect("a batch");
    drop(stream);
    assert_serving(client);
}

fn cancel_answers_the_ticks_sent_first(client: &mut Client) {
    client.call("reset_cancel_probe", &no_params()).unwrap();
    let mut stream = client
        .stream("cancellable_producer", &no_params(), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    for expected in 0..2 {
        assert_eq!(index(&stream.tick().unwrap().expect("a batch")), expected);
    }
    stream.cancel().unwrap();
    // The worker answered every tick sent before the cancel, then ran on_cancel once.
    assert_eq!(cancel_probe(client), [AHEAD as i64, 0, 1]);
    assert_serving(client);
}

fn a_lockstep_step_cannot_take_a_tick_ahead_answer(client: &mut Client) {
    let mut stream = client
        .stream("produce_tick_metadata", &ints(&[("count", 50)]), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    stream.tick().unwrap().expect("a batch");
    let tagged = BatchMetadata::from_pairs([("vgi.conformance.tick", "mine")]);
    let error = stream.tick_with_metadata(tagged).unwrap_err();
    assert!(
        matches!(&error, RpcError::Protocol(message) if message.contains("ticks sent ahead")),
        "{error}"
    );
    stream.close().unwrap();
    assert_serving(client);
}

fn the_window_is_bounded_in_bytes(client: &mut Client) {
    client.call("reset_cancel_probe", &no_params()).unwrap();
    let mut stream = client
        .stream("cancellable_producer", &no_params(), false)
        .unwrap();
    stream.set_ticks_ahead(1_000_000);
    stream.tick().unwrap().expect("a batch");
    stream.cancel().unwrap();
    let produced = cancel_probe(client)[0];
    // A tick is at least a 64-byte message, so no more than this many were ever unanswered.
    assert!(
        (2..=(TICK_BYTES_AHEAD_MAX / 64) as i64).contains(&produced),
        "{produced} ticks answered"
    );
    assert_serving(client);
}

fn large_batches_do_not_deadlock(client: &mut Client) {
    let params = ints(&[("rows_per_batch", 200_000), ("batch_count", 40)]);
    let mut stream = client
        .stream("produce_large_batches", &params, false)
        .unwrap();
    stream.set_ticks_ahead(usize::MAX);
    let mut rows = 0;
    while let Some(batch) = stream.tick().unwrap() {
        rows += batch.num_rows();
    }
    assert_eq!(rows, 200_000 * 40);
    stream.close().unwrap();
    assert_serving(client);
}

fn shm_keeps_ticks_lockstep(client: &mut Client) {
    client.call("reset_cancel_probe", &no_params()).unwrap();
    let mut stream = client
        .stream("cancellable_producer", &no_params(), false)
        .unwrap();
    stream.set_ticks_ahead(AHEAD);
    for _ in 0..2 {
        stream.tick().unwrap().expect("a batch");
    }
    stream.cancel().unwrap();
    assert_eq!(cancel_probe(client), [2, 0, 1]);
    assert_serving(client);
}

const INLINE_SCENARIOS: [fn(&mut Client); 8] = [
    whole_stream_in_order,
    logs_arrive_with_their_batches,
    error_after_its_batches,
    early_close_and_drop,
    cancel_answers_the_ticks_sent_first,
    a_lockstep_step_cannot_take_a_tick_ahead_answer,
    the_window_is_bounded_in_bytes,
    large_batches_do_not_deadlock,
];

#[test]
fn against_reference_inline() {
    for scenario in INLINE_SCENARIOS {
        within_deadline(reference_worker(), false, scenario);
    }
}

#[test]
fn against_ours_inline() {
    for scenario in INLINE_SCENARIOS {
        within_deadline(our_worker(), false, scenario);
    }
}

#[test]
fn against_reference_shm() {
    within_deadline(reference_worker(), true, shm_keeps_ticks_lockstep);
}

#[test]
fn against_ours_shm() {
    within_deadline(our_worker(), true, shm_keeps_ticks_lockstep);
}
