//! A connection's prepared statements kept by SQL text, for [`Connection::query_cached`]: a
//! statement is parsed and planned once per connection and its plan runs again with each new
//! row of parameters. Services that ask the same few statement shapes over pooled connections
//! (the gateway's endpoints) skip DuckDB's parser, binder and optimizer on every call but the
//! first. Bounded: past [`STATEMENT_CACHE_MAX`] the least recently used statement is closed on
//! the server.

use std::collections::VecDeque;

use arrow_array::RecordBatch;

use crate::connection::Connection;
use crate::error::Result;
use crate::prepared::PreparedHandle;
use crate::query::QueryStream;

/// Statements one connection keeps prepared for [`Connection::query_cached`].
pub const STATEMENT_CACHE_MAX: usize = 32;

/// Most recently used first.
#[derive(Debug, Default)]
pub(crate) struct StatementCache {
    entries: VecDeque<CachedStatement>,
}

#[derive(Debug)]
struct CachedStatement {
    sql: String,
    handle: PreparedHandle,
}

impl StatementCache {
    /// The entry for `sql`, moved to the front.
    fn touch(&mut self, sql: &str) -> Option<&CachedStatement> {
        let index = self.entries.iter().position(|entry| entry.sql == sql)?;
        let entry = self.entries.remove(index)?;
        self.entries.push_front(entry);
        self.entries.front()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

impl Connection {
    /// [`Connection::query_with`] through the connection's statement cache: `sql` is prepared on
    /// the first call and its plan reused by the next ones (`parameters`: one row, or `None` for a
    /// statement without parameters). Catalog changes are safe: DuckDB rebinds a prepared
    /// statement whose tables changed.
    pub fn query_cached(
        &mut self,
        sql: &str,
        parameters: Option<&RecordBatch>,
    ) -> Result<QueryStream<'_>> {
        let handle = match self.statements.touch(sql) {
            Some(entry) => entry.handle.clone(),
            None => {
                if self.statements.len() >= STATEMENT_CACHE_MAX {
                    if let Some(oldest) = self.statements.entries.pop_back() {
                        self.close_prepared(&oldest.handle)?;
                    }
                }
                let handle = self.prepare_handle(sql)?;
                self.statements.entries.push_front(CachedStatement {
                    sql: sql.to_owned(),
                    handle: handle.clone(),
                });
                handle
            }
        };
        self.query_prepared(&handle, parameters)
    }

    /// How many statements the cache holds now.
    pub fn cached_statements(&self) -> usize {
        self.statements.len()
    }
}
