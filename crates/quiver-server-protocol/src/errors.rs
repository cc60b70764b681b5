//! The errors a `quiver.server` client reads. Each has a stable `error_type` (what clients map to
//! their own exception classes) and a `kind` token; SQL errors keep DuckDB's own type and message.

use quiver_wire::{ErrorCode, ErrorReport};

/// `kind` of every error DuckDB raised for a statement.
pub const KIND_SQL: &str = "sql";
/// `kind` of a refused or missing token, and of any call before `connect`.
pub const KIND_UNAUTHENTICATED: &str = "unauthenticated";
/// `kind` of a value over one of the protocol's bounds (or a message over the wire's limit: the same
/// `quiver_wire::ErrorReport::limit_exceeded`, so a client sees one error for both).
pub const KIND_LIMIT: &str = "limit_exceeded";
/// `kind` of a request this protocol does not allow (a malformed value, a second `connect`).
pub const KIND_PROTOCOL: &str = "protocol";
/// `kind` of an unknown prepared statement.
pub const KIND_NOT_FOUND: &str = "not_found";
/// `kind` of a call refused or cut short because the server is stopping.
pub const KIND_STOPPING: &str = "server_stopping";
/// `kind` of a connection refused because the server serves its maximum already.
pub const KIND_BUSY: &str = "server_busy";

/// The one answer to a missing or wrong token and to any call before `connect`: it says nothing
/// about which tokens exist, which methods there are or what the database holds.
pub fn unauthenticated() -> ErrorReport {
    ErrorReport::new("AuthenticationError", "authentication failed")
        .with_code(ErrorCode::Unauthenticated)
        .with_kind(KIND_UNAUTHENTICATED)
}

/// An error DuckDB raised. `duckdb_type` is DuckDB's name for the exception type (`Catalog`,
/// `Parser`, `Constraint`, `Out of Range`, `Interrupt`, ...); the error type becomes
/// `<Type>Exception` in camel case (`OutOfRangeException`), the name DuckDB's own Python package gives it.
pub fn sql(duckdb_type: &str, message: impl Into<String>) -> ErrorReport {
    // "Out of Range" -> "OutOfRange"
    let type_name: String = duckdb_type
        .split_whitespace()
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    let code = match type_name.as_str() {
        "Parser" | "Binder" | "InvalidInput" | "Syntax" => ErrorCode::InvalidArgument,
        "Catalog" => ErrorCode::NotFound,
        "Constraint" | "Transaction" => ErrorCode::FailedPrecondition,
        "Conversion" | "OutOfRange" => ErrorCode::OutOfRange,
        "Interrupt" => ErrorCode::Cancelled,
        "OutOfMemory" => ErrorCode::ResourceExhausted,
        "NotImplemented" => ErrorCode::Unimplemented,
        "Permission" => ErrorCode::PermissionDenied,
        "IO" => ErrorCode::Unavailable,
        "Internal" | "Fatal" => ErrorCode::Internal,
        _ => ErrorCode::Unknown,
    };
    let type_name = if type_name.is_empty() {
        "Unknown".to_string()
    } else {
        type_name
    };
    ErrorReport::new(format!("{type_name}Exception"), message)
        .with_code(code)
        .with_kind(KIND_SQL)
}

/// `what` is `size` where at most `max` is allowed.
pub fn limit(what: &str, size: u64, max: u64) -> ErrorReport {
    ErrorReport::limit_exceeded(format!("{what} of {size} exceeds the limit of {max}"))
}

/// A request this protocol does not allow.
pub fn protocol(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("ProtocolError", message)
        .with_code(ErrorCode::InvalidArgument)
        .with_kind(KIND_PROTOCOL)
}

/// No prepared statement with this id in the session.
pub fn unknown_statement(statement_id: i64) -> ErrorReport {
    ErrorReport::new(
        "NotFoundError",
        format!("no prepared statement {statement_id} in this session"),
    )
    .with_code(ErrorCode::NotFound)
    .with_kind(KIND_NOT_FOUND)
}

/// The server is stopping: the call was refused or interrupted.
pub fn stopping() -> ErrorReport {
    ErrorReport::new("ServerStoppingError", "the server is shutting down")
        .with_code(ErrorCode::Unavailable)
        .with_kind(KIND_STOPPING)
}

/// The server serves `max` connections already.
pub fn busy(max: usize) -> ErrorReport {
    ErrorReport::new(
        "ServerBusyError",
        format!("the server serves at most {max} connections at once (max_connections); try again later"),
    )
    .with_code(ErrorCode::ResourceExhausted)
    .with_kind(KIND_BUSY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_limit_is_the_same_error_as_a_wire_limit() {
        let error = limit("sql", 2, 1);
        assert_eq!(error.error_type, "LimitExceededError");
        assert_eq!(error.error_type, quiver_wire::LIMIT_EXCEEDED_TYPE);
        assert_eq!(KIND_LIMIT, quiver_wire::LIMIT_EXCEEDED_KIND);
        assert_eq!(error.kind.as_deref(), Some(KIND_LIMIT));
        assert_eq!(error.code, ErrorCode::ResourceExhausted);
    }

    #[test]
    fn sql_errors_keep_duckdb_types() {
        let error = sql(
            "Catalog",
            "Catalog Error: Table with name t does not exist!",
        );
        assert_eq!(error.error_type, "CatalogException");
        assert_eq!(error.code, ErrorCode::NotFound);
        assert_eq!(error.kind.as_deref(), Some(KIND_SQL));
        assert_eq!(sql("Out of Range", "x").error_type, "OutOfRangeException");
        assert_eq!(sql("Out of Range", "x").code, ErrorCode::OutOfRange);
        assert_eq!(sql("", "x").error_type, "UnknownException");
    }

    #[test]
    fn unauthenticated_reveals_nothing() {
        assert_eq!(unauthenticated().message, "authentication failed");
    }
}
