//! Calls that carry a caller's whole request metadata and hand back the reply's: what
//! a relay (the client driver of `crates/quiver-conformance`) needs, since it passes a
//! request encoded elsewhere and re-encodes each reply batch with its metadata.

use std::sync::Arc;
use std::thread;

use arrow_array::cast::AsArray;
use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Schema, SchemaRef};
use quiver_rpc::{
    field, reply, CallContext, Client, ClientStream, Method, Server, ServerConfig, Service,
    StreamOutput, StreamSetup, StreamState,
};
use quiver_transport::pipe_pair;
use quiver_wire::{keys, BatchMetadata, ErrorReport};

const CALLER_KEY: &str = "x.caller";

fn text_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![field("text", DataType::Utf8, false)]))
}

fn text_batch(text: &str) -> RecordBatch {
    RecordBatch::try_new(text_schema(), vec![Arc::new(StringArray::from(vec![text]))]).unwrap()
}

fn caller_of(metadata: &BatchMetadata) -> String {
    metadata.get(CALLER_KEY).unwrap_or("(none)").to_string()
}

/// Emits, per tick, one batch naming the tick's caller key, tagged with it; finishes on "end".
struct TickEcho;

impl StreamState for TickEcho {
    fn process(
        &mut self,
        _: &RecordBatch,
        metadata: &BatchMetadata,
        out: &mut StreamOutput,
        _: &mut CallContext<'_>,
    ) -> Result<(), ErrorReport> {
        let caller = caller_of(metadata);
        if caller == "end" {
            out.finish();
        } else {
            let tag = BatchMetadata::from_pairs([(CALLER_KEY, caller.as_str())]);
            out.emit_with_metadata(text_batch(&caller), tag);
        }
        Ok(())
    }
}

fn service() -> Service {
    Service::new("Relay", "1.0.0")
        .with(Method::unary(
            "whoami",
            vec![],
            Some(field("result", DataType::Utf8, false)),
            |_, ctx| Ok(reply::str(caller_of(ctx.request_metadata))),
        ))
        .with(Method::stream(
            "ticks",
            vec![],
            Some(text_schema()),
            |_, ctx| {
                let header = text_batch(&caller_of(ctx.request_metadata));
                Ok(StreamSetup::producer(text_schema(), TickEcho).with_header(header))
            },
        ))
}

/// A client with no protocol of its own: every request names it through the relayed metadata.
fn start() -> Client {
    let (client_end, server_end) = pipe_pair().unwrap();
    let server = Server::new(service(), ServerConfig::default());
    thread::spawn(move || server.serve(server_end));
    Client::new(client_end)
}

fn relayed(caller: &str) -> BatchMetadata {
    BatchMetadata::from_pairs([
        (keys::PROTOCOL, "Relay"),
        (keys::PROTOCOL_VERSION, "1.0.0"),
        (CALLER_KEY, caller),
    ])
}

fn text(batch: &RecordBatch) -> &str {
    batch.column(0).as_string::<i32>().value(0)
}

#[test]
fn a_unary_call_carries_the_callers_metadata() {
    let mut client = start();
    let params = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let (batch, _) = client
        .call_with_metadata("whoami", &params, relayed("alice"))
        .unwrap()
        .expect("a result");
    assert_eq!(text(&batch), "alice");
    // Without the relayed protocol the server refuses the call: the metadata really is what routed it.
    let refused = client.call_with_metadata("whoami", &params, BatchMetadata::new());
    assert!(refused.unwrap_err().remote().is_some());
}

#[test]
fn a_stream_carries_metadata_both_ways() {
    let client = start();
    let params = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let Ok(mut call) =
        ClientStream::open_with_metadata(client, "ticks", &params, relayed("bob"), true)
    else {
        panic!("the stream did not open");
    };
    assert_eq!(text(call.header().expect("a header")), "bob");
    for caller in ["carol", "dave"] {
        let tick = BatchMetadata::from_pairs([(CALLER_KEY, caller)]);
        let (batch, metadata) = call.tick_with_metadata(tick).unwrap().expect("a batch");
        assert_eq!(text(&batch), caller);
        assert_eq!(metadata.get(CALLER_KEY), Some(caller));
    }
    let end = BatchMetadata::from_pairs([(CALLER_KEY, "end")]);
    assert!(call.tick_with_metadata(end).unwrap().is_none());
    assert!(call.is_done());
}
