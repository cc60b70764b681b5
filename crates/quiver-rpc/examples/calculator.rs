//! A calculator service and a client in one process, over an OS pipe pair:
//! the smallest complete use of quiver-rpc. Prints the median latency of `add`.
//!
//! ```sh
//! cargo run --release -p quiver-rpc --example calculator -- 100000
//! ```

use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Float64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{field, reply, Client, Method, Server, ServerConfig, Service};
use quiver_transport::pipe_pair;

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let service = Service::new("Calculator", "1.0.0").with(Method::unary(
        "add",
        vec![
            field("a", DataType::Float64, false),
            field("b", DataType::Float64, false),
        ],
        Some(field("result", DataType::Float64, false)),
        |params, _| Ok(reply::f64(params.f64("a")? + params.f64("b")?)),
    ));
    let (client_end, server_end) = pipe_pair().expect("pipes");
    let server = Server::new(service, ServerConfig::default());
    std::thread::spawn(move || server.serve(server_end));

    let mut client = Client::new(client_end).with_protocol("Calculator", "1.0.0");
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Float64, false),
        Field::new("b", DataType::Float64, false),
    ]));
    let params = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Float64Array::from(vec![1.5])),
            Arc::new(Float64Array::from(vec![2.0])),
        ],
    )
    .expect("params");
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        client.call("add", &params).expect("add");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "add: {calls} calls, p50 {:?}, p99 {:?}",
        latencies[calls / 2],
        latencies[calls * 99 / 100]
    );
}
