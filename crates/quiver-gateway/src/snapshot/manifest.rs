//! A snapshot manifest (offloader's JSON shape) parsed and checked: every problem is reported at
//! once, each with the path of the field at fault (`files[2].format: ...`). Fields quiver does not
//! read (`producer`, `upstream_run_id`, ...) are allowed and ignored.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::types::{self, TypeClass};
use crate::project::Dataset;

/// The largest manifest read: a manifest lists parts, it does not hold data.
pub const MANIFEST_BYTES_MAX: usize = 16 << 20;
/// Most parts in one snapshot.
pub const PARTS_MAX: usize = 100_000;
/// Most columns in a manifest's schema.
pub const COLUMNS_MAX: usize = 4096;
/// Longest snapshot id (it names a directory of downloaded parts and travels in headers).
pub const SNAPSHOT_ID_BYTES_MAX: usize = 200;

/// A part file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartFormat {
    Parquet,
    Csv,
}

impl PartFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            PartFormat::Parquet => "parquet",
            PartFormat::Csv => "csv",
        }
    }
}

/// One part of a snapshot, as the manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Relative to the manifest (a local path, or a key under the manifest's prefix).
    pub path: String,
    pub format: PartFormat,
    pub row_count: Option<u64>,
    pub size_bytes: Option<u64>,
}

/// A column the manifest declares, with its DuckDB type text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestColumn {
    pub name: String,
    pub type_text: String,
    pub class: TypeClass,
}

/// A parsed, self-consistent manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub dataset_id: String,
    pub snapshot_id: String,
    pub watermark: Option<String>,
    pub watermark_unix: Option<i64>,
    pub schema: Vec<ManifestColumn>,
    pub files: Vec<Part>,
    pub sort_columns: Vec<String>,
    pub row_count: Option<u64>,
    /// Hex SHA-256 of the manifest's bytes: what a warm start compares.
    pub sha256: String,
}

impl Manifest {
    /// The format every part shares (checked at parse).
    pub fn format(&self) -> PartFormat {
        self.files[0].format
    }

    pub fn column(&self, name: &str) -> Option<&ManifestColumn> {
        self.schema.iter().find(|column| column.name == name)
    }

    /// Parses `bytes`; every problem found, each `field: message`.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, Vec<String>> {
        if bytes.len() > MANIFEST_BYTES_MAX {
            return Err(vec![format!(
                "the manifest is {} bytes, more than the limit of {MANIFEST_BYTES_MAX}",
                bytes.len()
            )]);
        }
        let value: Value =
            serde_json::from_slice(bytes).map_err(|error| vec![format!("not JSON: {error}")])?;
        let Value::Object(object) = value else {
            return Err(vec!["the manifest is not a JSON object".into()]);
        };
        let mut problems = Vec::new();
        let dataset_id = required_text(&object, "dataset_id", &mut problems);
        let snapshot_id = required_text(&object, "snapshot_id", &mut problems);
        if let Some(id) = &snapshot_id {
            check_snapshot_id(id, &mut problems);
        }
        // Checked for its form, though nothing reads it.
        optional_timestamp(&object, "created_at", &mut problems);
        let watermark = optional_timestamp(&object, "watermark", &mut problems);
        let schema = parse_schema(&object, &mut problems);
        let files = parse_files(&object, &mut problems);
        let sort_columns = parse_sort_columns(&object, &schema, &mut problems);
        let row_count = optional_count(&object, "row_count", "row_count", &mut problems);
        if let (Some(total), false) = (row_count, files.is_empty()) {
            let listed: Option<u64> = files.iter().map(|part| part.row_count).sum();
            if let Some(listed) = listed.filter(|listed| *listed != total) {
                problems.push(format!(
                    "row_count: {total}, but the files' row_count add up to {listed}"
                ));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let (watermark, watermark_unix) = match watermark {
            Some((text, unix)) => (Some(text), Some(unix)),
            None => (None, None),
        };
        Ok(Manifest {
            dataset_id: dataset_id.expect("no problem means present"),
            snapshot_id: snapshot_id.expect("no problem means present"),
            watermark,
            watermark_unix,
            schema,
            files,
            sort_columns,
            row_count,
            sha256: sha256_hex(bytes),
        })
    }

    /// Problems of this manifest as a snapshot of `dataset`: another dataset's id, a declared
    /// column it lacks or narrows (see [`types::compatible`]), a sort column the dataset does not
    /// have.
    pub fn check_against(&self, dataset: &Dataset) -> Vec<String> {
        let mut problems = Vec::new();
        if self.dataset_id != dataset.id {
            problems.push(format!(
                "dataset_id: '{}', but this is the manifest of dataset '{}'",
                self.dataset_id, dataset.id
            ));
        }
        for column in &dataset.schema {
            match self.column(&column.name) {
                None => problems.push(format!(
                    "schema: column '{}' of the dataset is missing",
                    column.name
                )),
                Some(found) => {
                    if !types::compatible(&found.class, column.column_type) {
                        problems.push(format!(
                            "schema: column '{}' is {} in the manifest, not compatible with the \
                             dataset's {} (a narrowed or changed type)",
                            column.name,
                            found.type_text,
                            column.column_type.sql()
                        ));
                    }
                }
            }
        }
        for (index, name) in self.sort_columns.iter().enumerate() {
            if dataset.column(name).is_none() {
                problems.push(format!(
                    "sort_columns[{index}]: '{name}' is not a column of the dataset"
                ));
            }
        }
        problems
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn required_text(
    object: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    match object.get(field) {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.clone()),
        Some(Value::String(_)) => {
            problems.push(format!("{field}: must not be empty"));
            None
        }
        Some(_) => {
            problems.push(format!("{field}: must be a string"));
            None
        }
        None => {
            problems.push(format!("{field}: missing"));
            None
        }
    }
}

fn check_snapshot_id(id: &str, problems: &mut Vec<String>) {
    if id.len() > SNAPSHOT_ID_BYTES_MAX {
        problems.push(format!(
            "snapshot_id: longer than {SNAPSHOT_ID_BYTES_MAX} bytes"
        ));
    }
    // It names a directory of downloaded parts and travels in response headers.
    let unsafe_char = id
        .chars()
        .any(|c| c.is_control() || c == '/' || c == '\\' || c == '"' || !c.is_ascii());
    if unsafe_char || id == "." || id == ".." {
        problems
            .push("snapshot_id: only printable ASCII without '/', '\\' or '\"' is allowed".into());
    }
}

fn optional_timestamp(
    object: &Map<String, Value>,
    field: &str,
    problems: &mut Vec<String>,
) -> Option<(String, i64)> {
    match object.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => match chrono::DateTime::parse_from_rfc3339(text) {
            Ok(time) => Some((text.clone(), time.timestamp())),
            Err(_) => {
                problems.push(format!("{field}: not an RFC 3339 timestamp"));
                None
            }
        },
        Some(_) => {
            problems.push(format!("{field}: must be an RFC 3339 string"));
            None
        }
    }
}

fn optional_count(
    object: &Map<String, Value>,
    field: &str,
    path: &str,
    problems: &mut Vec<String>,
) -> Option<u64> {
    match object.get(field) {
        None | Some(Value::Null) => None,
        Some(value) => match value.as_u64() {
            Some(count) => Some(count),
            None => {
                problems.push(format!("{path}: must be a non-negative integer"));
                None
            }
        },
    }
}

fn parse_schema(object: &Map<String, Value>, problems: &mut Vec<String>) -> Vec<ManifestColumn> {
    let Some(Value::Array(items)) = object.get("schema") else {
        problems.push("schema: missing or not a list".into());
        return Vec::new();
    };
    if items.is_empty() || items.len() > COLUMNS_MAX {
        problems.push(format!("schema: must list 1..={COLUMNS_MAX} columns"));
        return Vec::new();
    }
    let mut columns: Vec<ManifestColumn> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("schema[{index}]");
        let Value::Object(column) = item else {
            problems.push(format!("{at}: must be an object with name and type"));
            continue;
        };
        let name = match column.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                problems.push(format!("{at}.name: missing or empty"));
                continue;
            }
        };
        let type_text = match column.get("type") {
            Some(Value::String(text)) => text.trim().to_string(),
            _ => {
                problems.push(format!("{at}.type: missing"));
                continue;
            }
        };
        let Some(class) = types::classify(&type_text) else {
            problems.push(format!("{at}.type: unsupported type '{type_text}'"));
            continue;
        };
        if columns.iter().any(|seen| seen.name == name) {
            problems.push(format!("{at}.name: duplicate column '{name}'"));
            continue;
        }
        columns.push(ManifestColumn {
            name,
            type_text,
            class,
        });
    }
    columns
}

fn parse_files(object: &Map<String, Value>, problems: &mut Vec<String>) -> Vec<Part> {
    let Some(Value::Array(items)) = object.get("files") else {
        problems.push("files: missing or not a list".into());
        return Vec::new();
    };
    if items.is_empty() || items.len() > PARTS_MAX {
        problems.push(format!("files: must list 1..={PARTS_MAX} parts"));
        return Vec::new();
    }
    let mut parts: Vec<Part> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("files[{index}]");
        let Value::Object(file) = item else {
            problems.push(format!("{at}: must be an object with path and format"));
            continue;
        };
        let path = match file.get("path") {
            Some(Value::String(path)) if !path.trim().is_empty() => path.clone(),
            _ => {
                problems.push(format!("{at}.path: missing or empty"));
                continue;
            }
        };
        let format = match file.get("format").and_then(Value::as_str) {
            Some(text) if text.eq_ignore_ascii_case("parquet") => PartFormat::Parquet,
            Some(text) if text.eq_ignore_ascii_case("csv") => PartFormat::Csv,
            Some(text) => {
                problems.push(format!("{at}.format: '{text}' is not parquet or csv"));
                continue;
            }
            None => {
                problems.push(format!("{at}.format: missing"));
                continue;
            }
        };
        if let Some(first) = parts.first() {
            if first.format != format {
                problems.push(format!(
                    "{at}.format: {} after {} parts; a snapshot's parts share one format",
                    format.as_str(),
                    first.format.as_str()
                ));
                continue;
            }
        }
        let row_count = optional_count(file, "row_count", &format!("{at}.row_count"), problems);
        let size_bytes = optional_count(file, "size_bytes", &format!("{at}.size_bytes"), problems);
        parts.push(Part {
            path,
            format,
            row_count,
            size_bytes,
        });
    }
    parts
}

fn parse_sort_columns(
    object: &Map<String, Value>,
    schema: &[ManifestColumn],
    problems: &mut Vec<String>,
) -> Vec<String> {
    let items = match object.get("sort_columns") {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items,
        Some(_) => {
            problems.push("sort_columns: must be a list of column names".into());
            return Vec::new();
        }
    };
    let mut names = Vec::new();
    for (index, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(name) if schema.is_empty() || schema.iter().any(|c| c.name == name) => {
                names.push(name.to_string())
            }
            Some(name) => problems.push(format!(
                "sort_columns[{index}]: '{name}' is not in the manifest's schema"
            )),
            None => problems.push(format!("sort_columns[{index}]: must be a column name")),
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> serde_json::Value {
        serde_json::json!({
            "dataset_id": "usage",
            "snapshot_id": "2026-06-01T00:00:00Z_r0007",
            "watermark": "2026-06-01T00:00:00Z",
            "schema": [
                {"name": "day", "type": "DATE"},
                {"name": "calls", "type": "BIGINT"}
            ],
            "files": [{"path": "a.parquet", "format": "parquet", "row_count": 3}],
            "sort_columns": ["day"],
            "row_count": 3,
            "producer": "ignored"
        })
    }

    #[test]
    fn a_good_manifest_parses_with_its_checksum() {
        let bytes = serde_json::to_vec(&good()).unwrap();
        let manifest = Manifest::parse(&bytes).unwrap();
        assert_eq!(manifest.snapshot_id, "2026-06-01T00:00:00Z_r0007");
        assert_eq!(manifest.watermark_unix, Some(1_780_272_000));
        assert_eq!(manifest.format(), PartFormat::Parquet);
        assert_eq!(manifest.sha256, sha256_hex(&bytes));
        assert_eq!(manifest.sha256.len(), 64);
    }

    #[test]
    fn every_problem_is_reported_with_its_field() {
        let mut value = good();
        value["snapshot_id"] = "".into();
        value["schema"][1]["name"] = "day".into();
        value["schema"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"name": "x", "type": "HUGEINT"}));
        value["files"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"path": "b.csv", "format": "csv"}));
        value["watermark"] = "yesterday".into();
        let problems = Manifest::parse(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        let text = problems.join("\n");
        for expected in [
            "snapshot_id: must not be empty",
            "schema[1].name: duplicate column 'day'",
            "schema[2].type: unsupported type 'HUGEINT'",
            "files[1].format: csv after parquet parts",
            "watermark: not an RFC 3339 timestamp",
        ] {
            assert!(text.contains(expected), "{expected} not in {text}");
        }
    }

    #[test]
    fn snapshot_ids_cannot_name_other_directories() {
        for id in ["..", "a/b", "a\\b"] {
            let mut value = good();
            value["snapshot_id"] = id.into();
            let problems = Manifest::parse(&serde_json::to_vec(&value).unwrap()).unwrap_err();
            assert!(problems[0].starts_with("snapshot_id:"), "{problems:?}");
        }
    }

    #[test]
    fn not_json_and_missing_fields_are_refused() {
        assert!(Manifest::parse(b"{").unwrap_err()[0].starts_with("not JSON"));
        let problems = Manifest::parse(b"{}").unwrap_err().join("\n");
        for field in [
            "dataset_id: missing",
            "snapshot_id: missing",
            "schema:",
            "files:",
        ] {
            assert!(problems.contains(field), "{field} not in {problems}");
        }
    }
}
