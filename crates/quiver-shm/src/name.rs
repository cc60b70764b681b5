//! Segment names: how we invent them and which ones we accept.
//!
//! Names travel in request metadata (`vgi_rpc.shm_segment_name`) *without* the leading slash
//! that `shm_open` wants, exactly as Python's `SharedMemory.name` reports them; vgi-rpc prepends
//! the slash when it attaches. We invent names the way Python's `multiprocessing.shared_memory`
//! does: `psm_` plus 8 random hex digits (14 characters at most, the BSD limit), retrying on
//! `EEXIST`.

use std::collections::hash_map::RandomState;
use std::ffi::CString;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Result, ShmError};

/// Prefix of the names we create (same as Python's `multiprocessing.shared_memory`).
pub const NAME_PREFIX: &str = "psm_";

/// Longest name we accept from a peer (Linux `NAME_MAX`).
pub const NAME_LENGTH_MAX: usize = 255;

/// Random hex digits after the prefix; 4 bytes like Python's `secrets.token_hex(4)`.
const NAME_RANDOM_HEX_DIGITS: usize = 8;

/// A fresh candidate name. Collisions are handled by `O_EXCL` + retry, so this needs to be
/// unpredictable enough to make retries rare, not cryptographically strong.
pub(crate) fn random_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    let random = hasher.finish() as u32;
    let name = format!(
        "{NAME_PREFIX}{random:0width$x}",
        width = NAME_RANDOM_HEX_DIGITS
    );
    assert_eq!(name.len(), NAME_PREFIX.len() + NAME_RANDOM_HEX_DIGITS);
    name
}

/// Validates a peer-supplied name (without leading slash) and returns the `shm_open` path.
pub(crate) fn shm_path(name: &str) -> Result<CString> {
    let invalid = |reason| ShmError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("empty"));
    }
    if name.len() > NAME_LENGTH_MAX {
        return Err(invalid("longer than 255 bytes"));
    }
    if name.contains('/') {
        return Err(invalid(
            "contains '/' (names are advertised without the leading slash)",
        ));
    }
    if name == "." || name == ".." {
        return Err(invalid("is a directory name"));
    }
    CString::new(format!("/{name}")).map_err(|_| invalid("contains a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_names_look_like_python_ones() {
        let a = random_name();
        let b = random_name();
        assert_ne!(a, b);
        assert_eq!(a.len(), 12);
        assert!(a.starts_with("psm_"));
        assert!(a[4..].chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn peer_names_are_validated() {
        assert_eq!(
            shm_path("psm_0123abcd").unwrap().to_str().unwrap(),
            "/psm_0123abcd"
        );
        for bad in ["", "/psm_1", "a/b", "..", "a\0b"] {
            assert!(shm_path(bad).is_err(), "{bad:?}");
        }
        assert!(shm_path(&"x".repeat(256)).is_err());
    }
}
