//! The admin port's token: kept as its SHA-256 digest, a caller's `Authorization: Bearer` token
//! hashed and compared in constant time, as API keys are (`auth.rs`).

use axum::http::{header, HeaderMap};

use super::auth::{bearer_token, digests_equal};
use crate::project::keys;

/// The admin token, when one is configured.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdminToken(Option<[u8; 32]>);

impl AdminToken {
    pub fn new(token: Option<&str>) -> AdminToken {
        AdminToken(token.map(keys::token_sha256))
    }

    /// Whether `headers` carry the token; `None` when no token is configured.
    pub fn sent(&self, headers: &HeaderMap) -> Option<bool> {
        let expected = self.0?;
        let sent = bearer_token(
            headers
                .get(header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok()),
        )
        .map(keys::token_sha256);
        Some(sent.is_some_and(|sent| digests_equal(&sent, &expected)))
    }
}
