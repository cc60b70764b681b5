//! The errors a worker answers with, named as vgi-python names them so a peer
//! that reads the exception type sees what it expects.
//!
//! The engine shows `"<type>: <message>"` to the user; messages therefore say
//! what was wrong and what was expected, in SQL terms where possible.

use quiver_wire::{ErrorCode, ErrorReport};

/// A function, schema or execution that does not exist.
pub fn not_found(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("NotFoundError", message).with_code(ErrorCode::NotFound)
}

/// A request that is well formed but asks for something invalid.
pub fn invalid_argument(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("InvalidArgumentError", message).with_code(ErrorCode::InvalidArgument)
}

/// A SQL argument that violates its declared type, range or arity.
pub fn argument_validation(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("ArgumentValidationError", message).with_code(ErrorCode::InvalidArgument)
}

/// A request whose nested bytes (a dataclass, a schema) cannot be decoded.
pub fn malformed(what: &str, detail: impl std::fmt::Display) -> ErrorReport {
    ErrorReport::new(
        "InvalidArgumentError",
        format!("malformed {what}: {detail}"),
    )
    .with_code(ErrorCode::InvalidArgument)
    .with_kind("malformed_request")
}

/// A pushdown filter document that cannot be parsed or evaluated exactly.
pub fn filter(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new(
        "FilterDeserializationError",
        format!("Failed to parse filters: {}", message.into()),
    )
    .with_code(ErrorCode::InvalidArgument)
}

/// Catalog opaque data this worker did not mint.
pub fn opaque_data_not_recognized(what: &str) -> ErrorReport {
    ErrorReport::new(
        "OpaqueDataNotRecognizedError",
        format!("{what} was not issued by this worker's catalog_attach"),
    )
    .with_code(ErrorCode::InvalidArgument)
    .with_kind("opaque_data_not_recognized")
}

/// A limit of `limits.rs` was reached.
pub fn resource_exhausted(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("ResourceExhaustedError", message).with_code(ErrorCode::ResourceExhausted)
}

/// The worker itself failed (I/O on its own state files, a function bug).
pub fn internal(message: impl Into<String>) -> ErrorReport {
    ErrorReport::new("InternalError", message).with_code(ErrorCode::Internal)
}
