/*
 * quiver_core.h — the C ABI between quiver's DuckDB glue (C++) and its Rust core
 * (crates/quiver-duckdb, linked in as a static library). Written by hand; keep it small.
 *
 * Conventions (every function):
 *  - returns QUIVER_OK (0) on success, a QUIVER_ERR_* code otherwise;
 *  - on failure writes a NUL-terminated message, truncated to fit, into err[0..err_cap)
 *    (err may be NULL when err_cap is 0);
 *  - never unwinds: Rust panics are caught and reported as QUIVER_ERR_INTERNAL;
 *  - is safe to call from any thread; one handle is used by one thread at a time, except
 *    quiver_worker and quiver_bind, which are immutable and may be shared.
 *  - calls that wait on a worker take a quiver_interrupt: the core polls it (from the calling
 *    thread) while it waits, and gives up with QUIVER_ERR_INTERRUPTED once it returns non-zero.
 *
 * Handles are opaque; each has one free function (NULL is accepted and ignored). A handle made
 * from another (a bind from a worker, a stream from a bind) keeps what it needs alive by itself.
 *
 * Data crosses only as Arrow C Data Interface structs (https://arrow.apache.org/docs/format/CDataInterface.html).
 * They are merely declared here: DuckDB's headers (duckdb/common/arrow/arrow.hpp) define them with the
 * standard layout, and a second definition here would clash with theirs. A batch is a struct array,
 * one child per column. An out-parameter filled on success belongs to the caller, who must call its
 * release callback exactly once. An ArrowArray in-parameter is taken: the core moves it out (leaving
 * it released) even on failure. An ArrowSchema in-parameter is only borrowed.
 */
#ifndef QUIVER_CORE_H
#define QUIVER_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

/* Bumped on any change to this file's signatures or conventions; the glue refuses a mismatch. */
#define QUIVER_CORE_ABI_VERSION 4

#define QUIVER_OK 0
#define QUIVER_ERR_INVALID 1     /* bad argument from the caller */
#define QUIVER_ERR_INTERNAL 2    /* a bug in the core (panic, unexpected arrow-rs error) */
#define QUIVER_ERR_REMOTE 3      /* the worker raised an error (bad argument, unknown function...) */
#define QUIVER_ERR_WORKER 4      /* the worker is unreachable, died or broke the protocol; the message
                                    names it and ends with the tail of its stderr */
#define QUIVER_ERR_INTERRUPTED 5 /* the interrupt check fired while waiting on the worker */

/* QUIVER_CORE_ABI_VERSION as the core was built. */
uint32_t quiver_core_abi_version(void);

/* The core's version, e.g. "0.1.0": a static string, never freed. */
const char *quiver_core_version(void);

/* ---- quiver_numbers (the in-process data path) ------------------------------------------------ */
/* Only in a core built with the `bench-functions` feature (the bench flavour of the extension). */

/* Schema of quiver_numbers: one non-nullable int64 column "n". */
int32_t quiver_numbers_schema(struct ArrowSchema *out, char *err, size_t err_cap);

/* A stream of the numbers 0..n-1 (column "n"), batch_rows rows per batch (<= 0: the default, 131072;
 * at most 16777216). Batches are produced lazily as the consumer calls get_next. n < 0 is invalid. */
int32_t quiver_numbers_stream(int64_t n, int64_t batch_rows, struct ArrowArrayStream *out, char *err,
                              size_t err_cap);

/* ---- interrupts ------------------------------------------------------------------------------- */

/* check(ctx) returns non-zero once the query is interrupted. check may be NULL (never interrupted). */
typedef struct quiver_interrupt {
	int32_t (*check)(void *ctx);
	void *ctx;
} quiver_interrupt;

/* ---- workers (ATTACH / DETACH) ------------------------------------------------------------------ */

typedef struct quiver_worker quiver_worker;

#define QUIVER_KIND_SCALAR 1
#define QUIVER_KIND_TABLE 2
#define QUIVER_KIND_TABLE_IN_OUT 3
#define QUIVER_KIND_AGGREGATE 4
#define QUIVER_KIND_TABLE_BUFFERING 5 /* a table in, a table out once the whole input was seen */

/* One function of a worker. Strings belong to the worker handle. */
typedef struct quiver_function_info {
	const char *name;
	const char *schema;      /* the schema it lives in, e.g. "main" */
	const char *description;
	int32_t kind;            /* QUIVER_KIND_* */
	int32_t projection_pushdown;
	int32_t filter_pushdown;
	int32_t filters_exactly_applied; /* pushed filters are applied exactly: the engine may drop its own */
	int32_t has_finalize;    /* table-in-out: a FINALIZE phase follows the input */
	int64_t max_workers;     /* most streams per call the catalog allows; 0: not given */
	int32_t stability;       /* 0 consistent, 1 volatile, 2 consistent within a query */
	int32_t special_null_handling;
	int32_t order_dependent;    /* aggregates: the result depends on the rows' order (ORDER BY inside) */
	int32_t distinct_dependent; /* aggregates: the result changes under DISTINCT */
} quiver_function_info;

/* A function of a kind the engine cannot call yet (an aggregate, a buffered table function). The
 * catalog registers a placeholder under its name whose calls fail with refusal, so it is listed
 * (duckdb_functions()) and a call names what it is. Strings belong to the worker handle. */
typedef struct quiver_skipped_function {
	const char *name;
	const char *schema;
	const char *kind;    /* as the worker declared it: "aggregate", "table_buffering" */
	const char *refusal; /* "w.f is an aggregate function; quiver's engine does not call aggregates yet" */
} quiver_skipped_function;

/* Opens the worker at location — "<command>" (stdio: one process per connection),
 * "launch:<command>" (one shared process on a Unix socket) or "unix://<path>" — and discovers its
 * catalog catalog_name (catalog_attach, catalog_contents); catalog_name NULL: the worker's only
 * catalog, or the one named like alias. alias names the worker in messages.
 * VGI_RPC_SHM_SIZE_BYTES (and _DISABLE, _DEBUG, _MIN_BATCH_BYTES) are read here. */
int32_t quiver_worker_open(const char *location, const char *alias, const char *catalog_name,
                           quiver_interrupt interrupt, quiver_worker **out, char *err, size_t err_cap);
/* quiver_worker_open for any location, also "http://host:port[/prefix]" and "https://..." (a worker
 * serving vgi-rpc's HTTP transport): token (nullable) is sent as a bearer token, ca_file (nullable)
 * names the PEM certificate authorities an https worker must chain to (default: the system's). */
int32_t quiver_worker_open_remote(const char *location, const char *alias, const char *catalog_name,
                                  const char *token, const char *ca_file, quiver_interrupt interrupt,
                                  quiver_worker **out, char *err, size_t err_cap);
/* DETACH: catalog_detach (best effort), then idle connections closed and started processes ended
 * and reaped. Calls still running on the worker fail. */
int32_t quiver_worker_detach(const quiver_worker *worker, char *err, size_t err_cap);
void quiver_worker_free(const quiver_worker *worker);
/* The schema unqualified names resolve in; valid until the handle is freed. */
const char *quiver_worker_default_schema(const quiver_worker *worker);
size_t quiver_worker_function_count(const quiver_worker *worker);
size_t quiver_worker_skipped_count(const quiver_worker *worker);
int32_t quiver_worker_skipped(const quiver_worker *worker, size_t index, quiver_skipped_function *out, char *err,
                              size_t err_cap);
int32_t quiver_worker_function(const quiver_worker *worker, size_t index, quiver_function_info *out, char *err,
                               size_t err_cap);
/* The parameters as a schema: one field per parameter, positional first, then named; field
 * metadata as the worker declares it (vgi_arg=named, vgi_type=table|any, vgi_const=true...). */
int32_t quiver_worker_function_arguments(const quiver_worker *worker, size_t index, struct ArrowSchema *out,
                                         char *err, size_t err_cap);
/* One parameter of a function (parameter indexes the fields of its arguments schema). Strings
 * belong to the worker handle. */
typedef struct quiver_parameter {
	const char *name;
	const char *default_json; /* the worker's rendering of the default (vgi_default), or NULL */
	int32_t named;            /* passed by name: name := value */
	int32_t table;            /* the TABLE input of a table-in-out function */
	int32_t any;              /* accepts any type */
	int32_t constant;         /* scalar: a constant, sent once at bind instead of per row */
	int32_t varargs;          /* collects the remaining positional arguments */
} quiver_parameter;
int32_t quiver_worker_parameter(const quiver_worker *worker, size_t index, size_t parameter, quiver_parameter *out,
                                char *err, size_t err_cap);
/* A scalar or aggregate function's result as a one-field schema. */
int32_t quiver_worker_function_result(const quiver_worker *worker, size_t index, struct ArrowSchema *out,
                                      char *err, size_t err_cap);

/* What a worker says about its catalog, a schema or a function besides signatures: shown by
 * duckdb_databases(), duckdb_schemas() and duckdb_functions(). Strings belong to the worker handle. */
typedef struct quiver_docs {
	const char *comment; /* NULL: none */
	size_t tag_count;
	const char *const *tag_keys;
	const char *const *tag_values;
	size_t example_count;
	const char *const *examples; /* each example query's SQL */
	size_t category_count;
	const char *const *categories;
} quiver_docs;
/* The catalog's own comment and tags. */
int32_t quiver_worker_catalog_docs(const quiver_worker *worker, quiver_docs *out, char *err, size_t err_cap);
/* Every schema the worker declares, the default one and those its functions name among them. */
size_t quiver_worker_schema_count(const quiver_worker *worker);
/* Schema index: its name (path components joined with '.') and documentation. */
int32_t quiver_worker_schema(const quiver_worker *worker, size_t index, const char **name, quiver_docs *out,
                             char *err, size_t err_cap);
int32_t quiver_worker_function_docs(const quiver_worker *worker, size_t index, quiver_docs *out, char *err,
                                    size_t err_cap);

/* ---- bind ------------------------------------------------------------------------------------- */

typedef struct quiver_bind quiver_bind;

/* Binds function index of worker. arguments_schema/arguments: a one-row batch with columns
 * "positional_<i>" and "named_<name>" (both NULL: no arguments). input_schema (may be NULL): the
 * input columns of a scalar or table-in-out call. */
int32_t quiver_bind_call(const quiver_worker *worker, size_t index, const struct ArrowSchema *arguments_schema,
                         struct ArrowArray *arguments, const struct ArrowSchema *input_schema,
                         quiver_interrupt interrupt, quiver_bind **out, char *err, size_t err_cap);
/* The unprojected output schema. */
int32_t quiver_bind_output_schema(const quiver_bind *bind, struct ArrowSchema *out, char *err, size_t err_cap);
/* The worker's estimate and upper bound of a table call's rows; -1 where unknown. */
int32_t quiver_bind_cardinality(const quiver_bind *bind, quiver_interrupt interrupt, int64_t *estimate,
                                int64_t *max, char *err, size_t err_cap);
void quiver_bind_free(quiver_bind *bind);

/* ---- calls: init streams ------------------------------------------------------------------------ */

typedef struct quiver_stream quiver_stream;
typedef struct quiver_execution quiver_execution;

/* Table call: the primary stream. projection_ids (NULL: all columns) index the unprojected output,
 * in output order. filter_spec (NULL: no filters) is a vgi.filters.v2 snapshot document whose
 * literals are the columns value_<N> of the one-row batch filter_values_schema/filter_values (both
 * NULL when there are none). *max_workers: streams the worker allows; more join through execution.
 * A function declaring supports_splits is planned first (table_function_plan, every page): the
 * primary and each joined stream then read splits claimed from the plan until none is left, and
 * *max_workers is min(splits, the plan's max_workers), at least 1. */
int32_t quiver_table_start(const quiver_bind *bind, const int64_t *projection_ids, size_t projection_count,
                           const char *filter_spec, const struct ArrowSchema *filter_values_schema,
                           struct ArrowArray *filter_values, quiver_interrupt interrupt,
                           quiver_execution **execution, quiver_stream **primary, int64_t *max_workers, char *err,
                           size_t err_cap);
/* A secondary stream of a table call (another thread of the same scan). */
int32_t quiver_execution_join(const quiver_execution *execution, quiver_interrupt interrupt, quiver_stream **out,
                              char *err, size_t err_cap);
void quiver_execution_free(quiver_execution *execution);

/* Scalar call: an exchange stream (one per thread). */
int32_t quiver_scalar_start(const quiver_bind *bind, quiver_interrupt interrupt, quiver_stream **out, char *err,
                            size_t err_cap);
/* Table-in-out call: its INPUT exchange stream (one per thread). */
int32_t quiver_in_out_start(const quiver_bind *bind, quiver_interrupt interrupt, quiver_stream **out, char *err,
                            size_t err_cap);

/* Buffered table function (table_buffering): one call per query, shared by its threads; the worker
 * sees the whole input before it answers. start opens the sink (global state); each thread enters
 * (local state), sinks its input batches (taken) and leaves at the end of its input: the last to
 * leave gets the output stream in *out (a producer), the others NULL. free cleans up. */
typedef struct quiver_buffered quiver_buffered;
int32_t quiver_buffered_start(const quiver_bind *bind, quiver_interrupt interrupt, quiver_buffered **out, char *err,
                              size_t err_cap);
int32_t quiver_buffered_enter(const quiver_buffered *call, char *err, size_t err_cap);
int32_t quiver_buffered_sink(const quiver_buffered *call, struct ArrowArray *input, quiver_interrupt interrupt,
                             char *err, size_t err_cap);
int32_t quiver_buffered_leave(const quiver_buffered *call, quiver_interrupt interrupt, quiver_stream **out, char *err,
                              size_t err_cap);
void quiver_buffered_free(quiver_buffered *call);

/* Producer streams (table, FINALIZE): the next non-empty batch into out, or *end = 1 at the end. */
int32_t quiver_stream_next(quiver_stream *stream, quiver_interrupt interrupt, struct ArrowArray *out, int32_t *end,
                           char *err, size_t err_cap);
/* Exchange streams: input (a batch of the bind's input schema; taken) in, the answer into out. input
 * NULL asks for more output for the previous input, after an answer with *more = 1. Scalar answers
 * have exactly the input's rows. */
int32_t quiver_stream_exchange(quiver_stream *stream, struct ArrowArray *input, quiver_interrupt interrupt,
                               struct ArrowArray *out, int32_t *more, char *err, size_t err_cap);
/* Table-in-out: ends the INPUT stream (the handle is consumed, even on failure) and returns its
 * FINALIZE stream in *out, or NULL when the function has no finalize. */
int32_t quiver_stream_finalize(quiver_stream *stream, quiver_interrupt interrupt, quiver_stream **out, char *err,
                               size_t err_cap);
/* Ends a stream in step (its connection is reused). Free it afterwards. */
int32_t quiver_stream_close(quiver_stream *stream, quiver_interrupt interrupt, char *err, size_t err_cap);
/* Frees a stream; one not closed is cancelled (bounded wait) or its connection closed. */
void quiver_stream_free(quiver_stream *stream);

/* ---- calls: aggregates (all unary, one pinned connection per bind) ----------------------------- */

/* DuckDB's state for a group is an int64 id from quiver_aggregate_new_group; the worker holds the
 * real state under the execution its aggregate_bind answered. One handle is shared by every thread
 * of the query; its calls take turns on its connection. */
typedef struct quiver_aggregate quiver_aggregate;

/* aggregate_bind: arguments as quiver_bind_call (the constant ones), input_schema the value
 * columns (NULL: none). */
int32_t quiver_aggregate_bind(const quiver_worker *worker, size_t index, const struct ArrowSchema *arguments_schema,
                              struct ArrowArray *arguments, const struct ArrowSchema *input_schema,
                              quiver_interrupt interrupt, quiver_aggregate **out, char *err, size_t err_cap);
/* The one-column output schema. */
int32_t quiver_aggregate_output_schema(const quiver_aggregate *aggregate, struct ArrowSchema *out, char *err,
                                       size_t err_cap);
/* A fresh group id. */
int32_t quiver_aggregate_new_group(const quiver_aggregate *aggregate, int64_t *out, char *err, size_t err_cap);
/* aggregate_update: row i of values (a batch of the input schema, taken; NULL without value columns)
 * goes to group groups[i]. */
int32_t quiver_aggregate_update(const quiver_aggregate *aggregate, const int64_t *groups, size_t count,
                                struct ArrowArray *values, quiver_interrupt interrupt, char *err, size_t err_cap);
/* aggregate_combine: group sources[i] merged into targets[i]. */
int32_t quiver_aggregate_combine(const quiver_aggregate *aggregate, const int64_t *sources, const int64_t *targets,
                                 size_t count, quiver_interrupt interrupt, char *err, size_t err_cap);
/* aggregate_finalize: one row per group, in order, into out (a batch of the output schema). */
int32_t quiver_aggregate_finalize(const quiver_aggregate *aggregate, const int64_t *groups, size_t count,
                                  quiver_interrupt interrupt, struct ArrowArray *out, char *err, size_t err_cap);
/* aggregate_destructor (best effort, bounded wait), then the connection back to the pool. */
void quiver_aggregate_free(quiver_aggregate *aggregate);

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_CORE_H */
