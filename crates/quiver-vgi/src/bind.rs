//! `bind`: resolve the function, check the call's shape and arguments, answer
//! the (unprojected) output schema.
//!
//! Init repeats the same work from `InitRequest.bind_call`, because a secondary
//! connection never sees the bind; [`bind_call`] is therefore pure and cheap.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{field, Method, Service};
use quiver_vgi_contract::enums::function_type;
use quiver_vgi_contract::ipc;
use quiver_vgi_contract::requests::BindRequest;
use quiver_vgi_contract::row::RowBuilder;
use quiver_vgi_contract::schemas;
use quiver_vgi_contract::{errors, methods};
use quiver_wire::ErrorReport;

use crate::arg_binding::{bind_args, sql_type};
use crate::args::Args;
use crate::catalog::Catalog;
use crate::declarations::FunctionKind;
use crate::function::BindInput;
use crate::function::{Body, Function};
use crate::limits::SCHEMA_FIELDS_MAX;

/// A checked call: the function, its bound arguments, its schemas.
pub struct Bound {
    /// The function called.
    pub function: Arc<Function>,
    /// Arguments the kind receives at bind.
    pub args: Args,
    /// Scalar and table-in-out: the input batches' schema.
    pub input_schema: Option<SchemaRef>,
    /// The unprojected output schema (`result: T` for a scalar).
    pub output_schema: SchemaRef,
}

/// Checks `request` against the catalog and binds it.
pub fn bind_call(catalog: &Catalog, request: &BindRequest) -> Result<Bound, ErrorReport> {
    let function = catalog
        .resolve(&request.function_name, request.schema_path.as_deref())?
        .clone();
    check_function_type(&function, &request.function_type)?;
    let name = &function.name;
    let input_schema = request.input_schema.clone();
    match (function.kind, &input_schema) {
        (FunctionKind::Table, Some(_)) => {
            return Err(errors::invalid_argument(format!(
                "{name}() is a table function: it takes no input table (bound with an input schema)"
            )))
        }
        (FunctionKind::TableInOut | FunctionKind::TableBuffering, None) => {
            return Err(errors::invalid_argument(format!(
                "{name}() is a table-in-out function: it needs an input table (bound without an input schema)"
            )))
        }
        (FunctionKind::Scalar, None) => {
            return Err(errors::invalid_argument(format!(
                "{name}() is a scalar function: bind it with the input columns' schema"
            )))
        }
        _ => {}
    }
    let args = bind_args(&function, &request.arguments)?;
    let output_schema = match &function.body {
        Body::Aggregate { result_type, .. } => {
            let none = Arc::new(Schema::empty());
            check_scalar_input(&function, input_schema.as_ref().unwrap_or(&none))?;
            Arc::new(Schema::new(vec![Field::new(
                "result",
                result_type.clone(),
                true,
            )]))
        }
        Body::Scalar { result_type, .. } => {
            check_scalar_input(&function, input_schema.as_ref().expect("checked above"))?;
            Arc::new(Schema::new(vec![Field::new(
                "result",
                result_type.clone(),
                true,
            )]))
        }
        Body::Table { bind, .. } | Body::TableInOut { bind, .. } | Body::Buffered { bind, .. } => {
            let schema = bind(&BindInput {
                args: &args,
                input_schema: input_schema.as_ref(),
            })?;
            if schema.fields().is_empty() || schema.fields().len() > SCHEMA_FIELDS_MAX {
                return Err(errors::internal(format!(
                    "{name}() bound to {} output column(s); 1 to {SCHEMA_FIELDS_MAX} are allowed",
                    schema.fields().len()
                )));
            }
            schema
        }
    };
    Ok(Bound {
        function,
        args,
        input_schema,
        output_schema,
    })
}

/// vgi-python leaves this to the input-schema checks; a contradiction is
/// refused here too, so the message names the real mistake.
fn check_function_type(function: &Function, requested: &str) -> Result<(), ErrorReport> {
    let requested = requested.to_ascii_uppercase();
    let fits = match function.kind {
        FunctionKind::Scalar => requested == function_type::SCALAR,
        FunctionKind::Table | FunctionKind::TableInOut => requested == function_type::TABLE,
        FunctionKind::TableBuffering => requested == function_type::TABLE_BUFFERING,
        FunctionKind::Aggregate => requested == quiver_vgi_contract::aggregate::FUNCTION_TYPE,
    };
    if fits {
        return Ok(());
    }
    Err(errors::invalid_argument(format!(
        "{}() is {}, but was bound as {requested}",
        function.name,
        function.kind.describe()
    )))
}

/// The input columns map to the column arguments by position; each must cast
/// to its declared type.
fn check_scalar_input(function: &Function, input: &SchemaRef) -> Result<(), ErrorReport> {
    let declared: Vec<_> = function.column_args().collect();
    let given = input.fields();
    if declared.len() != given.len() {
        return Err(errors::argument_validation(format!(
            "{}() takes {} column argument(s), got {}",
            function.name,
            declared.len(),
            given.len()
        )));
    }
    for (arg, field) in declared.iter().zip(given) {
        if !arrow_cast::can_cast_types(field.data_type(), &arg.data_type) {
            return Err(errors::argument_validation(format!(
                "argument '{}' of {}() must be {}, got {}",
                arg.name,
                function.name,
                sql_type(&arg.data_type),
                sql_type(field.data_type())
            )));
        }
    }
    Ok(())
}

/// `BindResponse` for a bound call.
pub fn bind_response(bound: &Bound) -> Vec<u8> {
    let answer = RowBuilder::new(schemas::BIND_RESPONSE.clone())
        .bytes(
            "output_schema",
            Some(&ipc::encode_schema(&bound.output_schema)),
        )
        .finish();
    ipc::encode_batch(&answer)
}

/// Registers `bind`.
pub fn register(service: &mut Service, catalog: Arc<Catalog>) {
    let params = vec![field("request", DataType::Binary, false)];
    let result = Some(field("result", DataType::Binary, false));
    service.add(Method::unary(
        methods::BIND,
        params,
        result,
        move |params, _| {
            let request = BindRequest::decode(params.bytes("request")?)?;
            let bound = bind_call(&catalog, &request)?;
            let bytes = bind_response(&bound);
            Ok(Some(
                Arc::new(BinaryArray::from(vec![bytes.as_slice()])) as ArrayRef
            ))
        },
    ));
}

/// Registers `table_function_cardinality`: the function's own estimate, or
/// "unknown" (both null), which the engine's planner accepts.
pub fn register_cardinality(service: &mut Service, catalog: Arc<Catalog>) {
    let params = vec![field("request", DataType::Binary, false)];
    let result = Some(field("result", DataType::Binary, false));
    service.add(Method::unary(
        methods::TABLE_FUNCTION_CARDINALITY,
        params,
        result,
        move |params, _| {
            let request =
                ipc::decode_row(params.bytes("request")?, "TableFunctionCardinalityRequest")?;
            let row = quiver_vgi_contract::row::RowReader::new(
                &request,
                "TableFunctionCardinalityRequest",
            );
            let bind_call = row
                .bytes("bind_call")?
                .ok_or_else(|| row.missing("bind_call"))?;
            let bound = bind_call_of(&catalog, bind_call)?;
            let rows = match &bound.function.body {
                Body::Table {
                    cardinality: Some(cardinality),
                    ..
                } => cardinality(&bound.args)?,
                _ => None,
            };
            let rows = rows.map(|r| i64::try_from(r).unwrap_or(i64::MAX));
            let answer = RowBuilder::new(schemas::TABLE_CARDINALITY.clone())
                .int("estimate", rows)
                .int("max", rows)
                .finish();
            let bytes = ipc::encode_batch(&answer);
            Ok(Some(
                Arc::new(BinaryArray::from(vec![bytes.as_slice()])) as ArrayRef
            ))
        },
    ));
}

fn bind_call_of(catalog: &Catalog, bytes: &[u8]) -> Result<Bound, ErrorReport> {
    bind_call(catalog, &BindRequest::decode(bytes)?)
}
