//! Flight SQL transactions: `BeginTransaction` answers an id; the first call naming it opens a
//! session of the transaction's own and runs `BEGIN TRANSACTION` there, and every later call naming
//! it runs on that session until `EndTransaction` commits or rolls back and closes it.
//!
//! The session opens on first use because ADBC's Flight SQL driver (autocommit off, its DB-API's
//! default) begins the next transaction as soon as one ends and does not end it when the
//! connection closes: a session per begun transaction would hold a connection for every closed
//! client. A transaction that never ran a statement costs a record and nothing else.
//!
//! A transaction also ends when the client connection it was begun on closes (`connections.rs`).
//!
//! Bounded: at most [`TRANSACTIONS_MAX`] records, sessions within the server's `max_connections`
//! (they are registry sessions), and a transaction left idle for [`TRANSACTION_IDLE_MAX`] is rolled
//! back and forgotten by the reaper, so a client that died never holds a connection for long.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tonic::Status;

use super::lease::{Lease, OwnedSession};
use super::status::status;
use crate::server::Shared;
use quiver_secret::random;

/// How long a transaction may go without a call before the reaper rolls it back.
pub const TRANSACTION_IDLE_MAX: Duration = Duration::from_secs(15 * 60);
/// How often the reaper looks.
pub const REAP_INTERVAL: Duration = Duration::from_secs(30);
/// Most transactions begun and not ended at once.
pub const TRANSACTIONS_MAX: usize = 4096;
/// Bytes of a transaction id (as hex digits on the wire).
const ID_BYTES: usize = 16;

/// One transaction: its session once a call used it.
struct Transaction {
    /// The client connection it was begun on (`connections.rs` ends it when that closes).
    peer: Option<SocketAddr>,
    lease: Mutex<Option<Lease>>,
    last_used: Mutex<Instant>,
}

impl Transaction {
    fn lease_slot(&self) -> MutexGuard<'_, Option<Lease>> {
        self.lease.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn touch(&self, now: Instant) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }

    fn idle_since(&self) -> Instant {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The open transactions by id.
#[derive(Default)]
pub struct Transactions {
    open: Mutex<HashMap<Vec<u8>, Arc<Transaction>>>,
}

/// The one answer for an id that names no open transaction.
pub fn unknown() -> Status {
    Status::not_found("unknown transaction")
}

impl Transactions {
    fn lock(&self) -> MutexGuard<'_, HashMap<Vec<u8>, Arc<Transaction>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Begins a transaction for the client connection `peer`; its id.
    pub fn begin(&self, shared: &Arc<Shared>, peer: Option<SocketAddr>) -> Result<Vec<u8>, Status> {
        if shared.is_stopping() {
            return Err(status(quiver_server_protocol::errors::stopping()));
        }
        let mut open = self.lock();
        if open.len() >= TRANSACTIONS_MAX {
            return Err(Status::resource_exhausted(format!(
                "at most {TRANSACTIONS_MAX} transactions are open at once; end some"
            )));
        }
        let id = random::hex(ID_BYTES).into_bytes();
        let transaction = Transaction {
            peer,
            lease: Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
        };
        open.insert(id.clone(), Arc::new(transaction));
        Ok(id)
    }

    /// The transaction a statement prepared in transaction `id` runs in now: `id` while it is
    /// open; once it has ended, the one transaction open on the same client connection, where
    /// there is exactly one (ADBC's driver keeps a prepared statement across its commits and
    /// begins the next transaction right after each). Otherwise `id`, which the call then reports
    /// as unknown.
    pub fn current(&self, id: &[u8], peer: Option<SocketAddr>) -> Vec<u8> {
        let open = self.lock();
        if open.contains_key(id) {
            return id.to_vec();
        }
        let mut on_peer = open
            .iter()
            .filter(|(_, t)| peer.is_some() && t.peer == peer)
            .map(|(id, _)| id);
        match (on_peer.next(), on_peer.next()) {
            (Some(only), None) => only.clone(),
            _ => id.to_vec(),
        }
    }

    fn find(&self, id: &[u8]) -> Result<Arc<Transaction>, Status> {
        self.lock().get(id).cloned().ok_or_else(unknown)
    }

    /// The session of transaction `id` for one call, opened (with `BEGIN TRANSACTION`) on its
    /// first. Blocks on DuckDB.
    pub fn lease(&self, shared: &Arc<Shared>, id: &[u8]) -> Result<Lease, Status> {
        let transaction = self.find(id)?;
        transaction.touch(Instant::now());
        let mut slot = transaction.lease_slot();
        if let Some(lease) = slot.as_ref() {
            return Ok(Arc::clone(lease));
        }
        let owned = OwnedSession::open(shared)?;
        owned
            .with(|open| open.duck.execute("BEGIN TRANSACTION", None, None))
            .map_err(status)?;
        let lease = Arc::new(owned);
        *slot = Some(Arc::clone(&lease));
        Ok(lease)
    }

    /// Commits or rolls back transaction `id` and forgets it; its session closes once no call
    /// holds it any more. Blocks on DuckDB.
    pub fn end(&self, id: &[u8], commit: bool) -> Result<(), Status> {
        let transaction = self.lock().remove(id).ok_or_else(unknown)?;
        let Some(lease) = transaction.lease_slot().take() else {
            return Ok(()); // it never ran a statement
        };
        let sql = if commit { "COMMIT" } else { "ROLLBACK" };
        lease
            .with(|open| open.duck.execute(sql, None, None))
            .map_err(status)?;
        Ok(())
    }

    /// Forgets the transactions idle for longer than [`TRANSACTION_IDLE_MAX`] and not in use by a
    /// call; closing their sessions rolls them back. How many it forgot.
    pub fn reap(&self, now: Instant) -> usize {
        let idle: Vec<Arc<Transaction>> = {
            let mut open = self.lock();
            let expired: Vec<Vec<u8>> = open
                .iter()
                .filter(|(_, t)| {
                    let in_use = t
                        .lease_slot()
                        .as_ref()
                        .is_some_and(|lease| Arc::strong_count(lease) > 1);
                    !in_use && now.duration_since(t.idle_since()) > TRANSACTION_IDLE_MAX
                })
                .map(|(id, _)| id.clone())
                .collect();
            expired.iter().filter_map(|id| open.remove(id)).collect()
        };
        // Dropped here, outside the lock: a close waits for DuckDB's rollback.
        idle.len()
    }

    /// Forgets the transactions begun on the client connection `peer`, which closed; their
    /// sessions roll back as they close.
    pub fn forget_peer(&self, peer: SocketAddr) {
        let gone: Vec<Arc<Transaction>> = {
            let mut open = self.lock();
            let ids: Vec<Vec<u8>> = open
                .iter()
                .filter(|(_, t)| t.peer == Some(peer))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        drop(gone);
    }

    /// Forgets every transaction (the stop); their sessions roll back as they close.
    pub fn clear(&self) {
        let all: Vec<Arc<Transaction>> = self.lock().drain().map(|(_, t)| t).collect();
        drop(all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_ids_are_not_found_and_idle_records_are_reaped() {
        let transactions = Transactions::default();
        assert_eq!(
            transactions.end(b"nope", true).unwrap_err().code(),
            tonic::Code::NotFound
        );
        let id = b"0123".to_vec();
        let record = Transaction {
            peer: None,
            lease: Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
        };
        transactions.lock().insert(id.clone(), Arc::new(record));
        assert_eq!(transactions.reap(Instant::now()), 0);
        let later = Instant::now() + TRANSACTION_IDLE_MAX + Duration::from_secs(1);
        assert_eq!(transactions.reap(later), 1);
        assert!(transactions.find(&id).is_err());
        // Ending one that never ran a statement needs no session.
        transactions.lock().insert(
            id.clone(),
            Arc::new(Transaction {
                peer: None,
                lease: Mutex::new(None),
                last_used: Mutex::new(Instant::now()),
            }),
        );
        assert!(transactions.end(&id, false).is_ok());
    }
}
