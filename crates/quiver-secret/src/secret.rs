//! A secret (an access token, an API key) kept only as its SHA-256 digest.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A secret's digest; [`Secret::matches`] compares a presented value in constant time.
#[derive(Clone)]
pub struct Secret {
    digest: [u8; 32],
}

impl Secret {
    /// The secret `text`.
    pub fn new(text: &str) -> Secret {
        Secret::from_digest(Secret::digest_of(text))
    }

    /// A secret known only by its SHA-256 digest (e.g. from a keys file).
    pub fn from_digest(digest: [u8; 32]) -> Secret {
        Secret { digest }
    }

    /// SHA-256 of `text`.
    pub fn digest_of(text: &str) -> [u8; 32] {
        Sha256::digest(text.as_bytes()).into()
    }

    /// The digest, as hex.
    pub fn digest_hex(&self) -> String {
        crate::hex::encode(self.digest)
    }

    /// Whether `presented` is this secret. Both sides are digests of equal length, compared
    /// without an early exit.
    pub fn matches(&self, presented: &str) -> bool {
        self.matches_digest(&Secret::digest_of(presented))
    }

    /// Whether `digest` is this secret's digest, compared without an early exit.
    pub fn matches_digest(&self, digest: &[u8; 32]) -> bool {
        self.digest.ct_eq(digest).into()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_only_the_secret() {
        let secret = Secret::new("secret");
        assert!(secret.matches("secret"));
        assert!(!secret.matches("secreT"));
        assert!(!secret.matches(""));
        assert!(Secret::from_digest(Secret::digest_of("x")).matches("x"));
        assert_eq!(format!("{secret:?}"), "Secret(..)");
    }
}
