//! `vgi_rpc.Reflection.v1` over a real connection: the listing names the hosted
//! protocol then reflection, `describe` returns each method's shape with its
//! schemas as decodable IPC, and an unknown protocol is a typed refusal after
//! which the connection keeps serving.

use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::reflection::REFLECTION_PROTOCOL;
use quiver_rpc::{
    field, protocol_hash, reply, Client, Method, RpcError, Server, ServerConfig, Service,
    StreamKind,
};
use quiver_transport::pipe_pair;
use quiver_wire::{decode_stream, empty_schema, Limits};

fn calculator() -> Service {
    Service::new("Calculator", "1.2.0")
        .with(Method::unary(
            "add",
            vec![
                field("a", DataType::Float64, false),
                field("b", DataType::Float64, false),
            ],
            Some(field("result", DataType::Float64, false)),
            |params, _| Ok(reply::f64(params.f64("a")? + params.f64("b")?)),
        ))
        .with(
            Method::stream("ticks", vec![], None, |_, _| {
                Err(quiver_wire::ErrorReport::new("RuntimeError", "unused"))
            })
            .with_stream_kind(StreamKind::Producer),
        )
}

/// The one-row dataclass a reflection reply carries in its `result` column.
fn dataclass(reply: Option<RecordBatch>) -> RecordBatch {
    let reply = reply.expect("reflection returns a value");
    let bytes = reply.column(0).as_binary::<i32>().value(0).to_vec();
    let (_, mut batches) = decode_stream(Buffer::from(bytes), Limits::DEFAULT).unwrap();
    assert_eq!(batches.len(), 1);
    let batch = batches.pop().unwrap().0;
    assert_eq!(batch.num_rows(), 1);
    batch
}

fn strings(array: &dyn Array) -> Vec<String> {
    let array = array.as_string::<i32>();
    (0..array.len())
        .map(|i| array.value(i).to_string())
        .collect()
}

#[test]
fn lists_and_describes_the_hosted_protocol() {
    let expected_hash = protocol_hash(&calculator()).unwrap();
    let (client_side, server_side) = pipe_pair().unwrap();
    let server = Server::new(calculator(), ServerConfig::default());
    let serving = thread::spawn(move || server.serve(server_side));
    // A client of some other version still reaches reflection: no version gate.
    let mut client = Client::new(client_side).with_protocol(REFLECTION_PROTOCOL, "9.9.0");

    let empty = RecordBatch::new_empty(empty_schema());
    let listing = dataclass(client.call("list_protocols", &empty).unwrap());
    let protocols = listing
        .column_by_name("protocols")
        .unwrap()
        .as_list::<i32>();
    let summaries = protocols.value(0);
    let summaries = summaries.as_struct();
    assert_eq!(
        strings(summaries.column_by_name("protocol").unwrap().as_ref()),
        ["Calculator", REFLECTION_PROTOCOL]
    );
    assert_eq!(
        strings(
            summaries
                .column_by_name("protocol_version")
                .unwrap()
                .as_ref()
        ),
        ["1.2.0", ""]
    );
    let hashes = strings(summaries.column_by_name("protocol_hash").unwrap().as_ref());
    assert_eq!(hashes[0], expected_hash);

    let ask = |protocol: &str| {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "protocol",
            DataType::Utf8,
            false,
        )]));
        RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(vec![protocol]))]).unwrap()
    };
    let described = dataclass(client.call("describe", &ask("Calculator")).unwrap());
    assert_eq!(
        strings(described.column_by_name("protocol_hash").unwrap().as_ref()),
        [expected_hash]
    );
    let methods = described
        .column_by_name("methods")
        .unwrap()
        .as_list::<i32>()
        .value(0);
    let methods = methods.as_struct();
    assert_eq!(
        strings(methods.column_by_name("name").unwrap().as_ref()),
        ["add", "ticks"]
    );
    assert_eq!(
        strings(methods.column_by_name("stream_kind").unwrap().as_ref()),
        ["", "producer"]
    );
    let params = methods
        .column_by_name("params_schema_ipc")
        .unwrap()
        .as_binary::<i32>();
    let (schema, batches) =
        decode_stream(Buffer::from(params.value(0).to_vec()), Limits::DEFAULT).unwrap();
    assert!(batches.is_empty());
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let results = methods
        .column_by_name("result_schema_ipc")
        .unwrap()
        .as_binary::<i32>();
    assert!(results.value(1).is_empty(), "a stream has no result schema");

    match client.call("describe", &ask("Nope.v1")) {
        Err(RpcError::Remote(report)) => {
            assert_eq!(report.error_type, "ProtocolNotSupportedError");
            assert!(
                report.message.contains("'Calculator'"),
                "{}",
                report.message
            );
        }
        other => panic!("an unknown protocol must be refused, got {other:?}"),
    }
    // Still serving after the refusal.
    let again = dataclass(client.call("describe", &ask(REFLECTION_PROTOCOL)).unwrap());
    assert_eq!(
        strings(again.column_by_name("protocol").unwrap().as_ref()),
        [REFLECTION_PROTOCOL]
    );
    drop(client);
    serving.join().unwrap();
}
