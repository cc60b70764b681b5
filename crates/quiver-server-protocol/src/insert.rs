//! The insert handshake. `insert` is an exchange: the client sends batches of the schema it named
//! in the request, the server appends each and answers with one acknowledgement batch (the rows
//! appended so far). The client ends with a batch — possibly of zero rows — whose metadata carries
//! [`COMMIT_KEY`]; the server then commits and its final acknowledgement finishes the stream.
//!
//! All or nothing: the rows become visible only at that commit. A stream that ends any other way
//! (the client closes or cancels it, dies, or a batch fails) rolls back every row the call
//! appended. Inside a transaction the session opened with `BEGIN`, the commit marker ends the
//! call only, and the rows commit (or roll back) with that transaction.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use arrow_array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// Input batch metadata key: this batch is the last; commit.
pub const COMMIT_KEY: &str = "quiver.insert.commit";
/// The value [`COMMIT_KEY`] carries.
pub const COMMIT_VALUE: &str = "1";

/// The acknowledgement's only column: rows appended by this call so far.
pub const ROWS_FIELD: &str = "rows";

/// The schema of every acknowledgement batch (one row).
pub fn ack_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        ROWS_FIELD,
        DataType::Int64,
        false,
    )]))
}

/// One acknowledgement batch.
pub fn ack(rows: i64) -> RecordBatch {
    RecordBatch::try_new(ack_schema(), vec![Arc::new(Int64Array::from(vec![rows]))])
        .expect("the acknowledgement matches its schema")
}

/// What `insert` does with the target table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertMode {
    /// Append to an existing table; an error if it does not exist.
    Append,
    /// Create the table from the batches' schema, then append; an error if it exists.
    Create,
    /// Create the table if it does not exist, then append.
    CreateAppend,
    /// Drop the table if it exists, create it from the batches' schema, then append.
    Replace,
}

impl InsertMode {
    /// Every mode.
    pub const ALL: [InsertMode; 4] = [
        InsertMode::Append,
        InsertMode::Create,
        InsertMode::CreateAppend,
        InsertMode::Replace,
    ];

    /// The mode's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            InsertMode::Append => "append",
            InsertMode::Create => "create",
            InsertMode::CreateAppend => "create_append",
            InsertMode::Replace => "replace",
        }
    }
}

impl fmt::Display for InsertMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InsertMode {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        InsertMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = InsertMode::ALL.iter().map(|m| m.as_str()).collect();
                format!(
                    "unknown insert mode '{name}' (expected one of: {})",
                    known.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_by_name() {
        for mode in InsertMode::ALL {
            assert_eq!(mode.as_str().parse::<InsertMode>().unwrap(), mode);
        }
        let error = "upsert".parse::<InsertMode>().unwrap_err();
        assert!(error.contains("upsert") && error.contains("create_append"));
    }

    #[test]
    fn ack_has_one_row() {
        assert_eq!(ack(7).num_rows(), 1);
    }
}
