//! Plays the engine against a VGI worker binary over stdio and prints
//! throughput: a parallel `numbers(n)` scan (one worker process per connection,
//! as an engine launches them) or `upper_case` over generated strings.
//!
//! ```sh
//! cargo build --release -p quiver-allinone --example measure -p quiver-vgi
//! target/release/examples/measure target/release/quiver-allinone numbers 400000000 2
//! target/release/examples/measure target/release/quiver-allinone upper_case 20000000 65536
//! VGI_RPC_SHM_SIZE_BYTES=$((256<<20)) target/release/examples/measure ...   # through shared memory
//! ```

use std::sync::{mpsc, Arc};
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::Client;
use quiver_shm::ShmConfig;
use quiver_transport::{spawn, Child};
use quiver_vgi::{int64_value, ipc, BindRequest, InitRequest, RawArguments, RowReader};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: measure <worker> numbers <rows> <connections> | measure <worker> upper_case <rows> <batch_rows>";
    let [_, worker, workload, rows, extra] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let rows: u64 = rows.parse().expect("rows");
    let extra: usize = extra.parse().expect("a count");
    let shm = ShmConfig::from_env().expect("shm settings");
    match workload.as_str() {
        "numbers" => numbers(worker, rows, extra, &shm),
        "upper_case" => upper_case(worker, rows, extra, &shm),
        _ => eprintln!("{usage}"),
    }
}

fn connect(worker: &str, shm: &ShmConfig) -> (Child, Client) {
    let (child, connection) = spawn(worker, &[]).expect("spawn the worker");
    let client = Client::new(connection)
        .with_protocol(quiver_vgi::PROTOCOL_NAME, quiver_vgi::PROTOCOL_VERSION)
        .with_shm_from_config(shm)
        .expect("shm segment");
    (child, client)
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
    .expect("request")
}

fn bind(client: &mut Client, call: &BindRequest) -> SchemaRef {
    let reply = client
        .call("bind", &request(call.encode()))
        .expect("bind")
        .expect("a result");
    let batch = ipc::decode_row(reply.column(0).as_binary::<i32>().value(0), "BindResponse")
        .expect("decode");
    let row = RowReader::new(&batch, "BindResponse");
    ipc::decode_schema(
        row.bytes("output_schema").expect("bytes").expect("present"),
        "schema",
    )
    .expect("schema")
}

fn init_request(
    call: BindRequest,
    output: SchemaRef,
    execution_id: Option<Vec<u8>>,
) -> InitRequest {
    InitRequest {
        bind_call: call,
        output_schema: output,
        bind_opaque_data: None,
        projection_ids: None,
        pushdown_filters: None,
        phase: None,
        split_tokens: None,
        finalize_state_id: None,
        execution_id,
        init_opaque_data: None,
        substream_id: None,
    }
}

fn numbers_call(rows: u64) -> BindRequest {
    BindRequest {
        function_name: "numbers".into(),
        arguments: RawArguments {
            positional: vec![int64_value(rows as i64)],
            named: vec![],
        },
        function_type: "TABLE".into(),
        input_schema: None,
        attach_opaque_data: None,
        schema_path: Some(vec!["main".into()]),
    }
}

fn numbers(worker: &str, rows: u64, connections: usize, shm: &ShmConfig) {
    let mut clients: Vec<(Child, Client)> = (0..connections.max(1))
        .map(|_| connect(worker, shm))
        .collect();
    let started = Instant::now();
    let output = bind(&mut clients[0].1, &numbers_call(rows));
    // The primary's header carries the execution id the secondaries join.
    let (senders, receivers): (Vec<_>, Vec<_>) = (1..clients.len())
        .map(|_| mpsc::channel::<Vec<u8>>())
        .unzip();
    let mut receivers = receivers.into_iter();
    let totals: Vec<(u64, i128)> = std::thread::scope(|scope| {
        let mut senders = Some(senders);
        let handles: Vec<_> = clients
            .iter_mut()
            .enumerate()
            .map(|(index, (_, client))| {
                let output = output.clone();
                let role = match index {
                    0 => Role::Primary(senders.take().expect("one primary")),
                    _ => Role::Secondary(receivers.next().expect("one receiver per secondary")),
                };
                scope.spawn(move || drain(client, rows, output, role))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("connection thread"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let produced: u64 = totals.iter().map(|t| t.0).sum();
    let sum: i128 = totals.iter().map(|t| t.1).sum();
    assert_eq!(produced, rows, "every row exactly once");
    assert_eq!(
        sum,
        (rows as i128) * (rows as i128 - 1) / 2,
        "every value exactly once"
    );
    let per_connection: Vec<u64> = totals.iter().map(|t| t.0).collect();
    println!(
        "numbers({rows}) over {connections} stdio connection(s){}: {elapsed:.3} s, {:.0} Mrows/s, {:.0} MB/s (rows per connection {per_connection:?})",
        if shm.segment_to_create_bytes().is_some() { " + shm" } else { "" },
        rows as f64 / elapsed / 1e6,
        rows as f64 * 8.0 / elapsed / 1e6,
    );
}

enum Role {
    /// Opens the execution and tells every secondary its id.
    Primary(Vec<mpsc::Sender<Vec<u8>>>),
    /// Joins the execution named by the primary.
    Secondary(mpsc::Receiver<Vec<u8>>),
}

/// Inits one connection and ticks its stream to the end: `(rows, sum of values)`.
fn drain(client: &mut Client, rows: u64, output: SchemaRef, role: Role) -> (u64, i128) {
    let execution = match &role {
        Role::Primary(_) => None,
        Role::Secondary(receiver) => Some(receiver.recv().expect("the primary's execution id")),
    };
    let init = init_request(numbers_call(rows), output, execution);
    let mut stream = client
        .stream("init", &request(init.encode()), true)
        .expect("init");
    if let Role::Primary(senders) = role {
        let id = stream
            .header()
            .expect("header")
            .column(0)
            .as_binary::<i32>()
            .value(0)
            .to_vec();
        senders
            .iter()
            .for_each(|sender| sender.send(id.clone()).expect("a secondary waits"));
    }
    let (mut count, mut sum) = (0u64, 0i128);
    while let Some(batch) = stream.tick().expect("tick") {
        let values = batch.column(0).as_primitive::<Int64Type>();
        count += values.len() as u64;
        sum += values.values().iter().map(|v| *v as i128).sum::<i128>();
    }
    stream.close().expect("close");
    (count, sum)
}

fn upper_case(worker: &str, rows: u64, batch_rows: usize, shm: &ShmConfig) {
    let (_child, mut client) = connect(worker, shm);
    let input = Arc::new(Schema::new(vec![Field::new("value", DataType::Utf8, true)]));
    let call = || BindRequest {
        function_name: "upper_case".into(),
        arguments: RawArguments::default(),
        function_type: "SCALAR".into(),
        input_schema: Some(input.clone()),
        attach_opaque_data: None,
        schema_path: Some(vec!["main".into()]),
    };
    let output = bind(&mut client, &call());
    let batch_rows = batch_rows.max(1);
    let values: StringArray = (0..batch_rows).map(|i| Some(format!("row {i}"))).collect();
    let batch = RecordBatch::try_new(input.clone(), vec![Arc::new(values)]).expect("batch");
    let init = init_request(call(), output, None);
    let started = Instant::now();
    let mut stream = client
        .stream("init", &request(init.encode()), true)
        .expect("init");
    let mut done = 0u64;
    while done < rows {
        let out = stream
            .exchange(&batch)
            .expect("exchange")
            .expect("a result");
        assert_eq!(out.num_rows(), batch_rows);
        done += batch_rows as u64;
    }
    stream.close().expect("close");
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "upper_case over {done} rows in batches of {batch_rows}: {elapsed:.3} s, {:.1} Mrows/s",
        done as f64 / elapsed / 1e6
    );
}
