//! `vgi_rpc.Reflection.v1`: discovery served as an ordinary protocol next to the
//! application's, the way vgi-rpc's clients (`introspect`, `vgi-rpc describe`)
//! ask for it. Two unary methods, each returning one dataclass as the bytes of
//! a one-row IPC stream in a `result: binary` column:
//!
//! - `list_protocols()`: the server's id and version, the envelope version, and
//!   one summary (name, version, hash) per hosted protocol, reflection included,
//!   application protocols first.
//! - `describe(protocol)`: one protocol's methods, each with its kind, whether
//!   it returns a value or sends a header, and its parameter, result and header
//!   schemas as serialized Arrow schemas.
//!
//! Descriptions do not change while a server runs, so every reply is encoded
//! once, when the server is built. Reflection is exempt from the version gate:
//! it is what a mismatched client calls to learn what mismatched.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, ListArray, RecordBatch, StringArray, StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use quiver_wire::{encode_stream, keys, BatchMetadata, ErrorReport};

use crate::method::{Method, StreamKind};
use crate::protocol_hash::protocol_hash;
use crate::service::Service;
use quiver_wire::ErrorCode;

/// The reflection protocol's wire name; its major version is in the name.
pub const REFLECTION_PROTOCOL: &str = "vgi_rpc.Reflection.v1";
/// The reflection service for a server hosting the `hosted` application
/// protocols (primary first).
pub fn reflection_service(hosted: &[&Service], server_id: &str, server_version: &str) -> Service {
    // Reflection describes itself like any other protocol: build its shape
    // first (bodies unused), then the real service whose replies include it.
    let shape = reflection_methods(Arc::new(Err(not_ready())), Arc::new(BTreeMap::new()));
    let protocols: Vec<(&Service, &str)> = hosted
        .iter()
        .chain([&&shape])
        .map(|service| (*service, service.protocol_version.as_str()))
        .collect();

    let mut descriptions = BTreeMap::new();
    let mut summaries = Vec::with_capacity(protocols.len());
    for (service, version) in protocols {
        let described = protocol_hash(service).map(|hash| {
            summaries.push((
                service.protocol_name.clone(),
                version.to_string(),
                hash.clone(),
            ));
            describe_bytes(service, version, &hash)
        });
        let described = match described {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(error)) | Err(error) => Err(error),
        };
        descriptions.insert(service.protocol_name.clone(), described);
    }
    let listing = list_bytes(server_id, server_version, &summaries);
    reflection_methods(Arc::new(listing), Arc::new(descriptions))
}

type Described = BTreeMap<String, Result<Vec<u8>, String>>;

fn reflection_methods(listing: Arc<Result<Vec<u8>, String>>, described: Arc<Described>) -> Service {
    let result = || Some(Field::new("result", DataType::Binary, false));
    Service::unversioned(REFLECTION_PROTOCOL)
        .with(Method::unary(
            "list_protocols",
            vec![],
            result(),
            move |_, _| match listing.as_ref() {
                Ok(bytes) => Ok(binary(bytes)),
                Err(error) => Err(cannot_describe(error)),
            },
        ))
        .with(Method::unary(
            "describe",
            vec![Field::new("protocol", DataType::Utf8, false)],
            result(),
            move |params, _| {
                let protocol = params.str("protocol")?;
                match described.get(protocol) {
                    Some(Ok(bytes)) => Ok(binary(bytes)),
                    Some(Err(error)) => Err(cannot_describe(error)),
                    None => Err(not_hosted(protocol, described.keys())),
                }
            },
        ))
}

fn binary(bytes: &[u8]) -> Option<ArrayRef> {
    Some(Arc::new(BinaryArray::from(vec![bytes])))
}

fn not_ready() -> String {
    "reflection is still being built".into()
}

fn cannot_describe(error: &str) -> ErrorReport {
    ErrorReport::new("RuntimeError", format!("cannot describe: {error}"))
        .with_code(ErrorCode::Internal)
}

/// vgi-rpc's words for a protocol this server does not host, with the hosted
/// names as a Python list (sorted) so both ports read alike.
fn not_hosted<'a>(protocol: &str, hosted: impl Iterator<Item = &'a String>) -> ErrorReport {
    let hosted: Vec<String> = hosted.map(|name| format!("'{name}'")).collect();
    ErrorReport::new(
        "ProtocolNotSupportedError",
        format!(
            "This server does not host protocol '{protocol}'. Hosted: [{}].",
            hosted.join(", ")
        ),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("protocol_not_supported")
}

/// A `ServiceDescription` as IPC bytes.
fn describe_bytes(service: &Service, version: &str, hash: &str) -> Result<Vec<u8>, String> {
    let methods: Vec<&Method> = service.methods().collect();
    let mut columns = MethodColumns::default();
    for method in &methods {
        columns.push(method)?;
    }
    let method_struct =
        StructArray::try_new(method_fields(), columns.finish(), None).map_err(|e| e.to_string())?;
    let schema = description_schema();
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            strings([service.protocol_name.as_str()]),
            strings([version]),
            strings([hash]),
            Arc::new(BooleanArray::from(vec![false])),
            strings([""]),
            empty_features(1),
            one_row_list(Arc::new(method_struct)),
        ],
    )
    .map_err(|e| e.to_string())?;
    batch_bytes(&batch)
}

/// A `ProtocolList` as IPC bytes.
fn list_bytes(
    server_id: &str,
    server_version: &str,
    summaries: &[(String, String, String)],
) -> Result<Vec<u8>, String> {
    let rows = summaries.len();
    let column = |pick: fn(&(String, String, String)) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(summaries.iter().map(pick)))
    };
    let summary = StructArray::try_new(
        summary_fields(),
        vec![
            column(|s| &s.0),
            column(|s| &s.1),
            column(|s| &s.2),
            Arc::new(BooleanArray::from(vec![false; rows])),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n("", rows))),
            empty_features(rows),
        ],
        None,
    )
    .map_err(|e| e.to_string())?;
    let batch = RecordBatch::try_new(
        listing_schema(),
        vec![
            strings([server_id]),
            strings([server_version]),
            strings([keys::REQUEST_VERSION]),
            one_row_list(Arc::new(summary)),
        ],
    )
    .map_err(|e| e.to_string())?;
    batch_bytes(&batch)
}

/// The `MethodInfo` columns, one row per method.
#[derive(Default)]
struct MethodColumns {
    name: Vec<String>,
    method_type: Vec<&'static str>,
    has_return: Vec<bool>,
    has_header: Vec<bool>,
    stream_kind: Vec<&'static str>,
    params: Vec<Vec<u8>>,
    result: Vec<Vec<u8>>,
    header: Vec<Vec<u8>>,
}

impl MethodColumns {
    fn push(&mut self, method: &Method) -> Result<(), String> {
        let unary = method.is_unary();
        let has_return = unary && !method.result_schema.fields().is_empty();
        self.name.push(method.name.clone());
        self.method_type
            .push(if unary { "unary" } else { "stream" });
        self.has_return.push(has_return);
        self.has_header.push(method.header_schema.is_some());
        self.stream_kind.push(match (unary, method.stream_kind) {
            (true, _) => "",
            (false, StreamKind::Unknown) => "unknown",
            (false, StreamKind::Producer) => "producer",
            (false, StreamKind::Exchange) => "exchange",
        });
        self.params.push(schema_bytes(&method.params_schema)?);
        self.result.push(if has_return {
            schema_bytes(&method.result_schema)?
        } else {
            Vec::new()
        });
        self.header.push(match &method.header_schema {
            Some(schema) => schema_bytes(schema)?,
            None => Vec::new(),
        });
        Ok(())
    }

    fn finish(self) -> Vec<ArrayRef> {
        let rows = self.name.len();
        let bytes = |values: &[Vec<u8>]| -> ArrayRef {
            Arc::new(BinaryArray::from_iter_values(values.iter()))
        };
        vec![
            Arc::new(StringArray::from_iter_values(&self.name)),
            Arc::new(StringArray::from_iter_values(&self.method_type)),
            Arc::new(BooleanArray::from(self.has_return)),
            Arc::new(BooleanArray::from(self.has_header)),
            Arc::new(StringArray::from_iter_values(&self.stream_kind)),
            bytes(&self.params),
            bytes(&self.result),
            bytes(&self.header),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n(
                "unknown", rows,
            ))),
            Arc::new(BooleanArray::from(vec![false; rows])),
            Arc::new(StringArray::from_iter_values(std::iter::repeat_n("", rows))),
        ]
    }
}

fn strings<'a>(values: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

/// `rows` empty `features` lists.
fn empty_features(rows: usize) -> ArrayRef {
    Arc::new(ListArray::new(
        Arc::new(features_item()),
        OffsetBuffer::new_zeroed(rows),
        Arc::new(StringArray::from(Vec::<&str>::new())),
        None,
    ))
}

/// One row holding the list of `items`.
fn one_row_list(items: ArrayRef) -> ArrayRef {
    let item = Field::new("item", items.data_type().clone(), true);
    Arc::new(ListArray::new(
        Arc::new(item),
        OffsetBuffer::from_lengths([items.len()]),
        items,
        None,
    ))
}

/// A schema as vgi-rpc's `schema.serialize()` bytes: the schema message (the
/// end-of-stream marker after it is ignored by a schema reader).
fn schema_bytes(schema: &SchemaRef) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    encode_stream(schema, &[], &mut bytes).map_err(|e| e.to_string())?;
    Ok(bytes)
}

fn batch_bytes(batch: &RecordBatch) -> Result<Vec<u8>, String> {
    assert_eq!(batch.num_rows(), 1, "a dataclass travels as one row");
    let mut bytes = Vec::new();
    encode_stream(
        batch.schema_ref(),
        &[(batch.clone(), BatchMetadata::new())],
        &mut bytes,
    )
    .map_err(|e| e.to_string())?;
    Ok(bytes)
}

fn text(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}

fn flag(name: &str) -> Field {
    Field::new(name, DataType::Boolean, false)
}

fn features_item() -> Field {
    Field::new("item", DataType::Utf8, true)
}

fn features() -> Field {
    Field::new("features", DataType::List(Arc::new(features_item())), false)
}

fn list_of_struct(name: &str, fields: Fields) -> Field {
    let item = Field::new("item", DataType::Struct(fields), true);
    Field::new(name, DataType::List(Arc::new(item)), false)
}

fn method_fields() -> Fields {
    let bytes = |name: &str| Field::new(name, DataType::Binary, false);
    Fields::from(vec![
        text("name"),
        text("method_type"),
        flag("has_return"),
        flag("has_header"),
        text("stream_kind"),
        bytes("params_schema_ipc"),
        bytes("result_schema_ipc"),
        bytes("header_schema_ipc"),
        text("idempotency"),
        flag("deprecated"),
        text("deprecation_message"),
    ])
}

fn summary_fields() -> Fields {
    Fields::from(vec![
        text("protocol"),
        text("protocol_version"),
        text("protocol_hash"),
        flag("deprecated"),
        text("deprecation_message"),
        features(),
    ])
}

/// `ServiceDescription`'s schema.
fn description_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        text("protocol"),
        text("protocol_version"),
        text("protocol_hash"),
        flag("deprecated"),
        text("deprecation_message"),
        features(),
        list_of_struct("methods", method_fields()),
    ]))
}

/// `ProtocolList`'s schema.
fn listing_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        text("server_id"),
        text("server_version"),
        text("request_version"),
        list_of_struct("protocols", summary_fields()),
    ]))
}
