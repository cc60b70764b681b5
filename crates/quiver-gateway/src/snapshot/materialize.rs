//! One snapshot's table built on the server: the part files' schema checked against the dataset
//! (through DuckDB's `DESCRIBE`), then `CREATE TABLE ... AS SELECT CAST(...) ... ORDER BY
//! <sort_columns>` on a connection of its own, cancelled when it runs past its budget.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use arrow_array::{Array, RecordBatch, StringArray};
use quiver_client::Connection;

use super::manifest::{Manifest, PartFormat};
use super::types;
use crate::project::{ColumnType, Dataset};

/// How often a fired watchdog repeats its cancel, for a statement that had not started yet.
const CANCEL_RETRY: Duration = Duration::from_millis(200);

/// What a materialize made.
#[derive(Clone, Debug)]
pub struct Built {
    pub row_count: u64,
    /// The SQL relation over the part files, with the table's column types.
    pub files_relation: String,
}

/// `"name"` with inner quotes doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with inner quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Builds `table` from `parts`; on any failure (a refused schema, a SQL error, the budget) no
/// table is left behind.
pub fn materialize(
    connection: &mut Connection,
    dataset: &Dataset,
    manifest: &Manifest,
    parts: &[PathBuf],
    table: &str,
    deadline: Instant,
) -> Result<Built, String> {
    assert!(!parts.is_empty(), "a manifest lists at least one part");
    let result = with_deadline(connection, deadline, |connection| {
        build(connection, dataset, manifest, parts, table, deadline)
    });
    if result.is_err() {
        // A statement cancelled or failed mid-way leaves nothing in DuckDB, but a row-count
        // mismatch found after the CREATE does: drop it either way.
        let _ = connection.execute(&format!("DROP TABLE IF EXISTS {table}"));
    }
    result
}

fn build(
    connection: &mut Connection,
    dataset: &Dataset,
    manifest: &Manifest,
    parts: &[PathBuf],
    table: &str,
    deadline: Instant,
) -> Result<Built, String> {
    let in_budget = || {
        if Instant::now() < deadline {
            Ok(())
        } else {
            Err("materialize exceeded its budget".to_string())
        }
    };
    let source = source_relation(connection, manifest, parts)?;
    in_budget()?;
    let file_columns = describe(connection, &source)?;
    check_files(dataset, &file_columns)?;
    in_budget()?;
    let projection = projection(dataset, &file_columns);
    let order_by = if manifest.sort_columns.is_empty() {
        String::new()
    } else {
        let columns: Vec<String> = manifest
            .sort_columns
            .iter()
            .map(|column| quote_identifier(column))
            .collect();
        format!(" ORDER BY {}", columns.join(", "))
    };
    connection
        .execute(&format!(
            "CREATE TABLE {table} AS SELECT {projection} FROM {source}{order_by}"
        ))
        .map_err(|error| format!("materialize: {error}"))?;
    let row_count = connection
        .query_scalar_i64(&format!("SELECT count(*) FROM {table}"))
        .map_err(|error| format!("counting rows: {error}"))?
        .unwrap_or(0) as u64;
    if let Some(expected) = manifest.row_count.filter(|expected| *expected != row_count) {
        return Err(format!(
            "row_count: the manifest says {expected}, the parts hold {row_count}"
        ));
    }
    Ok(Built {
        row_count,
        files_relation: format!("(SELECT {projection} FROM {source})"),
    })
}

/// `read_parquet([...])` or `read_csv([...])` over the parts. Parquet parts are matched by
/// column name (a part written before a column was added still reads); CSV parts share the
/// first part's header (matching by name would sniff every part, which costs as much as reading
/// them). A CSV's columns the manifest declares are read as the manifest's types (so an id
/// `0012` declared VARCHAR stays text); the rest are sniffed.
fn source_relation(
    connection: &mut Connection,
    manifest: &Manifest,
    parts: &[PathBuf],
) -> Result<String, String> {
    let list: Vec<String> = parts
        .iter()
        .map(|path| quote_literal(&path.display().to_string()))
        .collect();
    let list = format!("[{}]", list.join(", "));
    match manifest.format() {
        PartFormat::Parquet => Ok(format!("read_parquet({list}, union_by_name = true)")),
        PartFormat::Csv => {
            let sniffed = format!("read_csv({list}, header = true)");
            let header = describe(connection, &sniffed)?;
            let typed: Vec<String> = header
                .iter()
                .filter_map(|(name, _)| manifest.column(name))
                .map(|column| {
                    format!(
                        "{}: {}",
                        quote_literal(&column.name),
                        quote_literal(&column.type_text)
                    )
                })
                .collect();
            if typed.is_empty() {
                return Ok(sniffed);
            }
            Ok(format!(
                "read_csv({list}, header = true, types = {{{}}})",
                typed.join(", ")
            ))
        }
    }
}

/// The columns (name, DuckDB type) of a relation.
fn describe(connection: &mut Connection, relation: &str) -> Result<Vec<(String, String)>, String> {
    let batches = connection
        .query_arrow(&format!("DESCRIBE SELECT * FROM {relation}"))
        .map_err(|error| format!("reading the parts' schema: {error}"))?;
    let mut columns = Vec::new();
    for batch in &batches {
        let names = text_column(batch, "column_name")?;
        let types = text_column(batch, "column_type")?;
        for row in 0..batch.num_rows() {
            columns.push((names.value(row).to_string(), types.value(row).to_string()));
        }
    }
    Ok(columns)
}

fn text_column<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b StringArray, String> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<StringArray>())
        .filter(|column| column.null_count() == 0)
        .ok_or_else(|| format!("DESCRIBE answered no text column {name}"))
}

/// Every declared column is in the files, with a type compatible with the declared one.
fn check_files(dataset: &Dataset, file_columns: &[(String, String)]) -> Result<(), String> {
    let mut problems = Vec::new();
    for column in &dataset.schema {
        match file_columns.iter().find(|(name, _)| *name == column.name) {
            None => problems.push(format!("the parts lack column '{}'", column.name)),
            Some((_, type_text)) => {
                let fits = types::classify(type_text)
                    .is_some_and(|class| types::compatible(&class, column.column_type));
                if !fits {
                    problems.push(format!(
                        "column '{}' is {type_text} in the parts, not compatible with the \
                         dataset's {} (a narrowed or changed type)",
                        column.name,
                        column.column_type.sql()
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The dataset's columns, each cast to its declared type. Nested (`JSON`) columns keep their
/// nested type, so responses can render them as JSON objects rather than text.
fn projection(dataset: &Dataset, file_columns: &[(String, String)]) -> String {
    let items: Vec<String> = dataset
        .schema
        .iter()
        .map(|column| {
            let name = quote_identifier(&column.name);
            let nested = file_columns.iter().any(|(file_name, type_text)| {
                *file_name == column.name
                    && types::classify(type_text) == Some(types::TypeClass::Nested)
            });
            if column.column_type == ColumnType::Json && nested {
                name
            } else {
                format!("CAST({name} AS {}) AS {name}", column.column_type.sql())
            }
        })
        .collect();
    items.join(", ")
}

/// Runs `work` with a watchdog that cancels the connection's statement at `deadline`. A failure
/// after the watchdog fired is reported as the budget's.
fn with_deadline<T>(
    connection: &mut Connection,
    deadline: Instant,
    work: impl FnOnce(&mut Connection) -> Result<T, String>,
) -> Result<T, String> {
    let cancel = connection.cancel_handle();
    let fired = Arc::new(AtomicBool::new(false));
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = {
        let fired = fired.clone();
        std::thread::Builder::new()
            .name("quiver-gateway-budget".into())
            .spawn(move || {
                let mut wait = deadline.saturating_duration_since(Instant::now());
                while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(wait) {
                    fired.store(true, Ordering::SeqCst);
                    let _ = cancel.cancel();
                    wait = CANCEL_RETRY;
                }
            })
            .map_err(|error| format!("cannot start a budget watchdog: {error}"))?
    };
    let result = work(connection);
    drop(done);
    watchdog.join().expect("the budget watchdog does not panic");
    if fired.load(Ordering::SeqCst) {
        if let Err(why) = result {
            return Err(format!(
                "materialize exceeded its budget and was cancelled ({why})"
            ));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{Column, SnapshotSource};

    fn dataset() -> Dataset {
        Dataset {
            id: "usage".into(),
            description: None,
            schema: vec![
                Column {
                    name: "day".into(),
                    column_type: ColumnType::Date,
                },
                Column {
                    name: "calls".into(),
                    column_type: ColumnType::Bigint,
                },
            ],
            tenant_column: None,
            source: SnapshotSource::Manifest("m.json".into()),
            manifest_at: ("usage.yml".into(), 3),
            unchecked_columns: Default::default(),
            materialize_budget: None,
        }
    }

    #[test]
    fn narrowed_and_missing_columns_are_refused() {
        let narrowed = [
            ("day".to_string(), "DATE".to_string()),
            ("calls".into(), "HUGEINT".into()),
        ];
        let error = check_files(&dataset(), &narrowed).unwrap_err();
        assert!(error.contains("column 'calls' is HUGEINT"), "{error}");
        let missing = [("day".to_string(), "DATE".to_string())];
        assert!(check_files(&dataset(), &missing)
            .unwrap_err()
            .contains("lack column 'calls'"));
        let narrowed = [
            ("day".to_string(), "DATE".to_string()),
            ("calls".into(), "INTEGER".into()),
        ];
        assert!(check_files(&dataset(), &narrowed)
            .unwrap_err()
            .contains("'calls' is INTEGER"));
        let widened = [
            ("day".to_string(), "TIMESTAMP".to_string()),
            ("calls".into(), "UBIGINT".into()),
            ("extra".into(), "VARCHAR".into()),
        ];
        check_files(&dataset(), &widened).unwrap();
    }

    #[test]
    fn the_projection_casts_to_declared_types() {
        let files = [
            ("day".to_string(), "DATE".to_string()),
            ("calls".into(), "INTEGER".into()),
        ];
        assert_eq!(
            projection(&dataset(), &files),
            "CAST(\"day\" AS DATE) AS \"day\", CAST(\"calls\" AS BIGINT) AS \"calls\""
        );
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
    }
}
