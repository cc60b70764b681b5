//! Errors of the wire layer: every way bytes can fail to be a valid stream.

use arrow_schema::ArrowError;

/// A stream could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The byte stream ended where a message was expected; a clean end between
    /// streams is reported as `Ok(None)` by the readers instead.
    #[error("stream truncated: {0}")]
    Truncated(String),
    /// The bytes do not form a valid Arrow IPC message.
    #[error("malformed IPC: {0}")]
    Malformed(String),
    /// A size field exceeds the configured limit.
    #[error("{what} of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    LimitExceeded {
        /// What was too large (message metadata, body, stream).
        what: &'static str,
        /// The announced size.
        size_bytes: u64,
        /// The configured limit.
        limit_bytes: u64,
    },
    /// A message body over the limit that the reader read past without keeping it: the
    /// stream is still in step, so the reader may answer the peer and go on.
    #[error("message body of {size_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    BodySkipped {
        /// The announced body size.
        size_bytes: u64,
        /// The configured limit.
        limit_bytes: u64,
    },
    /// Arrow rejected a schema or batch.
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    /// The transport failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl WireError {
    /// Whether the peer went away (EOF or broken pipe) rather than sent bad bytes.
    pub fn is_disconnect(&self) -> bool {
        match self {
            WireError::Truncated(_) => true,
            WireError::Io(e) => matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            ),
            _ => false,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = WireError> = std::result::Result<T, E>;
