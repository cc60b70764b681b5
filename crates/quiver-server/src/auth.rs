//! The access token: compared as SHA-256 digests in constant time, so neither the comparison's
//! duration nor an early exit tells a guesser how much of a token was right; generated tokens are
//! 128 random bits. [`verify`] is every door's one check of presented credentials: the per-peer
//! throttle, the comparison, the count and the log line (which names the peer, never what it
//! presented).

use std::net::IpAddr;
use std::time::Instant;

use quiver_server_protocol::limits::TOKEN_BYTES_MAX;
use sha2::{Digest, Sha256};

use crate::admission::Door;
use crate::events::Field;
use crate::metrics::metrics;
use crate::server::Shared;
use crate::throttle::Peer;

/// Hex digits of a generated token.
pub const GENERATED_TOKEN_HEX_DIGITS: usize = 32;

/// The token a listener requires, kept as its digest.
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl Token {
    /// The token `text`.
    pub fn new(text: &str) -> Token {
        Token {
            digest: Sha256::digest(text.as_bytes()).into(),
        }
    }

    /// Whether `presented` is this token.
    pub fn accepts(&self, presented: &str) -> bool {
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        let difference = digest
            .iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        difference == 0
    }
}

/// Whether the credentials `presented` by `peer` (at `ip`, for a TCP peer) at `door` are the
/// server's token; always `true` on a server without one. A peer locked out by the throttle is
/// refused without a comparison; every refusal is counted, and each one compared is logged.
pub fn verify(
    shared: &Shared,
    door: Door,
    peer: &str,
    ip: Option<IpAddr>,
    presented: Option<&str>,
) -> bool {
    let Some(token) = &shared.token else {
        return true;
    };
    let key = ip.map(Peer::of);
    let now = Instant::now();
    let admitted = key.is_none_or(|key| shared.throttle.admits(key, now));
    let accepted = admitted
        && presented.is_some_and(|text| text.len() <= TOKEN_BYTES_MAX && token.accepts(text));
    if accepted {
        if let Some(key) = key {
            shared.throttle.succeeded(key);
        }
        return true;
    }
    metrics().auth_failure(door.as_str());
    let failure = key.map(|key| shared.throttle.failed(key, now));
    // A locked-out peer's attempts are counted, not logged: one line per lockout, not per try.
    if admitted {
        let mut fields = vec![
            ("door", Field::Text(door.as_str())),
            ("peer", Field::Text(peer)),
        ];
        if let Some(failure) = failure {
            fields.push(("failures", Field::Count(failure.count.into())));
            if let Some(window) = failure.locked_for {
                fields.push(("locked_out", Field::Millis(window)));
            }
        }
        shared.events.emit("auth_failed", &fields);
    }
    false
}

/// `bytes` random bytes from the kernel, as lowercase hex.
pub fn random_hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    let mut filled = 0;
    while filled < bytes {
        // SAFETY: getrandom writes at most `bytes - filled` bytes into the buffer's tail.
        let n = unsafe { libc::getrandom(buffer[filled..].as_mut_ptr().cast(), bytes - filled, 0) };
        if n < 0 {
            let error = std::io::Error::last_os_error();
            assert!(
                error.kind() == std::io::ErrorKind::Interrupted,
                "getrandom failed: {error}"
            );
            continue;
        }
        filled += n as usize;
    }
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh token for a server started without one.
pub fn generate_token() -> String {
    random_hex(GENERATED_TOKEN_HEX_DIGITS / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_the_token() {
        let token = Token::new("secret");
        assert!(token.accepts("secret"));
        assert!(!token.accepts("secreT"));
        assert!(!token.accepts(""));
    }

    #[test]
    fn generated_tokens_differ() {
        let a = generate_token();
        assert_eq!(a.len(), GENERATED_TOKEN_HEX_DIGITS);
        assert_ne!(a, generate_token());
    }
}
