//! The bounded queue between an insert call's two threads: the session thread pushes each batch
//! as it arrives and acknowledges it once queued; the one `INSERT` statement of the call reads the
//! queue as an Arrow stream (`quiver_server_batch()`) on a thread of its own, so DuckDB appends one
//! batch while the next is on the wire.
//!
//! The stream ends only when the writer [`QueueWriter::finish`]es (the commit marker). A writer
//! dropped without finishing, or a server that stops, makes the stream fail instead, so the
//! statement fails and appends nothing — an unfinished call never ends as a short insert.
//! A reader that goes away (the statement failed) makes every later push fail at once, which is
//! how a statement's error reaches the next acknowledgement.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

/// Most batches queued at once.
pub const QUEUED_BATCHES_MAX: usize = 8;
/// Most bytes queued at once (one batch is always admitted, whatever its size: a batch is bounded
/// by the connection's message limit already).
pub const QUEUED_BYTES_MAX: u64 = 64 << 20;
/// Rows the reader gathers into one batch before DuckDB scans it: eight of DuckDB's row groups
/// (122 880 rows each). DuckDB's parallel ordered INSERT appends a batch that fills row groups
/// straight into the table, but stages smaller ones and copies them again when it merges them;
/// clients send batches of any size (the bench sends 100 000 rows).
pub const COALESCED_ROWS_MIN: usize = 8 * 122_880;
/// The most bytes the reader gathers into one batch.
pub const COALESCED_BYTES_MAX: u64 = 64 << 20;
/// How often a reader waiting for a batch looks whether the server stops.
const STOP_POLL: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum End {
    /// The commit marker: the stream ends after the queued batches.
    Finished,
    /// The call ended another way: the stream fails.
    Abandoned,
}

#[derive(Default)]
struct State {
    batches: VecDeque<RecordBatch>,
    bytes: u64,
    end: Option<End>,
    reader_gone: bool,
}

impl State {
    fn admits(&self, bytes: u64) -> bool {
        self.batches.is_empty()
            || (self.batches.len() < QUEUED_BATCHES_MAX && self.bytes + bytes <= QUEUED_BYTES_MAX)
    }
}

struct Queue {
    state: Mutex<State>,
    changed: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn end(&self, end: End) {
        let mut state = self.lock();
        if state.end.is_none() {
            state.end = Some(end);
        }
        self.changed.notify_all();
    }
}

/// The reader is gone: the statement ended before the call did (it failed).
#[derive(Debug, PartialEq, Eq)]
pub struct ReaderGone;

/// The session thread's end.
pub struct QueueWriter {
    queue: Arc<Queue>,
}

/// The statement's end: an Arrow stream of the queued batches.
pub struct QueueReader {
    queue: Arc<Queue>,
    schema: SchemaRef,
    stopping: Box<dyn Fn() -> bool + Send>,
}

/// A new queue of batches of `schema`; `stopping` says when a waiting reader must give up.
pub fn queue(
    schema: SchemaRef,
    stopping: Box<dyn Fn() -> bool + Send>,
) -> (QueueWriter, QueueReader) {
    let queue = Arc::new(Queue {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    });
    let writer = QueueWriter {
        queue: Arc::clone(&queue),
    };
    (
        writer,
        QueueReader {
            queue,
            schema,
            stopping,
        },
    )
}

fn bytes_of(batch: &RecordBatch) -> u64 {
    batch.get_array_memory_size() as u64
}

impl QueueWriter {
    /// Queues `batch`, waiting while the queue is full; fails once the reader is gone.
    pub fn push(&self, batch: RecordBatch) -> Result<(), ReaderGone> {
        let bytes = bytes_of(&batch);
        let mut state = self.queue.lock();
        assert!(state.end.is_none(), "a push after the queue ended");
        while !state.reader_gone && !state.admits(bytes) {
            state = self
                .queue
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
        if state.reader_gone {
            return Err(ReaderGone);
        }
        state.bytes += bytes;
        state.batches.push_back(batch);
        assert!(state.batches.len() <= QUEUED_BATCHES_MAX);
        self.queue.changed.notify_all();
        Ok(())
    }

    /// Ends the stream after the queued batches (the commit marker).
    pub fn finish(self) {
        self.queue.end(End::Finished);
    }

    #[cfg(test)]
    fn try_push(&self, batch: RecordBatch) -> bool {
        let mut state = self.queue.lock();
        if !state.admits(bytes_of(&batch)) {
            return false;
        }
        state.bytes += bytes_of(&batch);
        state.batches.push_back(batch);
        true
    }
}

impl Drop for QueueWriter {
    fn drop(&mut self) {
        // After finish() this is a no-op: the first end stands.
        self.queue.end(End::Abandoned);
    }
}

impl QueueReader {
    /// The next queued batch, waiting for one; `None` once the queue finished.
    fn next_queued(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        let mut state = self.queue.lock();
        loop {
            if let Some(batch) = state.batches.pop_front() {
                state.bytes -= bytes_of(&batch);
                self.queue.changed.notify_all();
                return Ok(Some(batch));
            }
            match state.end {
                Some(End::Finished) => return Ok(None),
                Some(End::Abandoned) => {
                    return Err(ArrowError::ExternalError(
                        "the insert call ended before its commit marker".into(),
                    ))
                }
                None => {}
            }
            if (self.stopping)() {
                return Err(ArrowError::ExternalError("the server is stopping".into()));
            }
            state = self
                .queue
                .changed
                .wait_timeout(state, STOP_POLL)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// The next batch DuckDB scans: queued batches joined until it holds [`COALESCED_ROWS_MIN`]
    /// rows (or [`COALESCED_BYTES_MAX`] bytes, or the queue finished). A batch that large already
    /// passes through without a copy.
    fn next_coalesced(&mut self) -> Result<Option<RecordBatch>, ArrowError> {
        let Some(first) = self.next_queued()? else {
            return Ok(None);
        };
        let (mut rows, mut bytes) = (first.num_rows(), bytes_of(&first));
        let mut parts = vec![first];
        while rows < COALESCED_ROWS_MIN && bytes < COALESCED_BYTES_MAX {
            let Some(batch) = self.next_queued()? else {
                break;
            };
            rows += batch.num_rows();
            bytes += bytes_of(&batch);
            parts.push(batch);
        }
        if parts.len() == 1 {
            return Ok(parts.pop());
        }
        let joined = arrow_select::concat::concat_batches(&self.schema, &parts)?;
        assert_eq!(joined.num_rows(), rows);
        Ok(Some(joined))
    }
}

impl Iterator for QueueReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_coalesced().transpose()
    }
}

impl RecordBatchReader for QueueReader {
    fn schema(&self) -> SchemaRef {
        SchemaRef::clone(&self.schema)
    }
}

impl Drop for QueueReader {
    fn drop(&mut self) {
        let mut state = self.queue.lock();
        state.reader_gone = true;
        // Release what nobody will read now (shared-memory regions among it), not at the writer's drop.
        state.batches.clear();
        state.bytes = 0;
        self.queue.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;
    use arrow_schema::{DataType, Field, Schema};

    fn batch(rows: usize) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let values = Int32Array::from_iter_values(0..rows as i32);
        RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap()
    }

    fn never_stopping() -> Box<dyn Fn() -> bool + Send> {
        Box::new(|| false)
    }

    #[test]
    fn finished_queue_yields_every_row_then_ends() {
        let (writer, mut reader) = queue(batch(0).schema(), never_stopping());
        writer.push(batch(3)).unwrap();
        writer.push(batch(4)).unwrap();
        writer.finish();
        assert_eq!(reader.next().unwrap().unwrap().num_rows(), 7);
        assert!(reader.next().is_none());
    }

    #[test]
    fn abandoned_queue_fails_the_stream() {
        let (writer, mut reader) = queue(batch(0).schema(), never_stopping());
        writer.push(batch(COALESCED_ROWS_MIN)).unwrap();
        writer.push(batch(2)).unwrap();
        drop(writer);
        assert_eq!(
            reader.next().unwrap().unwrap().num_rows(),
            COALESCED_ROWS_MIN
        );
        let error = reader.next().unwrap().unwrap_err();
        assert!(error.to_string().contains("commit marker"), "{error}");
    }

    #[test]
    fn small_batches_are_joined_in_order_and_large_ones_pass_through() {
        let (writer, mut reader) = queue(batch(0).schema(), never_stopping());
        let writer = std::thread::spawn(move || {
            let small = (COALESCED_ROWS_MIN / 3) + 1;
            for _ in 0..4 {
                writer.push(batch(small)).unwrap();
            }
            writer.push(batch(COALESCED_ROWS_MIN)).unwrap();
            writer.finish();
            small
        });
        let joined = reader.next().unwrap().unwrap();
        let small = writer.join().unwrap();
        assert_eq!(joined.num_rows(), 3 * small);
        let ids = joined
            .column(0)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap();
        assert_eq!(
            (ids.value(small - 1), ids.value(small)),
            (small as i32 - 1, 0)
        );
        assert_eq!(
            reader.next().unwrap().unwrap().num_rows(),
            small + COALESCED_ROWS_MIN
        );
        assert!(reader.next().is_none());
    }

    #[test]
    fn stopping_fails_a_waiting_reader() {
        let (_writer, mut reader) = queue(batch(0).schema(), Box::new(|| true));
        let error = reader.next().unwrap().unwrap_err();
        assert!(error.to_string().contains("stopping"), "{error}");
    }

    #[test]
    fn the_batch_bound_holds() {
        let (writer, mut reader) = queue(batch(0).schema(), never_stopping());
        for _ in 0..QUEUED_BATCHES_MAX {
            assert!(writer.try_push(batch(1)));
        }
        assert!(!writer.try_push(batch(1)), "a full queue admitted a batch");
        reader.next_queued().unwrap().unwrap();
        assert!(writer.try_push(batch(1)), "a freed place was not admitted");
    }

    #[test]
    fn the_byte_bound_holds_but_one_batch_always_fits() {
        let (writer, _reader) = queue(batch(0).schema(), never_stopping());
        let rows = (QUEUED_BYTES_MAX / 4) as usize + 1;
        assert!(
            writer.try_push(batch(rows)),
            "an empty queue refused a batch"
        );
        assert!(
            !writer.try_push(batch(1)),
            "the byte bound admitted a batch"
        );
    }

    #[test]
    fn a_blocked_push_fails_once_the_reader_is_gone() {
        let (writer, reader) = queue(batch(0).schema(), never_stopping());
        for _ in 0..QUEUED_BATCHES_MAX {
            writer.push(batch(1)).unwrap();
        }
        let pusher = std::thread::spawn(move || writer.push(batch(1)));
        drop(reader);
        assert_eq!(pusher.join().unwrap(), Err(ReaderGone));
    }
}
