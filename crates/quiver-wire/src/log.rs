//! Logs and errors as they travel: zero-row batches whose custom metadata carries
//! the level, the message and a JSON `extra` object.
//!
//! An EXCEPTION record is the wire's error model: `error_code` always, `error_kind`
//! and `error_details` when known, each also hoisted to a top-level key so a peer
//! can match on it without parsing JSON.

use serde_json::{Map, Value};

use crate::keys;
use crate::metadata::BatchMetadata;

/// Severity of a log record; `Exception` marks an error that ends the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// The call failed; the record is the error.
    Exception,
    /// An error the call survived.
    Error,
    /// A warning.
    Warn,
    /// Information.
    Info,
    /// Debugging detail.
    Debug,
    /// Tracing detail.
    Trace,
}

impl LogLevel {
    /// The level's wire token.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Exception => "EXCEPTION",
            LogLevel::Error => "ERROR",
            LogLevel::Warn => "WARN",
            LogLevel::Info => "INFO",
            LogLevel::Debug => "DEBUG",
            LogLevel::Trace => "TRACE",
        }
    }

    /// Parses a wire token.
    pub fn parse(token: &str) -> Option<LogLevel> {
        Some(match token {
            "EXCEPTION" => LogLevel::Exception,
            "ERROR" => LogLevel::Error,
            "WARN" => LogLevel::Warn,
            "INFO" => LogLevel::Info,
            "DEBUG" => LogLevel::Debug,
            "TRACE" => LogLevel::Trace,
            _ => return None,
        })
    }
}

/// One log record (or, at [`LogLevel::Exception`], one error).
#[derive(Clone, Debug, PartialEq)]
pub struct LogRecord {
    /// Severity.
    pub level: LogLevel,
    /// Human-readable text.
    pub message: String,
    /// Structured fields; sent as the JSON `vgi_rpc.log_extra` when not empty.
    pub extra: Map<String, Value>,
}

impl LogRecord {
    /// A record with no extra fields.
    pub fn new(level: LogLevel, message: impl Into<String>) -> Self {
        Self {
            level,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// Adds one extra field.
    pub fn with_extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra.insert(key.into(), value.into());
        self
    }

    /// Encodes as batch metadata, hoisting the error model keys.
    pub fn to_metadata(&self) -> BatchMetadata {
        let mut metadata = BatchMetadata::new();
        metadata.insert(keys::LOG_LEVEL, self.level.as_str());
        metadata.insert(keys::LOG_MESSAGE, self.message.as_str());
        if self.extra.is_empty() {
            return metadata;
        }
        metadata.insert(
            keys::LOG_EXTRA,
            Value::Object(self.extra.clone()).to_string(),
        );
        if let Some(Value::String(kind)) = self.extra.get("error_kind") {
            metadata.insert(keys::ERROR_KIND, kind.as_str());
        }
        if self.level == LogLevel::Exception {
            if let Some(Value::String(code)) = self.extra.get("error_code") {
                metadata.insert(keys::ERROR_CODE, code.as_str());
            }
            if let Some(details @ Value::Array(_)) = self.extra.get("error_details") {
                metadata.insert(keys::ERROR_DETAILS, details.to_string());
            }
        }
        metadata
    }

    /// Decodes from batch metadata; `None` if the metadata is not a log record.
    pub fn from_metadata(metadata: &BatchMetadata) -> Option<LogRecord> {
        let level = LogLevel::parse(metadata.get(keys::LOG_LEVEL)?)?;
        let message = metadata
            .get(keys::LOG_MESSAGE)
            .unwrap_or_default()
            .to_string();
        let extra = metadata
            .get(keys::LOG_EXTRA)
            .and_then(|json| serde_json::from_str::<Value>(json).ok())
            .and_then(|value| match value {
                Value::Object(map) => Some(map),
                _ => None,
            })
            .unwrap_or_default();
        Some(LogRecord {
            level,
            message,
            extra,
        })
    }
}

/// Canonical error codes of the wire's error model (gRPC's set).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ErrorCode {
    Cancelled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
}

impl ErrorCode {
    /// The code's wire token.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Unknown => "UNKNOWN",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            ErrorCode::FailedPrecondition => "FAILED_PRECONDITION",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::OutOfRange => "OUT_OF_RANGE",
            ErrorCode::Unimplemented => "UNIMPLEMENTED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::DataLoss => "DATA_LOSS",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }

    /// Parses a wire token; unknown tokens read as `Unknown`.
    pub fn parse(token: &str) -> ErrorCode {
        const ALL: [ErrorCode; 16] = [
            ErrorCode::Cancelled,
            ErrorCode::Unknown,
            ErrorCode::InvalidArgument,
            ErrorCode::DeadlineExceeded,
            ErrorCode::NotFound,
            ErrorCode::AlreadyExists,
            ErrorCode::PermissionDenied,
            ErrorCode::ResourceExhausted,
            ErrorCode::FailedPrecondition,
            ErrorCode::Aborted,
            ErrorCode::OutOfRange,
            ErrorCode::Unimplemented,
            ErrorCode::Internal,
            ErrorCode::Unavailable,
            ErrorCode::DataLoss,
            ErrorCode::Unauthenticated,
        ];
        ALL.into_iter()
            .find(|code| code.as_str() == token)
            .unwrap_or(ErrorCode::Unknown)
    }
}

/// The most bytes an error's details array may take as compact JSON; over
/// it the array is dropped whole, never trimmed, since a client cannot tell a
/// trimmed list from a complete one (vgi-rpc's `MAX_ERROR_DETAILS_BYTES`).
pub const ERROR_DETAILS_BYTES_MAX: usize = 4096;

fn details_fit(details: &Value) -> bool {
    serde_json::to_string(details).is_ok_and(|text| text.len() <= ERROR_DETAILS_BYTES_MAX)
}

/// An error as both sides see it: the type name (`ValueError`, `RpcError`...), the
/// message, and the error model fields.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorReport {
    /// Name of the error's type, as the raising side calls it.
    pub error_type: String,
    /// The message without the type prefix.
    pub message: String,
    /// Canonical code.
    pub code: ErrorCode,
    /// Stable machine token (`protocol_not_specified`, `method_not_implemented`...).
    pub kind: Option<String>,
    /// Structured details (a JSON array), if any.
    pub details: Option<Value>,
    /// Any further extra fields to send (a traceback, for instance).
    pub extra: Map<String, Value>,
}

/// `error_type` of a value over a limit, at any layer (a message on the wire, a bound of a protocol).
pub const LIMIT_EXCEEDED_TYPE: &str = "LimitExceededError";
/// `kind` of a value over a limit.
pub const LIMIT_EXCEEDED_KIND: &str = "limit_exceeded";

impl ErrorReport {
    /// A value over a limit; `message` names the value, its size and the limit.
    pub fn limit_exceeded(message: impl Into<String>) -> Self {
        Self::new(LIMIT_EXCEEDED_TYPE, message)
            .with_code(ErrorCode::ResourceExhausted)
            .with_kind(LIMIT_EXCEEDED_KIND)
    }

    /// A new error with code `Unknown` and no kind.
    pub fn new(error_type: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error_type: error_type.into(),
            message: message.into(),
            code: ErrorCode::Unknown,
            kind: None,
            details: None,
            extra: Map::new(),
        }
    }

    /// Sets the code.
    pub fn with_code(mut self, code: ErrorCode) -> Self {
        self.code = code;
        self
    }

    /// Sets the kind.
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Adds a traceback when the error carries none. vgi-rpc sends one with
    /// every error by default (its clients show it to users); a Rust body has
    /// no Python stack, so this one names where the error was raised
    /// (`origin`, e.g. `<protocol>/<method>`) and the error itself.
    pub fn with_synthesized_traceback(mut self, origin: &str) -> Self {
        if !self.extra.contains_key("traceback") {
            let trace = format!("{origin}\n{}: {}", self.error_type, self.message);
            self.extra.insert("traceback".into(), Value::String(trace));
        }
        self
    }

    /// The EXCEPTION record that carries this error.
    pub fn to_record(&self) -> LogRecord {
        let mut extra = Map::new();
        extra.insert(
            "exception_type".into(),
            Value::String(self.error_type.clone()),
        );
        extra.insert(
            "exception_message".into(),
            Value::String(self.message.clone()),
        );
        extra.insert(
            "error_code".into(),
            Value::String(self.code.as_str().into()),
        );
        if let Some(kind) = &self.kind {
            extra.insert("error_kind".into(), Value::String(kind.clone()));
        }
        if let Some(details) = self.details.as_ref().filter(|d| details_fit(d)) {
            extra.insert("error_details".into(), details.clone());
        }
        for (key, value) in &self.extra {
            extra.entry(key.clone()).or_insert_with(|| value.clone());
        }
        LogRecord {
            level: LogLevel::Exception,
            message: format!("{}: {}", self.error_type, self.message),
            extra,
        }
    }

    /// Reads an error back from an EXCEPTION record.
    pub fn from_record(record: &LogRecord) -> ErrorReport {
        let text = |key: &str| {
            record
                .extra
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let error_type = text("exception_type").unwrap_or_else(|| "RpcError".into());
        let message = text("exception_message").unwrap_or_else(|| {
            let prefix = format!("{error_type}: ");
            record
                .message
                .strip_prefix(&prefix)
                .unwrap_or(&record.message)
                .to_string()
        });
        let mut extra = record.extra.clone();
        for key in [
            "exception_type",
            "exception_message",
            "error_code",
            "error_kind",
            "error_details",
        ] {
            extra.remove(key);
        }
        ErrorReport {
            error_type,
            message,
            code: text("error_code")
                .map(|c| ErrorCode::parse(&c))
                .unwrap_or(ErrorCode::Unknown),
            kind: text("error_kind"),
            details: record.extra.get("error_details").cloned(),
            extra,
        }
    }
}

impl std::fmt::Display for ErrorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error_type, self.message)?;
        if let Some(kind) = &self.kind {
            write!(f, " [{kind}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorReport {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{ErrorReport, ERROR_DETAILS_BYTES_MAX};

    #[test]
    fn a_synthesized_traceback_names_the_origin_and_keeps_a_real_one() {
        let report = ErrorReport::new("ValueError", "bad").with_synthesized_traceback("P/m");
        assert_eq!(report.extra["traceback"], json!("P/m\nValueError: bad"));
        let again = report.with_synthesized_traceback("Q/n");
        assert_eq!(again.extra["traceback"], json!("P/m\nValueError: bad"));
    }

    #[test]
    fn details_over_the_cap_are_dropped_whole() {
        let mut fits = ErrorReport::new("StatusError", "small");
        fits.details = Some(json!([{"@type": "vgi_rpc.RetryInfo", "retry_delay_seconds": 1}]));
        assert!(fits.to_record().extra.contains_key("error_details"));

        let mut over = ErrorReport::new("StatusError", "large");
        over.details = Some(json!([
            {"@type": "vgi_rpc.RetryInfo", "retry_delay_seconds": 1},
            {"@type": "vgi_rpc.ErrorInfo", "metadata": {"padding": "x".repeat(ERROR_DETAILS_BYTES_MAX)}},
        ]));
        let record = over.to_record();
        assert!(!record.extra.contains_key("error_details"));
        assert_eq!(ErrorReport::from_record(&record).details, None);
    }
}
