//! Stream calls that own their client, and the peer's turn on the shm table.
//!
//! An owning call gives its client back in step after close, cancel, a remote error
//! at open, or an exhausted producer; the client then serves the next call. Every
//! read the client makes of the server happens while the segment's table is the
//! server's: the connection's reader checks the turn on each read.

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{
    field, CallContext, Client, ClientStream, Method, RpcError, Server, ServerConfig, Service,
    StreamOutput, StreamSetup, StreamState,
};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::{pipe_pair, Connection, TransportKind};
use quiver_wire::{BatchMetadata, ErrorReport, Limits, StreamReader};

/// Rows per batch: large enough that every batch goes through the segment.
const ROWS: i64 = 1 << 14;
const SEGMENT_BYTES: u64 = 16 << 20;

fn numbers_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
}

fn numbers(start: i64) -> RecordBatch {
    let column = Int64Array::from_iter_values(start..start + ROWS);
    RecordBatch::try_new(numbers_schema(), vec![Arc::new(column)]).unwrap()
}

/// Emits `left` batches, then finishes.
struct Countdown {
    left: i64,
}

impl StreamState for Countdown {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.left == 0 {
            out.finish();
        } else {
            self.left -= 1;
            out.emit(numbers(self.left));
        }
        Ok(())
    }
}

/// Answers each input batch with itself.
struct Echo;

impl StreamState for Echo {
    fn process(
        &mut self,
        input: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        out.emit(input.clone());
        Ok(())
    }
}

fn header_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "total",
        DataType::Int64,
        false,
    )]))
}

fn service() -> Service {
    Service::new("Streams", "1.0.0")
        .with(Method::stream(
            "countdown",
            vec![field("n", DataType::Int64, false)],
            None,
            |params, _| {
                let left = params.i64("n")?;
                Ok(StreamSetup::producer(numbers_schema(), Countdown { left }))
            },
        ))
        .with(Method::stream(
            "headed_countdown",
            vec![field("n", DataType::Int64, false)],
            Some(header_schema()),
            |params, _| {
                let left = params.i64("n")?;
                if left < 0 {
                    return Err(ErrorReport::new("ValueError", "n must not be negative"));
                }
                let header = RecordBatch::try_new(
                    header_schema(),
                    vec![Arc::new(Int64Array::from(vec![left]))],
                )
                .unwrap();
                Ok(StreamSetup::producer(numbers_schema(), Countdown { left }).with_header(header))
            },
        ))
        .with(Method::stream("echo", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(
                numbers_schema(),
                numbers_schema(),
                Echo,
            ))
        }))
}

fn n_params(n: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![field("n", DataType::Int64, false)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![n]))]).unwrap()
}

fn no_params() -> RecordBatch {
    RecordBatch::new_empty(Arc::new(Schema::empty()))
}

fn shm_config() -> ShmConfig {
    ShmConfig {
        segment_size_bytes: Some(SEGMENT_BYTES),
        min_batch_bytes: 0,
        ..ShmConfig::default()
    }
}

/// Counts the reads the client makes of the server, and those made outside the peer's turn.
#[derive(Clone, Default)]
struct ReadCounts {
    reads: Arc<AtomicUsize>,
    outside_peer_turn: Arc<AtomicUsize>,
}

struct TurnCheckingReader {
    inner: Box<dyn Read + Send>,
    segment: Arc<Segment>,
    counts: ReadCounts,
}

impl Read for TurnCheckingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.counts.reads.fetch_add(1, Ordering::Relaxed);
        if !self.segment.is_peer_turn() {
            self.counts
                .outside_peer_turn
                .fetch_add(1, Ordering::Relaxed);
        }
        self.inner.read(buf)
    }
}

/// A client with a segment, served on its own thread, whose every read is checked.
fn start() -> (Client, Arc<Segment>, ReadCounts) {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(
        service(),
        ServerConfig {
            shm: shm_config(),
            ..ServerConfig::default()
        },
    );
    thread::spawn(move || server.serve(server_end));
    let segment = Segment::create(SEGMENT_BYTES).unwrap();
    let counts = ReadCounts::default();
    let reader = TurnCheckingReader {
        inner: Box::new(client_end.reader),
        segment: segment.clone(),
        counts: counts.clone(),
    };
    let connection = Connection::new(
        Box::new(reader),
        client_end.writer,
        TransportKind::Pipe,
        "checked pipe",
    );
    let client = Client::new(connection)
        .with_protocol("Streams", "1.0.0")
        .with_shm(segment.clone(), &shm_config());
    (client, segment, counts)
}

fn first_value(batch: &RecordBatch) -> i64 {
    batch.column(0).as_primitive::<Int64Type>().value(0)
}

/// The client is in step: a fresh call runs to its end.
fn assert_serves(client: Client) -> Client {
    let mut call = ClientStream::open(client, "countdown", &n_params(2), false)
        .map_err(|(error, _)| error)
        .expect("a call after the previous one");
    assert_eq!(call.tick().unwrap().map(|b| first_value(&b)), Some(1));
    assert_eq!(call.tick().unwrap().map(|b| first_value(&b)), Some(0));
    assert!(call.tick().unwrap().is_none());
    assert!(call.is_done());
    call.release()
}

#[test]
fn an_owned_call_gives_its_client_back_in_step() {
    let (client, segment, _) = start();

    // Closed mid-stream: our end, then the server's.
    let mut call = ClientStream::open(client, "countdown", &n_params(5), false)
        .map_err(|(error, _)| error)
        .unwrap();
    let batch = call.tick().unwrap().expect("a batch");
    assert_eq!(first_value(&batch), 4);
    drop(batch);
    let (client, closed) = call.close_and_release();
    closed.unwrap();
    let client = assert_serves(client);

    // Cancelled mid-stream.
    let mut call = ClientStream::open(client, "countdown", &n_params(5), false)
        .map_err(|(error, _)| error)
        .unwrap();
    call.tick().unwrap().expect("a batch");
    let (client, cancelled) = call.cancel_and_release();
    cancelled.unwrap();
    let client = assert_serves(client);

    // A remote error at open (the header never comes): the client comes back in step.
    let (error, client) = match ClientStream::open(client, "headed_countdown", &n_params(-1), true)
    {
        Ok(_) => panic!("a negative count must fail the open"),
        Err(failed) => failed,
    };
    assert!(
        matches!(&error, RpcError::Remote(report) if report.message.contains("negative")),
        "{error}"
    );
    let client = assert_serves(client);

    // A header, then exchanges until the producer finishes.
    let mut call = ClientStream::open(client, "headed_countdown", &n_params(1), true)
        .map_err(|(error, _)| error)
        .unwrap();
    assert_eq!(call.header().map(first_value), Some(1));
    assert!(call.tick().unwrap().is_some());
    assert!(call.tick().unwrap().is_none());
    let client = assert_serves(call.release());
    assert!(!segment.is_peer_turn());
    drop(client);
}

#[test]
fn an_owned_call_with_ticks_ahead_gives_its_client_back_in_step() {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), ServerConfig::default());
    thread::spawn(move || server.serve(server_end));
    let client = Client::new(client_end).with_protocol("Streams", "1.0.0");

    // Closed after three batches: the batches of the ticks sent ahead are read and dropped.
    let mut call = ClientStream::open(client, "countdown", &n_params(20), false)
        .map_err(|(error, _)| error)
        .unwrap();
    call.set_ticks_ahead(8);
    for expected in [19, 18, 17] {
        assert_eq!(
            call.tick().unwrap().map(|b| first_value(&b)),
            Some(expected)
        );
    }
    let (client, closed) = call.close_and_release();
    closed.unwrap();
    let client = assert_serves(client);

    // Read to the end: the server's end comes once, in its place.
    let mut call = ClientStream::open(client, "countdown", &n_params(3), false)
        .map_err(|(error, _)| error)
        .unwrap();
    call.set_ticks_ahead(8);
    let values: Vec<i64> = std::iter::from_fn(|| call.tick().unwrap())
        .map(|b| first_value(&b))
        .collect();
    assert_eq!(values, [2, 1, 0]);
    assert!(call.is_done());
    let client = assert_serves(call.release());

    // Back to lockstep mid-stream: the ticks already sent are answered first, in order.
    let mut call = ClientStream::open(client, "countdown", &n_params(12), false)
        .map_err(|(error, _)| error)
        .unwrap();
    call.set_ticks_ahead(8);
    assert_eq!(call.tick().unwrap().map(|b| first_value(&b)), Some(11));
    call.set_ticks_ahead(1);
    let values: Vec<i64> = std::iter::from_fn(|| call.tick().unwrap())
        .map(|b| first_value(&b))
        .collect();
    assert_eq!(values, (0..11).rev().collect::<Vec<_>>());
    assert_serves(call.release());
}

#[test]
fn every_read_of_the_server_happens_in_its_turn() {
    let (mut client, segment, counts) = start();
    {
        let mut call = client.stream("echo", &no_params(), false).unwrap();
        // Hold answers across exchanges: their regions are released while the table may be
        // the server's, which the turn must defer.
        let mut held = Vec::new();
        for start in 0..4 {
            let answer = call.exchange(&numbers(start * ROWS)).unwrap().unwrap();
            assert_eq!(first_value(&answer), start * ROWS);
            held.push(answer);
        }
        held.clear();
        call.close().unwrap();
    }
    {
        let mut call = client.stream("countdown", &n_params(3), false).unwrap();
        call.tick().unwrap().expect("a batch");
        call.cancel().unwrap();
    }
    {
        // Dropped while open: closed in step by the borrowed form.
        let mut call = client
            .stream("headed_countdown", &n_params(3), true)
            .unwrap();
        call.tick().unwrap().expect("a batch");
    }
    let mut call = client.stream("countdown", &n_params(1), false).unwrap();
    // Asked for ticks ahead, a call over the segment still goes lockstep.
    call.set_ticks_ahead(8);
    while call.tick().unwrap().is_some() {}
    drop(call);

    assert!(counts.reads.load(Ordering::Relaxed) > 0, "no read was seen");
    assert_eq!(
        counts.outside_peer_turn.load(Ordering::Relaxed),
        0,
        "a read of the server happened while the table was ours"
    );
    assert!(
        !segment.is_peer_turn(),
        "the turn must come back after the call"
    );
    assert!(
        client.shm_route().unwrap().stats.inbound_shm > 0,
        "the test must route batches through the segment"
    );
}

#[test]
fn the_turn_comes_back_when_the_server_vanishes() {
    let (client_end, server_end) = pipe_pair().unwrap();
    // Reads the whole request, then hangs up without answering.
    let vanishing = thread::spawn(move || {
        let mut server_end = server_end;
        let reader = &mut server_end.reader;
        let mut request = StreamReader::begin(reader, Limits::DEFAULT)
            .unwrap()
            .expect("a request");
        request.drain(reader).unwrap();
        drop(server_end);
    });
    let segment = Segment::create(SEGMENT_BYTES).unwrap();
    let mut client = Client::new(client_end)
        .with_protocol("Streams", "1.0.0")
        .with_shm(segment.clone(), &shm_config());
    let error = client
        .stream("headed_countdown", &n_params(1), true)
        .err()
        .expect("nobody answers");
    vanishing.join().unwrap();
    assert!(
        matches!(&error, RpcError::Wire(e) if e.is_disconnect()),
        "{error}"
    );
    assert!(!segment.is_peer_turn());
}
