//! Segment names: how we invent them and which ones we accept.
//!
//! Names travel in request metadata (`vgi_rpc.shm_segment_name`) *without* the leading slash
//! that `shm_open` wants, exactly as Python's `SharedMemory.name` reports them; vgi-rpc prepends
//! the slash when it attaches. Our names are `psm_<owner pid>_<8 hex digits>`: the prefix keeps
//! them recognisable next to Python's `psm_<8 hex>` names, the owner pid lets a later process
//! unlink the names of an owner that died by a signal nothing can catch (see `sweep.rs`), and the
//! random digits make `EEXIST` retries rare. With Linux's largest pid (2^22) a name is
//! 20 bytes, 21 with the slash: under macOS's 31-byte limit and the registry's 32-byte slots.

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

/// Longest name we create, without the slash: `psm_` + 10 pid digits + `_` + 8 hex digits.
pub const OWNED_NAME_LENGTH_MAX: usize = 23;

/// Random hex digits at the end; 4 bytes like Python's `secrets.token_hex(4)`.
const NAME_RANDOM_HEX_DIGITS: usize = 8;

/// A fresh candidate name owned by process `owner_pid`. Collisions are handled by `O_EXCL` +
/// retry, so the random part needs to make retries rare, not be cryptographically strong.
pub(crate) fn random_name(owner_pid: u32) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u32(owner_pid);
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    let random = hasher.finish() as u32;
    let name = format!(
        "{NAME_PREFIX}{owner_pid}_{random:0width$x}",
        width = NAME_RANDOM_HEX_DIGITS
    );
    assert!(name.len() <= OWNED_NAME_LENGTH_MAX);
    assert_eq!(owner_pid_of(&name), Some(owner_pid));
    name
}

/// The owner pid of a name we created (`psm_<pid>_<8 hex>`); `None` for any other name,
/// Python's `psm_<8 hex>` included, so a sweep never touches names it did not invent.
pub(crate) fn owner_pid_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let (pid, random) = rest.split_once('_')?;
    let pid_is_decimal =
        !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit());
    let random_is_hex =
        random.len() == NAME_RANDOM_HEX_DIGITS && random.bytes().all(|b| b.is_ascii_hexdigit());
    if !pid_is_decimal || !random_is_hex || pid.starts_with('0') {
        return None;
    }
    pid.parse().ok()
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
    fn owned_names_carry_the_owner_pid() {
        let a = random_name(4_194_304);
        let b = random_name(4_194_304);
        assert_ne!(a, b);
        assert_eq!(a.len(), 20);
        assert!(a.starts_with("psm_4194304_"));
        assert!(a[12..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(owner_pid_of(&a), Some(4_194_304));
        assert!(random_name(u32::MAX).len() <= OWNED_NAME_LENGTH_MAX);
    }

    #[test]
    fn foreign_names_have_no_owner_pid() {
        for name in [
            "psm_0123abcd",      // Python's and vgi-rpc's own names
            "psm_12_0123abc",    // 7 hex digits
            "psm_12_0123abcdef", // 10 hex digits
            "psm__0123abcd",
            "psm_012_0123abcd",
            "psm_x1_0123abcd",
            "psm_12_0123abcg",
            "other_12_0123abcd",
            "psm_99999999999_0123abcd",
        ] {
            assert_eq!(owner_pid_of(name), None, "{name}");
        }
        assert_eq!(owner_pid_of("psm_12_0123abcd"), Some(12));
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
