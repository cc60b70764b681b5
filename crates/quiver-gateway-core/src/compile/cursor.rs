//! Keyset cursors: `?cursor=` is an opaque, signed token naming where the previous page ended.
//!
//! A cursor carries the snapshot it was read from, the endpoint and its version, a digest of the
//! request's shape (params after defaults and aliases, tenant, sort: see `compile.rs`), and the
//! last row's values of the total order. It is `base64url(json) "." base64url(hmac)` with
//! HMAC-SHA256 under a key drawn at process start: a restart invalidates every cursor, which is
//! what "cursor is invalid" then says. Decoding checks the signature before reading anything.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::ParamError;

type HmacSha256 = Hmac<Sha256>;

/// A cursor's text is at most this long (the request-wide bound on a value).
pub const MAX_CURSOR_BYTES: usize = 4096;
/// A cursor holds at most this many order values (an order is at most the endpoint's outputs).
pub const MAX_CURSOR_VALUES: usize = 1000;

/// The signing key of this process's cursors.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl CursorKey {
    /// A fresh key from the operating system's CSPRNG.
    pub fn random() -> std::io::Result<Self> {
        Ok(CursorKey(quiver_secret::random::bytes::<32>()))
    }

    /// A fixed key, for tests and for gateways that share cursors across processes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        CursorKey(bytes)
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts a key of any length; 32 bytes cannot fail.
        HmacSha256::new_from_slice(&self.0).expect("an HMAC key of 32 bytes")
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

/// What a cursor says, once its signature is checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cursor {
    /// The snapshot the previous page was read from.
    #[serde(rename = "s")]
    pub snapshot_id: String,
    /// The endpoint the cursor pages through.
    #[serde(rename = "e")]
    pub endpoint: String,
    /// That endpoint's version when the cursor was made.
    #[serde(rename = "v")]
    pub version: u32,
    /// Hex SHA-256 of the request's shape without cursor, offset, limit and columns.
    #[serde(rename = "h")]
    pub shape: String,
    /// The last row's values of the order keys, in order (see [`CursorValue`]).
    #[serde(rename = "k")]
    pub after: Vec<CursorValue>,
}

/// One order value: JSON's own types, with doubles as text so NaN and infinities survive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum CursorValue {
    /// A NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer of any width up to 64 bits.
    Int(i64),
    /// Text, or a double, date or timestamp written as text.
    Text(String),
}

/// The error for a cursor that is malformed, tampered with or not this request's.
pub(crate) fn invalid() -> ParamError {
    ParamError::new("param `cursor`: cursor is invalid")
}

/// The error for a cursor whose snapshot is no longer served.
pub(crate) fn expired() -> ParamError {
    ParamError::new("param `cursor`: cursor expired (its snapshot is no longer served): start again without a cursor")
}

/// The cursor's JSON and its HMAC-SHA256 signature, each in unpadded URL-safe base64, joined by
/// a dot.
pub(crate) fn encode(key: &CursorKey, cursor: &Cursor) -> String {
    let body = serde_json::to_vec(cursor).expect("a cursor serializes");
    let mut mac = key.mac();
    mac.update(&body);
    let signature = mac.finalize().into_bytes();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&body),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// The cursor's contents once its signature holds; any tampering or malformation is "invalid".
pub(crate) fn verify(key: &CursorKey, text: &str) -> Result<Cursor, ParamError> {
    if text.len() > MAX_CURSOR_BYTES {
        return Err(invalid());
    }
    let (body, signature) = text.split_once('.').ok_or_else(invalid)?;
    let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| invalid())?;
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| invalid())?;
    let mut mac = key.mac();
    mac.update(&body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&signature).map_err(|_| invalid())?;
    let cursor: Cursor = serde_json::from_slice(&body).map_err(|_| invalid())?;
    if cursor.after.len() > MAX_CURSOR_VALUES {
        return Err(invalid());
    }
    Ok(cursor)
}

/// The snapshot a request's cursor pins, if it has a valid one: serving compiles against that
/// snapshot while it is the current or the kept previous one.
pub fn pinned_snapshot(key: &CursorKey, query: &[(String, String)]) -> Option<String> {
    let (_, text) = query.iter().rev().find(|(name, _)| name == "cursor")?;
    verify(key, text).ok().map(|cursor| cursor.snapshot_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Cursor {
        Cursor {
            snapshot_id: "s1".into(),
            endpoint: "e".into(),
            version: 2,
            shape: "ab".into(),
            after: vec![
                CursorValue::Null,
                CursorValue::Bool(true),
                CursorValue::Int(-5),
                CursorValue::Text("x".into()),
            ],
        }
    }

    #[test]
    fn round_trips_and_pins_its_snapshot() {
        let key = CursorKey::random().unwrap();
        let text = encode(&key, &sample());
        assert_eq!(verify(&key, &text).unwrap(), sample());
        let query = vec![("cursor".to_string(), text)];
        assert_eq!(pinned_snapshot(&key, &query).as_deref(), Some("s1"));
    }

    #[test]
    fn tampering_or_another_key_is_invalid() {
        let key = CursorKey::from_bytes([7; 32]);
        let text = encode(&key, &sample());
        let other = CursorKey::from_bytes([8; 32]);
        assert_eq!(verify(&other, &text), Err(invalid()));
        let (body, signature) = text.split_once('.').unwrap();
        let mut forged = sample();
        forged.snapshot_id = "s2".into();
        let forged_body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert_eq!(
            verify(&key, &format!("{forged_body}.{signature}")),
            Err(invalid())
        );
        assert_eq!(verify(&key, body), Err(invalid()));
        assert_eq!(verify(&key, "!!!.???"), Err(invalid()));
        assert_eq!(
            verify(&key, &"a".repeat(MAX_CURSOR_BYTES + 1)),
            Err(invalid())
        );
    }
}
