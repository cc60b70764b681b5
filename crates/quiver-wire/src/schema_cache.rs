//! Per-thread caches of schema messages, both directions.
//!
//! Every request and reply starts a new IPC stream, so a naive implementation
//! encodes and decodes the same schema flatbuffer on every call. For small calls
//! that is a large share of the CPU time, so recently seen schemas are kept:
//! encoded bytes by schema (pointer, then value equality) and decoded schemas by
//! their exact header bytes. Caches are small, bounded and per thread, so no
//! locking is involved.

use std::cell::RefCell;
use std::sync::Arc;

use arrow_schema::SchemaRef;

/// Entries kept per cache and thread; a service rarely has more live schemas.
pub const SCHEMA_CACHE_ENTRIES_MAX: usize = 32;

/// Largest schema header kept in the decode cache.
const DECODED_HEADER_BYTES_MAX: usize = 64 * 1024;

thread_local! {
    static ENCODED: RefCell<Vec<(SchemaRef, Arc<[u8]>)>> = const { RefCell::new(Vec::new()) };
    static DECODED: RefCell<Vec<(Box<[u8]>, SchemaRef)>> = const { RefCell::new(Vec::new()) };
}

/// The framed schema message of `schema`, from the cache or from `encode`.
pub(crate) fn encoded_schema(schema: &SchemaRef, encode: impl FnOnce() -> Vec<u8>) -> Arc<[u8]> {
    let hit = ENCODED.with_borrow(|cache| {
        cache
            .iter()
            .find(|(cached, _)| Arc::ptr_eq(cached, schema) || **cached == **schema)
            .map(|(_, bytes)| Arc::clone(bytes))
    });
    if let Some(bytes) = hit {
        return bytes;
    }
    let bytes: Arc<[u8]> = encode().into();
    ENCODED.with_borrow_mut(|cache| {
        if cache.len() == SCHEMA_CACHE_ENTRIES_MAX {
            cache.remove(0);
        }
        cache.push((Arc::clone(schema), Arc::clone(&bytes)));
    });
    bytes
}

/// The schema whose (verified, body-less) message header is exactly `header`, if cached.
pub(crate) fn cached_schema(header: &[u8]) -> Option<SchemaRef> {
    DECODED.with_borrow(|cache| {
        cache
            .iter()
            .find(|(bytes, _)| **bytes == *header)
            .map(|(_, schema)| Arc::clone(schema))
    })
}

/// The schema whose message header is `header`, from the cache or from `decode`.
pub(crate) fn decoded_schema<E>(
    header: &[u8],
    decode: impl FnOnce() -> Result<SchemaRef, E>,
) -> Result<SchemaRef, E> {
    let hit = DECODED.with_borrow(|cache| {
        cache
            .iter()
            .find(|(bytes, _)| **bytes == *header)
            .map(|(_, schema)| Arc::clone(schema))
    });
    if let Some(schema) = hit {
        return Ok(schema);
    }
    let schema = decode()?;
    if header.len() <= DECODED_HEADER_BYTES_MAX {
        DECODED.with_borrow_mut(|cache| {
            if cache.len() == SCHEMA_CACHE_ENTRIES_MAX {
                cache.remove(0);
            }
            cache.push((header.into(), Arc::clone(&schema)));
        });
    }
    Ok(schema)
}
