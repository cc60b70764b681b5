//! What a worker says about its catalog, schemas and functions besides their signatures:
//! comments, tags, example queries, categories, and which schema a function lives in.
//!
//! An engine shows them in SQL: DuckDB's `duckdb_databases()` (the catalog's comment and tags),
//! `duckdb_schemas()` (each schema's) and `duckdb_functions()` (a function's comment, tags,
//! examples and categories). Tags are free-form strings; VGI's metadata linter reads keys such as
//! `vgi.title`, `vgi.doc_llm`, `vgi.category` and `vgi.source_url`.

use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray, StructArray};
use arrow_schema::{DataType, Fields};
use quiver_vgi_contract::row::RowBuilder;
use quiver_vgi_contract::schemas;

/// An example query: the SQL and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// The query, runnable as written.
    pub sql: String,
    /// What it shows.
    pub description: String,
}

/// A function's documentation beyond its description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionDocs {
    /// The schema it lives in; `None`: the worker's default schema.
    pub schema: Option<String>,
    /// `COMMENT ON FUNCTION`.
    pub comment: Option<String>,
    /// Key-value tags.
    pub tags: Vec<(String, String)>,
    /// Example queries.
    pub examples: Vec<Example>,
    /// Categories.
    pub categories: Vec<String>,
}

/// A schema of the catalog, with its comment and tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDecl {
    /// Its name (a lowercase identifier).
    pub name: String,
    /// Its comment.
    pub comment: Option<String>,
    /// Key-value tags.
    pub tags: Vec<(String, String)>,
}

impl SchemaDecl {
    /// A schema called `name`, without comment or tags.
    pub fn new(name: &str) -> SchemaDecl {
        assert!(
            crate::declarations::is_identifier(name),
            "schema name '{name}' must be a lowercase identifier"
        );
        SchemaDecl {
            name: name.to_string(),
            comment: None,
            tags: Vec::new(),
        }
    }

    /// Its comment.
    pub fn comment(mut self, comment: &str) -> SchemaDecl {
        self.comment = Some(comment.to_string());
        self
    }

    /// Adds a tag.
    pub fn tag(mut self, key: &str, value: &str) -> SchemaDecl {
        self.tags.push((key.to_string(), value.to_string()));
        self
    }
}

/// The catalog's own comment and tags, its default schema and its declared schemas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogDocs {
    /// Where unqualified names resolve (`USE w`).
    pub default_schema: String,
    /// The catalog's comment.
    pub comment: Option<String>,
    /// The catalog's tags.
    pub tags: Vec<(String, String)>,
    /// Schemas declared with or without functions, the default one first.
    pub schemas: Vec<SchemaDecl>,
}

impl Default for CatalogDocs {
    fn default() -> Self {
        CatalogDocs {
            default_schema: "main".to_string(),
            comment: None,
            tags: Vec::new(),
            schemas: vec![SchemaDecl::new("main")],
        }
    }
}

impl CatalogDocs {
    /// The declared schema `name`, added when new.
    pub(crate) fn declare(&mut self, schema: SchemaDecl) {
        match self.schemas.iter_mut().find(|s| s.name == schema.name) {
            Some(known) => *known = schema,
            None => self.schemas.push(schema),
        }
    }

    /// Sets the default schema, declaring it.
    pub(crate) fn set_default(&mut self, name: &str) {
        if self.default_schema == "main" && self.schemas == [SchemaDecl::new("main")] {
            self.schemas.clear();
        }
        self.default_schema = name.to_string();
        if !self.schemas.iter().any(|s| s.name == name) {
            self.schemas.insert(0, SchemaDecl::new(name));
        }
    }
}

/// Sets a row's `comment` and `tags` (`CatalogAttachResult`, `SchemaInfo`, `FunctionInfo`).
pub(crate) fn with_comment_and_tags(
    row: RowBuilder,
    comment: Option<&str>,
    tags: &[(String, String)],
) -> RowBuilder {
    let keys: Vec<&str> = tags.iter().map(|(k, _)| k.as_str()).collect();
    let values: ArrayRef = Arc::new(StringArray::from_iter_values(
        tags.iter().map(|(_, v)| v.as_str()),
    ));
    row.str("comment", comment).map("tags", &keys, values)
}

/// The fields of one `FunctionInfo.examples` item, as the contract declares them.
fn example_fields() -> Fields {
    let examples = schemas::FUNCTION_INFO
        .field_with_name("examples")
        .expect("FunctionInfo has examples");
    match examples.data_type() {
        DataType::List(item) => match item.data_type() {
            DataType::Struct(fields) => fields.clone(),
            other => panic!("FunctionInfo.examples items are {other}, not structs"),
        },
        other => panic!("FunctionInfo.examples is {other}, not a list"),
    }
}

/// Sets a `FunctionInfo` row's comment, tags, examples and categories.
pub(crate) fn with_function_docs(row: RowBuilder, docs: &FunctionDocs) -> RowBuilder {
    let fields = example_fields();
    let column = |text: Vec<Option<&str>>| -> ArrayRef { Arc::new(StringArray::from(text)) };
    let examples = StructArray::new(
        fields,
        vec![
            column(docs.examples.iter().map(|e| Some(e.sql.as_str())).collect()),
            column(
                docs.examples
                    .iter()
                    .map(|e| Some(e.description.as_str()))
                    .collect(),
            ),
            column(docs.examples.iter().map(|_| None).collect()),
        ],
        None,
    );
    let categories: Vec<&str> = docs.categories.iter().map(String::as_str).collect();
    with_comment_and_tags(row, docs.comment.as_deref(), &docs.tags)
        .list("examples", Arc::new(examples))
        .strs("categories", &categories)
}
