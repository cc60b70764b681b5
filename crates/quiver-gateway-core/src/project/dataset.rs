//! One `datasets/*.yml`: its id, manifest, tenant column and schema, each problem reported with
//! its line.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::model::{Column, ColumnType, Dataset, SnapshotSource, ALL_UNCHECKED};
use super::yaml::{Fields, Node, Reader};

use super::load::MAX_COLUMNS;

/// One `datasets/*.yml`.
pub(super) fn read_dataset(reader: &mut Reader<'_>, node: &Node) -> Option<Dataset> {
    let fields = reader.mapping(
        node,
        "a dataset",
        &[
            "id",
            "description",
            "schema",
            "tenant_column",
            "manifest",
            "source",
            "materialize_budget_seconds",
        ],
        &["owner"],
    )?;
    let id = fields
        .required(reader, "id", "a dataset")
        .and_then(|node| reader.identifier(node, "a dataset id"));
    let description = fields
        .get("description")
        .and_then(|node| reader.string(node, "`description`"));
    let schema = read_schema(reader, &fields);
    let tenant_column = read_tenant_column(reader, &fields, &schema);
    if let Some(line) = fields.key_line("source") {
        reader.error(
            line,
            "`source:` (a self-discovering remote snapshot) is not supported: point `manifest:` at the manifest (a path or s3://bucket/key)",
        );
    }
    let source = read_manifest(reader, &fields);
    let materialize_budget = fields
        .get("materialize_budget_seconds")
        .and_then(|node| reader.integer(node, "`materialize_budget_seconds`", 1, 86_400))
        .map(|seconds| Duration::from_secs(seconds as u64));
    let manifest_at = (
        reader.file.clone(),
        fields.key_line("manifest").unwrap_or(fields.line),
    );
    // With problems above, what was read still serves to check the endpoints over this dataset
    // (the caller keeps it apart from the project); a missing source is never read from.
    Some(Dataset {
        id: id?,
        description,
        schema: schema.columns,
        tenant_column,
        source: source.unwrap_or_else(|| SnapshotSource::Manifest(PathBuf::new())),
        manifest_at,
        materialize_budget,
        unchecked_columns: schema.unchecked,
    })
}

/// `tenant_column`: a VARCHAR column of the schema (checked once the schema's own checks let
/// it be).
fn read_tenant_column(
    reader: &mut Reader<'_>,
    fields: &Fields<'_>,
    schema: &Schema,
) -> Option<String> {
    let node = fields.get("tenant_column")?;
    let column = reader.identifier(node, "`tenant_column`");
    let known =
        |name: &str| !schema.unchecked.contains(name) && !schema.unchecked.contains(ALL_UNCHECKED);
    if let Some(column) = column.as_ref().filter(|column| known(column)) {
        match schema.columns.iter().find(|c| &c.name == column) {
            None => reader.error(
                node.line,
                format!("`tenant_column` `{column}` is not a column of the schema"),
            ),
            Some(c) if c.column_type != ColumnType::Varchar => reader.error(
                node.line,
                format!("`tenant_column` `{column}` must be VARCHAR (tenants are text)"),
            ),
            Some(_) => {}
        }
    }
    column
}

/// `manifest`: a path (as written: the snapshot side resolves it against the project root,
/// once) or `s3://bucket/key`; a dataset needs one unless `source:` was already refused.
fn read_manifest(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Option<SnapshotSource> {
    let Some(node) = fields.get("manifest") else {
        if fields.get("source").is_none() {
            reader.error(fields.line, "a dataset needs `manifest`");
        }
        return None;
    };
    match reader.string(node, "`manifest`") {
        Some(text) if text.starts_with("s3://") => {
            if text.len() <= "s3://".len() || !text["s3://".len()..].contains('/') {
                reader.error(node.line, "`manifest` must be s3://bucket/key");
                None
            } else {
                Some(SnapshotSource::ObjectStore(text))
            }
        }
        Some(text) if text.contains("://") => {
            reader.error(
                node.line,
                "`manifest` must be a path or s3://bucket/key (no other schemes)",
            );
            None
        }
        Some(text) if text.is_empty() => {
            reader.error(node.line, "`manifest` is empty");
            None
        }
        Some(text) => Some(SnapshotSource::Manifest(text.into())),
        None => None,
    }
}

/// The columns that passed their checks, and the names of those that did not (`*` when which
/// names is not known).
struct Schema {
    columns: Vec<Column>,
    unchecked: BTreeSet<String>,
}

fn read_schema(reader: &mut Reader<'_>, fields: &Fields<'_>) -> Schema {
    let mut schema = Schema {
        columns: Vec::new(),
        unchecked: BTreeSet::from([ALL_UNCHECKED.to_string()]),
    };
    let Some(node) = fields.required(reader, "schema", "a dataset") else {
        return schema;
    };
    let Some(items) = reader.sequence(node, "`schema`") else {
        return schema;
    };
    if items.is_empty() {
        reader.error(node.line, "`schema` lists no column");
        return schema;
    }
    if items.len() > MAX_COLUMNS {
        reader.error(
            node.line,
            format!("`schema` lists more than {MAX_COLUMNS} columns"),
        );
        return schema;
    }
    schema.unchecked.clear();
    let Schema { columns, unchecked } = &mut schema;
    let mut seen = BTreeSet::new();
    for item in items {
        let Some(column) =
            reader.mapping(item, "a schema column", &["name", "type"], &["description"])
        else {
            unchecked.insert(ALL_UNCHECKED.to_string());
            continue;
        };
        let name = column
            .required(reader, "name", "a schema column")
            .and_then(|node| reader.identifier(node, "a column name"));
        let column_type = column
            .required(reader, "type", "a schema column")
            .and_then(|node| {
                let text = reader.string(node, "a column type")?;
                let parsed = parse_column_type(&text);
                if parsed.is_none() {
                    reader.error(
                        node.line,
                        format!(
                            "unknown column type `{}` (DATE, TIMESTAMP, VARCHAR, INTEGER, BIGINT, DOUBLE, BOOLEAN, JSON)",
                            super::yaml::printable(&text)
                        ),
                    );
                }
                parsed
            });
        if let Some(name) = &name {
            if !seen.insert(name.clone()) {
                reader.error(item.line, format!("column `{name}` is listed twice"));
                continue;
            }
        }
        match (name, column_type) {
            (Some(name), Some(column_type)) => columns.push(Column { name, column_type }),
            (Some(name), None) => {
                unchecked.insert(name);
            }
            (None, _) => {
                unchecked.insert(ALL_UNCHECKED.to_string());
            }
        }
    }
    schema
}

/// A schema type's name, in any case.
pub fn parse_column_type(text: &str) -> Option<ColumnType> {
    Some(match text.to_ascii_uppercase().as_str() {
        "DATE" => ColumnType::Date,
        "TIMESTAMP" => ColumnType::Timestamp,
        "VARCHAR" => ColumnType::Varchar,
        "INTEGER" => ColumnType::Integer,
        "BIGINT" => ColumnType::Bigint,
        "DOUBLE" => ColumnType::Double,
        "BOOLEAN" => ColumnType::Boolean,
        "JSON" => ColumnType::Json,
        _ => return None,
    })
}
