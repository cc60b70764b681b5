//! The error envelope every failed request answers with, and its families. A body is
//! `{"error":{"family","message"},"meta":{"request_id"}}`; two errors of the same family and
//! message differ only in their request id (a forbidden endpoint answers exactly like a missing
//! one). Messages name what was wrong (a param, a limit), never echo a caller's value, and never
//! reveal SQL, paths or server internals.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// What kind of failure, which fixes the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// A request that does not parse as HTTP/1.1 (answered before routing).
    BadRequest,
    InvalidParam,
    Unauthorized,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    /// The admin port's: a rollback with nothing to roll back to, a dataset busy refreshing.
    Conflict,
    RateLimited,
    /// No snapshot yet, or (offloader's reading of a saturated pool) no database connection
    /// free: retry shortly.
    NotReady,
    Timeout,
    UriTooLong,
    HeadersTooLarge,
    Internal,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::BadRequest => "bad_request",
            Family::InvalidParam => "invalid_param",
            Family::Unauthorized => "unauthorized",
            Family::NotFound => "not_found",
            Family::MethodNotAllowed => "method_not_allowed",
            Family::NotAcceptable => "not_acceptable",
            Family::Conflict => "conflict",
            Family::RateLimited => "rate_limited",
            Family::NotReady => "not_ready",
            Family::Timeout => "timeout",
            Family::UriTooLong => "uri_too_long",
            Family::HeadersTooLarge => "headers_too_large",
            Family::Internal => "internal",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Family::BadRequest => StatusCode::BAD_REQUEST,
            Family::InvalidParam => StatusCode::UNPROCESSABLE_ENTITY,
            Family::Unauthorized => StatusCode::UNAUTHORIZED,
            Family::NotFound => StatusCode::NOT_FOUND,
            Family::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Family::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Family::Conflict => StatusCode::CONFLICT,
            Family::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            Family::NotReady => StatusCode::SERVICE_UNAVAILABLE,
            Family::Timeout => StatusCode::GATEWAY_TIMEOUT,
            Family::UriTooLong => StatusCode::URI_TOO_LONG,
            Family::HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Family::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// A failed request: its family, a message safe to show a caller, and for the families a caller
/// should retry, after how many seconds.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub family: Family,
    pub message: String,
    pub retry_after_seconds: Option<u64>,
}

/// Every JSON body's content type, as offloader sends it.
pub const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// A JSON answer with offloader's headers for what is not an endpoint's rows (errors, health, admin):
/// `charset=utf-8` and Plug's default cache-control (never stored by a shared cache, revalidated by
/// a private one).
pub fn plain_json(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_CONTENT_TYPE),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=0, private, must-revalidate"),
    );
    response
}

/// The one message of `not_found`: a missing endpoint and one the key is not granted read the same.
pub const NOT_FOUND_MESSAGE: &str = "endpoint not found";

/// The one message of `internal`: what went wrong is logged with the request id, never sent.
pub const INTERNAL_MESSAGE: &str = "internal error";

impl ApiError {
    pub fn new(family: Family, message: impl Into<String>) -> ApiError {
        ApiError {
            family,
            message: message.into(),
            retry_after_seconds: None,
        }
    }

    pub fn retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after_seconds = Some(seconds.max(1));
        self
    }

    pub fn not_found() -> ApiError {
        ApiError::new(Family::NotFound, NOT_FOUND_MESSAGE)
    }

    pub fn unauthorized(message: &str) -> ApiError {
        ApiError::new(Family::Unauthorized, message)
    }

    pub fn internal() -> ApiError {
        ApiError::new(Family::Internal, INTERNAL_MESSAGE)
    }

    /// The body: the envelope, with this request's id.
    pub fn body(&self, request_id: &str) -> String {
        serde_json::json!({
            "error": {"family": self.family.as_str(), "message": self.message},
            "meta": {"request_id": request_id},
        })
        .to_string()
    }

    pub fn response(&self, request_id: &str) -> Response {
        let mut response = plain_json(self.family.status(), self.body(request_id));
        let headers = response.headers_mut();
        super::request_id::stamp(headers, request_id);
        if let Some(seconds) = self.retry_after_seconds {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.family == Family::Unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_has_family_message_and_request_id() {
        let error = ApiError::new(Family::InvalidParam, "param 'from' must be a date");
        let body: serde_json::Value = serde_json::from_str(&error.body("r1")).unwrap();
        assert_eq!(body["error"]["family"], "invalid_param");
        assert_eq!(body["error"]["message"], "param 'from' must be a date");
        assert_eq!(body["meta"]["request_id"], "r1");
        assert_eq!(error.response("r1").status(), 422);
    }

    #[test]
    fn retryable_families_carry_retry_after() {
        let response = ApiError::new(Family::NotReady, "busy")
            .retry_after(0)
            .response("r2");
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
