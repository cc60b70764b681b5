//! The errors a server answers with.
//!
//! Type names and kinds follow vgi-rpc's, so a peer that matches on
//! `error_kind` (or on the exception type) sees what it expects. The checks that
//! make batches fit a method's declaration, and raise most of these, are in
//! [`crate::conform`].

use quiver_wire::{ErrorCode, ErrorReport};

/// A framework error of type `RpcError`.
pub fn rpc_error(message: &str, code: ErrorCode) -> ErrorReport {
    ErrorReport::new("RpcError", message).with_code(code)
}

/// The request version is missing or not `1`.
pub fn request_version(got: Option<&str>) -> ErrorReport {
    let message = match got {
        Some(version) => {
            format!("Unsupported request version {version:?}; this server speaks version '1'")
        }
        None => "Missing vgi_rpc.request_version in request batch metadata".to_string(),
    };
    ErrorReport::new("VersionError", message).with_code(ErrorCode::FailedPrecondition)
}

/// The method is not offered.
pub fn method_not_found(method: &str, protocol: &str) -> ErrorReport {
    ErrorReport::new(
        "MethodNotImplementedError",
        format!("Protocol '{protocol}' has no method '{method}' (not implemented)."),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("method_not_implemented")
}

/// A reserved `__name__` method this server does not implement.
pub fn reserved_not_implemented(method: &str) -> ErrorReport {
    ErrorReport::new(
        "MethodNotImplementedError",
        format!("This server does not implement the reserved method '{method}'."),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("method_not_implemented")
}

/// The request names no protocol.
pub fn protocol_not_specified(method: &str) -> ErrorReport {
    ErrorReport::new(
        "ProtocolNotSpecifiedError",
        format!("Request for method '{method}' does not name a protocol (vgi_rpc.protocol)"),
    )
    .with_code(ErrorCode::InvalidArgument)
    .with_kind("protocol_not_specified")
}

/// The request names a protocol this server does not host.
pub fn protocol_not_supported(requested: &str, hosted: &str) -> ErrorReport {
    ErrorReport::new(
        "ProtocolNotSupportedError",
        format!("Protocol '{requested}' is not served here (this server hosts '{hosted}')"),
    )
    .with_code(ErrorCode::Unimplemented)
    .with_kind("protocol_not_supported")
}

/// The request's protocol version differs in major.minor. The details name
/// the gated protocol, since a server hosting several cannot say which by
/// version alone (a `vgi_rpc.PreconditionFailure`, as vgi-rpc sends).
pub fn protocol_version_mismatch(protocol: &str, requested: &str, served: &str) -> ErrorReport {
    let mut report = ErrorReport::new(
        "ProtocolVersionError",
        format!("Protocol version mismatch: client speaks {requested}, server speaks {served}"),
    )
    .with_code(ErrorCode::FailedPrecondition)
    .with_kind("protocol_version_mismatch");
    report.details = Some(serde_json::json!([{
        "@type": "vgi_rpc.PreconditionFailure",
        "violations": [{
            "type": "protocol_version",
            "subject": protocol,
            "description": format!(
                "client declares {requested}, server requires {served}; major and minor must match"
            ),
        }],
    }]));
    report
}

/// A request that breaks the wire contract (missing or unreadable dispatch
/// metadata, a parameter batch of other than one row). vgi-rpc raises these as an
/// `RpcError` of kind `ProtocolError` with no code, which its peers read as type
/// `RpcError` and a message that starts `ProtocolError: `.
pub fn protocol_error(message: String) -> ErrorReport {
    ErrorReport::new("RpcError", format!("ProtocolError: {message}"))
}

/// A request or reply that does not fit what the method declares, as vgi-rpc's
/// server reports it (a Python `TypeError`).
pub(crate) fn type_error(message: String) -> ErrorReport {
    ErrorReport::new("TypeError", message).with_code(ErrorCode::InvalidArgument)
}
