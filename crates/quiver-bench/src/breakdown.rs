//! Where a 16 MiB batch's time goes: the steps of quiver's inline and shm paths,
//! each timed alone in this process through the same public functions
//! `quiver-rpc` calls, so the end-to-end figures can be read against memcpy.
//!
//! * `encode-gather`: `encode_stream` into a `GatherBuffer`, which records the
//!   batch's own buffers instead of copying them (both senders start here).
//! * `gather-into-segment`: encode into a `GatherBuffer`, allocate a region,
//!   `GatherBuffer::write_to` a `region_writer`, free: the whole shm sender, whose
//!   one copy is the body into the segment.
//! * `encode-into-vec`: `encode_stream` into a reused `Vec` (a copy of the body;
//!   what a sender without the gather path pays).
//! * `resolve-from-segment`: `claim_buffer` + `decode_region` + drop (the shm
//!   reader; zero-copy, so a fixed cost).
//! * `zeroed-receive-buffer`: a zeroed 16 MiB `MutableBuffer`, what the inline
//!   reader allocates before `read_exact` fills it from the pipe.
//!
//! And the CPU floor of one unary `add` call, with the transport taken away: a
//! `Server` serving requests from memory into a sink (`unary-server-cpu`), and a
//! `Client` calling against replies recorded in memory (`unary-client-cpu`). Their
//! sum plus a raw round trip is what a call over a pipe cannot go below.

use std::hint::black_box;
use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_buffer::MutableBuffer;
use quiver_rpc::{Client, Server, ServerConfig};
use quiver_shm::Segment;
use quiver_transport::{Connection, TransportKind};
use quiver_wire::{decode_region, encode_stream, keys, BatchMetadata, GatherBuffer, Limits};

use crate::placement::ONE_THREAD;
use crate::plan::{implementation, Measurement, Plan};
use crate::quiver_runs::BenchResult;
use crate::service::{add_params, large_batch, service, PROTOCOL_NAME, PROTOCOL_VERSION};
use crate::stats::{time_rep, try_time_rep, Rep};

/// Every step, in the order above.
pub fn run_all(plan: &Plan) -> BenchResult<Vec<Measurement>> {
    let batch = large_batch();
    let schema = batch.schema();
    let one = [(batch.clone(), BatchMetadata::new())];
    let bytes = plan.large_bytes();
    let ops = plan.large_ops * 2;
    let step = |name: &str| Measurement {
        workload: format!("breakdown.{name}"),
        variant: name.to_string(),
        transport: "memory".to_string(),
        implementation: implementation::QUIVER.to_string(),
        placement: ONE_THREAD.to_string(),
        rows_per_op: plan.large_rows,
        bytes_per_op: bytes,
        reps: Vec::new(),
    };
    let mut out = Vec::new();

    let mut m = step("encode-gather");
    let mut gather = GatherBuffer::new();
    for _ in 0..plan.reps {
        m.reps.push(try_time_rep(ops, || {
            gather.clear();
            encode_stream(&schema, &one, &mut gather)
        })?);
    }
    out.push(m);
    let encoded_len = gather.len() as u64;

    let segment = Segment::create(plan.shm_segment_bytes)?;
    let mut m = step("gather-into-segment");
    for _ in 0..plan.reps {
        m.reps.push(try_time_rep(ops, || -> BenchResult<()> {
            // `write_to` drains the gather, so each step encodes afresh (the
            // encode is the fixed cost measured above).
            gather.clear();
            encode_stream(&schema, &one, &mut gather)?;
            let offset = segment.allocate(encoded_len).ok_or("segment full")?;
            gather.write_to(&mut segment.region_writer(offset)?)?;
            segment.free(offset, encoded_len)?;
            Ok(())
        })?);
    }
    out.push(m);

    let mut m = step("encode-into-vec");
    let mut vec: Vec<u8> = Vec::with_capacity(encoded_len as usize);
    for _ in 0..plan.reps {
        m.reps.push(try_time_rep(ops, || {
            vec.clear();
            encode_stream(&schema, &one, &mut vec)?;
            black_box(&vec);
            Ok::<_, quiver_wire::WireError>(())
        })?);
    }
    out.push(m);

    let mut m = step("resolve-from-segment");
    gather.clear();
    encode_stream(&schema, &one, &mut gather)?;
    let offset = segment.allocate(encoded_len).ok_or("segment full")?;
    gather.write_to(&mut segment.region_writer(offset)?)?;
    for _ in 0..plan.reps {
        m.reps.push(try_time_rep(ops, || -> BenchResult<()> {
            // Dropping the decoded batch frees the region (the reader frees);
            // allocating again gets the same offset back for the next claim.
            let buffer = segment.claim_buffer(offset, encoded_len)?;
            let (_, batches) = decode_region(buffer, &schema, Limits::DEFAULT)?;
            black_box(batches[0].0.num_rows());
            drop(batches);
            let again = segment.allocate(encoded_len).ok_or("segment full")?;
            if again != offset {
                return Err(format!("re-allocation moved from {offset} to {again}").into());
            }
            Ok(())
        })?);
    }
    out.push(m);

    let mut m = step("zeroed-receive-buffer");
    for _ in 0..plan.reps {
        m.reps.push(time_rep(ops, || {
            let buffer = MutableBuffer::from_len_zeroed(bytes as usize);
            black_box(buffer.as_slice()[bytes as usize / 2]);
        }));
    }
    out.push(m);
    out.extend(unary_cpu(plan)?);
    Ok(out)
}

/// A `Write` whose bytes can be read back after the writer was boxed away.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<u8>>>);

impl Write for Recorder {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("recorder lock")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn memory_connection(input: Vec<u8>, output: Box<dyn Write + Send>) -> Connection {
    Connection::new(
        Box::new(Cursor::new(input)),
        output,
        TransportKind::Pipe,
        "memory",
    )
}

/// Server and client CPU per unary `add` call, without a transport.
fn unary_cpu(plan: &Plan) -> BenchResult<Vec<Measurement>> {
    let params = add_params(1.0, 2.0);
    let metadata = BatchMetadata::from_pairs([
        (keys::METHOD, "add"),
        (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        (keys::PROTOCOL, PROTOCOL_NAME),
        (keys::PROTOCOL_VERSION, PROTOCOL_VERSION),
    ]);
    let mut request = Vec::new();
    encode_stream(
        params.schema_ref(),
        &[(params.clone(), metadata)],
        &mut request,
    )?;
    let server = Server::new(service(), ServerConfig::default());
    let recorder = Recorder::default();
    server.serve(memory_connection(
        request.clone(),
        Box::new(recorder.clone()),
    ));
    let reply = recorder.0.lock().expect("recorder lock").clone();
    if reply.is_empty() {
        return Err("the in-memory server wrote no reply".into());
    }

    let calls = plan.unary_ops as usize;
    let mut server_cpu = cpu_measurement("unary-server-cpu", plan);
    let mut client_cpu = cpu_measurement("unary-client-cpu", plan);
    for _ in 0..plan.reps {
        // Server: `calls` requests back to back, served into a sink; one rep is one
        // serve, so per-call figures are means (p50 = p99 = mean).
        let requests = request.repeat(calls);
        let started = Instant::now();
        server.serve(memory_connection(requests, Box::new(std::io::sink())));
        let total_s = started.elapsed().as_secs_f64();
        let mean_s = total_s / calls as f64;
        server_cpu.reps.push(Rep {
            ops: calls as u64,
            total_s,
            p50_s: mean_s,
            p99_s: mean_s,
        });

        let mut client = Client::new(memory_connection(
            reply.repeat(calls),
            Box::new(std::io::sink()),
        ))
        .with_protocol(PROTOCOL_NAME, PROTOCOL_VERSION);
        client_cpu
            .reps
            .push(try_time_rep(calls as u64, || -> BenchResult<()> {
                black_box(client.call("add", &params)?.ok_or("no result")?);
                Ok(())
            })?);
    }
    Ok(vec![server_cpu, client_cpu])
}

fn cpu_measurement(name: &str, _plan: &Plan) -> Measurement {
    Measurement {
        workload: format!("breakdown.{name}"),
        variant: name.to_string(),
        transport: "memory".to_string(),
        implementation: implementation::QUIVER.to_string(),
        placement: ONE_THREAD.to_string(),
        rows_per_op: 1,
        bytes_per_op: 16,
        reps: Vec::new(),
    }
}
