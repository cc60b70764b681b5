/*
 * quiver_core.h — the C ABI between quiver's DuckDB glue (C++) and its Rust core
 * (crates/quiver-duckdb, linked in as a static library). Written by hand; keep it small.
 *
 * Conventions (every function):
 *  - returns QUIVER_OK (0) on success, a QUIVER_ERR_* code otherwise;
 *  - on failure writes a NUL-terminated message, truncated to fit, into err[0..err_cap)
 *    (err may be NULL when err_cap is 0);
 *  - never unwinds: Rust panics are caught and reported as QUIVER_ERR_INTERNAL;
 *  - is safe to call from any thread.
 *
 * Data crosses only as Arrow C Data Interface structs (https://arrow.apache.org/docs/format/CDataInterface.html).
 * They are merely declared here: DuckDB's headers (duckdb/common/arrow/arrow.hpp) define them with the
 * standard layout, and a second definition here would clash with theirs. An out-parameter filled on
 * success belongs to the caller, who must call its release callback exactly once.
 */
#ifndef QUIVER_CORE_H
#define QUIVER_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowSchema;
struct ArrowArrayStream;

/* Bumped on any change to this file's signatures or conventions; the glue refuses a mismatch. */
#define QUIVER_CORE_ABI_VERSION 1

#define QUIVER_OK 0
#define QUIVER_ERR_INVALID 1  /* bad argument from the caller */
#define QUIVER_ERR_INTERNAL 2 /* a bug in the core (panic, unexpected arrow-rs error) */

/* QUIVER_CORE_ABI_VERSION as the core was built. */
uint32_t quiver_core_abi_version(void);

/* The core's version, e.g. "0.1.0": a static string, never freed. */
const char *quiver_core_version(void);

/* Schema of quiver_numbers: one non-nullable int64 column "n". */
int32_t quiver_numbers_schema(struct ArrowSchema *out, char *err, size_t err_cap);

/* A stream of the numbers 0..n-1 (column "n"), batch_rows rows per batch (<= 0: the default, 131072;
 * at most 16777216). Batches are produced lazily as the consumer calls get_next. n < 0 is invalid. */
int32_t quiver_numbers_stream(int64_t n, int64_t batch_rows, struct ArrowArrayStream *out, char *err,
                              size_t err_cap);

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_CORE_H */
