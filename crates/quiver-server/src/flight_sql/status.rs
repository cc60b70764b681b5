//! Every server error as a gRPC status, in one place: DuckDB's errors keep DuckDB's own message,
//! and a refusal before authentication says nothing more than `auth.rs`'s one answer.

use quiver_server_protocol::errors::{
    KIND_BUSY, KIND_LIMIT, KIND_NOT_FOUND, KIND_PROTOCOL, KIND_SQL, KIND_STOPPING,
    KIND_UNAUTHENTICATED,
};
use quiver_wire::ErrorReport;
use tonic::Status;

use super::auth;

/// The gRPC status of a server error. DuckDB's errors keep DuckDB's own message.
pub fn status(report: ErrorReport) -> Status {
    let message = report.message;
    match report.kind.as_deref() {
        Some(KIND_UNAUTHENTICATED) => auth::refused(),
        Some(KIND_STOPPING) => Status::unavailable(message),
        Some(KIND_LIMIT | KIND_BUSY) => Status::resource_exhausted(message),
        Some(KIND_NOT_FOUND) => Status::not_found(message),
        Some(KIND_PROTOCOL) => Status::invalid_argument(message),
        Some(KIND_SQL) => match report.error_type.as_str() {
            "ParserException"
            | "SyntaxException"
            | "BinderException"
            | "CatalogException"
            | "ConversionException"
            | "InvalidInputException"
            | "OutOfRangeException"
            | "InvalidTypeException"
            | "MismatchTypeException" => Status::invalid_argument(message),
            "ConstraintException" | "TransactionException" => Status::failed_precondition(message),
            "InterruptException" => Status::cancelled(message),
            "OutOfMemoryException" => Status::resource_exhausted(message),
            "NotImplementedException" => Status::unimplemented(message),
            "PermissionException" => Status::permission_denied(message),
            _ => Status::internal(message),
        },
        _ => Status::internal(message),
    }
}

/// Runs DuckDB's part of a call on a blocking thread.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Status> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Status::internal(format!("the call's thread failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::status;
    use quiver_server_protocol::errors;
    use tonic::Code;

    #[test]
    fn errors_map_to_grpc_codes_keeping_duckdb_messages() {
        let catalog = errors::sql(
            "Catalog",
            "Catalog Error: Table with name t does not exist!",
        );
        let mapped = status(catalog);
        assert_eq!(mapped.code(), Code::InvalidArgument);
        assert_eq!(
            mapped.message(),
            "Catalog Error: Table with name t does not exist!"
        );
        let cases = [
            (errors::sql("Parser", "x"), Code::InvalidArgument),
            (errors::sql("Constraint", "x"), Code::FailedPrecondition),
            (errors::sql("Interrupt", "x"), Code::Cancelled),
            (errors::sql("Out of Memory", "x"), Code::ResourceExhausted),
            (errors::sql("Fatal", "x"), Code::Internal),
            (errors::stopping(), Code::Unavailable),
            (errors::limit("sql", 2, 1), Code::ResourceExhausted),
            (errors::busy(1), Code::ResourceExhausted),
            (errors::unknown_statement(1), Code::NotFound),
            (errors::protocol("x"), Code::InvalidArgument),
        ];
        for (report, code) in cases {
            assert_eq!(status(report).code(), code);
        }
        let refused = status(errors::unauthenticated());
        assert_eq!(refused.code(), Code::Unauthenticated);
        assert_eq!(refused.message(), "authentication failed");
    }
}
