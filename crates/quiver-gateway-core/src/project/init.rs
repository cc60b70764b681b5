//! `init`: a starter project written from a directory of parquet files — one dataset per file
//! (its schema read from the file), its manifest, one list endpoint per dataset, and one key whose
//! token is returned once and never written. The written project passes `load`.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sha2::{Digest, Sha256};

use super::diagnostics::Diagnostics;
use super::keys::{create, hex};
use super::load::{load, MAX_DATASETS, PROJECT_FILES};
use super::model::ColumnType;
use super::yaml::is_identifier;

/// The one key `init` writes.
pub const STARTER_KEY_ID: &str = "starter";

/// Why `init` wrote no project.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A file or directory could not be read or written (what, which path, why).
    #[error("{0}")]
    Io(String),
    /// The parquet directory holds no `*.parquet` file.
    #[error("no *.parquet file in {0}")]
    NoParquet(PathBuf),
    /// The output directory already has a project file.
    #[error("{0} already holds a project; init writes only into a directory without one")]
    Exists(PathBuf),
    /// The project written does not load; every problem is listed.
    #[error("the written project does not load:\n{0}")]
    Invalid(Diagnostics),
}

fn io(what: &str, path: &Path, error: impl std::fmt::Display) -> InitError {
    InitError::Io(format!("{what} {}: {error}", path.display()))
}

/// What `init` wrote.
#[derive(Clone, Debug)]
pub struct InitReport {
    /// The directory the project was written to.
    pub project_dir: PathBuf,
    /// One dataset per parquet file that gave one.
    pub datasets: Vec<InitDataset>,
    /// Files that gave no dataset, and why.
    pub skipped_files: Vec<(PathBuf, String)>,
    /// The starter key's token: shown once, only its hash is in the keys file.
    pub token: String,
}

/// A dataset `init` wrote for one parquet file.
#[derive(Clone, Debug)]
pub struct InitDataset {
    /// The dataset's id, from the file's name.
    pub id: String,
    /// The parquet file it serves.
    pub file: PathBuf,
    /// The file's row count.
    pub rows: u64,
    /// How many of its columns the dataset declares.
    pub columns: usize,
    /// Columns left out: their names are not identifiers `[a-z][a-z0-9_]*`.
    pub skipped_columns: Vec<String>,
}

/// Writes a starter project into `out_dir` serving every parquet file in `parquet_dir`: a dataset
/// and an endpoint each, and one key whose token the report holds.
pub fn init(parquet_dir: &Path, out_dir: &Path) -> Result<InitReport, InitError> {
    for name in PROJECT_FILES {
        if out_dir.join(name).exists() {
            return Err(InitError::Exists(out_dir.to_path_buf()));
        }
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(parquet_dir)
        .map_err(|error| io("cannot read", parquet_dir, error))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "parquet"))
        .collect();
    files.sort();
    files.truncate(MAX_DATASETS);
    if files.is_empty() {
        return Err(InitError::NoParquet(parquet_dir.to_path_buf()));
    }
    for dir in ["datasets", "endpoints", "keys", "data"] {
        let path = out_dir.join(dir);
        std::fs::create_dir_all(&path).map_err(|error| io("cannot create", &path, error))?;
    }
    let mut datasets: Vec<InitDataset> = Vec::new();
    let mut skipped_files = Vec::new();
    for file in files {
        let id = unique_id(&dataset_id(&file), &datasets);
        match write_dataset(&file, &id, out_dir)? {
            Ok(dataset) => datasets.push(dataset),
            Err(why) => skipped_files.push((file, why)),
        }
    }
    if datasets.is_empty() {
        return Err(InitError::NoParquet(parquet_dir.to_path_buf()));
    }
    let endpoints: Vec<String> = datasets.iter().map(|dataset| dataset.id.clone()).collect();
    let (token, entry) = create(STARTER_KEY_ID, None, &endpoints)
        .map_err(|error| io("cannot draw a token for", out_dir, error))?;
    write(
        &out_dir.join("keys/keys.yml"),
        &format!("# API keys: only the SHA-256 of each token is stored. Mint more with\n# `quiver gateway keys create --id ID [--tenant T] [--endpoints a,b]`.\nkeys:\n{entry}"),
    )?;
    // The parts are read where they are: their directory is a data root beside the project's.
    let parquet_root = std::fs::canonicalize(parquet_dir)
        .map_err(|error| io("cannot resolve", parquet_dir, error))?;
    write(
        &out_dir.join("gateway.yml"),
        &format!(
            "# A quiver gateway project (offloader's layout). Check it with `quiver gateway check DIR`.\n\
             version: 1\n\
             datasets_dir: datasets\n\
             endpoints_dir: endpoints\n\
             keys: keys/keys.yml\n\
             auth: required\n\
             gateway:\n  \
               ready: all\n  \
               materialize: {{ parallelism: 2, budget_seconds: 300 }}\n  \
               cache: {{ max_bytes: 268435456 }}\n  \
               data_roots: [\".\", {}]\n",
            serde_json::Value::String(parquet_root.to_string_lossy().into_owned())
        ),
    )?;
    if let Err(diagnostics) = load(out_dir) {
        return Err(InitError::Invalid(diagnostics));
    }
    Ok(InitReport {
        project_dir: out_dir.to_path_buf(),
        datasets,
        skipped_files,
        token,
    })
}

/// A dataset id from a file name: lowercase, other characters as `_`, a letter first.
fn dataset_id(file: &Path) -> String {
    let stem = file
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("dataset");
    let mut id: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        id.insert_str(0, "d_");
    }
    id.truncate(48);
    id
}

fn unique_id(base: &str, taken: &[InitDataset]) -> String {
    let mut id = base.to_string();
    let mut suffix = 2;
    while taken.iter().any(|dataset| dataset.id == id) {
        id = format!("{base}_{suffix}");
        suffix += 1;
    }
    assert!(is_identifier(&id), "dataset ids are made identifiers");
    id
}

/// The dataset type of a parquet column's Arrow type; nested and other types are served as JSON.
pub fn column_type(data_type: &DataType) -> ColumnType {
    match data_type {
        DataType::Boolean => ColumnType::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt8 | DataType::UInt16 => {
            ColumnType::Integer
        }
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => ColumnType::Bigint,
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => ColumnType::Double,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => ColumnType::Varchar,
        DataType::Date32 | DataType::Date64 => ColumnType::Date,
        DataType::Timestamp(..) => ColumnType::Timestamp,
        DataType::Dictionary(_, value) => column_type(value),
        _ => ColumnType::Json,
    }
}

fn write(path: &Path, text: &str) -> Result<(), InitError> {
    std::fs::write(path, text).map_err(|error| io("cannot write", path, error))
}

/// Writes one dataset's manifest, dataset file and endpoint; `Ok(Err(why))`: the file gives no
/// dataset (not parquet, or no usable column) and is skipped.
fn write_dataset(
    file: &Path,
    id: &str,
    out_dir: &Path,
) -> Result<Result<InitDataset, String>, InitError> {
    let handle = std::fs::File::open(file).map_err(|error| io("cannot open", file, error))?;
    let metadata = handle
        .metadata()
        .map_err(|error| io("cannot stat", file, error))?;
    let builder = match ParquetRecordBatchReaderBuilder::try_new(handle) {
        Ok(builder) => builder,
        Err(error) => return Ok(Err(format!("not parquet: {error}"))),
    };
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let (columns, skipped_columns) = servable_columns(builder.schema());
    if columns.is_empty() {
        return Ok(Err("no column has an identifier name".into()));
    }

    // The manifest sits in data/<id>/ and names the file by its absolute path (parts are read
    // where they are; nothing is copied).
    let data_dir = out_dir.join("data").join(id);
    std::fs::create_dir_all(&data_dir).map_err(|error| io("cannot create", &data_dir, error))?;
    let absolute =
        std::fs::canonicalize(file).map_err(|error| io("cannot resolve", file, error))?;
    let manifest = manifest_json(id, &absolute, &metadata, rows, &columns);
    write(
        &data_dir.join("manifest.json"),
        &serde_json::to_string_pretty(&manifest).expect("a manifest serializes"),
    )?;
    write(
        &out_dir.join("datasets").join(format!("{id}.yml")),
        &dataset_yaml(id, file, &columns),
    )?;
    write(
        &out_dir.join("endpoints").join(format!("{id}.yml")),
        &endpoint_yaml(id, &columns),
    )?;
    Ok(Ok(InitDataset {
        id: id.to_string(),
        file: file.to_path_buf(),
        rows,
        columns: columns.len(),
        skipped_columns,
    }))
}

/// The columns an endpoint can name (identifiers) with their types, and the names of the others.
fn servable_columns(schema: &Schema) -> (Vec<(String, ColumnType)>, Vec<String>) {
    let mut columns = Vec::new();
    let mut skipped_columns = Vec::new();
    for field in schema.fields() {
        if is_identifier(field.name()) {
            columns.push((field.name().clone(), column_type(field.data_type())));
        } else {
            skipped_columns.push(field.name().clone());
        }
    }
    (columns, skipped_columns)
}

/// The manifest of a one-part snapshot of `absolute`: its snapshot id changes whenever the file's
/// path, size or modification time does, and its watermark is that modification time.
fn manifest_json(
    id: &str,
    absolute: &Path,
    metadata: &std::fs::Metadata,
    rows: u64,
    columns: &[(String, ColumnType)],
) -> serde_json::Value {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .unwrap_or_default();
    let watermark = chrono::DateTime::<chrono::Utc>::from(UNIX_EPOCH + modified)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let fingerprint = Sha256::digest(
        format!(
            "{}:{}:{}",
            absolute.display(),
            metadata.len(),
            modified.as_nanos()
        )
        .as_bytes(),
    );
    let schema_json: Vec<serde_json::Value> = columns
        .iter()
        .map(|(name, column_type)| serde_json::json!({ "name": name, "type": column_type.sql() }))
        .collect();
    serde_json::json!({
        "dataset_id": id,
        "snapshot_id": format!("init-{}", &hex(&fingerprint)[..16]),
        "created_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "watermark": watermark,
        "schema": schema_json,
        "files": [{
            "path": absolute.to_string_lossy(),
            "format": "parquet",
            "row_count": rows,
            "size_bytes": metadata.len(),
        }],
        "sort_columns": [],
        "row_count": rows,
        "size_bytes": metadata.len(),
    })
}

/// datasets/<id>.yml: the dataset over its manifest, with the columns' types.
fn dataset_yaml(id: &str, file: &Path, columns: &[(String, ColumnType)]) -> String {
    let mut dataset = format!(
        "# Dataset `{id}`, from {}.\nid: {id}\nmanifest: data/{id}/manifest.json\nschema:\n",
        file.file_name()
            .map(|name| name.to_string_lossy())
            .unwrap_or_default()
            .escape_debug()
    );
    for (name, column_type) in columns {
        dataset.push_str(&format!(
            "  - {{ name: {name}, type: {} }}\n",
            column_type.sql()
        ));
    }
    dataset
}

/// endpoints/<id>.yml: every column, a page at a time, sortable by every column but JSON ones.
fn endpoint_yaml(id: &str, columns: &[(String, ColumnType)]) -> String {
    let names: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
    let sortable: Vec<&str> = columns
        .iter()
        .filter(|(_, t)| *t != ColumnType::Json)
        .map(|(name, _)| name.as_str())
        .collect();
    let mut endpoint = format!(
        "# GET /v1/endpoints/{id}: the rows of `{id}`, a page at a time.\nname: {id}\nversion: 1\ndataset: {id}\nserving_mode: local_table\nquery:\n  select:\n"
    );
    for name in &names {
        endpoint.push_str(&format!("    - {{ as: {name}, column: {name} }}\n"));
    }
    endpoint.push_str(&format!("columns: [{}]\n", names.join(", ")));
    if !sortable.is_empty() {
        endpoint.push_str(&format!("sort: [{}]\n", sortable.join(", ")));
    }
    endpoint.push_str(
        "pagination: { default_limit: 100, max_limit: 1000 }\ncache: { policy: snapshot }\n",
    );
    endpoint
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, RecordBatch, StringArray};
    use arrow_schema::Field;
    use parquet::arrow::ArrowWriter;

    use super::*;
    use crate::project::keys::token_sha256;
    use crate::project::load_tests::TempProject;

    fn write_parquet(path: &Path, batch: &RecordBatch) {
        let file = std::fs::File::create(path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(batch).unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn a_directory_of_parquet_becomes_a_project_that_loads() {
        let scratch = TempProject::new(&[("parquet/notes.txt", "not data")]);
        let parquet = scratch.dir.join("parquet");
        let orders = RecordBatch::try_from_iter(vec![
            (
                "order_id",
                Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef,
            ),
            (
                "customer",
                Arc::new(StringArray::from(vec!["a", "b", "c"])) as ArrayRef,
            ),
            (
                "Bad Name",
                Arc::new(BooleanArray::from(vec![true, false, true])) as ArrayRef,
            ),
        ])
        .unwrap();
        write_parquet(&parquet.join("Orders 2026.parquet"), &orders);
        let list = arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int32Type, _, _>(
            vec![Some(vec![Some(1)])],
        );
        let nested = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("tags", list.data_type().clone(), true),
            ])),
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![7])),
                Arc::new(list),
            ],
        )
        .unwrap();
        write_parquet(&parquet.join("events.parquet"), &nested);
        std::fs::write(parquet.join("broken.parquet"), b"PAR1 not really").unwrap();

        let out = scratch.dir.join("project");
        let report = init(&parquet, &out).unwrap_or_else(|error| panic!("{error}"));
        let ids: Vec<&str> = report.datasets.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["orders_2026", "events"], "in file name order");
        assert_eq!(report.datasets[0].rows, 3);
        assert_eq!(report.datasets[0].skipped_columns, ["Bad Name"]);
        assert_eq!(
            report.skipped_files.len(),
            1,
            "the broken file is skipped, not fatal"
        );

        let project = load(&out).unwrap();
        let events = project.dataset("events").unwrap();
        assert_eq!(events.column("id").unwrap().column_type, ColumnType::Bigint);
        assert_eq!(events.column("tags").unwrap().column_type, ColumnType::Json);
        let endpoint = project.endpoint("orders_2026").unwrap();
        assert_eq!(endpoint.columns, ["order_id", "customer"]);
        assert_eq!(project.keys.len(), 1);
        assert_eq!(project.keys[0].token_sha256, token_sha256(&report.token));
        assert!(!std::fs::read_to_string(out.join("keys/keys.yml"))
            .unwrap()
            .contains(&report.token));
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("data/orders_2026/manifest.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(manifest["files"][0]["row_count"], 3);
        assert_eq!(
            manifest["schema"][0],
            serde_json::json!({"name": "order_id", "type": "INTEGER"})
        );

        assert!(
            matches!(init(&parquet, &out), Err(InitError::Exists(_))),
            "never over an existing project"
        );
        let empty = scratch.dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        assert!(matches!(
            init(&empty, &scratch.dir.join("p2")),
            Err(InitError::NoParquet(_))
        ));
    }
}
