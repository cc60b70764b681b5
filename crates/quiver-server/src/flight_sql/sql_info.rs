//! `GetSqlInfo`: what the server tells Flight SQL clients about itself. ADBC's Flight SQL driver
//! reads the server's name and versions, whether transactions are supported (it drives
//! `autocommit = false` with them), cancel and the timeouts at connect; JDBC reads the identifier
//! quote and the transaction support. Every value here is true of this server.

use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::{SqlInfo, SqlSupportedTransaction};

/// The Arrow version the Flight SQL service is built on (arrow-rs, pinned in the workspace).
const ARROW_VERSION: &str = "60.1.0";

/// The server's SqlInfo table.
pub fn sql_info() -> SqlInfoData {
    let mut info = SqlInfoDataBuilder::new();
    info.append(SqlInfo::FlightSqlServerName, "quiver");
    info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    info.append(SqlInfo::FlightSqlServerArrowVersion, ARROW_VERSION);
    info.append(SqlInfo::FlightSqlServerReadOnly, false);
    info.append(SqlInfo::FlightSqlServerSql, true);
    info.append(SqlInfo::FlightSqlServerSubstrait, false);
    info.append(
        SqlInfo::FlightSqlServerTransaction,
        SqlSupportedTransaction::Transaction as i32,
    );
    // CancelFlightInfo (and a dropped DoGet stream) stops a statement (cancel.rs).
    info.append(SqlInfo::FlightSqlServerCancel, true);
    info.append(SqlInfo::FlightSqlServerBulkIngestion, true);
    info.append(SqlInfo::FlightSqlServerIngestTransactionsSupported, true);
    // No server-side timeouts (0: none).
    info.append(SqlInfo::FlightSqlServerStatementTimeout, 0i32);
    info.append(SqlInfo::FlightSqlServerTransactionTimeout, 0i32);
    info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    info.append(SqlInfo::SqlTransactionsSupported, true);
    info.build().expect("the SqlInfo table is well formed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_builds_and_answers_what_adbc_reads() {
        let info = sql_info();
        let batch = info
            .record_batch([
                SqlInfo::FlightSqlServerName as u32,
                SqlInfo::FlightSqlServerTransaction as u32,
            ])
            .unwrap();
        assert_eq!(batch.num_rows(), 2);
    }
}
