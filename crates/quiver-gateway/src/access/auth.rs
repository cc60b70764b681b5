//! API keys: a caller's bearer token is hashed (SHA-256) and compared in constant time against
//! every key's digest, so neither the time taken nor an early exit tells how close a guess was.
//! The keys file is polled for changes while serving: a revoked or expired key is refused without
//! a restart. A reload fails closed: the keys in force become the new file's sound entries only
//! (an entry with a problem, an unreadable, emptied or deleted file: those keys stop working), and
//! the problems are logged, counted and shown by `/status` and `/ready` until the file is fixed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::project::{keys, Key};

/// Longest bearer token read; longer ones are refused before hashing.
pub const TOKEN_BYTES_MAX: usize = 512;
/// How often the keys file's modification time is checked.
pub const RELOAD_POLL: Duration = Duration::from_secs(1);

/// Why a request is not authenticated. All read the same to a caller except the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    Unknown,
    Revoked,
    Expired,
}

impl Refusal {
    /// The message a caller sees, in offloader's words. Unknown, revoked and expired keys read
    /// alike: a caller learns nothing about which tokens once existed.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Missing => "missing or malformed bearer token",
            Refusal::Unknown | Refusal::Revoked | Refusal::Expired => "invalid or revoked API key",
        }
    }
}

/// The keys in force, swapped whole on reload.
pub struct KeyRing {
    keys: RwLock<Arc<Vec<Key>>>,
    /// The last load's problems (`path:line: message`); empty when the file is sound.
    problems: RwLock<Arc<Vec<String>>>,
    /// Replaced with the keys when the project is reloaded.
    file: RwLock<Option<PathBuf>>,
    reloads_ok: AtomicU64,
    reloads_failed: AtomicU64,
}

impl KeyRing {
    pub fn new(keys: Vec<Key>, file: Option<PathBuf>) -> KeyRing {
        KeyRing {
            keys: RwLock::new(Arc::new(keys)),
            problems: RwLock::default(),
            file: RwLock::new(file),
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
        }
    }

    pub fn keys(&self) -> Arc<Vec<Key>> {
        self.keys
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The key whose token is `token`, if it is active and not expired at `now`.
    pub fn authenticate(&self, token: &str, now: SystemTime) -> Result<Key, Refusal> {
        if token.is_empty() || token.len() > TOKEN_BYTES_MAX {
            return Err(Refusal::Unknown);
        }
        let digest = keys::token_sha256(token);
        let keys = self.keys();
        // Every digest is compared, whatever matched before: the work done does not depend on
        // which key (if any) the token belongs to.
        let mut found: Option<&Key> = None;
        for key in keys.iter() {
            if digests_equal(&digest, &key.token_sha256) {
                found = Some(key);
            }
        }
        let key = found.ok_or(Refusal::Unknown)?;
        if !key.active {
            return Err(Refusal::Revoked);
        }
        if let Some(expires_at) = key.expires_at {
            let now_unix = now
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs());
            if now_unix >= expires_at {
                return Err(Refusal::Expired);
            }
        }
        Ok(key.clone())
    }

    /// Reloads the keys file: its sound entries become the keys in force, whatever else is wrong
    /// with it. `Err`: the problems found (those entries are not in force).
    pub fn reload(&self) -> Result<usize, String> {
        let Some(file) = self.file() else {
            return Ok(self.keys().len());
        };
        let (keys, diagnostics) = keys::load_keys_in_force(&file, None);
        let count = keys.len();
        let problems: Vec<String> = diagnostics.items.iter().map(ToString::to_string).collect();
        *self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(keys);
        *self
            .problems
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(problems);
        if diagnostics.is_empty() {
            self.reloads_ok.fetch_add(1, Ordering::Relaxed);
            Ok(count)
        } else {
            self.reloads_failed.fetch_add(1, Ordering::Relaxed);
            Err(diagnostics.to_string())
        }
    }

    /// A reloaded project's keys and keys file, in force from now on.
    pub fn replace(&self, keys: Vec<Key>, file: Option<PathBuf>) {
        *self
            .file
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = file;
        *self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(keys);
        *self
            .problems
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::default();
    }

    fn file(&self) -> Option<PathBuf> {
        self.file
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// The last load's problems; empty when the keys file is sound.
    pub fn problems(&self) -> Arc<Vec<String>> {
        self.problems
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// `ok`, or `degraded` while the keys file has problems.
    pub fn state(&self) -> &'static str {
        if self.problems().is_empty() {
            "ok"
        } else {
            "degraded"
        }
    }

    pub fn reloads_ok(&self) -> u64 {
        self.reloads_ok.load(Ordering::Relaxed)
    }

    pub fn reloads_failed(&self) -> u64 {
        self.reloads_failed.load(Ordering::Relaxed)
    }

    /// Polls the keys file's modification time each [`RELOAD_POLL`] on a thread of its own and
    /// reloads on a change, until the ring is dropped elsewhere.
    pub fn watch(ring: &Arc<KeyRing>) {
        let weak = Arc::downgrade(ring);
        let file = ring.file();
        let mut seen = (file.as_deref().and_then(modified), file);
        std::thread::Builder::new()
            .name("gateway-keys".into())
            .spawn(move || loop {
                std::thread::sleep(RELOAD_POLL);
                let Some(ring) = weak.upgrade() else { return };
                let file = ring.file();
                let Some(path) = file.as_deref() else {
                    continue;
                };
                let now = (modified(path), file.clone());
                if now == seen {
                    continue;
                }
                seen = now;
                match ring.reload() {
                    Ok(count) => tracing::info!(keys = count, "keys file reloaded"),
                    Err(error) => tracing::error!(
                        keys = ring.keys().len(),
                        error = %error,
                        "keys file has problems; only its sound entries are in force"
                    ),
                }
            })
            .expect("a thread for the keys file's watch");
    }
}

/// The file's modification time and length: a rewrite within the same second still shows as a
/// change when its length differs.
fn modified(file: &Path) -> Option<(SystemTime, u64)> {
    let metadata = std::fs::metadata(file).ok()?;
    Some((metadata.modified().ok()?, metadata.len()))
}

/// Equal digests, in time that does not depend on where they differ.
pub fn digests_equal(left: &[u8; 32], right: &[u8; 32]) -> bool {
    quiver_secret::Secret::from_digest(*right).matches_digest(left)
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    quiver_secret::credentials::bearer(authorization?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn key(id: &str, token: &str, active: bool, expires_at: Option<u64>) -> Key {
        Key {
            id: id.into(),
            token_sha256: keys::token_sha256(token),
            tenant: None,
            endpoints: BTreeSet::new(),
            active,
            expires_at,
            rate_limit_per_second: None,
        }
    }

    #[test]
    fn a_token_finds_its_key_and_refusals_say_why() {
        let ring = KeyRing::new(
            vec![
                key("a", "token-a", true, None),
                key("r", "token-r", false, None),
                key("e", "token-e", true, Some(1_000)),
            ],
            None,
        );
        let now = UNIX_EPOCH + Duration::from_secs(2_000);
        let id = |token: &str, at| ring.authenticate(token, at).map(|key| key.id);
        assert_eq!(id("token-a", now), Ok("a".into()));
        assert_eq!(id("token-x", now), Err(Refusal::Unknown));
        assert_eq!(id("token-r", now), Err(Refusal::Revoked));
        assert_eq!(id("token-e", now), Err(Refusal::Expired));
        let before = UNIX_EPOCH + Duration::from_secs(999);
        assert_eq!(id("token-e", before), Ok("e".into()));
        assert_eq!(id("", now), Err(Refusal::Unknown));
        let long = "x".repeat(TOKEN_BYTES_MAX + 1);
        assert_eq!(id(&long, now), Err(Refusal::Unknown));
    }

    #[test]
    fn bearer_tokens_are_parsed_strictly() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(Some("Bearer")), None);
        assert_eq!(bearer_token(None), None);
    }

    #[test]
    fn digests_compare_equal_only_when_equal() {
        let a = [7u8; 32];
        let mut b = a;
        assert!(digests_equal(&a, &b));
        b[31] ^= 1;
        assert!(!digests_equal(&a, &b));
    }
}
