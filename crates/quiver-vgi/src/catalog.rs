//! The catalog an engine discovers on ATTACH: one catalog, its schemas (the default one,
//! those the worker declares and those its functions name), and the worker's functions,
//! described as vgi-python describes them, with their comments, tags and examples (`docs.rs`).
//!
//! Every answer is computed from the function definitions alone, and the attach
//! token is self-contained, so any worker process can answer any catalog call:
//! the engine's catalog connection and its function connections need not be
//! the same process (on stdio they never are).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use quiver_rpc::{field, Method, Params, Service};
use quiver_vgi_contract::aggregate;
use quiver_vgi_contract::arg_metadata;
use quiver_vgi_contract::enums::object_type;
use quiver_vgi_contract::filter_container;
use quiver_vgi_contract::ipc;
use quiver_vgi_contract::row::RowBuilder;
use quiver_vgi_contract::schemas::{self, enum_type, list_of};
use quiver_vgi_contract::{errors, methods};
use quiver_wire::ErrorReport;

use crate::declarations::{Arg, FunctionKind};
use crate::docs::{with_comment_and_tags, with_function_docs, CatalogDocs, SchemaDecl};
use crate::function::Function;
use crate::limits::MAX_WORKERS_UNBOUNDED;

/// The catalog never changes while a worker runs.
const CATALOG_VERSION: i64 = 1;
/// Attach tokens start with this, then the catalog name.
const ATTACH_PREFIX: &[u8] = b"quiver-vgi:v1:";

/// The functions a worker serves, by name.
pub struct Catalog {
    name: String,
    functions: Vec<Arc<Function>>,
    docs: CatalogDocs,
}

impl Catalog {
    /// A catalog called `name` holding `functions` (names are unique).
    pub fn new(name: &str, functions: Vec<Function>) -> Catalog {
        let mut seen = std::collections::HashSet::new();
        for function in &functions {
            assert!(
                seen.insert(function.name.clone()),
                "function '{}' registered twice",
                function.name
            );
        }
        let mut functions: Vec<Arc<Function>> = functions.into_iter().map(Arc::new).collect();
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        Catalog {
            name: name.to_string(),
            functions,
            docs: CatalogDocs::default(),
        }
    }

    /// The same catalog with its comment, tags, default schema and declared schemas; every
    /// schema a function names is declared too.
    pub fn with_docs(mut self, mut docs: CatalogDocs) -> Catalog {
        for function in &self.functions {
            if let Some(schema) = &function.docs.schema {
                if !docs.schemas.iter().any(|s| &s.name == schema) {
                    docs.declare(SchemaDecl::new(schema));
                }
            }
        }
        self.docs = docs;
        self
    }

    /// The schema `function` lives in.
    fn schema_of<'a>(&'a self, function: &'a Function) -> &'a str {
        function
            .docs
            .schema
            .as_deref()
            .unwrap_or(&self.docs.default_schema)
    }

    /// The function `name` in `schema_path` (`None`: any schema).
    pub fn resolve(
        &self,
        name: &str,
        schema_path: Option<&[String]>,
    ) -> Result<&Arc<Function>, ErrorReport> {
        let found = self
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name));
        match found {
            Some(function) if schema_path.is_none_or(|p| is(p, self.schema_of(function))) => {
                Ok(function)
            }
            _ => {
                let available: Vec<String> = self
                    .functions
                    .iter()
                    .map(|f| format!("'{}'", f.name))
                    .collect();
                let schema = schema_path
                    .map(|p| format!(" in schema {}", p.join(".")))
                    .unwrap_or_default();
                Err(errors::not_found(format!(
                    "Unknown function: '{name}'{schema}\n  Available functions: [{}]",
                    available.join(", ")
                )))
            }
        }
    }

    fn attach_token(&self) -> Vec<u8> {
        [ATTACH_PREFIX, self.name.as_bytes()].concat()
    }

    fn check_attach(&self, token: &[u8]) -> Result<(), ErrorReport> {
        if token.starts_with(ATTACH_PREFIX) {
            Ok(())
        } else {
            Err(errors::opaque_data_not_recognized("attach_opaque_data"))
        }
    }

    fn count(&self, schema: &str, kind: FunctionKind) -> i64 {
        self.functions
            .iter()
            .filter(|f| f.kind == kind && self.schema_of(f) == schema)
            .count() as i64
    }

    /// The `SchemaInfo` rows of every schema, or of the one at `path`.
    fn schema_infos(&self, path: Option<&[String]>) -> Vec<RecordBatch> {
        self.docs
            .schemas
            .iter()
            .filter(|s| path.is_none_or(|p| is(p, &s.name)))
            .map(|s| self.schema_info(s))
            .collect()
    }

    fn schema_info(&self, schema: &SchemaDecl) -> RecordBatch {
        let name = schema.name.as_str();
        let tables = self.count(name, FunctionKind::Table)
            + self.count(name, FunctionKind::TableInOut)
            + self.count(name, FunctionKind::TableBuffering);
        let counts = [
            (
                "aggregate_function",
                self.count(name, FunctionKind::Aggregate),
            ),
            ("index", 0),
            ("macro", 0),
            ("scalar_function", self.count(name, FunctionKind::Scalar)),
            ("table", 0),
            ("table_function", tables),
            ("view", 0),
        ];
        let keys: Vec<&str> = counts.iter().map(|(k, _)| *k).collect();
        let values: ArrayRef =
            Arc::new(Int64Array::from_iter_values(counts.iter().map(|(_, v)| *v)));
        let row = RowBuilder::new(schemas::SCHEMA_INFO.clone())
            .strs("path", &[name])
            .map("estimated_object_count", &keys, values);
        with_comment_and_tags(row, schema.comment.as_deref(), &schema.tags).finish()
    }

    fn functions_of(&self, path: &[String], wanted: &str) -> Vec<&Arc<Function>> {
        self.functions
            .iter()
            .filter(|f| is(path, self.schema_of(f)))
            .filter(|f| match wanted {
                object_type::SCALAR_FUNCTION => f.kind == FunctionKind::Scalar,
                object_type::TABLE_FUNCTION => {
                    matches!(
                        f.kind,
                        FunctionKind::Table
                            | FunctionKind::TableInOut
                            | FunctionKind::TableBuffering
                    )
                }
                object_type::AGGREGATE_FUNCTION => f.kind == FunctionKind::Aggregate,
                _ => false,
            })
            .collect()
    }
}

fn is(path: &[String], schema: &str) -> bool {
    matches!(path, [one] if one.eq_ignore_ascii_case(schema))
}

/// The `arguments` schema of `FunctionInfo`: positional parameters in order,
/// then named ones sorted by name, each documented in field metadata.
pub fn arguments_schema(function: &Function) -> Schema {
    let positional = function.args.iter().filter(|a| !a.named);
    let fields: Vec<Field> = positional
        .chain(function.named_args())
        .map(argument_field)
        .collect();
    Schema::new(fields)
}

fn argument_field(arg: &Arg) -> Field {
    let mut metadata = HashMap::new();
    if !arg.doc.is_empty() {
        metadata.insert(arg_metadata::DOC.to_string(), arg.doc.clone());
    }
    if arg.named {
        metadata.insert(
            arg_metadata::ARG.to_string(),
            arg_metadata::ARG_NAMED.to_string(),
        );
    }
    if arg.table {
        metadata.insert(
            arg_metadata::TYPE.to_string(),
            arg_metadata::TYPE_TABLE.to_string(),
        );
    }
    if arg.constant {
        metadata.insert(
            arg_metadata::CONST.to_string(),
            arg_metadata::TRUE.to_string(),
        );
    }
    if let Some(range) = arg.range_text() {
        metadata.insert(arg_metadata::RANGE.to_string(), range);
    }
    if let Some(default) = arg.default.as_ref().and_then(default_json) {
        metadata.insert(arg_metadata::DEFAULT.to_string(), default);
    }
    Field::new(&arg.name, arg.data_type.clone(), true).with_metadata(metadata)
}

fn default_json(value: &ArrayRef) -> Option<String> {
    let text = arrow_cast::cast(value, &DataType::Utf8).ok()?;
    let text = text.as_string::<i32>().value(0).to_string();
    Some(match value.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 => serde_json::Value::String(text).to_string(),
        _ => text,
    })
}

/// `parameter_default_values`: one row whose columns are the defaulted parameters.
fn default_values(function: &Function) -> Option<Vec<u8>> {
    let defaulted: Vec<&Arg> = function
        .named_args()
        .into_iter()
        .filter(|a| a.default.is_some())
        .collect();
    if defaulted.is_empty() {
        return None;
    }
    let fields: Vec<Field> = defaulted
        .iter()
        .map(|a| Field::new(&a.name, a.data_type.clone(), true))
        .collect();
    let columns: Vec<ArrayRef> = defaulted
        .iter()
        .map(|a| a.default.clone().expect("filtered"))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .expect("one value per default");
    Some(ipc::encode_batch(&batch))
}

/// One `FunctionInfo` row; `schema` is the one it lives in.
pub fn function_info(function: &Function, schema: &str) -> RecordBatch {
    // Scalars and aggregates are not table functions: no scan capabilities.
    let scalar = matches!(
        function.kind,
        FunctionKind::Scalar | FunctionKind::Aggregate
    );
    let caps = function.caps;
    let output = match &function.body {
        crate::function::Body::Scalar { result_type, .. }
        | crate::function::Body::Aggregate { result_type, .. } => {
            Schema::new(vec![Field::new("result", result_type.clone(), true)])
        }
        _ => Schema::empty(),
    };
    let max_workers = caps
        .max_workers
        .map_or(MAX_WORKERS_UNBOUNDED, i64::from)
        .min(i32::MAX as i64);
    let order = if caps.max_workers == Some(1) {
        "PRESERVES_ORDER"
    } else {
        "NO_ORDER_GUARANTEE"
    };
    let table_flag = |value: bool| (!scalar).then_some(value);
    let profiles: &[&str] = if caps.filter_pushdown {
        &[filter_container::SEMANTICS]
    } else {
        &[]
    };
    let row = RowBuilder::new(schemas::FUNCTION_INFO.clone());
    with_function_docs(row, &function.docs)
        .str("name", Some(&function.name))
        .strs("schema_path", &[schema])
        .str("function_type", Some(function.kind.wire_name()))
        .bytes(
            "arguments",
            Some(&ipc::encode_schema(&arguments_schema(function))),
        )
        .bytes("output_schema", Some(&ipc::encode_schema(&output)))
        .bytes(
            "parameter_default_values",
            default_values(function).as_deref(),
        )
        .str("stability", scalar.then_some("CONSISTENT"))
        .str("null_handling", scalar.then_some("DEFAULT"))
        .str("description", Some(&function.description))
        .bool("projection_pushdown", table_flag(caps.projection_pushdown))
        .bool("filter_pushdown", table_flag(caps.filter_pushdown))
        .bool("sampling_pushdown", table_flag(false))
        .bool("late_materialization", table_flag(false))
        .strs("filter_semantic_profiles", profiles)
        .str("order_preservation", (!scalar).then_some(order))
        .int("max_workers", (!scalar).then_some(max_workers))
        .str("partition_kind", Some("NOT_PARTITIONED"))
        .str(
            "order_dependent",
            Some(if caps.order_dependent {
                aggregate::ORDER_DEPENDENT
            } else {
                "NOT_ORDER_DEPENDENT"
            }),
        )
        .str(
            "distinct_dependent",
            Some(if caps.distinct_dependent {
                aggregate::DISTINCT_DEPENDENT
            } else {
                "NOT_DISTINCT_DEPENDENT"
            }),
        )
        .bool("has_finalize", Some(caps.has_finalize))
        .bool("supports_splits", Some(function.supports_splits()))
        .finish()
}

fn result(bytes: Vec<u8>) -> Option<ArrayRef> {
    Some(Arc::new(BinaryArray::from(vec![bytes.as_slice()])))
}

fn items(rows: &[RecordBatch]) -> Vec<u8> {
    let items: Vec<Vec<u8>> = rows.iter().map(ipc::encode_batch).collect();
    ipc::encode_batch(
        &RowBuilder::new(schemas::ITEMS_RESPONSE.clone())
            .bytes_list("items", &items)
            .finish(),
    )
}

/// `path: list<utf8>` of a request.
fn path(params: &Params) -> Result<Vec<String>, ErrorReport> {
    let list = params.column("path")?.as_list::<i32>().value(0);
    let strings =
        arrow_cast::cast(&list, &DataType::Utf8).map_err(|e| errors::malformed("path", e))?;
    Ok(strings
        .as_string::<i32>()
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect())
}

fn object_type(params: &Params) -> Result<String, ErrorReport> {
    let column = arrow_cast::cast(params.column("type")?, &DataType::Utf8)
        .map_err(|e| errors::malformed("type", e))?;
    Ok(column.as_string::<i32>().value(0).to_string())
}

fn attach_param() -> Field {
    field("attach_opaque_data", DataType::Binary, false)
}

fn tx_param() -> Field {
    field("transaction_opaque_data", DataType::Binary, true)
}

fn path_param() -> Field {
    field("path", list_of(DataType::Utf8), false)
}

fn result_field() -> Option<Field> {
    Some(field("result", DataType::Binary, false))
}

/// Registers the catalog methods on `service`.
pub fn register(service: &mut Service, catalog: Arc<Catalog>) {
    let c = catalog.clone();
    service.add(Method::unary(
        methods::CATALOG_CATALOGS,
        vec![],
        result_field(),
        move |_, _| {
            let info = RowBuilder::new(schemas::CATALOG_INFO.clone())
                .str("name", Some(&c.name))
                .finish();
            Ok(result(items(&[info])))
        },
    ));

    let c = catalog.clone();
    let attach_params = vec![field("request", DataType::Binary, false)];
    service.add(Method::unary(
        methods::CATALOG_ATTACH,
        attach_params,
        result_field(),
        move |params, _| {
            // Decoded to validate it; any catalog name attaches this worker's catalog.
            ipc::decode_row(params.bytes("request")?, "CatalogAttachRequest")?;
            let answer = RowBuilder::new(schemas::CATALOG_ATTACH_RESULT.clone())
                .bytes("attach_opaque_data", Some(&c.attach_token()))
                .bool("catalog_version_frozen", Some(true))
                .int("catalog_version", Some(CATALOG_VERSION))
                .str("default_schema", Some(&c.docs.default_schema))
                .bool("supports_catalog_contents", Some(true));
            let answer =
                with_comment_and_tags(answer, c.docs.comment.as_deref(), &c.docs.tags).finish();
            Ok(result(ipc::encode_batch(&answer)))
        },
    ));

    let c = catalog.clone();
    service.add(Method::unary(
        methods::CATALOG_SCHEMAS,
        vec![attach_param(), tx_param()],
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            Ok(result(items(&c.schema_infos(None))))
        },
    ));

    let c = catalog.clone();
    let get_params = vec![attach_param(), path_param(), tx_param()];
    service.add(Method::unary(
        methods::CATALOG_SCHEMA_GET,
        get_params,
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            Ok(result(items(&c.schema_infos(Some(&path(params)?)))))
        },
    ));

    let c = catalog.clone();
    let typed_params = vec![
        attach_param(),
        path_param(),
        field("type", enum_type(), false),
        tx_param(),
    ];
    service.add(Method::unary(
        methods::CATALOG_SCHEMA_CONTENTS_FUNCTIONS,
        typed_params.clone(),
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            let rows: Vec<RecordBatch> = c
                .functions_of(&path(params)?, &object_type(params)?)
                .into_iter()
                .map(|f| function_info(f, c.schema_of(f)))
                .collect();
            Ok(result(items(&rows)))
        },
    ));

    for kind in ["tables", "views", "indexes"] {
        let c = catalog.clone();
        let params = vec![attach_param(), path_param(), tx_param()];
        let name = format!("catalog_schema_contents_{kind}");
        service.add(Method::unary(
            &name,
            params,
            result_field(),
            move |params, _| {
                c.check_attach(params.bytes("attach_opaque_data")?)?;
                Ok(result(items(&[])))
            },
        ));
    }
    let c = catalog.clone();
    service.add(Method::unary(
        methods::CATALOG_SCHEMA_CONTENTS_MACROS,
        typed_params,
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            Ok(result(items(&[])))
        },
    ));

    let c = catalog.clone();
    let contents_params = vec![attach_param(), field("if_none_match", DataType::Utf8, true)];
    service.add(Method::unary(
        methods::CATALOG_CONTENTS,
        contents_params,
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            Ok(result(contents(&c, params.opt_str("if_none_match")?)))
        },
    ));

    let c = catalog.clone();
    service.add(Method::unary(
        methods::CATALOG_VERSION,
        vec![attach_param(), tx_param()],
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            let answer = RowBuilder::new(schemas::CATALOG_VERSION_RESPONSE.clone())
                .int("version", Some(CATALOG_VERSION));
            Ok(result(ipc::encode_batch(&answer.finish())))
        },
    ));

    let c = catalog.clone();
    service.add(Method::unary(
        methods::CATALOG_DETACH,
        vec![attach_param()],
        None,
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            Ok(None)
        },
    ));

    // No COPY formats: an empty list, which the engine reads as "none".
    service.add(Method::unary(
        methods::CATALOG_COPY_FROM_FORMATS,
        vec![attach_param(), tx_param()],
        result_field(),
        |_, _| Ok(result(items(&[]))),
    ));

    // Read-only catalog: a transaction is "no transaction".
    let c = catalog;
    service.add(Method::unary(
        methods::CATALOG_TRANSACTION_BEGIN,
        vec![attach_param()],
        result_field(),
        move |params, _| {
            c.check_attach(params.bytes("attach_opaque_data")?)?;
            let answer = RowBuilder::new(schemas::TRANSACTION_BEGIN_RESPONSE.clone()).finish();
            Ok(result(ipc::encode_batch(&answer)))
        },
    ));
}

/// `CatalogContentsResponse`: one stream per category, one row per item.
fn contents(catalog: &Catalog, if_none_match: Option<&str>) -> Vec<u8> {
    let etag = format!("quiver-vgi-{CATALOG_VERSION}-{}", catalog.functions.len());
    let mut answer = RowBuilder::new(schemas::CATALOG_CONTENTS_RESPONSE.clone())
        .int("catalog_version", Some(CATALOG_VERSION))
        .str("etag", Some(&etag));
    if if_none_match == Some(etag.as_str()) {
        answer = answer.bool("not_modified", Some(true));
        return ipc::encode_batch(&answer.finish());
    }
    let schema_stream = ipc::encode_batches(&schemas::SCHEMA_INFO, &catalog.schema_infos(None));
    let rows: Vec<RecordBatch> = catalog
        .functions
        .iter()
        .map(|f| function_info(f, catalog.schema_of(f)))
        .collect();
    let function_schema: SchemaRef = schemas::FUNCTION_INFO.clone();
    let functions = if rows.is_empty() {
        None
    } else {
        let all = arrow_select::concat::concat_batches(&function_schema, &rows)
            .expect("rows of one schema concatenate");
        Some(ipc::encode_batches(&function_schema, &[all]))
    };
    answer = answer
        .bytes("schemas", Some(&schema_stream))
        .bytes("functions", functions.as_deref());
    ipc::encode_batch(&answer.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::ScalarFunction;
    use quiver_vgi_contract::RowReader;

    fn identity(name: &str) -> Function {
        ScalarFunction::new(name, DataType::Int64)
            .arg(Arg::new("x", DataType::Int64))
            .body(|input| Ok(input.columns[0].clone()))
    }

    fn catalog() -> Catalog {
        let mut docs = CatalogDocs::default();
        docs.set_default("text");
        docs.declare(SchemaDecl::new("archive").comment("kept for later"));
        Catalog::new(
            "shelf",
            vec![identity("shout"), identity("tally").in_schema("numbers")],
        )
        .with_docs(docs)
    }

    #[test]
    fn every_schema_is_declared_once_and_main_only_when_asked() {
        let catalog = catalog();
        let names: Vec<&str> = catalog
            .docs
            .schemas
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["text", "archive", "numbers"]);
        let archive = catalog.schema_infos(Some(&["archive".to_string()]));
        let row = RowReader::new(&archive[0], "SchemaInfo");
        assert_eq!(
            row.str("comment").unwrap().as_deref(),
            Some("kept for later")
        );
    }

    #[test]
    fn a_function_resolves_in_its_own_schema_only() {
        let catalog = catalog();
        let path = |p: &str| vec![p.to_string()];
        assert!(catalog.resolve("tally", Some(&path("numbers"))).is_ok());
        assert!(catalog.resolve("tally", Some(&path("text"))).is_err());
        assert!(catalog.resolve("shout", Some(&path("TEXT"))).is_ok());
        assert!(catalog.resolve("shout", None).is_ok());
        let listed = catalog.functions_of(&path("numbers"), object_type::SCALAR_FUNCTION);
        assert_eq!(listed.len(), 1);
        let info = function_info(listed[0], "numbers");
        let row = RowReader::new(&info, "FunctionInfo");
        assert_eq!(row.strs("schema_path").unwrap(), Some(path("numbers")));
    }

    #[test]
    fn function_docs_reach_its_function_info() {
        let function = identity("shout")
            .comment("loud")
            .tag("vgi.category", "text")
            .example("SELECT w.shout(1)", "one")
            .category("text");
        let info = function_info(&function, "main");
        let row = RowReader::new(&info, "FunctionInfo");
        assert_eq!(row.str("comment").unwrap().as_deref(), Some("loud"));
        assert_eq!(
            row.strs("categories").unwrap(),
            Some(vec!["text".to_string()])
        );
        let examples = row.list("examples").unwrap().expect("examples");
        assert_eq!(examples.len(), 1);
    }
}
