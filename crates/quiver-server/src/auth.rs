//! The access token: compared as SHA-256 digests in constant time, so neither the comparison's
//! duration nor an early exit tells a guesser how much of a token was right; generated tokens are
//! 128 random bits.

use sha2::{Digest, Sha256};

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
