//! Aggregate functions: the all-unary exchange of vgi.v2 (as vgi-python 0.47.0's worker serves
//! it and its `vgi.client` drives it).
//!
//! The worker holds every group's state; the engine holds only an `int64` group id per state
//! (what DuckDB calls the aggregate state is just that id) and calls, each a unary request whose
//! one `request: binary` parameter is the serialized dataclass and whose `result: binary` is the
//! serialized answer:
//!
//! 1. `aggregate_bind` ([`BIND_REQUEST`]: function name, constant arguments, the input columns'
//!    schema) → [`BIND_RESPONSE`]: the one-column output schema and an `execution_id` that keys
//!    every later call's state in the worker.
//! 2. `aggregate_update`, per input chunk: an IPC stream of one batch whose first column is
//!    [`GROUP_COLUMN`] (`int64`, the group of each row), then the value columns in declaration
//!    order. The worker creates a group's state on first sight (its initial state) and folds the
//!    rows in. NULLs are the function's to handle. Answer: empty.
//! 3. `aggregate_combine`, when partial states merge (DuckDB's parallel hash aggregate, its
//!    window segment trees): a batch of [`SOURCE_GROUP`] / [`TARGET_GROUP`] pairs; each source's
//!    state is merged into its target (a group never updated counts as the initial state; a pair
//!    where neither side was updated is skipped). Answer: empty.
//! 4. `aggregate_finalize`, per vector of groups: a batch of [`GROUP_ID`]s and the output schema
//!    → `result_batch`, one row per group in that order. A group never updated finalizes to what
//!    the function gives an empty group (NULL for a sum, 0 for a count).
//! 5. `aggregate_destructor`, once at the end: one [`GROUP_ID`] row (vestigial); the worker drops
//!    the whole execution's state. Best effort: its failure is not the query's.
//!
//! `GROUP BY` is the engine's (one id per group and thread); `DISTINCT`, `FILTER (WHERE ...)` and
//! `ORDER BY` inside the call are the engine's too (it removes duplicates, drops filtered rows and
//! feeds an order-dependent function its rows sorted, then combines). A function declares
//! `order_dependent` = `ORDER_DEPENDENT` when its result depends on that order (a string
//! concatenation), `distinct_dependent` likewise. Window use (`OVER (...)`) runs on the same five
//! calls through the engine's segment trees; vgi's optional `aggregate_window*` and
//! `aggregate_streaming_*` calls are not used by quiver's engine.
//!
//! All calls of one execution carry the same `execution_id` and must reach the process that holds
//! its state: the engine keeps one connection for the whole execution.

use std::sync::{Arc, LazyLock};

use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_wire::ErrorReport;

use crate::arguments::RawArguments;
use crate::ipc;
use crate::row::{RowBuilder, RowReader};
use crate::schemas::list_of;

/// Binds an aggregate call.
pub const METHOD_BIND: &str = "aggregate_bind";
/// Folds a chunk of rows into its groups' states.
pub const METHOD_UPDATE: &str = "aggregate_update";
/// Merges source groups into target groups.
pub const METHOD_COMBINE: &str = "aggregate_combine";
/// One result per group.
pub const METHOD_FINALIZE: &str = "aggregate_finalize";
/// Drops an execution's state.
pub const METHOD_DESTRUCTOR: &str = "aggregate_destructor";

/// The group column first in every update batch.
pub const GROUP_COLUMN: &str = "__vgi_group_id";
/// Combine: the group merged from.
pub const SOURCE_GROUP: &str = "source_group_id";
/// Combine: the group merged into.
pub const TARGET_GROUP: &str = "target_group_id";
/// Finalize and destructor: the groups addressed.
pub const GROUP_ID: &str = "group_id";

/// `FunctionInfo.function_type` of an aggregate.
pub const FUNCTION_TYPE: &str = "AGGREGATE";
/// `order_dependent` of a function whose result depends on its rows' order.
pub const ORDER_DEPENDENT: &str = "ORDER_DEPENDENT";
/// `distinct_dependent` of a function whose result changes under `DISTINCT`.
pub const DISTINCT_DEPENDENT: &str = "DISTINCT_DEPENDENT";

fn schema(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

fn addressing() -> Vec<Field> {
    vec![
        Field::new("attach_opaque_data", DataType::Binary, true),
        Field::new("schema_path", list_of(DataType::Utf8), true),
    ]
}

fn with_addressing(mut fields: Vec<Field>) -> SchemaRef {
    fields.extend(addressing());
    schema(fields)
}

/// `AggregateBindRequest`.
pub static BIND_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("function_name", DataType::Utf8, false),
        Field::new("arguments", DataType::Binary, false),
        Field::new("input_schema", DataType::Binary, true),
        Field::new("settings", DataType::Binary, true),
        Field::new("secrets", DataType::Binary, true),
        Field::new("attach_opaque_data", DataType::Binary, true),
        Field::new("schema_path", list_of(DataType::Utf8), true),
        Field::new("argument_names", list_of(DataType::Utf8), true),
    ])
});

/// `AggregateBindResponse`.
pub static BIND_RESPONSE: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new("output_schema", DataType::Binary, false),
        Field::new("execution_id", DataType::Binary, false),
    ])
});

/// `AggregateUpdateRequest`.
pub static UPDATE_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    with_addressing(vec![
        Field::new("function_name", DataType::Utf8, false),
        Field::new("execution_id", DataType::Binary, false),
        Field::new("input_batch", DataType::Binary, false),
    ])
});

/// `AggregateCombineRequest`.
pub static COMBINE_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    with_addressing(vec![
        Field::new("function_name", DataType::Utf8, false),
        Field::new("execution_id", DataType::Binary, false),
        Field::new("merge_batch", DataType::Binary, false),
    ])
});

/// `AggregateFinalizeRequest`.
pub static FINALIZE_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    with_addressing(vec![
        Field::new("function_name", DataType::Utf8, false),
        Field::new("execution_id", DataType::Binary, false),
        Field::new("group_ids_batch", DataType::Binary, false),
        Field::new("output_schema", DataType::Binary, false),
    ])
});

/// `AggregateFinalizeResponse`.
pub static FINALIZE_RESPONSE: LazyLock<SchemaRef> =
    LazyLock::new(|| schema(vec![Field::new("result_batch", DataType::Binary, false)]));

/// `AggregateDestructorRequest`.
pub static DESTRUCTOR_REQUEST: LazyLock<SchemaRef> = LazyLock::new(|| {
    with_addressing(vec![
        Field::new("function_name", DataType::Utf8, false),
        Field::new("execution_id", DataType::Binary, false),
        Field::new("group_ids_batch", DataType::Binary, false),
    ])
});

/// The combine batch's schema.
pub static MERGE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema(vec![
        Field::new(SOURCE_GROUP, DataType::Int64, false),
        Field::new(TARGET_GROUP, DataType::Int64, false),
    ])
});

/// The finalize and destructor batches' schema.
pub static GROUP_IDS_SCHEMA: LazyLock<SchemaRef> =
    LazyLock::new(|| schema(vec![Field::new(GROUP_ID, DataType::Int64, false)]));

/// The empty answer of update, combine and destructor.
pub fn empty_response() -> Vec<u8> {
    ipc::encode_batch(&RecordBatch::new_empty(Arc::new(Schema::empty())))
}

/// Where a call is addressed: which function of which catalog schema, in which execution.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The SQL name.
    pub function_name: String,
    /// `aggregate_bind`'s `execution_id` (empty in a bind).
    pub execution_id: Vec<u8>,
    /// The catalog token from `catalog_attach`.
    pub attach_opaque_data: Option<Vec<u8>>,
    /// The schema the function lives in.
    pub schema_path: Option<Vec<String>>,
}

impl Target {
    fn write(&self, row: RowBuilder, with_execution: bool) -> RowBuilder {
        let mut row = row
            .str("function_name", Some(&self.function_name))
            .bytes("attach_opaque_data", self.attach_opaque_data.as_deref());
        if with_execution {
            row = row.bytes("execution_id", Some(&self.execution_id));
        }
        match &self.schema_path {
            Some(path) => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                row.strs("schema_path", &path)
            }
            None => row,
        }
    }

    fn read(row: &RowReader<'_>, with_execution: bool) -> Result<Target, ErrorReport> {
        let execution_id = if with_execution {
            row.bytes("execution_id")?
                .ok_or_else(|| row.missing("execution_id"))?
                .to_vec()
        } else {
            Vec::new()
        };
        Ok(Target {
            function_name: row
                .str("function_name")?
                .ok_or_else(|| row.missing("function_name"))?,
            execution_id,
            attach_opaque_data: row.bytes("attach_opaque_data")?.map(<[u8]>::to_vec),
            schema_path: row.strs("schema_path")?,
        })
    }
}

/// `AggregateBindRequest`.
#[derive(Debug, Default)]
pub struct BindRequest {
    /// The function (no execution yet).
    pub target: Target,
    /// The constant arguments.
    pub arguments: RawArguments,
    /// The value columns' schema, in declaration order (`None`: no value columns).
    pub input_schema: Option<SchemaRef>,
}

impl BindRequest {
    /// Encodes as the engine does.
    pub fn encode(&self) -> Vec<u8> {
        let input = self.input_schema.as_ref().map(|s| ipc::encode_schema(s));
        let row = RowBuilder::new(BIND_REQUEST.clone())
            .bytes("arguments", Some(&self.arguments.encode()))
            .bytes("input_schema", input.as_deref());
        ipc::encode_batch(&self.target.write(row, false).finish())
    }

    /// Decodes as a worker does.
    pub fn decode(bytes: &[u8]) -> Result<BindRequest, ErrorReport> {
        let batch = ipc::decode_row(bytes, "AggregateBindRequest")?;
        let row = RowReader::new(&batch, "AggregateBindRequest");
        let arguments = match row.bytes("arguments")? {
            Some(bytes) if !bytes.is_empty() => RawArguments::decode(bytes)?,
            _ => RawArguments::default(),
        };
        let input_schema = match row.bytes("input_schema")? {
            Some(bytes) if !bytes.is_empty() => Some(ipc::decode_schema(bytes, "input_schema")?),
            _ => None,
        };
        Ok(BindRequest {
            target: Target::read(&row, false)?,
            arguments,
            input_schema,
        })
    }
}

/// `AggregateBindResponse`, encoded.
pub fn encode_bind_response(output_schema: &Schema, execution_id: &[u8]) -> Vec<u8> {
    ipc::encode_batch(
        &RowBuilder::new(BIND_RESPONSE.clone())
            .bytes("output_schema", Some(&ipc::encode_schema(output_schema)))
            .bytes("execution_id", Some(execution_id))
            .finish(),
    )
}

/// `AggregateBindResponse`, decoded: the output schema and the execution id.
pub fn decode_bind_response(bytes: &[u8]) -> Result<(SchemaRef, Vec<u8>), ErrorReport> {
    let batch = ipc::decode_row(bytes, "AggregateBindResponse")?;
    let row = RowReader::new(&batch, "AggregateBindResponse");
    let schema = row
        .bytes("output_schema")?
        .ok_or_else(|| row.missing("output_schema"))?;
    let execution_id = row
        .bytes("execution_id")?
        .ok_or_else(|| row.missing("execution_id"))?;
    Ok((
        ipc::decode_schema(schema, "output_schema")?,
        execution_id.to_vec(),
    ))
}

/// One of update, combine, finalize or destructor: the target and its one nested batch.
#[derive(Debug)]
pub struct BatchRequest {
    /// The function and execution.
    pub target: Target,
    /// The nested batch (update: groups + values; combine: pairs; finalize, destructor: ids).
    pub batch: RecordBatch,
    /// Finalize: the output schema, echoed.
    pub output_schema: Option<SchemaRef>,
}

/// The nested batch's column name and the request schema of each call.
fn layout(method: &str) -> Option<(&'static str, &'static SchemaRef)> {
    Some(match method {
        METHOD_UPDATE => ("input_batch", &UPDATE_REQUEST),
        METHOD_COMBINE => ("merge_batch", &COMBINE_REQUEST),
        METHOD_FINALIZE => ("group_ids_batch", &FINALIZE_REQUEST),
        METHOD_DESTRUCTOR => ("group_ids_batch", &DESTRUCTOR_REQUEST),
        _ => return None,
    })
}

impl BatchRequest {
    /// Encodes the request of `method` (one of the four).
    pub fn encode(&self, method: &str) -> Vec<u8> {
        let (column, schema) = layout(method).expect("an aggregate batch method");
        let output = self.output_schema.as_ref().map(|s| ipc::encode_schema(s));
        let mut row =
            RowBuilder::new((*schema).clone()).bytes(column, Some(&ipc::encode_batch(&self.batch)));
        if method == METHOD_FINALIZE {
            row = row.bytes("output_schema", output.as_deref());
        }
        ipc::encode_batch(&self.target.write(row, true).finish())
    }

    /// Decodes the request of `method`; its nested batch must hold exactly one batch.
    pub fn decode(method: &str, bytes: &[u8]) -> Result<BatchRequest, ErrorReport> {
        let (column, _) = layout(method).ok_or_else(|| {
            ErrorReport::new("ProtocolError", format!("{method}: not an aggregate call"))
        })?;
        let batch = ipc::decode_row(bytes, method)?;
        let row = RowReader::new(&batch, "aggregate request");
        let nested = row.bytes(column)?.ok_or_else(|| row.missing(column))?;
        let output_schema = match row.bytes("output_schema")? {
            Some(bytes) if !bytes.is_empty() => Some(ipc::decode_schema(bytes, "output_schema")?),
            _ => None,
        };
        Ok(BatchRequest {
            target: Target::read(&row, true)?,
            batch: single_batch(nested, column)?,
            output_schema,
        })
    }
}

/// The one batch of a nested stream (an empty stream reads as zero rows of its schema).
pub fn single_batch(bytes: &[u8], what: &str) -> Result<RecordBatch, ErrorReport> {
    let (schema, batches) = ipc::decode_batches(bytes, what)?;
    match batches.len() {
        0 => Ok(RecordBatch::new_empty(schema)),
        1 => Ok(batches.into_iter().next().expect("one batch")),
        n => Err(ErrorReport::new(
            "ProtocolError",
            format!("{what}: expected one batch, got {n}"),
        )),
    }
}

/// A batch of `int64` columns, one per field of `schema`.
pub fn ids_batch(schema: &SchemaRef, columns: Vec<Vec<i64>>) -> RecordBatch {
    let columns: Vec<ArrayRef> = columns
        .into_iter()
        .map(|ids| Arc::new(Int64Array::from(ids)) as ArrayRef)
        .collect();
    RecordBatch::try_new(schema.clone(), columns).expect("ids match the schema")
}

/// `AggregateFinalizeResponse`, encoded.
pub fn encode_finalize_response(result: &RecordBatch) -> Vec<u8> {
    ipc::encode_batch(
        &RowBuilder::new(FINALIZE_RESPONSE.clone())
            .bytes("result_batch", Some(&ipc::encode_batch(result)))
            .finish(),
    )
}

/// `AggregateFinalizeResponse`, decoded: the result batch.
pub fn decode_finalize_response(bytes: &[u8]) -> Result<RecordBatch, ErrorReport> {
    let batch = ipc::decode_row(bytes, "AggregateFinalizeResponse")?;
    let row = RowReader::new(&batch, "AggregateFinalizeResponse");
    let nested = row
        .bytes("result_batch")?
        .ok_or_else(|| row.missing("result_batch"))?;
    single_batch(nested, "result_batch")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arguments::int64_value;

    fn target() -> Target {
        Target {
            function_name: "q_sum".into(),
            execution_id: vec![1, 2, 3],
            attach_opaque_data: Some(b"t".to_vec()),
            schema_path: Some(vec!["main".into()]),
        }
    }

    #[test]
    fn bind_round_trips() {
        let input = schema(vec![Field::new("x", DataType::Int64, true)]);
        let request = BindRequest {
            target: target(),
            arguments: RawArguments {
                positional: vec![int64_value(3)],
                named: vec![],
            },
            input_schema: Some(input.clone()),
        };
        let decoded = BindRequest::decode(&request.encode()).unwrap();
        assert_eq!(decoded.target.function_name, "q_sum");
        assert!(decoded.target.execution_id.is_empty());
        assert_eq!(decoded.input_schema, Some(input));
        assert_eq!(decoded.arguments.positional.len(), 1);
        let out = Schema::new(vec![Field::new("result", DataType::Int64, true)]);
        let (schema, id) = decode_bind_response(&encode_bind_response(&out, b"e")).unwrap();
        assert_eq!(schema.as_ref(), &out);
        assert_eq!(id, b"e");
    }

    #[test]
    fn batch_requests_round_trip() {
        let merge = ids_batch(&MERGE_SCHEMA, vec![vec![1, 2], vec![0, 0]]);
        let request = BatchRequest {
            target: target(),
            batch: merge.clone(),
            output_schema: None,
        };
        let decoded =
            BatchRequest::decode(METHOD_COMBINE, &request.encode(METHOD_COMBINE)).unwrap();
        assert_eq!(decoded.batch, merge);
        assert_eq!(decoded.target.execution_id, vec![1, 2, 3]);
        assert_eq!(decoded.target.schema_path, Some(vec!["main".to_string()]));
        let ids = ids_batch(&GROUP_IDS_SCHEMA, vec![vec![4]]);
        let finalize = BatchRequest {
            target: target(),
            batch: ids.clone(),
            output_schema: Some(GROUP_IDS_SCHEMA.clone()),
        };
        let decoded =
            BatchRequest::decode(METHOD_FINALIZE, &finalize.encode(METHOD_FINALIZE)).unwrap();
        assert_eq!(decoded.batch, ids);
        assert_eq!(decoded.output_schema, Some(GROUP_IDS_SCHEMA.clone()));
        let result = decode_finalize_response(&encode_finalize_response(&ids)).unwrap();
        assert_eq!(result, ids);
        assert!(BatchRequest::decode("bind", b"").is_err());
    }
}
