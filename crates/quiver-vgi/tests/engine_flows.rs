//! The SDK driven the way an engine drives a worker, in one process over pipes:
//! catalog discovery, bind, and the `init` state machines of every kind
//! (scalar exchange, table producer with a secondary connection, table-in-out
//! with HAVE_MORE_OUTPUT / CONTINUE and FINALIZE), plus bad requests that must
//! leave the connection serving.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{Client, RpcError, Server, ServerConfig, StreamCall};
use quiver_transport::pipe_pair;
use quiver_vgi::{
    int64_value, Arg, BindRequest, Emitter, InOutState, InitRequest, RawArguments, RowReader,
    ScalarFunction, Sharing, TableFunction, TableInOutFunction, Worker, CONTINUE, HAVE_MORE_OUTPUT,
    STATUS_KEY,
};
use quiver_wire::BatchMetadata;

fn int_schema(name: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, false)]))
}

/// Counts rows; at finalize emits the count as one row.
struct RowCounter {
    rows: i64,
}

impl InOutState for RowCounter {
    fn process(
        &mut self,
        input: &RecordBatch,
        out: &mut Emitter,
    ) -> Result<(), quiver_wire::ErrorReport> {
        self.rows += input.num_rows() as i64;
        // Two halves per input: exercises HAVE_MORE_OUTPUT / CONTINUE.
        let half = input.num_rows() / 2;
        out.emit(input.slice(0, half));
        out.emit(input.slice(half, input.num_rows() - half));
        Ok(())
    }

    fn finalize(&mut self, out: &mut Emitter) -> Result<(), quiver_wire::ErrorReport> {
        let column: ArrayRef = Arc::new(Int64Array::from(vec![-self.rows]));
        out.emit(RecordBatch::try_new(int_schema("x"), vec![column]).expect("one column"));
        Ok(())
    }
}

fn worker() -> Worker {
    let twice = ScalarFunction::new("twice", DataType::Int64)
        .doc("2x")
        .arg(Arg::new("x", DataType::Int64))
        .body(|input| {
            let x = input.columns[0].as_primitive::<Int64Type>();
            Ok(Arc::new(x.unary::<_, Int64Type>(|v| v * 2)) as ArrayRef)
        });
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("neg", DataType::Int64, false),
    ]));
    let count_to = TableFunction::new("count_to")
        .arg(Arg::new("n", DataType::Int64).min(0))
        .output(schema.clone())
        .projection_pushdown()
        .filter_pushdown()
        .max_workers(4)
        .shared_work(|args| Ok(args.i64("n")? as u64))
        .scan(move |_| {
            let schema = schema.clone();
            Ok(move |scan: &mut quiver_vgi::Scan<'_>| {
                let Some(rows) = scan.claim(3)? else {
                    return Ok(None);
                };
                let i = Int64Array::from_iter_values(rows.start as i64..rows.end as i64);
                let neg =
                    Int64Array::from_iter_values((rows.start as i64..rows.end as i64).map(|v| -v));
                Ok(Some(
                    RecordBatch::try_new(schema.clone(), vec![Arc::new(i), Arc::new(neg)]).unwrap(),
                ))
            })
        });
    let counter = TableInOutFunction::new("count_rows")
        .arg(Arg::table("data"))
        .state_with_finalize(|_| Ok(RowCounter { rows: 0 }));
    Worker::new("test")
        .function(twice)
        .function(count_to)
        .function(counter)
}

/// An engine-side connection to a server shared by every connection opened
/// from the same `Harness`.
struct Harness {
    server: Arc<Server>,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            server: Arc::new(Server::new(
                worker().service(Sharing::InProcess),
                ServerConfig::default(),
            )),
        }
    }

    fn connect(&self) -> Client {
        let (client_end, server_end) = pipe_pair().expect("pipes");
        let server = self.server.clone();
        std::thread::spawn(move || server.serve(server_end));
        Client::new(client_end).with_protocol("vgi.v2", "2.2.0")
    }
}

fn request(bytes: Vec<u8>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "request",
        DataType::Binary,
        false,
    )]));
    RecordBatch::try_new(
        schema,
        vec![Arc::new(BinaryArray::from(vec![bytes.as_slice()]))],
    )
    .unwrap()
}

fn bind_request(
    name: &str,
    function_type: &str,
    input: Option<SchemaRef>,
    positional: Vec<ArrayRef>,
) -> BindRequest {
    BindRequest {
        function_name: name.into(),
        arguments: RawArguments {
            positional,
            named: vec![],
        },
        function_type: function_type.into(),
        input_schema: input,
        attach_opaque_data: None,
        schema_path: Some(vec!["main".into()]),
    }
}

/// `bind`, returning the output schema.
fn bind(client: &mut Client, bind: &BindRequest) -> Result<SchemaRef, RpcError> {
    let reply = client
        .call("bind", &request(bind.encode()))?
        .expect("bind returns a value");
    let bytes = reply.column(0).as_binary::<i32>().value(0).to_vec();
    let batch = quiver_vgi::ipc::decode_row(&bytes, "BindResponse").unwrap();
    let row = RowReader::new(&batch, "BindResponse");
    Ok(
        quiver_vgi::ipc::decode_schema(row.bytes("output_schema").unwrap().unwrap(), "schema")
            .unwrap(),
    )
}

fn init_request(bind: BindRequest, output: SchemaRef) -> InitRequest {
    InitRequest {
        bind_call: bind,
        output_schema: output,
        bind_opaque_data: None,
        projection_ids: None,
        pushdown_filters: None,
        phase: None,
        split_tokens: None,
        finalize_state_id: None,
        execution_id: None,
        init_opaque_data: None,
        substream_id: None,
    }
}

/// `(execution_id, max_workers)` of an init header.
fn header_of(call: &StreamCall<'_>) -> (Vec<u8>, i64) {
    let header = call.header().expect("init sends a header");
    let id = header.column(0).as_binary::<i32>().value(0).to_vec();
    let max_workers = header.column(2).as_primitive::<Int64Type>().value(0);
    (id, max_workers)
}

fn ints(batch: &RecordBatch, column: usize) -> Vec<i64> {
    batch
        .column(column)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

#[test]
fn scalar_exchange_keeps_row_counts() {
    let harness = Harness::new();
    let mut client = harness.connect();
    let input = int_schema("value");
    let call = bind_request("twice", "SCALAR", Some(input.clone()), vec![]);
    let output = bind(&mut client, &call).unwrap();
    assert_eq!(output.field(0).name(), "result");
    let init = init_request(call, output);
    let mut stream = client
        .stream("init", &request(init.encode()), true)
        .unwrap();
    let (id, max_workers) = header_of(&stream);
    assert_eq!((id.len(), max_workers), (16, 99_999));
    for values in [vec![1, 2, 3], vec![], vec![-5]] {
        let batch = RecordBatch::try_new(
            input.clone(),
            vec![Arc::new(Int64Array::from(values.clone()))],
        )
        .unwrap();
        let out = stream.exchange(&batch).unwrap().unwrap();
        assert_eq!(
            ints(&out, 0),
            values.iter().map(|v| v * 2).collect::<Vec<_>>()
        );
    }
    stream.close().unwrap();
}

#[test]
fn parallel_scan_produces_every_value_once() {
    let harness = Harness::new();
    let mut primary = harness.connect();
    let mut secondary = harness.connect();
    let call = bind_request("count_to", "TABLE", None, vec![int64_value(100)]);
    let output = bind(&mut primary, &call).unwrap();
    let mut init = init_request(call, output.clone());
    init.projection_ids = Some(vec![0]);
    let mut first = primary
        .stream("init", &request(init.encode()), true)
        .unwrap();
    let (id, max_workers) = header_of(&first);
    assert_eq!(max_workers, 4);
    init.execution_id = Some(id.clone());
    let mut second = secondary
        .stream("init", &request(init.encode()), true)
        .unwrap();
    assert_eq!(
        header_of(&second).0,
        id,
        "a secondary echoes the execution id"
    );
    let mut seen = Vec::new();
    let (mut first_done, mut second_done) = (false, false);
    while !(first_done && second_done) {
        for (stream, done) in [
            (&mut first, &mut first_done),
            (&mut second, &mut second_done),
        ] {
            if *done {
                continue;
            }
            match stream.tick().unwrap() {
                Some(batch) => {
                    assert_eq!(batch.num_columns(), 1, "projected to column i");
                    seen.extend(ints(&batch, 0));
                }
                None => *done = true,
            }
        }
    }
    first.close().unwrap();
    second.close().unwrap();
    seen.sort_unstable();
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
}

#[test]
fn table_in_out_pages_output_and_finalizes() {
    let harness = Harness::new();
    let mut client = harness.connect();
    let input = int_schema("x");
    let call = bind_request("count_rows", "TABLE", Some(input.clone()), vec![]);
    let output = bind(&mut client, &call).unwrap();
    let mut init = init_request(call, output.clone());
    init.phase = Some("INPUT".into());
    init.substream_id = Some(vec![9; 16]);
    let execution = {
        let mut stream = client
            .stream("init", &request(init.encode()), true)
            .unwrap();
        let (execution, _) = header_of(&stream);
        let batch = RecordBatch::try_new(
            input.clone(),
            vec![Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5]))],
        )
        .unwrap();
        let (first, metadata) = stream
            .exchange_with_metadata(&batch, BatchMetadata::new())
            .unwrap()
            .unwrap();
        assert_eq!(ints(&first, 0), [1, 2]);
        assert_eq!(metadata.get(STATUS_KEY), Some(HAVE_MORE_OUTPUT));
        let tick = RecordBatch::new_empty(input.clone());
        let more = BatchMetadata::from_pairs([(STATUS_KEY, CONTINUE)]);
        let (rest, metadata) = stream.exchange_with_metadata(&tick, more).unwrap().unwrap();
        assert_eq!(ints(&rest, 0), [3, 4, 5]);
        assert_eq!(metadata.get(STATUS_KEY), None);
        // New input while nothing is pending is fine; CONTINUE now is refused.
        let batch =
            RecordBatch::try_new(input.clone(), vec![Arc::new(Int64Array::from(vec![6, 7]))])
                .unwrap();
        let (first, _) = stream
            .exchange_with_metadata(&batch, BatchMetadata::new())
            .unwrap()
            .unwrap();
        assert_eq!(ints(&first, 0), [6]);
        let (rest, _) = stream
            .exchange_with_metadata(&tick, BatchMetadata::from_pairs([(STATUS_KEY, CONTINUE)]))
            .unwrap()
            .unwrap();
        assert_eq!(ints(&rest, 0), [7]);
        stream.close().unwrap();
        execution
    };
    init.phase = Some("FINALIZE".into());
    init.execution_id = Some(execution);
    let mut stream = client
        .stream("init", &request(init.encode()), true)
        .unwrap();
    let last = stream.tick().unwrap().unwrap();
    assert_eq!(
        ints(&last, 0),
        [-7],
        "finalize sees the INPUT phase's state"
    );
    assert!(stream.tick().unwrap().is_none());
    stream.close().unwrap();
}

#[test]
fn bad_requests_get_clear_errors_and_the_connection_keeps_serving() {
    let harness = Harness::new();
    let mut client = harness.connect();
    let remote = |result: Result<SchemaRef, RpcError>| match result {
        Err(RpcError::Remote(report)) => report,
        other => panic!("expected a remote error, got {other:?}"),
    };
    let unknown = remote(bind(
        &mut client,
        &bind_request("nope", "TABLE", None, vec![]),
    ));
    assert_eq!(unknown.error_type, "NotFoundError");
    assert!(
        unknown
            .message
            .contains("Available functions: ['count_rows', 'count_to', 'twice']"),
        "{unknown}"
    );
    let wrong_kind = remote(bind(
        &mut client,
        &bind_request("count_to", "SCALAR", None, vec![int64_value(1)]),
    ));
    assert!(
        wrong_kind
            .message
            .contains("is a table function, but was bound as SCALAR"),
        "{wrong_kind}"
    );
    let missing = remote(bind(
        &mut client,
        &bind_request("count_to", "TABLE", None, vec![]),
    ));
    assert!(
        missing.message.contains("missing argument 0 'n'"),
        "{missing}"
    );
    let too_many = remote(bind(
        &mut client,
        &bind_request(
            "count_to",
            "TABLE",
            None,
            vec![int64_value(1), int64_value(2)],
        ),
    ));
    assert!(
        too_many.message.contains("takes 1 positional"),
        "{too_many}"
    );

    // An init that fails answers an error stream in place of the header.
    let call = bind_request("count_rows", "TABLE", Some(int_schema("x")), vec![]);
    let output = bind(&mut client, &call).unwrap();
    let init = init_request(call, output);
    match client.stream("init", &request(init.encode()), true) {
        Err(RpcError::Remote(report)) => assert!(
            report.message.contains("requires an input row stream"),
            "{report}"
        ),
        Err(other) => panic!("unexpected {other:?}"),
        Ok(_) => panic!("a table-in-out init without a phase must fail"),
    }

    // Still serving.
    let call = bind_request("count_to", "TABLE", None, vec![int64_value(2)]);
    let output = bind(&mut client, &call).unwrap();
    let mut stream = client
        .stream("init", &request(init_request(call, output).encode()), true)
        .unwrap();
    assert_eq!(ints(&stream.tick().unwrap().unwrap(), 0), [0, 1]);
    assert!(stream.tick().unwrap().is_none());
    stream.close().unwrap();
}

#[test]
fn catalog_lists_functions_by_kind() {
    let harness = Harness::new();
    let mut client = harness.connect();
    let empty = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let catalogs = client.call("catalog_catalogs", &empty).unwrap().unwrap();
    assert_eq!(catalogs.num_rows(), 1);
    let attach = RowReader::new(
        &quiver_vgi::ipc::decode_row(
            client
                .call(
                    "catalog_attach",
                    &request(quiver_vgi::ipc::encode_batch(
                        &quiver_vgi::RowBuilder::new(
                            quiver_vgi::schemas::CATALOG_ATTACH_REQUEST.clone(),
                        )
                        .str("name", Some("test"))
                        .finish(),
                    )),
                )
                .unwrap()
                .unwrap()
                .column(0)
                .as_binary::<i32>()
                .value(0),
            "CatalogAttachResult",
        )
        .unwrap(),
        "CatalogAttachResult",
    )
    .bytes("attach_opaque_data")
    .unwrap()
    .unwrap()
    .to_vec();
    let schema = Arc::new(Schema::new(vec![
        Field::new("attach_opaque_data", DataType::Binary, false),
        Field::new("path", quiver_vgi::schemas::list_of(DataType::Utf8), false),
        Field::new("type", quiver_vgi::schemas::enum_type(), false),
        Field::new("transaction_opaque_data", DataType::Binary, true),
    ]));
    let list = |kind: &str, client: &mut Client| -> usize {
        let batch = quiver_vgi::RowBuilder::new(schema.clone())
            .bytes("attach_opaque_data", Some(&attach))
            .strs("path", &["main"])
            .str("type", Some(kind))
            .finish();
        let reply = client
            .call("catalog_schema_contents_functions", &batch)
            .unwrap()
            .unwrap();
        let bytes = reply.column(0).as_binary::<i32>().value(0).to_vec();
        let items = quiver_vgi::ipc::decode_row(&bytes, "FunctionsResponse").unwrap();
        items.column(0).as_list::<i32>().value(0).len()
    };
    assert_eq!(list("SCALAR_FUNCTION", &mut client), 1);
    assert_eq!(list("TABLE_FUNCTION", &mut client), 2);
    assert_eq!(list("AGGREGATE_FUNCTION", &mut client), 0);
    // A token this worker did not mint is refused.
    let batch = quiver_vgi::RowBuilder::new(schema.clone())
        .bytes("attach_opaque_data", Some(b"forged"))
        .strs("path", &["main"])
        .str("type", Some("TABLE_FUNCTION"))
        .finish();
    match client.call("catalog_schema_contents_functions", &batch) {
        Err(RpcError::Remote(report)) => {
            assert_eq!(report.kind.as_deref(), Some("opaque_data_not_recognized"))
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Unimplemented vgi.v2 methods (the optional statistics) are method_not_implemented.
    match client.call("table_function_statistics", &request(vec![])) {
        Err(RpcError::Remote(report)) => {
            assert_eq!(report.kind.as_deref(), Some("method_not_implemented"))
        }
        other => panic!("expected method_not_implemented, got {other:?}"),
    }
}
