//! The errors a server answers with, and the checks that raise them.
//!
//! Type names and kinds follow vgi-rpc's, so a peer that matches on
//! `error_kind` (or on the exception type) sees what it expects.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use quiver_wire::{ErrorCode, ErrorReport};

use crate::method::{Method, StreamOutput, StreamSetup};

/// A framework error of type `RpcError`.
pub fn rpc_error(message: &str, code: ErrorCode) -> ErrorReport {
    ErrorReport::new("RpcError", message).with_code(code)
}

/// The request version is missing or not `1`.
pub fn request_version(got: Option<&str>) -> ErrorReport {
    let message = match got {
        Some(version) => {
            format!("Unsupported request version {version:?}; this server speaks version '1'")
        }
        None => "Missing vgi_rpc.request_version in request batch metadata".to_string(),
    };
    ErrorReport::new("VersionError", message).with_code(ErrorCode::FailedPrecondition)
}

/// The method is not offered.
pub fn method_not_found(method: &str, protocol: &str) -> ErrorReport {
    ErrorReport::new(
        "MethodNotImplementedError",
        format!("Protocol '{protocol}' has no method '{method}' (not implemented)."),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("method_not_implemented")
}

/// A reserved `__name__` method this server does not implement.
pub fn reserved_not_implemented(method: &str) -> ErrorReport {
    ErrorReport::new(
        "MethodNotImplementedError",
        format!("This server does not implement the reserved method '{method}'."),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("method_not_implemented")
}

/// The request names no protocol.
pub fn protocol_not_specified(method: &str) -> ErrorReport {
    ErrorReport::new(
        "ProtocolNotSpecifiedError",
        format!("Request for method '{method}' does not name a protocol (vgi_rpc.protocol)"),
    )
    .with_code(ErrorCode::InvalidArgument)
    .with_kind("protocol_not_specified")
}

/// The request names a protocol this server does not host.
pub fn protocol_not_supported(requested: &str, hosted: &str) -> ErrorReport {
    ErrorReport::new(
        "ProtocolNotSupportedError",
        format!("Protocol '{requested}' is not served here (this server hosts '{hosted}')"),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("protocol_not_supported")
}

/// The request's protocol version differs in major.minor. The details name
/// the gated protocol, since a server hosting several cannot say which by
/// version alone (a `vgi_rpc.PreconditionFailure`, as vgi-rpc sends).
pub fn protocol_version_mismatch(protocol: &str, requested: &str, served: &str) -> ErrorReport {
    let mut report = ErrorReport::new(
        "ProtocolVersionError",
        format!("Protocol version mismatch: client speaks {requested}, server speaks {served}"),
    )
    .with_code(ErrorCode::FailedPrecondition)
    .with_kind("protocol_version_mismatch");
    report.details = Some(serde_json::json!([{
        "@type": "vgi_rpc.PreconditionFailure",
        "violations": [{
            "type": "protocol_version",
            "subject": protocol,
            "description": format!(
                "client declares {requested}, server requires {served}; major and minor must match"
            ),
        }],
    }]));
    report
}

/// Checks a request batch against the method's parameters: the same names (in
/// any order), one row, the declared Arrow types, and no null where a parameter
/// is not nullable. Returns the batch in declared order.
pub fn conform_params(method: &Method, batch: RecordBatch) -> Result<RecordBatch, ErrorReport> {
    let schema = &method.params_schema;
    let name = &method.name;
    for field in batch.schema_ref().fields() {
        if schema.field_with_name(field.name()).is_err() {
            let declared: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(type_error(format!(
                "Request carries parameter '{}' that {name}() does not declare. Declared: {}",
                field.name(),
                declared.join(", ")
            )));
        }
    }
    if schema.fields().is_empty() {
        return Ok(RecordBatch::new_empty(schema.clone()));
    }
    if batch.num_rows() != 1 {
        return Err(type_error(format!(
            "{name}() request batch must have exactly 1 row, got {}",
            batch.num_rows()
        )));
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let Some(column) = batch.column_by_name(field.name()) else {
            return Err(type_error(format!(
                "{name}() missing required argument: '{}'",
                field.name()
            )));
        };
        if column.data_type() != field.data_type() {
            return Err(type_error(format!(
                "{name}() parameter '{}' expected Arrow type {} but the request batch carried {}",
                field.name(),
                field.data_type(),
                column.data_type()
            )));
        }
        if !field.is_nullable() && column.is_null(0) {
            return Err(type_error(format!(
                "{name}() parameter '{}' is not optional but got None",
                field.name()
            )));
        }
        columns.push(Arc::clone(column));
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| type_error(format!("{name}(): {e}")))
}

/// Builds the one-row reply batch of a unary method from the body's value.
pub fn result_batch(
    schema: &SchemaRef,
    value: Option<ArrayRef>,
) -> Result<RecordBatch, ErrorReport> {
    match (schema.fields().is_empty(), value) {
        (true, None) => Ok(RecordBatch::new_empty(schema.clone())),
        (true, Some(_)) => Err(type_error("void method returned a value".into())),
        (false, None) => Err(type_error("method returned no value".into())),
        (false, Some(array)) => {
            let field = schema.field(0);
            let array = cast_to(&array, field.data_type(), field.name())?;
            RecordBatch::try_new(schema.clone(), vec![array])
                .map_err(|e| type_error(format!("result: {e}")))
        }
    }
}

/// A stream that declares a header must produce one (and one row of it).
pub fn check_header(method: &Method, setup: StreamSetup) -> Result<StreamSetup, ErrorReport> {
    match (&method.header_schema, &setup.header) {
        (Some(_), None) => Err(type_error(format!(
            "{}() declares a header but produced none",
            method.name
        ))),
        (Some(schema), Some(header)) if header.schema_ref().fields() != schema.fields() => {
            Err(type_error(format!(
                "{}() header does not match its declared schema",
                method.name
            )))
        }
        _ => Ok(setup),
    }
}

/// Reconciles an input batch with the declared input schema: same field set in
/// any order, compatible types cast.
pub fn conform_input(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch, ErrorReport> {
    if batch.schema_ref().fields() == schema.fields() {
        return Ok(batch);
    }
    let mismatch = || {
        type_error(format!(
            "Input schema mismatch: expected {}, got {}",
            describe_schema(schema),
            describe_schema(batch.schema_ref())
        ))
    };
    if batch.num_columns() != schema.fields().len() {
        return Err(mismatch());
    }
    let mut columns = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let column = batch.column_by_name(field.name()).ok_or_else(mismatch)?;
        columns.push(cast_to(column, field.data_type(), field.name()).map_err(|_| mismatch())?);
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|_| mismatch())
}

/// Output batches must carry the declared fields; extra columns are dropped (a
/// body may emit a superset, as projection pushdown does).
pub fn conform_output(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch, ErrorReport> {
    if batch.schema_ref().fields() == schema.fields() {
        return Ok(batch);
    }
    let mut columns = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let column = batch.column_by_name(field.name()).ok_or_else(|| {
            type_error(format!(
                "Output batch is missing field '{}' of {}",
                field.name(),
                describe_schema(schema)
            ))
        })?;
        columns.push(cast_to(column, field.data_type(), field.name())?);
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| type_error(format!("output: {e}")))
}

/// One step must emit exactly one batch unless it finished the stream.
pub fn check_step(step: &StreamOutput, is_producer: bool) -> Result<(), ErrorReport> {
    match (step.batch_count, step.finished) {
        (0, true) | (1, _) => Ok(()),
        (0, false) if is_producer => Err(type_error(
            "producer step emitted no batch and did not finish".into(),
        )),
        (0, false) => Err(type_error("exchange step emitted no batch".into())),
        (n, _) => Err(type_error(format!(
            "a step emitted {n} batches; exactly one is allowed"
        ))),
    }
}

fn cast_to(
    column: &ArrayRef,
    data_type: &arrow_schema::DataType,
    name: &str,
) -> Result<ArrayRef, ErrorReport> {
    if column.data_type() == data_type {
        return Ok(Arc::clone(column));
    }
    arrow_cast::cast(column, data_type).map_err(|e| {
        type_error(format!(
            "'{name}' is {} where {data_type} is expected: {e}",
            column.data_type()
        ))
    })
}

fn type_error(message: String) -> ErrorReport {
    ErrorReport::new("TypeError", message).with_code(ErrorCode::InvalidArgument)
}

fn describe_schema(schema: &Schema) -> String {
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    format!("({})", fields.join(", "))
}
