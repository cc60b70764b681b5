//! The response cache: finished bodies, bounded by their bytes, with one load per key however many
//! requests miss it at once.
//!
//! A body is a pure function of its [`BodyKey`] (dataset, endpoint, version, tenant, canonical
//! params, snapshot id, format) and its content coding, so it is cached whole and served without
//! touching the server. A new snapshot is a new key: nothing is invalidated, the old snapshot's
//! bodies age out under the byte bound. Compressed copies are entries of their own, made from the
//! identity entry (loaded first when missing), and count in the same bound.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use moka::notification::RemovalCause;
use sha2::{Digest, Sha256};

use crate::representation::encoding::COMPRESS_BYTES_MIN;
use crate::representation::splice::{self, HeadCrc};
use crate::representation::{compress, Encoding, Format};

/// What an entry costs besides its body: the key, the `CachedBody` and its `Arc`, moka's entry,
/// its access-order and write-order nodes and their `Arc`s (about 400 bytes measured by their
/// types' sizes), rounded up.
const ENTRY_OVERHEAD_BYTES: u64 = 512;

/// The memory a body of `len` bytes takes from the allocator: its size rounded up to a quarter
/// of its power of two, a bound on a size-class allocator's rounding (mimalloc spaces its
/// classes closer). With bodies allocated to their exact length (`representation::exact_bytes`),
/// this and the entry overhead are what the process holds for an entry, so the byte bound is the
/// memory bound.
pub fn allocation_bytes(len: u64) -> u64 {
    if len <= 64 {
        return 64;
    }
    let step = 1u64 << (63 - len.leading_zeros()).saturating_sub(2);
    len.div_ceil(step) * step
}

/// Lower-case hex digits, for ETags written per response.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// Everything a body depends on besides its content coding.
#[derive(Clone, Copy, Debug)]
pub struct KeyParts<'a> {
    pub dataset: &'a str,
    pub endpoint: &'a str,
    pub version: u32,
    pub tenant: Option<&'a str>,
    /// The compiled request's canonical text (`Compiled::canonical`).
    pub canonical: &'a str,
    pub snapshot_id: &'a str,
    pub format: Format,
    /// The reload the project came from (`View::generation`): a reload may change what an
    /// endpoint answers without changing its version.
    pub project_generation: u64,
}

/// A body's identity: the SHA-256 of its [`KeyParts`]. The same for every content coding of the
/// body, so it is also what the ETag names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BodyKey([u8; 32]);

impl BodyKey {
    pub fn new(parts: &KeyParts<'_>) -> BodyKey {
        let mut hasher = Sha256::new();
        // Every text is length-prefixed, so no two different part lists hash the same bytes.
        let mut text = |value: &str| {
            hasher.update((value.len() as u64).to_le_bytes());
            hasher.update(value.as_bytes());
        };
        text("quiver.gateway.body.v1");
        text(parts.dataset);
        text(parts.endpoint);
        text(itoa(u64::from(parts.version), &mut [0; 20]));
        match parts.tenant {
            None => text("public"),
            Some(tenant) => {
                text("tenant");
                text(tenant);
            }
        }
        text(parts.canonical);
        text(parts.snapshot_id);
        text(parts.format.name());
        text(itoa(parts.project_generation, &mut [0; 20]));
        BodyKey(hasher.finalize().into())
    }

    /// A public body's strong ETag in offloader's form, `"<20 hex>"`: strong, so it names the
    /// content coding too (a body in another coding is other bytes).
    pub fn strong_etag(&self, encoding: Encoding) -> String {
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        hasher.update(encoding.header_value().unwrap_or("identity").as_bytes());
        let digest = hasher.finalize();
        let mut etag = String::with_capacity(22);
        etag.push('"');
        for byte in &digest[..10] {
            etag.push(HEX[usize::from(byte >> 4)] as char);
            etag.push(HEX[usize::from(byte & 0xf)] as char);
        }
        etag.push('"');
        etag
    }

    /// The body's weak ETag, `W/"<hex>"`, for keyed revalidation (`gateway:
    /// keyed_revalidation`): weak because the bytes on the wire also depend on the content
    /// coding, while the representation's meaning does not.
    pub fn etag(&self) -> String {
        let mut etag = String::with_capacity(2 + 2 + 64 + 1);
        etag.push_str("W/\"");
        for byte in self.0 {
            etag.push(HEX[usize::from(byte >> 4)] as char);
            etag.push(HEX[usize::from(byte & 0xf)] as char);
        }
        etag.push('"');
        etag
    }
}

/// `value` in decimal, written into `buffer` (a cache hit hashes two numbers: no allocation).
fn itoa(mut value: u64, buffer: &mut [u8; 20]) -> &str {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    std::str::from_utf8(&buffer[at..]).expect("ASCII digits")
}

/// A finished response body.
#[derive(Clone, Debug)]
pub struct CachedBody {
    pub bytes: Bytes,
    pub format: Format,
    pub content_type: &'static str,
    /// The coding of `bytes` (identity when the body was too small to be worth compressing,
    /// whatever the caller accepts).
    pub encoding: Encoding,
    pub row_count: u64,
    /// For formats without an envelope, a handler sends the next page's cursor in a header.
    pub next_cursor: Option<String>,
    /// A gzip JSON head's checksum state, which its tail's continues (`representation::splice`).
    pub head_crc: Option<HeadCrc>,
}

impl CachedBody {
    /// An identity body, as a loader returns it.
    pub fn identity(
        bytes: Bytes,
        format: Format,
        row_count: u64,
        next_cursor: Option<String>,
    ) -> CachedBody {
        CachedBody {
            bytes,
            format,
            content_type: format.content_type(),
            encoding: Encoding::Identity,
            row_count,
            next_cursor,
            head_crc: None,
        }
    }

    fn weight_bytes(&self) -> u64 {
        let cursor = self
            .next_cursor
            .as_ref()
            .map_or(0, |cursor| allocation_bytes(cursor.len() as u64));
        allocation_bytes(self.bytes.len() as u64) + cursor + ENTRY_OVERHEAD_BYTES
    }
}

/// The cache's counters, for `/metrics` and `/status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Entries removed to stay within the byte bound.
    pub evictions: u64,
    /// The weight of all entries (bodies and overhead); moka settles it lazily.
    pub bytes: u64,
    pub entries: u64,
    pub max_bytes: u64,
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

/// The response cache (see the module's documentation).
pub struct ResponseCache {
    entries: moka::future::Cache<(BodyKey, Encoding), Arc<CachedBody>>,
    counters: Arc<Counters>,
    max_bytes: u64,
}

impl ResponseCache {
    /// A cache that holds at most `max_bytes` of bodies and their overhead.
    pub fn new(max_bytes: u64) -> ResponseCache {
        assert!(
            max_bytes > 0,
            "the project check refuses a zero cache bound"
        );
        let counters = Arc::new(Counters::default());
        let listener_counters = counters.clone();
        let entries = moka::future::Cache::builder()
            .name("quiver-gateway-responses")
            .max_capacity(max_bytes)
            .weigher(|_key, body: &Arc<CachedBody>| {
                u32::try_from(body.weight_bytes()).unwrap_or(u32::MAX)
            })
            .eviction_listener(move |_key, _body, cause| {
                if cause == RemovalCause::Size {
                    listener_counters.evictions.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build();
        ResponseCache {
            entries,
            counters,
            max_bytes,
        }
    }

    /// The body of `key` in `encoding`, and whether it came without running `loader` (a hit).
    ///
    /// On a miss, `loader` produces the identity body; concurrent misses of one key wait for a
    /// single load and share its result (moka's `try_get_with`). A miss in a compressed coding
    /// takes the identity body from the cache (loading it if missing) and compresses it off the
    /// async threads. A loader's error is not cached: every waiter gets it, the next request
    /// loads again.
    pub async fn get_or_load<F, E>(
        &self,
        key: BodyKey,
        encoding: Encoding,
        loader: F,
    ) -> Result<(Arc<CachedBody>, bool), Arc<E>>
    where
        F: Future<Output = Result<CachedBody, E>>,
        E: Send + Sync + 'static,
    {
        let (body, hit) = if encoding == Encoding::Identity {
            self.identity(key, loader).await?
        } else {
            // Whether the identity body was cached, when this call makes the compressed copy.
            let identity_hit = AtomicBool::new(true);
            let entry = self
                .entries
                .entry((key, encoding))
                .or_try_insert_with(async {
                    let (identity, hit) = self.identity(key, loader).await.map_err(Shared)?;
                    identity_hit.store(hit, Ordering::Relaxed);
                    Ok::<_, Shared<E>>(compressed_copy(identity, encoding).await)
                })
                .await
                .map_err(|error| error.0.clone())?;
            let hit = !entry.is_fresh() || identity_hit.load(Ordering::Relaxed);
            (entry.into_value(), hit)
        };
        let counter = if hit {
            &self.counters.hits
        } else {
            &self.counters.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok((body, hit))
    }

    async fn identity<F, E>(
        &self,
        key: BodyKey,
        loader: F,
    ) -> Result<(Arc<CachedBody>, bool), Arc<E>>
    where
        F: Future<Output = Result<CachedBody, E>>,
        E: Send + Sync + 'static,
    {
        let entry = self
            .entries
            .entry((key, Encoding::Identity))
            .or_try_insert_with(async {
                let body = loader.await?;
                assert_eq!(
                    body.encoding,
                    Encoding::Identity,
                    "a loader returns an identity body"
                );
                Ok(Arc::new(body))
            })
            .await?;
        let hit = !entry.is_fresh();
        Ok((entry.into_value(), hit))
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.counters.hits.load(Ordering::Relaxed),
            misses: self.counters.misses.load(Ordering::Relaxed),
            evictions: self.counters.evictions.load(Ordering::Relaxed),
            bytes: self.entries.weighted_size(),
            entries: self.entries.entry_count(),
            max_bytes: self.max_bytes,
        }
    }

    /// Forgets every body (a reloaded project answers afresh; its keys differ anyway).
    pub fn clear(&self) {
        self.entries.invalidate_all();
    }

    /// Applies moka's pending work (evictions, size accounting) now, so [`ResponseCache::stats`]
    /// is exact.
    pub async fn settle(&self) {
        self.entries.run_pending_tasks().await;
    }
}

/// A loader's error as the compressed entry's loader returns it: already shared by the identity
/// entry's waiters, so it is passed on rather than wrapped again.
struct Shared<E>(Arc<E>);

/// `identity` in `encoding`, compressed on a blocking thread; the identity body itself when it
/// is too small to gain, or its format is compressed already. A JSON envelope's head is
/// compressed so that its per-response tail can be joined to it (`representation::splice`); in a
/// coding that does not join (brotli), it stays identity and each response is compressed whole.
pub async fn compressed_copy(identity: Arc<CachedBody>, encoding: Encoding) -> Arc<CachedBody> {
    if identity.bytes.len() < COMPRESS_BYTES_MIN || !identity.format.compressible() {
        return identity;
    }
    let bytes = identity.bytes.clone();
    let envelope = identity.format == Format::Json;
    let compressed = tokio::task::spawn_blocking(move || {
        if envelope {
            splice::compress_head(encoding, &bytes)
        } else {
            Some((compress(encoding, &bytes), None))
        }
    })
    .await
    .expect("compression does not panic");
    let Some((compressed, head_crc)) = compressed else {
        return identity;
    };
    Arc::new(CachedBody {
        bytes: crate::representation::exact_bytes(compressed),
        encoding,
        head_crc,
        ..(*identity).clone()
    })
}

#[cfg(test)]
mod tests;
