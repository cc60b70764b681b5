//! What happens to a call's work when tonic drops the call (the client went away or cancelled):
//! a statement in flight is interrupted, a read that never started is abandoned.

use std::sync::{Arc, Mutex};

use super::running::Read;
use crate::session::Session;

/// The session of a call in flight, interrupted if the call is dropped before it finished.
#[derive(Default)]
pub(super) struct InterruptOnDrop {
    /// The session the call runs on, once it has one.
    pub(super) session: Arc<Mutex<Option<Arc<Session>>>>,
    /// Set when the call ended on its own.
    pub(super) finished: bool,
}

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let session = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(session) = session {
            session.interrupt();
        }
    }
}

/// A read whose call may be dropped before its stream starts; then the read is abandoned.
pub(super) struct AbandonOnDrop(pub(super) Option<Arc<Read>>);

impl AbandonOnDrop {
    /// The read started: nothing to abandon.
    pub(super) fn finish(mut self) {
        self.0 = None;
    }
}

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        if let Some(read) = self.0.take() {
            read.abandon();
        }
    }
}
