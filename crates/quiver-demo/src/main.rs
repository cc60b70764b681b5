//! `./quiver demo`: quiver's RPC spine end to end. A Rust client drives the
//! conformance worker (a separate process) over stdio and a Unix socket: unary
//! calls, logs, errors, a producer with a header, an exchange, a cancel, and a
//! 16 MiB payload inline versus through shared memory.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{ArrayRef, Float64Array, Int64Array, LargeBinaryArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use clap::Parser;
use quiver_process::{read_announcement, Announcement, Child, StderrMode};
use quiver_rpc::{Client, RpcError};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::socket::connect_unix;
use quiver_transport::spawn;

const PROTOCOL: &str = "ConformanceService";
const VERSION: &str = "2.0.0";

/// Run the RPC demo.
#[derive(Parser)]
struct Args {
    /// The conformance worker binary (default: next to this one).
    #[arg(long)]
    worker: Option<PathBuf>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let worker = args
        .worker
        .unwrap_or_else(|| sibling("quiver-conformance-worker"));
    println!(
        "quiver demo: a Rust client and the conformance worker ({})\n",
        worker.display()
    );

    println!("== stdio: the worker is a child process on pipes");
    let (_child, connection) = spawn(worker.as_os_str(), &[])?;
    let mut client = Client::new(connection).with_protocol(PROTOCOL, VERSION);
    tour(&mut client)?;

    println!("\n== unix socket: one shared worker, launched with --unix");
    let directory = std::env::temp_dir().join(format!("quiver-demo-{}", std::process::id()));
    std::fs::create_dir_all(&directory)?;
    let socket = directory.join("worker.sock");
    let mut command = Command::new(&worker);
    command
        .args([
            "--unix".as_ref(),
            socket.as_os_str(),
            "--idle-timeout".as_ref(),
            "5".as_ref(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut launched = Child::spawn(command, StderrMode::Inherit)?;
    let stdout = launched.take_stdout().expect("piped");
    let announced = read_announcement(&stdout, Duration::from_secs(60), &|| false)?;
    println!("   worker says: {announced}");
    let Announcement::Unix(bound) = announced else {
        return Err(format!("the worker announced {announced}, not a socket").into());
    };
    let mut client = Client::new(connect_unix(&bound)?).with_protocol(PROTOCOL, VERSION);
    tour(&mut client)?;
    drop(client);
    launched.terminate(Duration::from_secs(2));
    let _ = std::fs::remove_dir_all(&directory);

    println!("\n== 16 MiB echo: inline pipe versus shared memory (median of 5)");
    for shm in [false, true] {
        let (_child, connection) = spawn(worker.as_os_str(), &[])?;
        let mut client = Client::new(connection).with_protocol(PROTOCOL, VERSION);
        if shm {
            let config = ShmConfig {
                segment_size_bytes: Some(128 << 20),
                ..ShmConfig::default()
            };
            client = client.with_shm(Segment::create(128 << 20)?, &config);
        }
        let seconds = echo_large(&mut client, 16 << 20, 5)?;
        let moved_mb = 2.0 * 16.0 * 1.048576;
        let route = if shm {
            "shared memory"
        } else {
            "inline pipe  "
        };
        println!(
            "   {route}: {:7.2} ms per round trip, {:6.0} MB/s (both directions)",
            seconds * 1e3,
            moved_mb / seconds
        );
    }
    println!(
        "\nEverything above crossed a process boundary as Arrow IPC, wire-compatible with vgi-rpc."
    );
    Ok(())
}

/// The same calls on any transport.
fn tour(client: &mut Client) -> Result<(), RpcError> {
    let started = Instant::now();
    let reply = client.call(
        "add_floats",
        &params(vec![("a", f64_array(1.5)), ("b", f64_array(2.25))]),
    )?;
    println!(
        "   add_floats(1.5, 2.25) = {}",
        reply
            .expect("value")
            .column(0)
            .as_primitive::<Float64Type>()
            .value(0)
    );

    let reply = client.call(
        "echo_with_multi_logs",
        &params(vec![("value", str_array("héllo"))]),
    )?;
    let logs: Vec<String> = client
        .take_logs()
        .iter()
        .map(|r| format!("{} {}", r.level.as_str(), r.message))
        .collect();
    println!(
        "   echo_with_multi_logs(\"héllo\") = {:?}, logs: {}",
        reply.expect("value").column(0).as_string::<i32>().value(0),
        logs.join(" | ")
    );

    match client.call(
        "raise_value_error",
        &params(vec![("message", str_array("bad input"))]),
    ) {
        Err(RpcError::Remote(report)) => println!("   raise_value_error -> remote {report}"),
        other => println!("   raise_value_error -> unexpected {other:?}"),
    }

    let producer_params = params(vec![("seed", i64_array(42)), ("count", i64_array(3))]);
    let mut stream = client.stream("produce_with_rich_header", &producer_params, true)?;
    let header = stream.header().expect("a header").clone();
    let mut values = Vec::new();
    while let Some(batch) = stream.tick()? {
        values.push(
            batch
                .column_by_name("value")
                .expect("value")
                .as_primitive::<Int64Type>()
                .value(0),
        );
    }
    stream.close()?;
    println!(
        "   produce_with_rich_header(42, 3): header str_field={:?}, batches {:?}",
        header
            .column_by_name("str_field")
            .expect("field")
            .as_string::<i32>()
            .value(0),
        values
    );

    let mut stream = client.stream(
        "exchange_scale",
        &params(vec![("factor", f64_array(3.0))]),
        false,
    )?;
    let input = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Float64,
            true,
        )])),
        vec![Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]))],
    )
    .expect("value batch");
    let output = stream.exchange(&input)?.expect("an output batch");
    stream.cancel()?;
    println!(
        "   exchange_scale(3.0): [1, 2, 3] -> {:?}, then cancelled",
        output
            .column(0)
            .as_primitive::<Float64Type>()
            .values()
            .as_ref()
    );
    println!(
        "   ({:.1} ms for the whole tour)",
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// Median seconds of `reps` echoes of `size_bytes`.
fn echo_large(client: &mut Client, size_bytes: usize, reps: usize) -> Result<f64, RpcError> {
    let payload = vec![0x5au8; size_bytes];
    let request = params(vec![(
        "value",
        Arc::new(LargeBinaryArray::from(vec![payload.as_slice()])) as ArrayRef,
    )]);
    client.call("echo_large_binary", &request)?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        let reply = client.call("echo_large_binary", &request)?.expect("value");
        times.push(started.elapsed().as_secs_f64());
        assert_eq!(
            reply.column(0).as_binary::<i64>().value(0).len(),
            size_bytes
        );
    }
    times.sort_by(f64::total_cmp);
    Ok(times[reps / 2])
}

fn params(fields: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let schema = Schema::new(
        fields
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), false))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(
        Arc::new(schema),
        fields.into_iter().map(|(_, array)| array).collect(),
    )
    .expect("params")
}

fn f64_array(value: f64) -> ArrayRef {
    Arc::new(Float64Array::from(vec![value]))
}

fn i64_array(value: i64) -> ArrayRef {
    Arc::new(Int64Array::from(vec![value]))
}

fn str_array(value: &str) -> ArrayRef {
    Arc::new(StringArray::from(vec![value]))
}

fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .unwrap_or_else(|| PathBuf::from(name))
}
