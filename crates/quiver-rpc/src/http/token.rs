//! Sealed stream tokens: what an HTTP stream call carries from one request to the next.
//!
//! A token is `nonce || ChaCha20-Poly1305(plaintext)` under a 32-byte key every replica of a
//! deployment shares, in standard base64 (the `#b64` metadata keys vgi-rpc defines). The plaintext
//! starts with the token's kind and its expiry, and the associated data binds it to the protocol
//! and method it was minted for, so a token is refused when forged, altered, expired, or presented
//! to another method. The AEAD is ring's; nothing here is cryptography of our own.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};

/// Bytes of a token key.
pub const TOKEN_KEY_BYTES: usize = 32;
/// How long a stream may wait between two turns before its tokens expire.
pub const STREAM_TTL: Duration = Duration::from_secs(3600);
/// Largest token accepted (a stream's state travels in its cursor token).
pub const TOKEN_BYTES_MAX: usize = 16 << 20;

const FORMAT: u8 = 1;
const AAD_PREFIX: &[u8] = b"quiver-http-token/1\0";

/// What a token names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// The call: minted once by `/init`, echoed on every turn.
    Call = 1,
    /// The call's next turn: replaced by every turn.
    Cursor = 2,
}

/// Why a token was refused.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Not base64, too short or too long.
    #[error("malformed stream {0} token")]
    Malformed(&'static str),
    /// The seal does not open: another key, another method, or altered bytes.
    #[error(
        "stream {0} token does not verify (another deployment's key, another method, or altered)"
    )]
    Forged(&'static str),
    /// Older than its time to live.
    #[error("stream {0} token expired; the stream has been idle longer than its time to live")]
    Expired(&'static str),
}

/// The key every replica seals and opens tokens with.
#[derive(Clone)]
pub struct TokenKey {
    key: std::sync::Arc<LessSafeKey>,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    /// A key from its 32 bytes.
    pub fn new(bytes: [u8; TOKEN_KEY_BYTES]) -> TokenKey {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &bytes).expect("a 32-byte key");
        TokenKey {
            key: std::sync::Arc::new(LessSafeKey::new(unbound)),
        }
    }

    /// A fresh random key: tokens then open only in this process (one replica).
    pub fn random() -> TokenKey {
        TokenKey::new(quiver_secret::random::bytes())
    }

    /// A key from 64 hex digits (surrounding whitespace ignored), as a key file holds it.
    pub fn from_hex(text: &str) -> Option<TokenKey> {
        quiver_secret::hex::decode_array::<TOKEN_KEY_BYTES>(text.trim()).map(TokenKey::new)
    }

    /// Seals `body` as a `kind` token for `binding` (protocol and method), valid for `ttl`.
    pub fn seal(&self, kind: TokenKind, binding: &str, body: &[u8], ttl: Duration) -> String {
        let expires = unix_now().saturating_add(ttl.as_secs());
        let mut sealed = Vec::with_capacity(NONCE_LEN + 10 + body.len() + 16);
        let nonce: [u8; NONCE_LEN] = quiver_secret::random::bytes();
        sealed.extend_from_slice(&nonce);
        let start = sealed.len();
        sealed.push(FORMAT);
        sealed.push(kind as u8);
        sealed.extend_from_slice(&expires.to_be_bytes());
        sealed.extend_from_slice(body);
        let mut plaintext = sealed.split_off(start);
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(kind, binding)),
                &mut plaintext,
            )
            .expect("sealing fits in memory");
        sealed.extend_from_slice(&plaintext);
        sealed.extend_from_slice(tag.as_ref());
        STANDARD.encode(sealed)
    }

    /// Opens a `kind` token minted for `binding`; its body.
    pub fn open(&self, kind: TokenKind, binding: &str, token: &str) -> Result<Vec<u8>, TokenError> {
        let name = match kind {
            TokenKind::Call => "call",
            TokenKind::Cursor => "cursor",
        };
        if token.len() > TOKEN_BYTES_MAX {
            return Err(TokenError::Malformed(name));
        }
        let mut sealed = STANDARD
            .decode(token.trim())
            .map_err(|_| TokenError::Malformed(name))?;
        if sealed.len() < NONCE_LEN + 10 + 16 {
            return Err(TokenError::Malformed(name));
        }
        let nonce = Nonce::try_assume_unique_for_key(&sealed[..NONCE_LEN])
            .map_err(|_| TokenError::Malformed(name))?;
        let plaintext = self
            .key
            .open_in_place(
                nonce,
                Aad::from(aad(kind, binding)),
                &mut sealed[NONCE_LEN..],
            )
            .map_err(|_| TokenError::Forged(name))?;
        if plaintext[0] != FORMAT || plaintext[1] != kind as u8 {
            return Err(TokenError::Forged(name));
        }
        let expires = u64::from_be_bytes(plaintext[2..10].try_into().expect("8 bytes"));
        if unix_now() > expires {
            return Err(TokenError::Expired(name));
        }
        Ok(plaintext[10..].to_vec())
    }
}

fn aad(kind: TokenKind, binding: &str) -> Vec<u8> {
    let mut aad = AAD_PREFIX.to_vec();
    aad.push(kind as u8);
    aad.extend_from_slice(binding.as_bytes());
    aad
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_under_its_key_kind_and_method_only() {
        let key = TokenKey::random();
        let token = key.seal(TokenKind::Cursor, "P/m", b"state", STREAM_TTL);
        assert_eq!(
            key.open(TokenKind::Cursor, "P/m", &token).unwrap(),
            b"state"
        );
        let forged = TokenError::Forged("cursor");
        assert_eq!(
            key.open(TokenKind::Cursor, "P/other", &token),
            Err(forged.clone())
        );
        assert_eq!(
            key.open(TokenKind::Call, "P/m", &token),
            Err(TokenError::Forged("call"))
        );
        assert_eq!(
            TokenKey::random().open(TokenKind::Cursor, "P/m", &token),
            Err(forged.clone())
        );
        let mut bytes = STANDARD.decode(&token).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(
            key.open(TokenKind::Cursor, "P/m", &STANDARD.encode(bytes)),
            Err(forged)
        );
        assert_eq!(
            key.open(TokenKind::Cursor, "P/m", "not base64!"),
            Err(TokenError::Malformed("cursor"))
        );
    }

    #[test]
    fn a_shared_key_opens_on_every_replica_and_expiry_is_enforced() {
        let hex = quiver_secret::hex::encode([7u8; TOKEN_KEY_BYTES]);
        let (a, b) = (
            TokenKey::from_hex(&hex).unwrap(),
            TokenKey::from_hex(&format!(" {hex}\n")).unwrap(),
        );
        let token = a.seal(TokenKind::Call, "P/m", b"id", STREAM_TTL);
        assert_eq!(b.open(TokenKind::Call, "P/m", &token).unwrap(), b"id");
        let stale = a.seal(TokenKind::Call, "P/m", b"id", Duration::ZERO);
        // Expiry has one-second resolution: wait until the clock has passed it.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while b.open(TokenKind::Call, "P/m", &stale).is_ok() {
            assert!(std::time::Instant::now() < deadline, "token never expired");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(
            b.open(TokenKind::Call, "P/m", &stale),
            Err(TokenError::Expired("call"))
        );
        assert!(TokenKey::from_hex("abc").is_none());
    }
}
