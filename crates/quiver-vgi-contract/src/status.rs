//! The table-in-out handshake in batch metadata: per input batch the worker may answer with
//! several output batches; each but the last carries `vgi.status = HAVE_MORE_OUTPUT`, and the
//! engine asks for the next one with a zero-row input batch carrying `vgi.status = CONTINUE`.

/// Batch metadata key of the table-in-out handshake.
pub const STATUS_KEY: &str = "vgi.status";
/// Output: more batches follow for the same input.
pub const HAVE_MORE_OUTPUT: &str = "HAVE_MORE_OUTPUT";
/// Input: a zero-row tick asking for the next pending output batch.
pub const CONTINUE: &str = "CONTINUE";
