//! Stream states that travel in their HTTP token: two replicas of one worker sharing a token
//! key, and a client whose every turn goes to the other replica (a round-robin load balancer
//! without stickiness). A scan (shared-work counter, the scan's own cursor and its
//! projection), a scalar and a table-in-out function with output pending on CONTINUE resume on
//! either replica with exact results; a scan whose state is a closure stays held and the other
//! replica refuses its turn, naming the holder.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::http::{HttpConfig, HttpOptions, HttpServer, TokenKey};
use quiver_rpc::{Client, ClientStream, Server, ServerConfig};
use quiver_vgi::{
    int64_value, Arg, BindRequest, Emitter, InOutState, InitRequest, RawArguments, RowReader,
    ScalarFunction, Scan, Sharing, TableFunction, TableInOutFunction, TableScan, Worker, CONTINUE,
    HAVE_MORE_OUTPUT, STATUS_KEY,
};
use quiver_wire::{BatchMetadata, ErrorReport};

fn int_schema(name: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(name, DataType::Int64, false)]))
}

/// Counts `next..end` three rows a batch; its position is one integer.
struct Countdown {
    next: i64,
    end: i64,
}

impl TableScan for Countdown {
    fn next_batch(&mut self, _: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        if self.next >= self.end {
            return Ok(None);
        }
        let stop = self.end.min(self.next + 3);
        let column = Int64Array::from_iter_values(self.next..stop);
        self.next = stop;
        Ok(Some(
            RecordBatch::try_new(int_schema("i"), vec![Arc::new(column)]).unwrap(),
        ))
    }

    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(self.next.to_be_bytes().to_vec())
    }
}

/// A running sum: each input row becomes the sum so far, in two output batches per input.
struct RunningSum {
    total: i64,
}

impl InOutState for RunningSum {
    fn process(&mut self, input: &RecordBatch, out: &mut Emitter) -> Result<(), ErrorReport> {
        let sums: Vec<i64> = input
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .iter()
            .map(|v| {
                self.total += v;
                self.total
            })
            .collect();
        let batch =
            RecordBatch::try_new(int_schema("x"), vec![Arc::new(Int64Array::from(sums))]).unwrap();
        let half = batch.num_rows() / 2;
        out.emit(batch.slice(0, half));
        out.emit(batch.slice(half, batch.num_rows() - half));
        Ok(())
    }

    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(self.total.to_be_bytes().to_vec())
    }
}

fn i64_of(bytes: &[u8]) -> Result<i64, ErrorReport> {
    let bytes: [u8; 8] = bytes
        .try_into()
        .map_err(|_| quiver_vgi::errors::invalid_argument("an 8-byte position"))?;
    Ok(i64::from_be_bytes(bytes))
}

fn worker() -> Worker {
    let twice = ScalarFunction::new("twice", DataType::Int64)
        .arg(Arg::new("x", DataType::Int64))
        .body(|input| {
            let x = input.columns[0].as_primitive::<Int64Type>();
            Ok(Arc::new(x.unary::<_, Int64Type>(|v| v * 2)) as ArrayRef)
        });
    let pair = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("neg", DataType::Int64, false),
    ]));
    let shared = TableFunction::new("shared_count")
        .arg(Arg::new("n", DataType::Int64).min(0))
        .output(pair.clone())
        .projection_pushdown()
        .filter_pushdown()
        .max_workers(4)
        .shared_work(|args| Ok(args.i64("n")? as u64))
        .resume(|_, _| Ok(SharedScan))
        .scan(|_| Ok(SharedScan));
    let countdown = TableFunction::new("countdown")
        .arg(Arg::new("n", DataType::Int64).min(0))
        .output(int_schema("i"))
        .resume(|init, bytes| {
            Ok(Countdown {
                next: i64_of(bytes)?,
                end: init.args.i64("n")?,
            })
        })
        .scan(|init| {
            Ok(Countdown {
                next: 0,
                end: init.args.i64("n")?,
            })
        });
    let closure = TableFunction::new("closure_count")
        .arg(Arg::new("n", DataType::Int64).min(0))
        .output(int_schema("i"))
        .scan(|init| {
            let mut state = Countdown {
                next: 0,
                end: init.args.i64("n")?,
            };
            Ok(move |scan: &mut Scan<'_>| state.next_batch(scan))
        });
    let running = TableInOutFunction::new("running_sum")
        .arg(Arg::table("data"))
        .output(int_schema("x"))
        .resume(|_, bytes| {
            Ok(RunningSum {
                total: i64_of(bytes)?,
            })
        })
        .state(|_| Ok(RunningSum { total: 0 }));
    Worker::new("test")
        .function(twice)
        .function(shared)
        .function(countdown)
        .function(closure)
        .function(running)
}

/// Claims three units of the shared counter per batch: its position is the counter's alone.
struct SharedScan;

impl TableScan for SharedScan {
    fn next_batch(&mut self, scan: &mut Scan<'_>) -> Result<Option<RecordBatch>, ErrorReport> {
        let Some(rows) = scan.claim(3)? else {
            return Ok(None);
        };
        let (start, end) = (rows.start as i64, rows.end as i64);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(start..end)),
            Arc::new(Int64Array::from_iter_values((start..end).map(|v| -v))),
        ];
        Ok(Some(
            RecordBatch::try_new(scan.output_schema().clone(), columns).unwrap(),
        ))
    }

    fn snapshot(&self) -> Option<Vec<u8>> {
        Some(Vec::new())
    }
}

/// Two replicas sharing a key, as `--http` runs them with `QUIVER_HTTP_TOKEN_KEY` set.
fn replicas() -> (HttpServer, HttpServer) {
    let config = HttpConfig {
        token_key: TokenKey::from_hex(&"3c".repeat(32)).unwrap(),
        ..HttpConfig::default()
    };
    let start = || {
        let server = Server::new(worker().service(Sharing::Carried), ServerConfig::default());
        HttpServer::start(Arc::new(server), "127.0.0.1:0", config.clone()).unwrap()
    };
    (start(), start())
}

/// Clients taking turns: [`switch`] sends a call's next request to the other replica.
struct Alternate {
    clients: Vec<Client>,
    at: usize,
}

impl AsMut<Client> for Alternate {
    fn as_mut(&mut self) -> &mut Client {
        &mut self.clients[self.at]
    }
}

/// The call's next turn goes to the other replica.
fn switch(call: &mut ClientStream<Alternate>) -> &mut ClientStream<Alternate> {
    let calls = call.holder_mut();
    calls.at = (calls.at + 1) % calls.clients.len();
    call
}

/// Clients of both replicas asking for the smallest responses, so that a scan of a few thousand
/// rows takes several turns (a turn carries as many batches as its cap holds).
fn alternate(a: &HttpServer, b: &HttpServer) -> Alternate {
    let options = HttpOptions {
        accept_max_response_bytes: Some(quiver_rpc::http::RESPONSE_BYTES_MIN),
        ..HttpOptions::default()
    };
    let client = |server: &HttpServer| {
        Client::http(&server.url(false), options.clone())
            .unwrap()
            .with_protocol("vgi.v2", "2.2.0")
    };
    Alternate {
        clients: vec![client(a), client(b)],
        at: 0,
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

fn bind(
    client: &mut Client,
    name: &str,
    kind: &str,
    input: Option<SchemaRef>,
    positional: Vec<ArrayRef>,
) -> InitRequest {
    let call = BindRequest {
        function_name: name.into(),
        arguments: RawArguments {
            positional,
            named: vec![],
        },
        function_type: kind.into(),
        input_schema: input,
        attach_opaque_data: None,
        schema_path: Some(vec!["main".into()]),
    };
    let reply = client
        .call("bind", &request(call.encode()))
        .unwrap()
        .unwrap();
    let bytes = reply.column(0).as_binary::<i32>().value(0).to_vec();
    let batch = quiver_vgi::ipc::decode_row(&bytes, "BindResponse").unwrap();
    let row = RowReader::new(&batch, "BindResponse");
    let output =
        quiver_vgi::ipc::decode_schema(row.bytes("output_schema").unwrap().unwrap(), "s").unwrap();
    InitRequest {
        bind_call: call,
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

fn open(calls: Alternate, init: &InitRequest) -> ClientStream<Alternate> {
    ClientStream::open(calls, "init", &request(init.encode()), true)
        .map_err(|(e, _)| e)
        .unwrap()
}

fn ints(batch: &RecordBatch) -> Vec<i64> {
    batch
        .column(0)
        .as_primitive::<Int64Type>()
        .values()
        .to_vec()
}

fn max_workers(call: &ClientStream<Alternate>) -> i64 {
    let header = call.header().expect("init sends a header");
    header.column(2).as_primitive::<Int64Type>().value(0)
}

fn drain(call: &mut ClientStream<Alternate>) -> Vec<i64> {
    let mut seen = Vec::new();
    while let Some(batch) = switch(call).tick().unwrap() {
        seen.extend(ints(&batch));
    }
    seen
}

#[test]
fn a_scan_resumes_on_either_replica_with_its_counter_and_projection() {
    let (a, b) = replicas();
    let mut calls = alternate(&a, &b);
    let mut init = bind(
        calls.as_mut(),
        "shared_count",
        "TABLE",
        None,
        vec![int64_value(20)],
    );
    init.projection_ids = Some(vec![1]);
    let mut call = open(calls, &init);
    assert_eq!(
        max_workers(&call),
        1,
        "a carried counter is the primary's alone"
    );
    assert_eq!(drain(&mut call), (0..20).map(|v| -v).collect::<Vec<_>>());

    // The scan's own cursor travels too: 3 rows a batch, many batches a turn, the turns
    // alternating between the replicas.
    let mut calls = alternate(&a, &b);
    let init = bind(
        calls.as_mut(),
        "countdown",
        "TABLE",
        None,
        vec![int64_value(3000)],
    );
    let mut call = open(calls, &init);
    assert_eq!(drain(&mut call), (0..3000).collect::<Vec<_>>());
}

#[test]
fn a_scalar_resumes_on_either_replica() {
    let (a, b) = replicas();
    let mut calls = alternate(&a, &b);
    let init = bind(
        calls.as_mut(),
        "twice",
        "SCALAR",
        Some(int_schema("x")),
        vec![],
    );
    let mut call = open(calls, &init);
    for values in [vec![1, 2, 3], vec![], vec![-5], vec![7, 8]] {
        let batch = RecordBatch::try_new(
            int_schema("x"),
            vec![Arc::new(Int64Array::from(values.clone()))],
        )
        .unwrap();
        let out = switch(&mut call).exchange(&batch).unwrap().unwrap();
        assert_eq!(ints(&out), values.iter().map(|v| v * 2).collect::<Vec<_>>());
    }
}

#[test]
fn a_table_in_out_state_and_its_pending_output_resume_on_either_replica() {
    let (a, b) = replicas();
    let mut calls = alternate(&a, &b);
    let mut init = bind(
        calls.as_mut(),
        "running_sum",
        "TABLE",
        Some(int_schema("x")),
        vec![],
    );
    init.phase = Some("INPUT".into());
    let mut call = open(calls, &init);
    let tick = RecordBatch::new_empty(int_schema("x"));
    let mut sums = Vec::new();
    for values in [vec![1, 2, 3, 4], vec![10, 20, 30]] {
        let batch = RecordBatch::try_new(int_schema("x"), vec![Arc::new(Int64Array::from(values))])
            .unwrap();
        let (first, metadata) = switch(&mut call)
            .exchange_with_metadata(&batch, BatchMetadata::new())
            .unwrap()
            .unwrap();
        assert_eq!(metadata.get(STATUS_KEY), Some(HAVE_MORE_OUTPUT));
        sums.extend(ints(&first));
        // The pending half is answered by the other replica, from the token.
        let more = BatchMetadata::from_pairs([(STATUS_KEY, CONTINUE)]);
        let (rest, metadata) = switch(&mut call)
            .exchange_with_metadata(&tick, more)
            .unwrap()
            .unwrap();
        assert_eq!(metadata.get(STATUS_KEY), None);
        sums.extend(ints(&rest));
    }
    assert_eq!(sums, [1, 3, 6, 10, 20, 40, 70]);
}

#[test]
fn a_scan_that_cannot_say_where_it_stands_stays_held_and_the_other_replica_names_it() {
    let (a, b) = replicas();
    let mut calls = alternate(&a, &b);
    let init = bind(
        calls.as_mut(),
        "closure_count",
        "TABLE",
        None,
        vec![int64_value(3000)],
    );
    let mut call = open(calls, &init);
    // The first turn's batches come from the holder; the next turn, on the other replica, is
    // refused.
    let mut taken = Vec::new();
    let refused = loop {
        match switch(&mut call).tick() {
            Ok(Some(batch)) => taken.extend(ints(&batch)),
            Ok(None) => panic!("the held scan ended on one replica"),
            Err(refused) => break refused,
        }
    };
    assert!(
        taken.len() > 3 && taken.len() < 3000,
        "{} rows",
        taken.len()
    );
    assert_eq!(taken, (0..taken.len() as i64).collect::<Vec<_>>());
    let message = &refused.remote().expect("the replica's refusal").message;
    assert!(message.contains("held by replica"), "{message}");
}
