//! Flight SQL transactions: `BeginTransaction` opens a session of its own and runs `BEGIN
//! TRANSACTION` on it; every call naming the transaction's id runs on that session until
//! `EndTransaction` commits or rolls it back and closes it. Bounded: at most `max_connections`
//! transactions are open (each holds a session), and one left idle for [`TRANSACTION_IDLE_MAX`]
//! is rolled back and closed by the reaper, so a client that died never holds a connection forever.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tonic::Status;

use super::lease::{Lease, OwnedSession};
use super::service::status;
use crate::auth::random_hex;
use crate::server::Shared;

/// How long a transaction may go without a call before the reaper rolls it back.
pub const TRANSACTION_IDLE_MAX: Duration = Duration::from_secs(15 * 60);
/// How often the reaper looks.
pub const REAP_INTERVAL: Duration = Duration::from_secs(30);
/// Bytes of a transaction id (as hex digits on the wire).
const ID_BYTES: usize = 16;

struct Transaction {
    lease: Lease,
    last_used: Instant,
}

/// The open transactions by id.
#[derive(Default)]
pub struct Transactions {
    open: Mutex<HashMap<Vec<u8>, Transaction>>,
}

/// The one answer for an id that names no open transaction.
pub fn unknown() -> Status {
    Status::not_found("unknown transaction")
}

impl Transactions {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Transaction>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Begins a transaction on a session of its own; its id. Blocks on DuckDB.
    pub fn begin(&self, shared: &Arc<Shared>) -> Result<Vec<u8>, Status> {
        let open = self.lock().len();
        if open >= shared.max_connections {
            return Err(Status::resource_exhausted(format!(
                "at most {} transactions are open at once (max_connections)",
                shared.max_connections
            )));
        }
        let owned = OwnedSession::open(shared)?;
        owned
            .session()
            .with(|open| open.duck.execute("BEGIN TRANSACTION", None, None))
            .map_err(status)?;
        let id = random_hex(ID_BYTES).into_bytes();
        let transaction = Transaction {
            lease: Arc::new(owned),
            last_used: Instant::now(),
        };
        self.lock().insert(id.clone(), transaction);
        Ok(id)
    }

    /// The session of transaction `id`, for one call.
    pub fn lease(&self, id: &[u8]) -> Result<Lease, Status> {
        let mut open = self.lock();
        let transaction = open.get_mut(id).ok_or_else(unknown)?;
        transaction.last_used = Instant::now();
        Ok(Arc::clone(&transaction.lease))
    }

    /// Commits or rolls back transaction `id` and forgets it; its session closes once no call
    /// holds it any more. Blocks on DuckDB.
    pub fn end(&self, id: &[u8], commit: bool) -> Result<(), Status> {
        let transaction = self.lock().remove(id).ok_or_else(unknown)?;
        let sql = if commit { "COMMIT" } else { "ROLLBACK" };
        transaction
            .lease
            .session()
            .with(|open| open.duck.execute(sql, None, None))
            .map_err(status)?;
        Ok(())
    }

    /// Forgets the transactions idle for longer than [`TRANSACTION_IDLE_MAX`] and not in use by a
    /// call; closing their sessions rolls them back. How many it dropped.
    pub fn reap(&self, now: Instant) -> usize {
        let idle: Vec<Transaction> = {
            let mut open = self.lock();
            let expired: Vec<Vec<u8>> = open
                .iter()
                .filter(|(_, t)| {
                    Arc::strong_count(&t.lease) == 1
                        && now.duration_since(t.last_used) > TRANSACTION_IDLE_MAX
                })
                .map(|(id, _)| id.clone())
                .collect();
            expired.iter().filter_map(|id| open.remove(id)).collect()
        };
        // Closed outside the lock: a close waits for DuckDB's rollback.
        idle.len()
    }

    /// Forgets every transaction (the stop); their sessions roll back as they close.
    pub fn clear(&self) {
        let all: Vec<Transaction> = self.lock().drain().map(|(_, t)| t).collect();
        drop(all);
    }
}
