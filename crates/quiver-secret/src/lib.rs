//! quiver's security primitives, each written once and used by the server, the gateway, the
//! engine and the worker SDK alike, with one failure policy: when the operating system cannot
//! give randomness, the process stops loudly rather than fall back to anything weaker.
//!
//! - [`random`]: bytes, hex strings and tokens from the OS's CSPRNG.
//! - [`Secret`]: a secret kept as its SHA-256 digest and compared in constant time, so neither an
//!   early exit nor the comparison's duration tells a guesser how much was right.
//! - [`credentials`]: `Authorization` header values, Bearer and Basic (padded or not).
//! - [`hex`]: lowercase hex in and out.

#![warn(missing_docs)]

pub mod credentials;
pub mod random;
mod secret;

pub use secret::Secret;

/// Lowercase hex, in and out.
pub mod hex {
    /// `bytes` as lowercase hex.
    pub fn encode(bytes: impl AsRef<[u8]>) -> String {
        ::hex::encode(bytes)
    }

    /// Exactly `N` bytes from hex digits of either case; `None` for anything else.
    pub fn decode_array<const N: usize>(text: &str) -> Option<[u8; N]> {
        let mut out = [0u8; N];
        ::hex::decode_to_slice(text, &mut out).ok()?;
        Some(out)
    }
}
