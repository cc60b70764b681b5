//! Request ids, as offloader's clients know them: the caller's `X-Request-Id` when it is 20 to 200
//! bytes of visible ASCII (so a trace spans systems), else a new one of 20 base64url characters:
//! 120 bits of a keyed hash (SipHash, under a key drawn at random once per process) of a counter.
//! Unique within the process, and without the key an id tells nothing of the counter, so ids do
//! not reveal how many requests a gateway answers.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use axum::http::{HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// Shortest and longest caller-sent request id kept (offloader's bounds).
pub const REQUEST_ID_BYTES_MIN: usize = 20;
pub const REQUEST_ID_BYTES_MAX: usize = 200;

/// The id of the request being answered, put in its extensions by the router's middleware.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

pub fn for_request(headers: &HeaderMap) -> String {
    let sent = headers
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .filter(|id| acceptable(id));
    match sent {
        Some(id) => id.to_owned(),
        None => new_id(),
    }
}

fn acceptable(id: &str) -> bool {
    (REQUEST_ID_BYTES_MIN..=REQUEST_ID_BYTES_MAX).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_graphic())
}

/// The response headers every answer carries, whatever route made it: its request id, and
/// `nosniff` (a JSON body is never to be read as anything else).
pub fn stamp(headers: &mut HeaderMap, request_id: &str) {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", value);
    }
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
}

pub fn new_id() -> String {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let key = KEY.get_or_init(RandomState::new);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&key.hash_one((count, 0u8)).to_le_bytes());
    bytes[8..].copy_from_slice(&key.hash_one((count, 1u8)).to_le_bytes());
    // 15 bytes: 20 base64url characters, offloader's length.
    URL_SAFE_NO_PAD.encode(&bytes[..15])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_ids_are_kept_when_plain() {
        let mut headers = HeaderMap::new();
        let kept = "trace-0123456789-abc:def/ghi";
        headers.insert("x-request-id", kept.parse().unwrap());
        assert_eq!(for_request(&headers), kept);
        for refused in ["abc-123", "has a space in the twenty bytes"] {
            headers.insert("x-request-id", refused.parse().unwrap());
            assert_ne!(for_request(&headers), refused);
        }
        let first = new_id();
        assert_ne!(first, new_id());
        assert_eq!(first.len(), 20);
        assert!(first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        let prefixes: std::collections::BTreeSet<String> =
            (0..16).map(|_| new_id()[..8].to_string()).collect();
        assert!(prefixes.len() > 1, "ids share no per-process prefix");
    }
}
