//! One error type for every client call. A server's answer keeps its report (error type, kind,
//! message) and is sorted by the protocol's `kind` so callers can tell a SQL error from a refused
//! token from a lost connection without reading messages.

use quiver_rpc::RpcError;
use quiver_server_protocol::errors as kinds;
use quiver_wire::ErrorReport;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// DuckDB refused or failed the statement (`kind` = `sql`); the connection lives on.
    #[error("{}: {}", .0.error_type, .0.message)]
    Sql(ErrorReport),
    /// The token was missing or wrong.
    #[error("{}: {}", .0.error_type, .0.message)]
    Unauthenticated(ErrorReport),
    /// Any other error the server answered with (a limit, an unknown statement, the server
    /// stopping or busy, a protocol violation it saw); the connection lives on.
    #[error("{}: {}", .0.error_type, .0.message)]
    Server(ErrorReport),
    /// The connection failed: the server is gone, the bytes broke, the segment failed. The
    /// connection is unusable afterwards.
    #[error("connection lost: {0}")]
    Connection(RpcError),
    /// The server's reply broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The caller asked for something the client refuses before sending (a bad address, a value
    /// of the wrong type for a column, a row left half filled).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Opening the connection failed.
    #[error("cannot connect to {address}: {source}")]
    Connect {
        /// Where.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// Starting the server process failed.
    #[error("server process: {0}")]
    Spawn(String),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The server's error report, when the server raised the error.
    pub fn report(&self) -> Option<&ErrorReport> {
        match self {
            Error::Sql(report) | Error::Unauthenticated(report) | Error::Server(report) => {
                Some(report)
            }
            _ => None,
        }
    }

    /// The protocol's `kind` token of a server error (`sql`, `limit_exceeded`, ...).
    pub fn kind(&self) -> Option<&str> {
        self.report().and_then(|report| report.kind.as_deref())
    }

    /// Whether the connection can still be used after this error (the server answered it).
    pub fn connection_usable(&self) -> bool {
        !matches!(self, Error::Connection(_) | Error::Protocol(_))
    }
}

impl From<RpcError> for Error {
    fn from(error: RpcError) -> Self {
        match error {
            RpcError::Remote(report) => match report.kind.as_deref() {
                Some(kinds::KIND_SQL) => Error::Sql(report),
                Some(kinds::KIND_UNAUTHENTICATED) => Error::Unauthenticated(report),
                _ => Error::Server(report),
            },
            RpcError::Protocol(message) => Error::Protocol(message),
            other => Error::Connection(other),
        }
    }
}

impl From<ErrorReport> for Error {
    /// A report this client built itself (encoding parameters, a limit it checks before sending).
    fn from(report: ErrorReport) -> Self {
        Error::InvalidInput(format!("{}: {}", report.error_type, report.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_errors_sort_by_kind() {
        let sql = Error::from(RpcError::Remote(kinds::sql("Parser", "syntax error")));
        assert!(matches!(sql, Error::Sql(_)));
        assert_eq!(sql.kind(), Some(kinds::KIND_SQL));
        assert!(sql.connection_usable());
        let auth = Error::from(RpcError::Remote(kinds::unauthenticated()));
        assert!(matches!(auth, Error::Unauthenticated(_)));
        let busy = Error::from(RpcError::Remote(kinds::busy(4)));
        assert!(matches!(busy, Error::Server(_)));
        let lost = Error::from(RpcError::from(std::io::Error::other("reset")));
        assert!(matches!(lost, Error::Connection(_)));
        assert!(!lost.connection_usable());
    }
}
