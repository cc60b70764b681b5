//! Batches received through shared memory are decoded in place: the arrays'
//! buffers point into the segment mapping, and the region is freed when the last
//! array over it is dropped.

use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{
    field, CallContext, Client, Method, Server, ServerConfig, Service, StreamOutput, StreamSetup,
    StreamState,
};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::pipe_pair;
use quiver_wire::{BatchMetadata, ErrorReport};

const ROWS: i64 = 1 << 20;

struct Big {
    sent: bool,
}

impl StreamState for Big {
    fn process(
        &mut self,
        _: &RecordBatch,
        _: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        if self.sent {
            out.finish();
            return Ok(());
        }
        self.sent = true;
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        out.emit(
            RecordBatch::try_new(schema, vec![Arc::new((0..ROWS).collect::<Int64Array>())])
                .unwrap(),
        );
        Ok(())
    }
}

#[test]
fn shm_replies_decode_in_place_and_free_on_drop() {
    let service = Service::new("ZeroCopy", "1.0.0").with(Method::stream(
        "big",
        vec![field("unused", DataType::Int64, true)],
        None,
        |_, _| {
            let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
            Ok(StreamSetup::producer(schema, Big { sent: false }))
        },
    ));
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service, ServerConfig::default());
    thread::spawn(move || server.serve(server_end));

    let segment = Segment::create(64 << 20).unwrap();
    let mapping = segment.mapping_address_range();
    let config = ShmConfig {
        segment_size_bytes: Some(64 << 20),
        ..ShmConfig::default()
    };
    let mut client = Client::new(client_end)
        .with_protocol("ZeroCopy", "1.0.0")
        .with_shm(segment.clone(), &config);

    let params = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new(
            "unused",
            DataType::Int64,
            true,
        )])),
        vec![Arc::new(Int64Array::from(vec![None]))],
    )
    .unwrap();
    assert!(
        segment.is_name_linked(),
        "linked until the server has attached"
    );
    // The second call runs after the name is gone: the server must reuse its attachment.
    for call in 0..2 {
        let mut stream = client.stream("big", &params, false).unwrap();
        let batch = stream.tick().unwrap().expect("one batch");
        assert!(
            !segment.is_name_linked(),
            "call {call}: the name is unlinked once the server has replied"
        );
        let values = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(values.len() as i64, ROWS);
        assert_eq!(values.value(12345), 12345);
        let address = values.values().as_ptr() as usize;
        assert!(
            mapping.contains(&address),
            "call {call}: values at {address:#x} are not inside the segment {mapping:x?}"
        );
        assert_eq!(
            segment.allocation_count(),
            1,
            "the region stays allocated while the batch lives"
        );
        drop(batch);
        assert_eq!(
            segment.allocation_count(),
            0,
            "dropping the last array frees the region"
        );
        assert!(stream.tick().unwrap().is_none());
        stream.close().unwrap();
    }
    assert_eq!(client.shm_route().unwrap().stats.inbound_shm, 2);
}

#[test]
fn a_segment_over_the_process_budget_leaves_the_connection_inline() {
    let (client_end, _server_end) = pipe_pair().unwrap();
    let config = ShmConfig {
        segment_size_bytes: Some(64 << 20),
        process_max_bytes: 0,
        ..ShmConfig::default()
    };
    let client = Client::new(client_end)
        .with_shm_from_config(&config)
        .expect("over budget is not an error");
    assert!(client.shm_route().is_none());
    let (client_end, _server_end) = pipe_pair().unwrap();
    // The default budget (other tests of this binary hold at most one 64 MiB segment meanwhile).
    let config = ShmConfig {
        process_max_bytes: ShmConfig::default().process_max_bytes,
        ..config
    };
    let client = Client::new(client_end)
        .with_shm_from_config(&config)
        .unwrap();
    assert!(
        client.shm_route().is_some(),
        "within budget the segment is created"
    );
}
