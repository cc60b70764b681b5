//! `conformance.Secondary.v1`: the second application protocol a vgi-rpc
//! conformance worker hosts beside `ConformanceService`. It makes observable
//! what a single-protocol worker hides: dispatch keyed on (protocol, method)
//! rather than the bare name (`echo_string` repeats the primary's name and
//! signature but prefixes its reply), a per-protocol version gate (it declares
//! no version), and the error model (`fail` raises any canonical code and kind
//! with fixed details; `fail_oversized` raises details over the 4 KiB cap).

use arrow_array::StringArray;
use arrow_schema::{DataType, Field};
use quiver_rpc::Method;
use quiver_rpc::Service;
use quiver_wire::{ErrorCode, ErrorReport};
use serde_json::{json, Value};

use crate::types::single;

/// The protocol's routing key.
pub const SECONDARY_PROTOCOL_NAME: &str = "conformance.Secondary.v1";
/// What `echo_string` prepends, so a mis-route is a wrong answer.
const ECHO_PREFIX: &str = "secondary:";
/// Kind of the refusal of a code outside the canonical set.
const INVALID_CODE_KIND: &str = "invalid_code";
/// Kind `fail_oversized` raises.
const OVERSIZED_KIND: &str = "details_oversized";
/// The `ErrorInfo` padding `fail_oversized` carries: over the cap on its own.
const OVERSIZED_PADDING_BYTES: usize = 5000;
/// The error type vgi-rpc's reference raises these errors as.
const STATUS_ERROR: &str = "StatusError";

/// The secondary conformance protocol.
pub fn secondary_service() -> Service {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Service::unversioned(SECONDARY_PROTOCOL_NAME)
        .with(Method::unary(
            "echo_string",
            vec![text("value")],
            Some(text("result")),
            |params, _| {
                let echoed = format!("{ECHO_PREFIX}{}", params.str("value")?);
                Ok(single(StringArray::from(vec![echoed])))
            },
        ))
        .with(Method::unary(
            "fail",
            vec![
                text("code"),
                text("kind"),
                Field::new("retry_delay_seconds", DataType::Float64, false),
            ],
            None,
            |params, _| {
                Err(fail(
                    params.str("code")?,
                    params.str("kind")?,
                    params.f64("retry_delay_seconds")?,
                ))
            },
        ))
        .with(Method::unary("fail_oversized", vec![], None, |_, _| {
            Err(fail_oversized())
        }))
}

/// The error `fail(code, kind, delay)` raises.
fn fail(code: &str, kind: &str, retry_delay_seconds: f64) -> ErrorReport {
    let parsed = ErrorCode::parse(code);
    if parsed.as_str() != code {
        let mut report = ErrorReport::new(
            STATUS_ERROR,
            format!("'{code}' is not a canonical error code"),
        )
        .with_code(ErrorCode::InvalidArgument)
        .with_kind(INVALID_CODE_KIND);
        report.details = Some(json!([{
            "@type": "vgi_rpc.BadRequest",
            "field_violations": [
                {"field": "code", "description": "must be a canonical code name"}
            ],
        }]));
        return report;
    }
    let message = format!("{SECONDARY_PROTOCOL_NAME} fail: {code} {kind}");
    let mut report = ErrorReport::new(STATUS_ERROR, message.trim_end()).with_code(parsed);
    if !kind.is_empty() {
        report = report.with_kind(kind);
    }
    let mut details = vec![json!({
        "@type": "vgi_rpc.ErrorInfo",
        "metadata": {"fixture": SECONDARY_PROTOCOL_NAME},
    })];
    if retry_delay_seconds > 0.0 {
        details.push(json!({
            "@type": "vgi_rpc.RetryInfo",
            "retry_delay_seconds": json_seconds(retry_delay_seconds),
        }));
    }
    details.push(json!({
        "@type": format!("{SECONDARY_PROTOCOL_NAME}.Probe"),
        "note": "clients ignore detail types they do not know",
    }));
    report.details = Some(Value::Array(details));
    report
}

/// A whole number of seconds travels as an integer ("7", not "7.0"), as the
/// reference's encoder writes it.
fn json_seconds(seconds: f64) -> Value {
    if seconds.fract() == 0.0 && seconds.abs() < 9.0e15 {
        json!(seconds as i64)
    } else {
        json!(seconds)
    }
}

/// The error `fail_oversized` raises: a small `RetryInfo` first, then padding
/// that alone exceeds the details cap, so a server that drops only what does
/// not fit (rather than the whole array) is detectable.
fn fail_oversized() -> ErrorReport {
    let mut report = ErrorReport::new(
        STATUS_ERROR,
        format!("{SECONDARY_PROTOCOL_NAME} fail_oversized: details exceed 4 KiB"),
    )
    .with_code(ErrorCode::ResourceExhausted)
    .with_kind(OVERSIZED_KIND);
    report.details = Some(json!([
        {"@type": "vgi_rpc.RetryInfo", "retry_delay_seconds": 1},
        {"@type": "vgi_rpc.ErrorInfo", "metadata": {"padding": "x".repeat(OVERSIZED_PADDING_BYTES)}},
    ]));
    report
}
