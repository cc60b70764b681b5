//! Parallel inserts in the two shapes of seed 002's suite:
//!
//! - [`insert_chunks`]: N threads build batches and hand them, through one bounded channel, to
//!   the thread that owns one connection's [`ArrowInserter`]. The
//!   building runs in parallel; the sending is one stream, so one table, all or nothing.
//! - [`on_connections`]: one thread per connection, each running its own work (the bench gives
//!   each its own inserter into its own table, as seed 002's parallel insert does).

use std::sync::mpsc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use quiver_server_protocol::InsertMode;

use crate::connection::Connection;
use crate::error::{Error, Result};

/// Batches waiting between the builders and the sender, per builder: enough to keep the sender
/// busy while a builder fills its next batch, few enough that memory stays a few batches.
pub const CHUNKS_IN_FLIGHT_PER_SENDER: usize = 2;
/// Most builder threads one [`insert_chunks`] runs.
pub const CHUNK_SENDERS_MAX: usize = 256;

/// A builder's end of the channel to the inserting thread.
pub struct ChunkSender {
    channel: mpsc::SyncSender<RecordBatch>,
}

impl ChunkSender {
    /// Hands a batch to the inserter; waits while the channel is full. Fails once the insert
    /// has failed (the error itself comes from [`insert_chunks`]).
    pub fn send(&self, batch: RecordBatch) -> Result<()> {
        self.channel
            .send(batch)
            .map_err(|_| Error::InvalidInput("the insert has stopped".into()))
    }
}

/// Inserts into `table` the batches `senders` threads build: `build(i, &sender)` runs on thread
/// `i` and sends its batches. Returns the rows inserted, committed at once when every builder
/// succeeded; any error (a builder's or the insert's) rolls the whole insert back.
pub fn insert_chunks<F>(
    connection: &mut Connection,
    table: &str,
    schema: &Schema,
    mode: InsertMode,
    senders: usize,
    build: F,
) -> Result<u64>
where
    F: Fn(usize, &ChunkSender) -> Result<()> + Sync,
{
    if !(1..=CHUNK_SENDERS_MAX).contains(&senders) {
        return Err(Error::InvalidInput(format!(
            "senders must be 1..={CHUNK_SENDERS_MAX}, not {senders}"
        )));
    }
    let mut inserter = connection.arrow_inserter(table, schema, mode)?;
    let (channel, batches) = mpsc::sync_channel(senders * CHUNKS_IN_FLIGHT_PER_SENDER);
    std::thread::scope(|scope| {
        let builders: Vec<_> = (0..senders)
            .map(|index| {
                let sender = ChunkSender {
                    channel: channel.clone(),
                };
                let build = &build;
                scope.spawn(move || build(index, &sender))
            })
            .collect();
        drop(channel);
        let mut failed = None;
        for batch in batches.iter() {
            if let Err(error) = inserter.write(&batch) {
                failed = Some(error);
                break;
            }
        }
        // Dropping the receiver unblocks builders still sending after a failure.
        drop(batches);
        for builder in builders {
            let built = builder
                .join()
                .unwrap_or_else(|_| Err(Error::InvalidInput("a chunk builder panicked".into())));
            if let (Err(error), None) = (built, &failed) {
                failed = Some(error);
            }
        }
        match failed {
            Some(error) => {
                let _ = inserter.abort();
                Err(error)
            }
            None => inserter.finish(),
        }
    })
}

/// Runs `work(i, connection_i)` on one thread per connection and sums what each returns (rows).
/// Every connection's work runs to its end; the first error is returned.
pub fn on_connections<F>(connections: &mut [Connection], work: F) -> Result<u64>
where
    F: Fn(usize, &mut Connection) -> Result<u64> + Sync,
{
    std::thread::scope(|scope| {
        let workers: Vec<_> = connections
            .iter_mut()
            .enumerate()
            .map(|(index, connection)| {
                let work = &work;
                scope.spawn(move || work(index, connection))
            })
            .collect();
        let mut total = 0u64;
        let mut failed = None;
        for worker in workers {
            match worker.join() {
                Ok(Ok(rows)) => total += rows,
                Ok(Err(error)) => {
                    failed.get_or_insert(error);
                }
                Err(_) => {
                    failed.get_or_insert(Error::InvalidInput("a worker panicked".into()));
                }
            }
        }
        match failed {
            Some(error) => Err(error),
            None => Ok(total),
        }
    })
}
