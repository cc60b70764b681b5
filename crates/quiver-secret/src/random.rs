//! Random bytes from the operating system (`getrandom(2)` on Linux). There is no fallback: a
//! process that cannot get randomness panics, because every caller (tokens, execution ids,
//! handles, signing keys) would otherwise hand out guessable values.

/// `N` random bytes.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    fill(&mut out);
    out
}

/// Fills `buffer` with random bytes.
pub fn fill(buffer: &mut [u8]) {
    if let Err(error) = getrandom::fill(buffer) {
        panic!("the operating system gave no randomness: {error}");
    }
}

/// `len` random bytes as lowercase hex (`2 * len` digits).
pub fn hex(len: usize) -> String {
    let mut buffer = vec![0u8; len];
    fill(&mut buffer);
    crate::hex::encode(buffer)
}

/// Hex digits of a generated [`token`].
pub const TOKEN_HEX_DIGITS: usize = 32;

/// A fresh access token: 128 random bits as hex.
pub fn token() -> String {
    hex(TOKEN_HEX_DIGITS / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_their_length_and_differ() {
        let a = token();
        assert_eq!(a.len(), TOKEN_HEX_DIGITS);
        assert!(a
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_ne!(a, token());
        assert_ne!(bytes::<16>(), bytes::<16>());
    }
}
