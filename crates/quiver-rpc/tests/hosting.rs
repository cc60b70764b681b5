//! A server hosting two protocols routes by (protocol, method): the same method
//! name reaches each protocol's own body, an unversioned protocol is not
//! version-gated, and an unhosted protocol is refused naming the primary.

use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{field, Client, Method, RpcError, Server, ServerConfig, Service};
use quiver_transport::{pipe_pair, Connection};

fn echo(prefix: &'static str) -> Method {
    Method::unary(
        "echo",
        vec![field("value", DataType::Utf8, false)],
        Some(field("result", DataType::Utf8, false)),
        move |params, _| {
            let text = format!("{prefix}{}", params.str("value")?);
            Ok(Some(Arc::new(StringArray::from(vec![text]))))
        },
    )
}

fn value(text: &str) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        DataType::Utf8,
        false,
    )]));
    RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(vec![text]))]).unwrap()
}

fn call(client: &mut Client, text: &str) -> Result<String, RpcError> {
    let reply = client.call("echo", &value(text))?.expect("echo returns");
    Ok(reply.column(0).as_string::<i32>().value(0).to_string())
}

fn client(connection: Connection, protocol: &str, version: &str) -> Client {
    Client::new(connection).with_protocol(protocol, version)
}

#[test]
fn routes_by_protocol_and_method() {
    let primary = Service::new("Primary", "2.0.0").with(echo("primary:"));
    let secondary = Service::unversioned("Secondary.v1").with(echo("secondary:"));
    let server = Arc::new(Server::hosting(
        primary,
        vec![secondary],
        ServerConfig::default(),
    ));

    let mut serving = Vec::new();
    let mut connect = |protocol: &str, version: &str| {
        let (client_side, server_side) = pipe_pair().unwrap();
        let server = Arc::clone(&server);
        serving.push(thread::spawn(move || server.serve(server_side)));
        client(client_side, protocol, version)
    };

    let mut to_primary = connect("Primary", "2.0.0");
    assert_eq!(call(&mut to_primary, "a").unwrap(), "primary:a");
    // Any version reaches an unversioned protocol.
    let mut to_secondary = connect("Secondary.v1", "7.0.0");
    assert_eq!(call(&mut to_secondary, "b").unwrap(), "secondary:b");

    let mut stale = connect("Primary", "1.0.0");
    match call(&mut stale, "c") {
        Err(RpcError::Remote(report)) => assert_eq!(report.error_type, "ProtocolVersionError"),
        other => panic!("a stale primary client must be refused, got {other:?}"),
    }
    let mut lost = connect("Elsewhere.v1", "1.0.0");
    match call(&mut lost, "d") {
        Err(RpcError::Remote(report)) => {
            assert_eq!(report.error_type, "ProtocolNotSupportedError");
            assert!(report.message.contains("'Primary'"), "{}", report.message);
        }
        other => panic!("an unhosted protocol must be refused, got {other:?}"),
    }
    // Each connection keeps serving after its refusal.
    assert!(call(&mut lost, "e").is_err());
    assert_eq!(call(&mut to_secondary, "f").unwrap(), "secondary:f");

    drop((to_primary, to_secondary, stale, lost));
    for handle in serving {
        handle.join().unwrap();
    }
}
