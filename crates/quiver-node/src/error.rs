//! Client errors as JS errors: the message is the client's (the server's error type and message
//! for a server error) after its sort in brackets (`[QUIVER_SQL] `, `[QUIVER_CONNECTION] `, ...),
//! which `node/index.js` moves into the error's `code`, so JS can tell them apart without
//! reading messages. A server's error adds its type and kind (`[QUIVER_SQL|ParserException|sql] `),
//! which become `errorType` and `kind`, as quiver_native's `error_type` and `kind`.

use quiver_client::Error;

/// The JS error of a client error.
pub fn to_js(error: Error) -> napi::Error {
    let sort = match &error {
        Error::Sql(_) => "QUIVER_SQL",
        Error::Unauthenticated(_) => "QUIVER_UNAUTHENTICATED",
        Error::Server(_) => "QUIVER_SERVER",
        Error::Connection(_) | Error::Connect { .. } => "QUIVER_CONNECTION",
        Error::Protocol(_) => "QUIVER_PROTOCOL",
        Error::InvalidInput(_) => "QUIVER_INVALID_INPUT",
        Error::Spawn(_) => "QUIVER_SPAWN",
    };
    let tag = match error.report() {
        Some(report) => format!(
            "{sort}|{}|{}",
            report.error_type,
            report.kind.as_deref().unwrap_or("")
        ),
        None => sort.to_string(),
    };
    napi::Error::from_reason(format!("[{tag}] {error}"))
}

/// A JS error for input this package refuses before calling the client.
pub fn invalid(message: impl Into<String>) -> napi::Error {
    napi::Error::from_reason(format!("[QUIVER_INVALID_INPUT] {}", message.into()))
}
