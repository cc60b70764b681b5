//! Bulk ingest, `DoPut(CommandStatementIngest)` (what ADBC's `adbc_ingest` sends): the client's
//! batches go into a table through the spine's insert core (`crate::insert::TableInsert`), all or
//! nothing: a stream that fails or ends early (the client was killed) rolls back, so no row of an
//! unfinished ingest is ever seen. The stream is read on a blocking thread (`Handle::block_on`), so
//! a full insert queue holds that thread, never a gRPC worker.

use std::sync::Arc;

use arrow_flight::decode::FlightRecordBatchStream;
use arrow_flight::error::FlightError;
use arrow_flight::sql::server::PeekableFlightDataStream;
use arrow_flight::sql::{
    CommandStatementIngest, TableDefinitionOptions, TableExistsOption, TableNotExistOption,
};
use futures::{StreamExt, TryStreamExt};
use quiver_server_protocol::limits::IDENTIFIER_BYTES_MAX;
use quiver_server_protocol::InsertMode;
use tokio::runtime::Handle;
use tonic::Status;

use super::lease::Lease;
use super::status::status;
use crate::insert::{table_schema, TableInsert, TableName};

/// What the table definition options ask for: the insert mode, and whether the table must exist
/// already (replace without create).
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    mode: InsertMode,
    must_exist: bool,
}

/// The plan `options` ask for; a clear `invalid_argument` for a combination ADBC does not send.
pub fn plan(options: Option<&TableDefinitionOptions>) -> Result<Plan, Status> {
    let (if_not_exist, if_exists) = options.map_or((0, 0), |o| (o.if_not_exist, o.if_exists));
    let not_exist = TableNotExistOption::try_from(if_not_exist).ok();
    let exists = TableExistsOption::try_from(if_exists).ok();
    let plan = |mode, must_exist| Ok(Plan { mode, must_exist });
    match (not_exist, exists) {
        (Some(TableNotExistOption::Create), Some(TableExistsOption::Fail)) => {
            plan(InsertMode::Create, false)
        }
        (Some(TableNotExistOption::Create), Some(TableExistsOption::Append)) => {
            plan(InsertMode::CreateAppend, false)
        }
        (Some(TableNotExistOption::Create), Some(TableExistsOption::Replace)) => {
            plan(InsertMode::Replace, false)
        }
        (Some(TableNotExistOption::Fail), Some(TableExistsOption::Append)) => {
            plan(InsertMode::Append, true)
        }
        (Some(TableNotExistOption::Fail), Some(TableExistsOption::Replace)) => {
            plan(InsertMode::Replace, true)
        }
        _ => Err(Status::invalid_argument(format!(
            "ingest: table definition options if_not_exist={if_not_exist} if_exists={if_exists} \
             are not one of create, append, replace, create_append"
        ))),
    }
}

fn identifier(what: &str, text: &str) -> Result<String, Status> {
    if text.is_empty() || text.len() > IDENTIFIER_BYTES_MAX {
        return Err(Status::invalid_argument(format!(
            "ingest: the {what} name must have 1 to {IDENTIFIER_BYTES_MAX} bytes"
        )));
    }
    Ok(text.to_string())
}

/// The table a command names. A temporary table lives in DuckDB's `temp` catalog and only as long
/// as its session, so it is refused outside a transaction (the call's session closes with it).
pub fn target(command: &CommandStatementIngest, in_transaction: bool) -> Result<TableName, Status> {
    let table = identifier("table", &command.table)?;
    let schema_name = command
        .schema
        .as_deref()
        .map(|s| identifier("schema", s))
        .transpose()?;
    let catalog = command
        .catalog
        .as_deref()
        .map(|c| identifier("catalog", c))
        .transpose()?;
    if !command.temporary {
        return Ok(TableName::new(table, schema_name, catalog));
    }
    if !in_transaction {
        return Err(Status::invalid_argument(
            "ingest: a temporary table lives as long as its session; ingest it inside a transaction",
        ));
    }
    if catalog.as_deref().is_some_and(|c| c != "temp")
        || schema_name.as_deref().is_some_and(|s| s != "main")
    {
        return Err(Status::invalid_argument(
            "ingest: a temporary table lives in catalog temp, schema main",
        ));
    }
    Ok(TableName::new(
        table,
        Some("main".into()),
        Some("temp".into()),
    ))
}

/// Reads the stream into `name` on `lease`, all or nothing; the rows inserted. Runs on a blocking
/// thread of the runtime `runtime`.
pub fn ingest(
    runtime: &Handle,
    lease: &Lease,
    name: &TableName,
    plan: &Plan,
    stream: PeekableFlightDataStream,
) -> Result<i64, Status> {
    // A result still open on a transaction's session would refuse the insert's statements.
    lease.with(|_| Ok(())).map_err(status)?;
    let session = lease.session();
    let mut batches =
        FlightRecordBatchStream::new_from_flight_data(stream.map_err(FlightError::from));
    let read = |item: Option<Result<_, FlightError>>| {
        item.transpose()
            .map_err(|e| Status::invalid_argument(format!("ingest: {e}")))
    };
    let first = read(runtime.block_on(batches.next()))?;
    let schema = match (&first, batches.schema()) {
        (Some(batch), _) => batch.schema(),
        (None, Some(schema)) => Arc::clone(schema),
        (None, None) => {
            return Err(Status::invalid_argument(
                "ingest: the stream carries no schema",
            ))
        }
    };
    if plan.must_exist {
        // DuckDB's own error (Catalog Error: Table with name ... does not exist!).
        table_schema(session, name).map_err(status)?;
    }
    let mut insert = TableInsert::begin(session, name, &schema, plan.mode).map_err(|report| {
        let exists = report.message.contains("already exists");
        match status(report) {
            refused if exists && plan.mode == InsertMode::Create => {
                Status::already_exists(refused.message())
            }
            other => other,
        }
    })?;
    // From here on every early return drops `insert`, which rolls back.
    if let Some(batch) = first {
        insert.push(&batch).map_err(status)?;
    }
    while let Some(batch) = read(runtime.block_on(batches.next()))? {
        insert.push(&batch).map_err(status)?;
    }
    insert.commit().map_err(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(
        if_not_exist: TableNotExistOption,
        if_exists: TableExistsOption,
    ) -> TableDefinitionOptions {
        TableDefinitionOptions {
            if_not_exist: if_not_exist as i32,
            if_exists: if_exists as i32,
        }
    }

    #[test]
    fn adbc_modes_map_to_insert_modes() {
        use TableExistsOption as Exists;
        use TableNotExistOption as NotExist;
        let cases = [
            (NotExist::Create, Exists::Fail, InsertMode::Create, false),
            (
                NotExist::Create,
                Exists::Append,
                InsertMode::CreateAppend,
                false,
            ),
            (
                NotExist::Create,
                Exists::Replace,
                InsertMode::Replace,
                false,
            ),
            (NotExist::Fail, Exists::Append, InsertMode::Append, true),
            (NotExist::Fail, Exists::Replace, InsertMode::Replace, true),
        ];
        for (not_exist, exists, mode, must_exist) in cases {
            let got = plan(Some(&options(not_exist, exists))).unwrap();
            assert_eq!(got, Plan { mode, must_exist });
        }
        for (not_exist, exists) in [
            (NotExist::Unspecified, Exists::Append),
            (NotExist::Fail, Exists::Fail),
            (NotExist::Create, Exists::Unspecified),
        ] {
            let error = plan(Some(&options(not_exist, exists))).unwrap_err();
            assert_eq!(error.code(), tonic::Code::InvalidArgument);
        }
        assert!(plan(None).is_err());
    }

    #[test]
    fn temporary_tables_only_inside_a_transaction() {
        let command = CommandStatementIngest {
            table: "t".into(),
            temporary: true,
            ..Default::default()
        };
        assert!(target(&command, false).is_err());
        assert!(target(&command, true).is_ok());
        let elsewhere = CommandStatementIngest {
            catalog: Some("memory".into()),
            ..command
        };
        assert!(target(&elsewhere, true).is_err());
        let empty = CommandStatementIngest::default();
        assert!(target(&empty, false).is_err());
    }
}
