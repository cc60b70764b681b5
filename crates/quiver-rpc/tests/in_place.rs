//! Batches that already lie in shared memory cross without a copy: a batch built in a call's
//! output buffers, and a batch passed back as it was received, are framed in place and their
//! region is handed to the peer, which frees it. A batch still held elsewhere is copied.

use std::sync::{Arc, Mutex};
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{
    field, CallContext, Client, Method, Server, ServerConfig, Service, ShmRoute, StreamOutput,
    StreamSetup, StreamState,
};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::pipe_pair;
use quiver_wire::{keys, BatchMetadata, ErrorReport, Limits, Nullability};

const ROWS: usize = 1 << 18;
const SEGMENT_BYTES: u64 = 64 << 20;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
}

fn numbers(start: i64) -> RecordBatch {
    let values: Int64Array = (start..start + ROWS as i64).collect();
    RecordBatch::try_new(schema(), vec![Arc::new(values)]).unwrap()
}

fn first_value(batch: &RecordBatch) -> i64 {
    batch.column(0).as_primitive::<Int64Type>().value(0)
}

fn pointer_offset(metadata: &BatchMetadata) -> u64 {
    metadata.get(keys::SHM_OFFSET).unwrap().parse().unwrap()
}

fn pointer_length(metadata: &BatchMetadata) -> u64 {
    metadata.get(keys::SHM_LENGTH).unwrap().parse().unwrap()
}

/// The owner's route and the attaching peer's, over one segment.
fn two_routes() -> (Arc<Segment>, ShmRoute, ShmRoute) {
    let owner = Segment::create(SEGMENT_BYTES).unwrap();
    let peer = Segment::attach(owner.name(), SEGMENT_BYTES).unwrap();
    let config = ShmConfig::default();
    let routes = (
        ShmRoute::new(owner.clone(), &config),
        ShmRoute::new(peer, &config),
    );
    (owner, routes.0, routes.1)
}

fn resolve(route: &mut ShmRoute, pointer: (RecordBatch, BatchMetadata)) -> RecordBatch {
    let (batch, metadata) = pointer;
    let (offset, length) = (pointer_offset(&metadata), pointer_length(&metadata));
    let limits = Limits::DEFAULT;
    route
        .resolve(
            &batch,
            &metadata,
            offset,
            length,
            limits,
            Nullability::Enforced,
        )
        .unwrap()
        .0
}

#[test]
fn a_batch_passed_back_returns_in_the_region_it_came_in() {
    let (segment, mut engine, mut worker) = two_routes();
    let sent = engine
        .try_write(&numbers(7), &BatchMetadata::new())
        .unwrap()
        .expect("2 MiB goes through the segment");
    let sent_offset = pointer_offset(&sent.1);
    let received = resolve(&mut worker, sent);
    let returned = worker
        .try_write(&received, &BatchMetadata::new())
        .unwrap()
        .expect("through the segment");
    assert_eq!(
        pointer_offset(&returned.1),
        sent_offset,
        "the worker hands back the region it was given instead of copying into a new one"
    );
    drop(received);
    assert_eq!(
        segment.allocation_count(),
        1,
        "handed over: the worker's drop frees nothing"
    );
    let back = resolve(&mut engine, returned);
    assert_eq!(back, numbers(7));
    drop(back);
    assert_eq!(segment.allocation_count(), 0, "the reader freed it");
}

#[test]
fn a_batch_still_held_elsewhere_is_copied() {
    let (segment, mut engine, mut worker) = two_routes();
    let sent = engine
        .try_write(&numbers(3), &BatchMetadata::new())
        .unwrap()
        .unwrap();
    let sent_offset = pointer_offset(&sent.1);
    let received = resolve(&mut worker, sent);
    let kept = received.column(0).as_primitive::<Int64Type>().clone();
    let returned = worker
        .try_write(&received, &BatchMetadata::new())
        .unwrap()
        .unwrap();
    assert_ne!(pointer_offset(&returned.1), sent_offset, "copied");
    drop(received);
    assert_eq!(
        segment.allocation_count(),
        2,
        "the kept array still holds its region"
    );
    assert_eq!(resolve(&mut engine, returned), numbers(3));
    drop(kept);
    assert_eq!(segment.allocation_count(), 0);
}

#[test]
fn a_batch_built_in_a_leased_region_is_framed_in_place() {
    let (segment, mut engine, worker) = two_routes();
    let mut region = worker
        .segment()
        .lease_region(((ROWS * 8) + (32 << 10)) as u64)
        .unwrap();
    let region_offset = region.offset();
    assert!(region.reserve(16 << 10));
    let mut buffer = region.buffer(ROWS * 8).unwrap();
    for (i, value) in buffer.typed_data_mut::<i64>().iter_mut().enumerate() {
        *value = 11 + i as i64;
    }
    drop(region);
    let values = Int64Array::new(ScalarBuffer::new(buffer.into_buffer(), 0, ROWS), None);
    let batch = RecordBatch::try_new(schema(), vec![Arc::new(values)]).unwrap();
    let mut worker = worker;
    let pointer = worker
        .try_write(&batch, &BatchMetadata::new())
        .unwrap()
        .unwrap();
    assert_eq!(pointer_offset(&pointer.1), region_offset);
    drop(batch);
    let received = resolve(&mut engine, pointer);
    assert_eq!(received, numbers(11));
    let address = received
        .column(0)
        .as_primitive::<Int64Type>()
        .values()
        .as_ptr() as usize;
    assert_eq!(
        address - segment.mapping_address_range().start,
        region_offset as usize + (16 << 10),
        "the values are read where they were written"
    );
    drop(received);
    assert_eq!(segment.allocation_count(), 0);
}

/// Emits `batches` batches built in the call's output buffers.
struct Build {
    next: i64,
    batches: i64,
}

impl StreamState for Build {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        ctx: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.next == self.batches {
            out.finish();
            return Ok(());
        }
        let mut buffer = ctx
            .output_buffer(ROWS * 8)
            .expect("a segment with room and a buffer over the threshold");
        let start = self.next * ROWS as i64;
        for (i, value) in buffer.typed_data_mut::<i64>().iter_mut().enumerate() {
            *value = start + i as i64;
        }
        let values = Int64Array::new(ScalarBuffer::new(buffer.into_buffer(), 0, ROWS), None);
        out.emit(RecordBatch::try_new(schema(), vec![Arc::new(values)]).unwrap());
        self.next += 1;
        Ok(())
    }
}

/// Passes each input back; with `kept`, also keeps every input it saw.
struct Echo {
    kept: Option<Arc<Mutex<Vec<RecordBatch>>>>,
}

impl StreamState for Echo {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if let Some(kept) = &self.kept {
            kept.lock().unwrap().push(input.clone());
        }
        out.emit(input.clone());
        Ok(())
    }
}

fn serve(kept: Arc<Mutex<Vec<RecordBatch>>>) -> (Client, Arc<Segment>) {
    let unused = || vec![field("unused", DataType::Int64, true)];
    let service = Service::new("InPlace", "1.0.0")
        .with(Method::stream("build", unused(), None, |_, _| {
            Ok(StreamSetup::producer(
                schema(),
                Build {
                    next: 0,
                    batches: 4,
                },
            ))
        }))
        .with(Method::stream("echo", unused(), None, |_, _| {
            Ok(StreamSetup::exchange(
                schema(),
                schema(),
                Echo { kept: None },
            ))
        }))
        .with(Method::stream(
            "echo_keeping",
            unused(),
            None,
            move |_, _| {
                let kept = Some(kept.clone());
                Ok(StreamSetup::exchange(schema(), schema(), Echo { kept }))
            },
        ));
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service, ServerConfig::default());
    thread::spawn(move || server.serve(server_end));
    let segment = Segment::create(SEGMENT_BYTES).unwrap();
    let config = ShmConfig {
        segment_size_bytes: Some(SEGMENT_BYTES),
        ..ShmConfig::default()
    };
    let client = Client::new(client_end)
        .with_protocol("InPlace", "1.0.0")
        .with_shm(segment.clone(), &config);
    (client, segment)
}

fn params() -> RecordBatch {
    RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "unused",
            DataType::Int64,
            true,
        )])),
        vec![Arc::new(Int64Array::from(vec![None]))],
    )
    .unwrap()
}

#[test]
fn calls_build_and_pass_back_batches_in_shared_memory() {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let (mut client, segment) = serve(kept.clone());
    let mut stream = client.stream("build", &params(), false).unwrap();
    for index in 0..4 {
        let batch = stream.tick().unwrap().expect("four batches");
        assert_eq!(batch, numbers(index * ROWS as i64));
    }
    assert!(stream.tick().unwrap().is_none());
    stream.close().unwrap();
    assert_eq!(segment.allocation_count(), 0);

    for method in ["echo", "echo_keeping"] {
        let mut stream = client.stream(method, &params(), false).unwrap();
        for index in 0..6 {
            let echoed = stream.exchange(&numbers(index)).unwrap().unwrap();
            assert_eq!(echoed, numbers(index), "{method} batch {index}");
        }
        stream.close().unwrap();
    }
    // Had a kept input been handed back, later inputs would have reused its region.
    let kept = std::mem::take(&mut *kept.lock().unwrap());
    assert_eq!(kept.len(), 6);
    for (index, batch) in kept.iter().enumerate() {
        assert_eq!(
            first_value(batch),
            index as i64,
            "kept input {index} intact"
        );
        assert_eq!(batch, &numbers(index as i64));
    }
    // Dropped while the server waits for the client: freed when the server takes its turn.
    drop(kept);
    let mut stream = client.stream("build", &params(), false).unwrap();
    while stream.tick().unwrap().is_some() {}
    stream.close().unwrap();
    assert_eq!(segment.allocation_count(), 0);
}
