//! Reading one batch ahead of Python over a socket: once a result has shown it has more than one
//! batch, a thread of its own asks the server for the next batch while Python converts and uses
//! the one it was just handed, so receiving a batch's bytes overlaps Python's work instead of
//! taking turns with it (the async Rust client does the same with its channel of one batch). At
//! most one batch waits, so memory stays at two batches; a result of one batch never starts the
//! thread. Over shared memory a batch arrives as a pointer, with nothing to overlap, and the
//! extra thread's hand-offs cost more than they save (measured: a 10M-row scan was slower), so
//! those results are read on the caller's thread.
//!
//! The thread ends with the result: at its end or an error, or when Python lets go of the reader
//! (its request channel closes). The query reader is shared with the thread, so whichever side
//! holds it last drops it, which cancels an unfinished query on the server.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};

use arrow_array::RecordBatch;
use quiver_client::Result;

use crate::reader::{discarded, QueryReader};

/// What the thread answers for one request: the next batch, `None` at the end, or the error.
type Answer = Result<Option<RecordBatch>>;

/// The batches of one query, read one ahead once there are two.
pub(crate) struct ReadAhead {
    reader: Arc<Mutex<QueryReader>>,
    /// Batches handed to Python so far, while they are read on the caller's thread.
    handed: usize,
    /// The thread reading ahead, once started.
    worker: Option<Worker>,
    /// Set when a batch read ahead was refused because the session moved on.
    ended: bool,
}

struct Worker {
    /// One request per batch; dropping it ends the thread.
    requests: SyncSender<()>,
    answers: Receiver<Answer>,
}

/// Batches read on the caller's thread before reading ahead starts: the one read at open and
/// the next, which says the result has more than one.
const READ_HERE_BATCHES: usize = 2;

impl ReadAhead {
    pub(crate) fn new(reader: QueryReader) -> ReadAhead {
        ReadAhead {
            reader: Arc::new(Mutex::new(reader)),
            handed: 0,
            worker: None,
            ended: false,
        }
    }

    /// The next batch (`None` at the end). Blocks on the server; call it without the GIL.
    pub(crate) fn next(&mut self) -> Answer {
        if self.ended {
            return Ok(None);
        }
        let Some(worker) = &self.worker else {
            let next = lock(&self.reader).next_batch()?;
            if next.is_some() {
                self.handed += 1;
                if self.handed == READ_HERE_BATCHES && !lock(&self.reader).uses_shm() {
                    self.worker = start(self.reader.clone());
                }
            }
            return Ok(next);
        };
        // The thread was asked for this batch when the previous one was handed out; a thread
        // that is gone has ended the result (its last answer was the end or an error).
        let answer = worker.answers.recv().unwrap_or(Ok(None));
        if matches!(answer, Ok(Some(_))) {
            if lock(&self.reader).discarded() {
                // Read before another statement ran: what is left of the result is gone, as
                // when nothing is read ahead. Dropping the worker ends its thread.
                self.worker = None;
                self.ended = true;
                return Err(discarded());
            }
            // Asking can only fail if the thread is gone, which the next `recv` reports.
            let _ = worker.requests.send(());
        }
        answer
    }
}

fn lock(reader: &Mutex<QueryReader>) -> std::sync::MutexGuard<'_, QueryReader> {
    reader.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the thread and asks it for the next batch; `None` when no thread could be started
/// (reading goes on on the caller's thread).
fn start(reader: Arc<Mutex<QueryReader>>) -> Option<Worker> {
    let (requests, asked) = sync_channel::<()>(1);
    let (answer, answers) = sync_channel::<Answer>(1);
    let spawned = std::thread::Builder::new()
        .name("quiver-read-ahead".into())
        .spawn(move || {
            while asked.recv().is_ok() {
                let next = lock(&reader).next_batch();
                let last = !matches!(next, Ok(Some(_)));
                if answer.send(next).is_err() || last {
                    break;
                }
            }
        });
    spawned.ok()?;
    requests.send(()).ok()?;
    Some(Worker { requests, answers })
}
