//! A shared-memory failure inside a call keeps its type on both sides: the client
//! sees `RpcError::Shm`, the server's session ends with `ConnectionError::Shm`,
//! each carrying the segment's own `ShmError`, not a sentence.

use std::io::Write;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{
    field, reply, Client, ConnectionError, Method, RpcError, Server, ServerConfig, Service,
    SessionEnd,
};
use quiver_shm::{Segment, ShmConfig, ShmError};
use quiver_transport::pipe_pair;
use quiver_wire::{keys, BatchMetadata, Limits, StreamReader, StreamWriter};

/// How long a wait on the other side may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);
const SEGMENT_BYTES: u64 = 1 << 20;

fn one_column() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
}

/// Metadata pointing at offset 0, where no allocation starts (the header lives there).
fn pointer_to_nothing() -> BatchMetadata {
    BatchMetadata::from_pairs([(keys::SHM_OFFSET, "0"), (keys::SHM_LENGTH, "8")])
}

#[test]
fn a_bad_pointer_in_a_reply_is_a_client_shm_error() {
    let (client_end, server_end) = pipe_pair().unwrap();
    // A peer that answers any request with a pointer to no allocation.
    let peer = thread::spawn(move || {
        let mut server_end = server_end;
        let reader = &mut server_end.reader;
        let mut request = StreamReader::begin(reader, Limits::DEFAULT)
            .unwrap()
            .expect("a request");
        request.drain(reader).unwrap();
        let mut out = Vec::new();
        let mut writer = StreamWriter::begin(&one_column(), &mut out).unwrap();
        let pointer = RecordBatch::new_empty(one_column());
        writer
            .write(&pointer, &pointer_to_nothing(), &mut out)
            .unwrap();
        writer.finish(&mut out);
        server_end.writer.write_all(&out).unwrap();
        server_end
    });
    let segment = Segment::create(SEGMENT_BYTES).unwrap();
    let config = ShmConfig {
        segment_size_bytes: Some(SEGMENT_BYTES),
        ..ShmConfig::default()
    };
    let mut client = Client::new(client_end)
        .with_protocol("Test", "1.0.0")
        .with_shm(segment, &config);
    let params = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let error = client.call("anything", &params).expect_err("a bad pointer");
    assert!(
        matches!(
            error,
            RpcError::Shm(ShmError::NoSuchAllocation { offset: 0 })
        ),
        "{error:?}"
    );
    drop(peer.join().unwrap());
}

#[test]
fn a_bad_pointer_in_a_request_ends_the_session_with_an_shm_error() {
    let service = Service::new("Test", "1.0.0").with(Method::unary(
        "take",
        vec![field("n", DataType::Int64, false)],
        None,
        |_, _| Ok(reply::void()),
    ));
    let (mut client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service, ServerConfig::default());
    let (done, ended) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(server.serve(server_end));
    });

    // The segment exists, so the server attaches it; the pointer is what is wrong.
    let segment = Segment::create(SEGMENT_BYTES).unwrap();
    let size = segment.size_bytes().to_string();
    let mut metadata = pointer_to_nothing();
    for (key, value) in [
        (keys::METHOD, "take"),
        (keys::REQUEST_VERSION_KEY, keys::REQUEST_VERSION),
        (keys::PROTOCOL, "Test"),
        (keys::PROTOCOL_VERSION, "1.0.0"),
        (keys::SHM_SEGMENT_NAME, segment.name()),
        (keys::SHM_SEGMENT_SIZE, size.as_str()),
    ] {
        metadata.insert(key, value);
    }
    let schema = Arc::new(Schema::new(vec![field("n", DataType::Int64, false)]));
    let pointer = RecordBatch::new_empty(schema.clone());
    let mut out = Vec::new();
    let mut writer = StreamWriter::begin(&schema, &mut out).unwrap();
    writer.write(&pointer, &metadata, &mut out).unwrap();
    writer.finish(&mut out);
    client_end.writer.write_all(&out).unwrap();

    let end = ended
        .recv_timeout(PATIENCE)
        .expect("the server's serve() did not return");
    assert!(
        matches!(
            end,
            SessionEnd::Failed(ConnectionError::Shm(ShmError::NoSuchAllocation {
                offset: 0
            }))
        ),
        "{end:?}"
    );
}
