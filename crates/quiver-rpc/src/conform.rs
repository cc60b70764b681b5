//! The checks that make batches fit what a method declares: request parameters
//! (as strictly as vgi-rpc's server), stream input and output, unary results,
//! headers and the one-batch-per-turn rule. Each refusal is an [`ErrorReport`]
//! from [`crate::errors`].

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};
use quiver_wire::ErrorReport;

use crate::errors::type_error;
use crate::method::{Method, StreamOutput, StreamSetup};

/// Checks a request batch against the method's parameters exactly as vgi-rpc's
/// server does: the declared names, in the declared order, with the declared Arrow
/// types and nullability (field and schema metadata aside, which Arrow
/// implementations do not all keep), one row, and no null where a parameter is not
/// nullable. Returns the batch on the declared schema.
pub fn conform_params(method: &Method, batch: RecordBatch) -> Result<RecordBatch, ErrorReport> {
    let schema = &method.params_schema;
    let name = &method.name;
    check_param_names(method, batch.schema_ref())?;
    let got = batch.schema_ref().fields();
    if got.len() != schema.fields().len() {
        return Err(type_error(format!(
            "{name}() parameter schema expected {} fields, got {}",
            schema.fields().len(),
            got.len()
        )));
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
    for (index, (field, declared)) in got.iter().zip(schema.fields()).enumerate() {
        if field.name() != declared.name() {
            return Err(type_error(format!(
                "{name}() parameter schema field {index} expected name '{}', got '{}'",
                declared.name(),
                field.name()
            )));
        }
        if field.data_type() != declared.data_type() {
            return Err(type_error(format!(
                "{name}() parameter '{}' expected Arrow type {} but the request batch carried {}",
                field.name(),
                declared.data_type(),
                field.data_type()
            )));
        }
        if field.is_nullable() != declared.is_nullable() {
            return Err(type_error(format!(
                "{name}() parameter '{}' expected nullable={}, but the request batch carried nullable={}",
                field.name(),
                py_bool(declared.is_nullable()),
                py_bool(field.is_nullable())
            )));
        }
        if !declared.is_nullable() && batch.column(index).is_null(0) {
            return Err(type_error(format!(
                "{name}() parameter '{}' is not optional but got None",
                field.name()
            )));
        }
    }
    RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
        .map_err(|e| type_error(format!("{name}(): {e}")))
}

/// Undeclared and missing parameters, named the way vgi-rpc names them; checked
/// before order and types so the message says what the caller got wrong.
fn check_param_names(method: &Method, got: &Schema) -> Result<(), ErrorReport> {
    let declared = method.params_schema.fields();
    let quoted = |names: Vec<&str>| {
        let mut names: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
        names.sort();
        names.join(", ")
    };
    let unexpected: Vec<&str> = got
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| declared.find(n).is_none())
        .collect();
    if !unexpected.is_empty() {
        return Err(type_error(format!(
            "{}() got unexpected keyword argument(s): {}",
            method.name,
            quoted(unexpected)
        )));
    }
    let missing: Vec<&str> = declared
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| got.fields().find(n).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(type_error(format!(
            "{}() missing required argument(s): {}",
            method.name,
            quoted(missing)
        )));
    }
    Ok(())
}

/// Python's spelling, which vgi-rpc's messages use.
fn py_bool(value: bool) -> &'static str {
    if value {
        "True"
    } else {
        "False"
    }
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

fn describe_schema(schema: &Schema) -> String {
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    format!("({})", fields.join(", "))
}
