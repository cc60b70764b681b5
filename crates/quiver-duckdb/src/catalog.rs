//! Discovery: `catalog_attach`, then the worker's functions from one `catalog_contents` call (or,
//! for workers without it, `catalog_schemas` + `catalog_schema_contents_functions`), decoded into
//! what DuckDB needs to register them. `catalog_detach` on DETACH.
//!
//! Workers written against older vgi-python releases are spoken to in their dialect: the first
//! call learns it (src/negotiate.rs), and the calls whose shape changed follow it here.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{Client, RpcError};
use quiver_vgi_contract::enums::{function_type, object_type};
use quiver_vgi_contract::schemas::{self, enum_type, list_of};
use quiver_vgi_contract::{aggregate, arg_metadata, ipc, methods, Dialect, RowBuilder, RowReader};
use quiver_wire::ErrorReport;

use crate::catalog_docs::{self, Docs, SchemaDesc};
use crate::ffi::{Failure, Outcome};
use crate::negotiate::{negotiated, Step};
use crate::worker::Worker;

/// Most functions one worker may register.
pub const FUNCTIONS_MAX: usize = 4096;

/// What kind of SQL function a worker function becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    /// Columns in, one column out (`w.f(x)`).
    Scalar = 1,
    /// A table source (`FROM w.f(...)`).
    Table = 2,
    /// A table in, a table out (`FROM w.f((SELECT ...))`).
    TableInOut = 3,
    /// Rows in, one value per group out (`SELECT w.f(x) ... GROUP BY ...`), see `aggregate.rs`.
    Aggregate = 4,
    /// A table in, a table out once the whole input was seen (`table_buffering`).
    TableBuffering = 5,
}

/// One function as the worker describes it.
#[derive(Debug, Clone)]
pub struct FunctionDesc {
    /// SQL name.
    pub name: String,
    /// The schema path it lives in (`["main"]`).
    pub schema_path: Vec<String>,
    /// Its kind.
    pub kind: Kind,
    /// One field per parameter: positional first, then named (field metadata `vgi_arg`,
    /// `vgi_type`, `vgi_const`...).
    pub arguments: SchemaRef,
    /// Scalar functions: the schema `result: T`.
    pub result: Option<SchemaRef>,
    /// Long documentation.
    pub description: String,
    /// Honours `projection_ids`.
    pub projection_pushdown: bool,
    /// Accepts pushed-down filters.
    pub filter_pushdown: bool,
    /// Applies every pushed filter exactly (the engine may drop its own).
    pub filters_exactly_applied: bool,
    /// Table-in-out: has a FINALIZE phase.
    pub has_finalize: bool,
    /// Table: plans its scan into splits (`table_function_plan`).
    pub supports_splits: bool,
    /// Most connections one call may use (catalog hint), if given.
    pub max_workers: Option<i64>,
    /// `CONSISTENT`, `VOLATILE` or `CONSISTENT_WITHIN_QUERY` (scalars).
    pub stability: Option<String>,
    /// `DEFAULT` or `SPECIAL` (scalars).
    pub null_handling: Option<String>,
    /// Aggregates: the result depends on the order of the rows (`ORDER BY` inside the call).
    pub order_dependent: bool,
    /// Aggregates: the result changes under `DISTINCT`.
    pub distinct_dependent: bool,
    /// Its comment, tags, example queries and categories.
    pub docs: Docs,
}

/// What `catalog_attach` answered, plus the functions found.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The token every later catalog call and bind carries.
    pub attach_opaque_data: Vec<u8>,
    /// The schema unqualified names resolve in.
    pub default_schema: String,
    /// Every schema the worker declares, with or without functions (and those its functions name).
    pub schemas: Vec<SchemaDesc>,
    /// The catalog's own comment and tags.
    pub docs: Docs,
    /// The functions DuckDB can call.
    pub functions: Vec<FunctionDesc>,
    /// Functions of kinds the engine cannot call (one newer than it knows): registered
    /// as placeholders that say so, never left to read as "does not exist".
    pub skipped: Vec<Skipped>,
}

/// A function of a kind the engine cannot call yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its name.
    pub name: String,
    /// Its schema, as [`FunctionDesc::schema_path`].
    pub schema_path: Vec<String>,
    /// Its `function_type` as the worker declared it, lower-cased.
    pub kind: String,
}

impl Skipped {
    /// Why a call of it is refused, e.g. "w.later is a function of kind 'future_kind', which
    /// quiver's engine does not call".
    pub fn refusal(&self, alias: &str) -> String {
        format!(
            "{alias}.{} is a function of kind '{}', which quiver's engine does not call",
            self.name, self.kind
        )
    }
}

fn request(bytes: &[u8]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "request",
        DataType::Binary,
        false,
    )]));
    let column: ArrayRef = Arc::new(BinaryArray::from(vec![bytes]));
    RecordBatch::try_new(schema, vec![column]).expect("one binary column")
}

fn attach_params(attach: &[u8]) -> RowBuilder {
    RowBuilder::new(Arc::new(Schema::new(vec![Field::new(
        "attach_opaque_data",
        DataType::Binary,
        false,
    )])))
    .bytes("attach_opaque_data", Some(attach))
}

/// The `result: binary` of a unary reply.
pub fn result_bytes(reply: Option<RecordBatch>, method: &str) -> Result<Vec<u8>, ErrorReport> {
    let batch = reply.ok_or_else(|| malformed(method, "no result"))?;
    let column = batch
        .column_by_name("result")
        .ok_or_else(|| malformed(method, "no 'result' column"))?;
    match column.data_type() {
        DataType::Binary if batch.num_rows() == 1 && column.is_valid(0) => {
            Ok(column.as_binary::<i32>().value(0).to_vec())
        }
        _ => Err(malformed(method, "'result' is not one binary value")),
    }
}

fn malformed(what: &str, why: &str) -> ErrorReport {
    ErrorReport::new("ProtocolError", format!("{what}: {why}"))
}

/// Attaches the worker's catalog `name` and lists its functions. Without a name: the worker's
/// only catalog, or the one called like the alias the engine attaches it as.
pub fn discover(worker: &Worker, name: Option<&str>) -> Outcome<Discovered> {
    let name = match name {
        Some(name) => name.to_string(),
        None => choose_catalog(worker)?,
    };
    negotiated(worker, methods::CATALOG_ATTACH, |client, dialect| {
        discover_on(client, dialect, &name)
    })
}

/// The catalog to attach when the engine names none (`catalog_catalogs`).
fn choose_catalog(worker: &Worker) -> Outcome<String> {
    let params = RecordBatch::new_empty(Arc::new(Schema::empty()));
    let names = negotiated(worker, methods::CATALOG_CATALOGS, |client, _| {
        let reply = client.call(methods::CATALOG_CATALOGS, &params)?;
        let mut names = Vec::new();
        for item in items(&result_bytes(reply, methods::CATALOG_CATALOGS)?)? {
            let info = ipc::decode_row(&item, "CatalogInfo")?;
            let row = RowReader::new(&info, "CatalogInfo");
            names.push(row.str("name")?.unwrap_or_default());
        }
        Ok(names)
    })?;
    if let Some(same) = names.iter().find(|n| n.eq_ignore_ascii_case(&worker.alias)) {
        return Ok(same.clone());
    }
    match names.as_slice() {
        [only] => Ok(only.clone()),
        _ => Err(Failure::invalid(format!(
            "{} serves the catalogs [{}]: name one with ATTACH ... (TYPE quiver, CATALOG '<name>')",
            worker.label(),
            names.join(", ")
        ))),
    }
}

/// Attach + contents on one connection.
fn discover_on(client: &mut Client, dialect: Dialect, name: &str) -> Result<Discovered, Step> {
    let attach_request = RowBuilder::new(schemas::CATALOG_ATTACH_REQUEST.clone())
        .str("name", Some(name))
        .finish();
    let reply = client.call(
        methods::CATALOG_ATTACH,
        &request(&ipc::encode_batch(&attach_request)),
    )?;
    let attach = ipc::decode_row(
        &result_bytes(reply, methods::CATALOG_ATTACH)?,
        "CatalogAttachResult",
    )?;
    let row = RowReader::new(&attach, "CatalogAttachResult");
    let attach_opaque_data = row
        .bytes("attach_opaque_data")?
        .ok_or_else(|| row.missing("attach_opaque_data"))?
        .to_vec();
    let default_schema = row.str("default_schema")?.unwrap_or_else(|| "main".into());
    let docs = Docs::of(&row);
    let mut schemas = Vec::new();
    let rows = if row.bool("supports_catalog_contents")?.unwrap_or(false) {
        contents(client, dialect, &attach_opaque_data, &mut schemas)?
    } else {
        per_schema(client, dialect, &attach_opaque_data, &mut schemas)?
    };
    let mut functions = Vec::new();
    let mut skipped = Vec::new();
    for row in rows {
        match function_desc(&row)? {
            Some(desc) => functions.push(desc),
            None => skipped.push(skipped_function(&row)?),
        }
        if functions.len() + skipped.len() > FUNCTIONS_MAX {
            return Err(
                malformed("catalog", &format!("more than {FUNCTIONS_MAX} functions")).into(),
            );
        }
    }
    let schemas = every_schema(schemas, &default_schema, &functions, &skipped)?;
    Ok(Discovered {
        attach_opaque_data,
        default_schema,
        schemas,
        docs,
        functions,
        skipped,
    })
}

/// Every `FunctionInfo` row of a `catalog_contents` answer.
fn contents(
    client: &mut Client,
    dialect: Dialect,
    attach: &[u8],
    schemas: &mut Vec<SchemaDesc>,
) -> Result<Vec<RecordBatch>, Step> {
    let params = RowBuilder::new(Arc::new(Schema::new(vec![
        Field::new("attach_opaque_data", DataType::Binary, false),
        Field::new("if_none_match", DataType::Utf8, true),
    ])))
    .bytes("attach_opaque_data", Some(attach))
    .finish();
    let reply = client.call(methods::CATALOG_CONTENTS, &params)?;
    let answer = ipc::decode_row(
        &result_bytes(reply, methods::CATALOG_CONTENTS)?,
        "CatalogContentsResponse",
    )?;
    let row = RowReader::new(&answer, "CatalogContentsResponse");
    if !dialect.contents_by_category() {
        return Ok(contents_by_schema(&row)?);
    }
    if let Some(bytes) = row.bytes("schemas")?.filter(|b| !b.is_empty()) {
        schemas.extend(
            rows_of(bytes, "schemas")?
                .iter()
                .filter_map(catalog_docs::schema_desc),
        );
    }
    match row.bytes("functions")? {
        Some(bytes) if !bytes.is_empty() => Ok(rows_of(bytes, "functions")?),
        _ => Ok(Vec::new()),
    }
}

/// The `FunctionInfo` rows of a 2.1 `catalog_contents` answer: one `SchemaContents` struct per
/// schema, its scalar and table functions each a list of serialized rows.
fn contents_by_schema(row: &RowReader<'_>) -> Result<Vec<RecordBatch>, ErrorReport> {
    let what = "CatalogContentsResponse.schemas";
    let Some(schemas) = row.list("schemas")? else {
        return Ok(Vec::new());
    };
    let schemas = schemas
        .as_struct_opt()
        .ok_or_else(|| malformed(what, "not a list of structs"))?;
    let mut rows = Vec::new();
    for category in ["scalar_functions", "table_functions", "aggregate_functions"] {
        let Some(column) = schemas.column_by_name(category) else {
            // Aggregates came later than the other two: a worker may not list them.
            if category == "aggregate_functions" {
                continue;
            }
            return Err(malformed(what, &format!("no list '{category}'")));
        };
        let lists = column
            .as_list_opt::<i32>()
            .ok_or_else(|| malformed(what, &format!("'{category}' is not a list")))?;
        for schema in 0..lists.len() {
            let items = lists.value(schema);
            let items = items
                .as_binary_opt::<i32>()
                .ok_or_else(|| malformed(what, &format!("'{category}' is not binary")))?;
            for item in items.iter().flatten() {
                rows.push(ipc::decode_row(item, "FunctionInfo")?);
                if rows.len() > FUNCTIONS_MAX {
                    return Err(malformed(
                        what,
                        &format!("more than {FUNCTIONS_MAX} functions"),
                    ));
                }
            }
        }
    }
    Ok(rows)
}

/// The fallback: every schema, then its scalar and table functions.
fn per_schema(
    client: &mut Client,
    dialect: Dialect,
    attach: &[u8],
    schemas: &mut Vec<SchemaDesc>,
) -> Result<Vec<RecordBatch>, Step> {
    let params = RowBuilder::new(Arc::new(Schema::new(vec![
        Field::new("attach_opaque_data", DataType::Binary, false),
        Field::new("transaction_opaque_data", DataType::Binary, true),
    ])))
    .bytes("attach_opaque_data", Some(attach))
    .finish();
    let reply = client.call(methods::CATALOG_SCHEMAS, &params)?;
    let mut rows = Vec::new();
    let mut by_path = dialect.schemas_have_paths();
    for item in items(&result_bytes(reply, methods::CATALOG_SCHEMAS)?)? {
        let schema = ipc::decode_row(&item, "SchemaInfo")?;
        schemas.extend(catalog_docs::schema_desc(&schema));
        let schema = RowReader::new(&schema, "SchemaInfo");
        // 2.x names a schema by its path, 1.4 by one name.
        let path = match schema.strs("path")? {
            Some(path) => path,
            None => vec![schema.str("name")?.ok_or_else(|| schema.missing("path"))?],
        };
        for object_type in [
            object_type::SCALAR_FUNCTION,
            object_type::TABLE_FUNCTION,
            object_type::AGGREGATE_FUNCTION,
        ] {
            let method = methods::CATALOG_SCHEMA_CONTENTS_FUNCTIONS;
            let call = |client: &mut Client, by_path: bool| {
                client.call(
                    method,
                    &schema_contents_params(attach, &path, object_type, by_path),
                )
            };
            let reply = match call(client, by_path) {
                // Aggregates are listed where a worker knows them; one that refuses the type
                // has none (so they are never lost silently where it does list them).
                Err(RpcError::Remote(_)) if object_type == object_type::AGGREGATE_FUNCTION => {
                    continue
                }
                // A worker whose declared version says one shape but whose method takes the
                // other (the call took a schema `name` before protocol 2.0, a `path` since; a
                // worker may declare a version its methods do not follow, or none). Try the
                // other shape once, and keep to it for the remaining schemas.
                Err(RpcError::Remote(report)) if refuses_parameters(&report, by_path) => {
                    by_path = !by_path;
                    call(client, by_path)?
                }
                other => other?,
            };
            for item in items(&result_bytes(reply, method)?)? {
                rows.push(ipc::decode_row(&item, "FunctionInfo")?);
            }
        }
    }
    Ok(rows)
}

/// `catalog_schema_contents_functions`' parameters: the schema as a `path` list (2.x) or, before
/// protocol 2.0, as one `name` (its path's last element).
fn schema_contents_params(
    attach: &[u8],
    path: &[String],
    object_type: &str,
    by_path: bool,
) -> RecordBatch {
    let address = if by_path {
        Field::new("path", list_of(DataType::Utf8), false)
    } else {
        Field::new("name", DataType::Utf8, false)
    };
    let row = RowBuilder::new(Arc::new(Schema::new(vec![
        Field::new("attach_opaque_data", DataType::Binary, false),
        address,
        Field::new("type", enum_type(), false),
        Field::new("transaction_opaque_data", DataType::Binary, true),
    ])))
    .bytes("attach_opaque_data", Some(attach));
    let row = if by_path {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        row.strs("path", &path)
    } else {
        row.str("name", path.last().map(String::as_str))
    };
    row.str("type", Some(object_type)).finish()
}

/// Whether `report` refuses the request's parameters as shaped (`path` when `by_path`, else
/// `name`): vgi-rpc answers a TypeError naming the parameter it does not declare ("Request carries
/// parameter(s) this protocol does not declare: path. ..."), quiver-rpc likewise.
fn refuses_parameters(report: &ErrorReport, by_path: bool) -> bool {
    let sent = if by_path { "path" } else { "name" };
    report.error_type == "TypeError"
        && report.message.contains(sent)
        && (report.message.contains("declare") || report.message.contains("mismatch"))
}

fn items(bytes: &[u8]) -> Result<Vec<Vec<u8>>, ErrorReport> {
    let answer = ipc::decode_row(bytes, "ItemsResponse")?;
    Ok(RowReader::new(&answer, "ItemsResponse")
        .bytes_list("items")?
        .unwrap_or_default())
}

/// Each row of a nested stream, as a one-row batch.
fn rows_of(bytes: &[u8], what: &str) -> Result<Vec<RecordBatch>, ErrorReport> {
    let (_, batches) = ipc::decode_batches(bytes, what)?;
    Ok(batches
        .iter()
        .flat_map(|batch| (0..batch.num_rows()).map(|i| batch.slice(i, 1)))
        .collect())
}

/// A `FunctionInfo` row as a [`FunctionDesc`]; `None` for kinds DuckDB cannot call here.
fn function_desc(row: &RecordBatch) -> Result<Option<FunctionDesc>, ErrorReport> {
    let info = RowReader::new(row, "FunctionInfo");
    let name = info.str("name")?.ok_or_else(|| info.missing("name"))?;
    let arguments = match info.bytes("arguments")? {
        Some(bytes) if !bytes.is_empty() => ipc::decode_schema(bytes, "FunctionInfo.arguments")?,
        _ => Arc::new(Schema::empty()),
    };
    let function_type = info
        .str("function_type")?
        .ok_or_else(|| info.missing("function_type"))?
        .to_ascii_uppercase();
    let has_table_arg = arguments.fields().iter().any(|f| {
        f.metadata().get(arg_metadata::TYPE).map(String::as_str) == Some(arg_metadata::TYPE_TABLE)
    });
    let kind = match function_type.as_str() {
        function_type::SCALAR => Kind::Scalar,
        function_type::TABLE if has_table_arg => Kind::TableInOut,
        function_type::TABLE => Kind::Table,
        function_type::TABLE_BUFFERING => Kind::TableBuffering,
        aggregate::FUNCTION_TYPE => Kind::Aggregate,
        _ => return Ok(None),
    };
    let result = match (kind, info.bytes("output_schema")?) {
        (Kind::Scalar | Kind::Aggregate, Some(bytes)) if !bytes.is_empty() => {
            let schema = ipc::decode_schema(bytes, "FunctionInfo.output_schema")?;
            if schema.fields().len() != 1 {
                return Err(malformed(
                    &name,
                    "a scalar or aggregate function's output schema must have one field",
                ));
            }
            Some(schema)
        }
        (Kind::Scalar | Kind::Aggregate, _) => {
            return Err(malformed(
                &name,
                "a scalar or aggregate function needs an output schema",
            ))
        }
        _ => None,
    };
    Ok(Some(FunctionDesc {
        schema_path: schema_path(&info)?,
        kind,
        arguments,
        result,
        description: info.str("description")?.unwrap_or_default(),
        projection_pushdown: info.bool("projection_pushdown")?.unwrap_or(false),
        filter_pushdown: info.bool("filter_pushdown")?.unwrap_or(false),
        filters_exactly_applied: info.bool("filters_exactly_applied")?.unwrap_or(false),
        has_finalize: info.bool("has_finalize")?.unwrap_or(false),
        supports_splits: info.bool("supports_splits")?.unwrap_or(false),
        max_workers: info.int("max_workers")?,
        stability: info.str("stability")?,
        null_handling: info.str("null_handling")?,
        order_dependent: info.str("order_dependent")?.as_deref()
            == Some(aggregate::ORDER_DEPENDENT),
        distinct_dependent: info.str("distinct_dependent")?.as_deref()
            == Some(aggregate::DISTINCT_DEPENDENT),
        docs: Docs::of(&info),
        name,
    }))
}

/// The schemas declared, then any a function names that was not declared, once each (paths
/// compared case-insensitively, as DuckDB does); the default schema among them.
fn every_schema(
    declared: Vec<SchemaDesc>,
    default_schema: &str,
    functions: &[FunctionDesc],
    skipped: &[Skipped],
) -> Result<Vec<SchemaDesc>, ErrorReport> {
    let named = functions
        .iter()
        .map(|f| &f.schema_path)
        .chain(skipped.iter().map(|f| &f.schema_path))
        .cloned()
        .chain(std::iter::once(vec![default_schema.to_string()]));
    let undeclared = named.map(|path| SchemaDesc {
        path,
        docs: Docs::default(),
    });
    let mut schemas: Vec<SchemaDesc> = Vec::new();
    for schema in declared.into_iter().chain(undeclared) {
        let key = schema.path.join(".").to_lowercase();
        if !schemas
            .iter()
            .any(|s| s.path.join(".").to_lowercase() == key)
        {
            schemas.push(schema);
        }
        if schemas.len() > catalog_docs::SCHEMAS_MAX {
            let most = catalog_docs::SCHEMAS_MAX;
            return Err(malformed("catalog", &format!("more than {most} schemas")));
        }
    }
    Ok(schemas)
}

/// A `FunctionInfo` row of a kind the engine cannot call, for its placeholder.
fn skipped_function(row: &RecordBatch) -> Result<Skipped, ErrorReport> {
    let info = RowReader::new(row, "FunctionInfo");
    Ok(Skipped {
        name: info.str("name")?.ok_or_else(|| info.missing("name"))?,
        schema_path: schema_path(&info)?,
        kind: info
            .str("function_type")?
            .unwrap_or_default()
            .to_ascii_lowercase(),
    })
}

/// A function's schema; before protocol 2.0 it was one name.
fn schema_path(info: &RowReader<'_>) -> Result<Vec<String>, ErrorReport> {
    Ok(match info.strs("schema_path")? {
        Some(path) => path,
        None => vec![info.str("schema_name")?.unwrap_or_else(|| "main".into())],
    })
}

/// `catalog_detach`, best effort (the worker may already be gone).
pub fn detach(worker: &Worker, attach: &[u8]) -> Outcome<()> {
    worker.with_conn(methods::CATALOG_DETACH, |client| {
        client
            .call(methods::CATALOG_DETACH, &attach_params(attach).finish())
            .map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_parameter_shape_is_recognised() {
        let refusal = ErrorReport::new(
            "TypeError",
            "Request carries parameter(s) this protocol does not declare: path. Declared: \
             attach_opaque_data, name, transaction_opaque_data, type.",
        );
        assert!(refuses_parameters(&refusal, true));
        let other = ErrorReport::new("ValueError", "no such schema: path");
        assert!(!refuses_parameters(&other, true));
    }

    #[test]
    fn the_two_parameter_shapes() {
        let path = vec!["main".to_string()];
        let by_path = schema_contents_params(b"t", &path, object_type::TABLE_FUNCTION, true);
        assert!(
            by_path.column_by_name("path").is_some() && by_path.column_by_name("name").is_none()
        );
        let by_name = schema_contents_params(b"t", &path, object_type::TABLE_FUNCTION, false);
        let name = RowReader::new(&by_name, "params").str("name").unwrap();
        assert_eq!(name.as_deref(), Some("main"));
        assert!(by_name.column_by_name("path").is_none());
    }
}
