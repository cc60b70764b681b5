//! What a worker says about its catalog, schemas and functions besides their signatures: comments,
//! tags, example queries and categories, and the schemas it declares. DuckDB shows them in
//! `duckdb_databases()`, `duckdb_schemas()` and `duckdb_functions()`.
//!
//! Read leniently: documentation never keeps a worker from attaching, so a field of an
//! unexpected shape reads as absent.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use quiver_vgi_contract::RowReader;

/// Most tags, examples or categories kept per object; most bytes of one text.
pub const ITEMS_MAX: usize = 256;
/// Most bytes of one comment, tag value or example kept (longer ones are cut at a char boundary).
pub const TEXT_MAX: usize = 64 * 1024;
/// The tag VGI's tools read a function's example queries, with what each shows, from.
pub const EXAMPLE_QUERIES_TAG: &str = "vgi.example_queries";
/// Most schemas one catalog may declare.
pub const SCHEMAS_MAX: usize = 1024;

/// The documentation of one catalog object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Docs {
    /// `COMMENT ON ...`: the worker's `comment`.
    pub comment: Option<String>,
    /// Key-value tags (`vgi.*` keys and the worker's own).
    pub tags: Vec<(String, String)>,
    /// Example queries, SQL only (a function's `examples[].sql`).
    pub examples: Vec<String>,
    /// Categories (a function's `categories`).
    pub categories: Vec<String>,
}

/// One schema the worker declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDesc {
    /// Its path (`["main"]`).
    pub path: Vec<String>,
    /// Its comment and tags.
    pub docs: Docs,
}

impl Docs {
    /// The `comment`, `tags`, `examples` and `categories` of a `FunctionInfo`, `SchemaInfo` or
    /// `CatalogAttachResult` row (whichever it has).
    pub fn of(row: &RowReader<'_>) -> Docs {
        let examples = examples(row);
        let mut tags = tags(row);
        // What the examples show travels in the `vgi.example_queries` tag, where VGI's tools read
        // it (DuckDB's examples column holds SQL alone); the worker's own tag wins.
        if !examples.is_empty() && !tags.iter().any(|(k, _)| k == EXAMPLE_QUERIES_TAG) {
            let listed: Vec<serde_json::Value> = examples
                .iter()
                .map(|(sql, description)| serde_json::json!({"sql": sql, "description": description}))
                .collect();
            tags.push((
                EXAMPLE_QUERIES_TAG.to_string(),
                serde_json::Value::Array(listed).to_string(),
            ));
        }
        Docs {
            comment: row.str("comment").ok().flatten().map(cut),
            tags,
            examples: examples.into_iter().map(|(sql, _)| sql).collect(),
            categories: row
                .strs("categories")
                .ok()
                .flatten()
                .unwrap_or_default()
                .into_iter()
                .take(ITEMS_MAX)
                .map(cut)
                .collect(),
        }
    }
}

/// A `SchemaInfo` row; `None` without a path (a 1.4 worker's rows name it `name`).
pub fn schema_desc(row: &RecordBatch) -> Option<SchemaDesc> {
    let info = RowReader::new(row, "SchemaInfo");
    let path = match info.strs("path").ok().flatten() {
        Some(path) if !path.is_empty() => path,
        _ => vec![info.str("name").ok().flatten()?],
    };
    Some(SchemaDesc {
        path,
        docs: Docs::of(&info),
    })
}

fn cut(mut text: String) -> String {
    if text.len() > TEXT_MAX {
        let mut end = TEXT_MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// A `map<utf8, utf8>` column, or a `list<struct<key, value>>` as older workers send it.
fn tags(row: &RowReader<'_>) -> Vec<(String, String)> {
    let Some(column) = row.column("tags") else {
        return Vec::new();
    };
    let entries = match column.data_type() {
        arrow_schema::DataType::Map(..) => column.as_map().value(0),
        arrow_schema::DataType::List(_) => match column.as_list::<i32>().value(0).as_struct_opt() {
            Some(entries) => entries.clone(),
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    if entries.num_columns() != 2 {
        return Vec::new();
    }
    let (Some(keys), Some(values)) = (
        entries.column(0).as_string_opt::<i32>(),
        entries.column(1).as_string_opt::<i32>(),
    ) else {
        return Vec::new();
    };
    (0..entries.len().min(ITEMS_MAX))
        .filter(|&i| keys.is_valid(i))
        .map(|i| {
            let value = if values.is_valid(i) {
                values.value(i)
            } else {
                ""
            };
            (cut(keys.value(i).to_string()), cut(value.to_string()))
        })
        .collect()
}

/// The `sql` and `description` of each `examples` struct (a plain `list<utf8>` is taken as SQL
/// without descriptions).
fn examples(row: &RowReader<'_>) -> Vec<(String, String)> {
    let Some(items) = row.list("examples").ok().flatten() else {
        return Vec::new();
    };
    let (sql, description) = match items.as_struct_opt() {
        Some(structs) => (
            structs.column_by_name("sql").cloned(),
            structs.column_by_name("description").cloned(),
        ),
        None => (Some(items), None),
    };
    let Some(sql) = sql.as_ref().and_then(|s| s.as_string_opt::<i32>()) else {
        return Vec::new();
    };
    let description = description.as_ref().and_then(|d| d.as_string_opt::<i32>());
    (0..sql.len())
        .filter(|&i| sql.is_valid(i))
        .take(ITEMS_MAX)
        .map(|i| {
            let shows = description
                .filter(|d| d.is_valid(i))
                .map_or("", |d| d.value(i));
            (cut(sql.value(i).to_string()), cut(shows.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiver_vgi_contract::schemas;
    use quiver_vgi_contract::RowBuilder;

    #[test]
    fn a_schema_info_row_keeps_its_comment_and_tags() {
        let values: arrow_array::ArrayRef =
            std::sync::Arc::new(arrow_array::StringArray::from(vec!["Text", "x"]));
        let row = RowBuilder::new(schemas::SCHEMA_INFO.clone())
            .str("comment", Some("string functions"))
            .map("tags", &["vgi.title", "k"], values)
            .strs("path", &["text"])
            .finish();
        let schema = schema_desc(&row).expect("a path");
        assert_eq!(schema.path, vec!["text"]);
        assert_eq!(schema.docs.comment.as_deref(), Some("string functions"));
        assert_eq!(
            schema.docs.tags,
            vec![
                ("vgi.title".to_string(), "Text".to_string()),
                ("k".to_string(), "x".to_string())
            ]
        );
    }

    #[test]
    fn a_long_text_is_cut_at_a_char_boundary() {
        let long = "ß".repeat(TEXT_MAX);
        let kept = cut(long);
        assert!(kept.len() <= TEXT_MAX && kept.chars().all(|c| c == 'ß'));
    }
}
