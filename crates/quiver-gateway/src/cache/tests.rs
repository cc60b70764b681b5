use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use super::*;

fn parts(canonical: &str) -> KeyParts<'_> {
    KeyParts {
        dataset: "orders",
        endpoint: "orders_by_region",
        version: 1,
        tenant: Some("acme"),
        canonical,
        snapshot_id: "snap-1",
        format: Format::Json,
        project_generation: 0,
    }
}

fn json_body(bytes: usize) -> CachedBody {
    let text: String = "{\"region\":\"eu-west\",\"n\":1}"
        .chars()
        .cycle()
        .take(bytes)
        .collect();
    CachedBody::identity(Bytes::from(text), Format::Json, 3, None)
}

/// A loader that counts its runs and yields for a while, so concurrent callers arrive during
/// the load (if one arrives after, it is a hit: the assertions hold either way).
async fn counted_load(runs: &AtomicUsize, bytes: usize) -> Result<CachedBody, String> {
    runs.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(json_body(bytes))
}

#[test]
fn every_part_of_the_key_changes_it() {
    let base = BodyKey::new(&parts("region=eu"));
    let variants = [
        KeyParts {
            dataset: "orders2",
            ..parts("region=eu")
        },
        KeyParts {
            endpoint: "other",
            ..parts("region=eu")
        },
        KeyParts {
            version: 2,
            ..parts("region=eu")
        },
        KeyParts {
            tenant: Some("other"),
            ..parts("region=eu")
        },
        KeyParts {
            tenant: None,
            ..parts("region=eu")
        },
        KeyParts {
            tenant: Some(""),
            ..parts("region=eu")
        },
        parts("region=us"),
        KeyParts {
            snapshot_id: "snap-2",
            ..parts("region=eu")
        },
        KeyParts {
            format: Format::Csv,
            ..parts("region=eu")
        },
        KeyParts {
            project_generation: 1,
            ..parts("region=eu")
        },
    ];
    for variant in variants {
        assert_ne!(BodyKey::new(&variant), base, "{variant:?}");
    }
    assert_eq!(BodyKey::new(&parts("region=eu")), base);
    // Length prefixes: moving a boundary between parts changes the key.
    let shifted = KeyParts {
        dataset: "ordersorders_by_region",
        endpoint: "",
        ..parts("region=eu")
    };
    assert_ne!(BodyKey::new(&shifted), base);
    assert_ne!(
        BodyKey::new(&KeyParts {
            tenant: None,
            ..parts("")
        }),
        BodyKey::new(&KeyParts {
            tenant: Some(""),
            ..parts("")
        })
    );
}

#[test]
fn etag_is_weak_and_names_the_key() {
    let etag = BodyKey::new(&parts("region=eu")).etag();
    assert!(etag.starts_with("W/\"") && etag.ends_with('"'), "{etag}");
    let hex = &etag[3..etag.len() - 1];
    assert_eq!(hex.len(), 64);
    assert!(hex
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_ne!(etag, BodyKey::new(&parts("region=us")).etag());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_misses_run_the_loader_once() {
    const CALLERS: usize = 32;
    let cache = Arc::new(ResponseCache::new(1 << 20));
    let runs = Arc::new(AtomicUsize::new(0));
    let key = BodyKey::new(&parts("region=eu"));
    let barrier = Arc::new(tokio::sync::Barrier::new(CALLERS));
    let mut tasks = Vec::new();
    for _ in 0..CALLERS {
        let (cache, runs, barrier) = (cache.clone(), runs.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            cache
                .get_or_load(key, Encoding::Identity, counted_load(&runs, 1000))
                .await
                .unwrap()
        }));
    }
    let mut misses = 0;
    for task in tasks {
        let (body, hit) = task.await.unwrap();
        assert_eq!(body.bytes.len(), 1000);
        misses += usize::from(!hit);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(misses, 1);
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (CALLERS as u64 - 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_compressed_misses_load_and_compress_once() {
    const CALLERS: usize = 16;
    let cache = Arc::new(ResponseCache::new(1 << 20));
    let runs = Arc::new(AtomicUsize::new(0));
    let key = BodyKey::new(&parts("region=eu"));
    let mut tasks = Vec::new();
    for _ in 0..CALLERS {
        let (cache, runs) = (cache.clone(), runs.clone());
        tasks.push(tokio::spawn(async move {
            cache
                .get_or_load(key, Encoding::Zstd, counted_load(&runs, 20_000))
                .await
                .unwrap()
        }));
    }
    let mut bodies = Vec::new();
    for task in tasks {
        bodies.push(task.await.unwrap().0);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    for body in &bodies {
        // One compressed entry, shared by every caller.
        assert!(Arc::ptr_eq(body, &bodies[0]));
        assert_eq!(body.encoding, Encoding::Zstd);
    }
    assert_eq!(
        zstd::stream::decode_all(&bodies[0].bytes[..]).unwrap(),
        json_body(20_000).bytes.to_vec()
    );
    cache.settle().await;
    assert_eq!(
        cache.stats().entries,
        2,
        "the identity body and its zstd copy"
    );
}

#[tokio::test]
async fn a_compressed_copy_comes_from_the_cached_identity_body() {
    let cache = ResponseCache::new(1 << 20);
    let runs = AtomicUsize::new(0);
    let key = BodyKey::new(&parts("region=eu"));

    let (identity, hit) = cache
        .get_or_load(key, Encoding::Identity, counted_load(&runs, 8000))
        .await
        .unwrap();
    assert!(!hit);
    assert_eq!(identity.encoding, Encoding::Identity);
    assert_eq!(identity.content_type, "application/json; charset=utf-8");

    // Not cached in gzip, but the identity body is: no load, so a hit.
    let (gzip, hit) = cache
        .get_or_load(key, Encoding::Gzip, counted_load(&runs, 8000))
        .await
        .unwrap();
    assert!(hit);
    assert_eq!(gzip.encoding, Encoding::Gzip);
    assert!(gzip.bytes.len() < identity.bytes.len() / 4);
    assert_eq!(
        (gzip.row_count, gzip.format),
        (identity.row_count, identity.format)
    );

    let (again, hit) = cache
        .get_or_load(key, Encoding::Gzip, counted_load(&runs, 8000))
        .await
        .unwrap();
    assert!(hit);
    assert!(Arc::ptr_eq(&again, &gzip));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // A compressed miss of an uncached body loads it: a miss.
    let other = BodyKey::new(&parts("region=us"));
    let (zstd, hit) = cache
        .get_or_load(other, Encoding::Zstd, counted_load(&runs, 8000))
        .await
        .unwrap();
    assert!(!hit);
    assert_eq!(zstd.encoding, Encoding::Zstd);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A JSON head does not join its tail in brotli: no brotli copy is made.
    let (br, _) = cache
        .get_or_load(other, Encoding::Br, counted_load(&runs, 8000))
        .await
        .unwrap();
    assert_eq!(br.encoding, Encoding::Identity);
    let stats = cache.stats();
    assert_eq!((stats.hits, stats.misses), (3, 2));
}

#[tokio::test]
async fn small_and_parquet_bodies_stay_uncompressed() {
    let cache = ResponseCache::new(1 << 20);
    let small = BodyKey::new(&parts("small"));
    let (body, _) = cache
        .get_or_load(small, Encoding::Zstd, async {
            Ok::<_, String>(json_body(100))
        })
        .await
        .unwrap();
    assert_eq!(body.encoding, Encoding::Identity);
    assert_eq!(body.bytes.len(), 100);

    let parquet_key = BodyKey::new(&KeyParts {
        format: Format::Parquet,
        ..parts("p")
    });
    let parquet = CachedBody::identity(Bytes::from(vec![7u8; 50_000]), Format::Parquet, 1, None);
    let (body, _) = cache
        .get_or_load(parquet_key, Encoding::Br, async {
            Ok::<_, String>(parquet)
        })
        .await
        .unwrap();
    assert_eq!(body.encoding, Encoding::Identity);
    assert_eq!(body.content_type, "application/vnd.apache.parquet");
}

#[tokio::test]
async fn a_failed_load_is_not_cached() {
    let cache = ResponseCache::new(1 << 20);
    let key = BodyKey::new(&parts("region=eu"));
    for encoding in [Encoding::Identity, Encoding::Zstd] {
        let error = cache
            .get_or_load(key, encoding, async {
                Err::<CachedBody, _>("server gone".to_string())
            })
            .await
            .unwrap_err();
        assert_eq!(*error, "server gone");
    }
    let (body, hit) = cache
        .get_or_load(key, Encoding::Identity, async {
            Ok::<_, String>(json_body(10))
        })
        .await
        .unwrap();
    assert!(!hit);
    assert_eq!(body.bytes.len(), 10);
}

#[tokio::test]
async fn the_byte_bound_holds_and_evictions_are_counted() {
    const MAX_BYTES: u64 = 64 * 1024;
    let cache = ResponseCache::new(MAX_BYTES);
    for index in 0..100 {
        let key = BodyKey::new(&parts(&format!("page={index}")));
        cache
            .get_or_load(key, Encoding::Identity, async {
                Ok::<_, String>(json_body(4096))
            })
            .await
            .unwrap();
        // Each body is read again, so moka's admission sees use and keeps the newer ones too.
        cache
            .get_or_load(key, Encoding::Identity, async {
                Ok::<_, String>(json_body(4096))
            })
            .await
            .unwrap();
    }
    cache.settle().await;
    let stats = cache.stats();
    assert!(stats.bytes <= MAX_BYTES, "{stats:?}");
    assert!(stats.entries < 100, "{stats:?}");
    assert!(stats.evictions > 0, "{stats:?}");
    assert_eq!(stats.max_bytes, MAX_BYTES);
    assert_eq!(
        stats.bytes,
        stats.entries * (allocation_bytes(4096) + ENTRY_OVERHEAD_BYTES)
    );
}

#[test]
fn allocations_are_rounded_up_to_a_quarter_of_their_power_of_two() {
    assert_eq!(allocation_bytes(0), 64);
    assert_eq!(allocation_bytes(64), 64);
    assert_eq!(allocation_bytes(65), 80);
    assert_eq!(allocation_bytes(4096), 4096);
    assert_eq!(allocation_bytes(4097), 5120);
    assert_eq!(allocation_bytes(12_000), 12_288);
    for len in [100u64, 1000, 12_345, 1 << 20, (1 << 20) + 1] {
        let allocated = allocation_bytes(len);
        assert!(
            allocated >= len && allocated <= len + len / 4 + 16,
            "{len} -> {allocated}"
        );
    }
}

#[tokio::test]
async fn a_body_larger_than_the_bound_is_served_but_not_kept() {
    let cache = ResponseCache::new(16 * 1024);
    let key = BodyKey::new(&parts("huge"));
    let (body, hit) = cache
        .get_or_load(key, Encoding::Identity, async {
            Ok::<_, String>(json_body(100_000))
        })
        .await
        .unwrap();
    assert!(!hit);
    assert_eq!(body.bytes.len(), 100_000);
    cache.settle().await;
    assert!(cache.stats().bytes <= 16 * 1024);
}
