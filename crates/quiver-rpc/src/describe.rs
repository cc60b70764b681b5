//! `__describe__`: the service's methods as data, for peers that introspect.

use std::sync::Arc;

use arrow_array::{RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_wire::BatchMetadata;

use crate::service::Service;

/// The reply to `__describe__`: one row per method with its name, kind and doc.
pub fn describe_reply(service: &Service, server_id: &str) -> (SchemaRef, RecordBatch, BatchMetadata) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("method_type", DataType::Utf8, false),
        Field::new("doc", DataType::Utf8, true),
    ]));
    let methods: Vec<_> = service.methods().collect();
    let names = StringArray::from_iter_values(methods.iter().map(|m| m.name.as_str()));
    let kinds = StringArray::from_iter_values(methods.iter().map(|m| if m.is_unary() { "unary" } else { "stream" }));
    let docs = StringArray::from_iter_values(methods.iter().map(|m| m.doc.as_str()));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(names), Arc::new(kinds), Arc::new(docs)])
        .expect("describe columns match their schema");
    let metadata = BatchMetadata::from_pairs([
        ("vgi_rpc.protocol_name", service.protocol_name.as_str()),
        ("vgi_rpc.protocol_version", service.protocol_version.as_str()),
        ("vgi_rpc.server_id", server_id),
    ]);
    (schema, batch, metadata)
}
