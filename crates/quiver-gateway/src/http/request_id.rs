//! Request ids: the caller's `X-Request-Id` when it is short plain text (so a trace spans
//! systems), else a new one: 128 bits of a keyed hash (SipHash, under a key drawn at random once per
//! process) of a counter. Unique within the process, and without the key an id tells nothing of
//! the counter, so ids do not reveal how many requests a gateway answers.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use axum::http::HeaderMap;

/// Longest caller-sent request id kept.
pub const REQUEST_ID_BYTES_MAX: usize = 64;

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
    !id.is_empty()
        && id.len() <= REQUEST_ID_BYTES_MAX
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

pub fn new_id() -> String {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let key = KEY.get_or_init(RandomState::new);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{:016x}{:016x}",
        key.hash_one((count, 0u8)),
        key.hash_one((count, 1u8))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_ids_are_kept_when_plain() {
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", "abc-123".parse().unwrap());
        assert_eq!(for_request(&headers), "abc-123");
        headers.insert("x-request-id", "has space".parse().unwrap());
        assert_ne!(for_request(&headers), "has space");
        let first = new_id();
        assert_ne!(first, new_id());
        assert_eq!(first.len(), 32);
        let prefixes: std::collections::BTreeSet<String> =
            (0..16).map(|_| new_id()[..8].to_string()).collect();
        assert!(prefixes.len() > 1, "ids share no per-process prefix");
    }
}
