/*
 * quiver_server.h — the C ABI between the quiver server's DuckDB side (C++, extension/src/server_*.cpp)
 * and its Rust side (crates/quiver-server, linked into the extension's static library). Written by hand;
 * keep it small.
 *
 * The direction is the reverse of quiver_core.h: the Rust server drives DuckDB. At quiver_serve(...) the
 * C++ hands the Rust side a quiver_server_ops table (function pointers + the database they run on); every
 * session the Rust server opens is a duckdb::Connection behind a quiver_server_session handle.
 *
 * Conventions (every operation):
 *  - returns QUIVER_SERVER_OK (0) on success; otherwise fills *err with DuckDB's exception type name
 *    ("Catalog", "Parser", "Interrupt", ...) and message, each NUL-terminated and truncated to fit;
 *  - never throws: every DuckDB exception is caught and reported through *err;
 *  - a session (and every cursor and prepared statement made from it) is used by one thread at a time;
 *    only ops->interrupt may be called from any thread, while the session is alive;
 *  - data crosses only as Arrow C Data Interface structs. Parameters arrive as an ArrowArrayStream of
 *    rows (one row per execution, one column per parameter, in order) that the op takes (releases) even
 *    on failure; NULL means no parameters. An ArrowArray or ArrowSchema out-parameter filled on success
 *    belongs to the caller.
 */
#ifndef QUIVER_SERVER_H
#define QUIVER_SERVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowSchema;
struct ArrowArray;
struct ArrowArrayStream;

/* Bumped on any change to this file's signatures or conventions; quiver_serve refuses a mismatch. */
#define QUIVER_SERVER_ABI_VERSION 3

#define QUIVER_SERVER_OK 0
#define QUIVER_SERVER_ERR 1

#define QUIVER_SERVER_ERROR_TYPE_BYTES 64
#define QUIVER_SERVER_ERROR_MESSAGE_BYTES 4096

typedef struct quiver_server_error {
	char type[QUIVER_SERVER_ERROR_TYPE_BYTES];       /* DuckDB's exception type name, e.g. "Catalog" */
	char message[QUIVER_SERVER_ERROR_MESSAGE_BYTES]; /* DuckDB's message, e.g. "Catalog Error: ..." */
} quiver_server_error;

typedef struct quiver_server_session quiver_server_session;
typedef struct quiver_server_prepared quiver_server_prepared;
typedef struct quiver_server_cursor quiver_server_cursor;

/* rows_changed when the statement reports no count (DDL, a SELECT). */
#define QUIVER_SERVER_NO_COUNT (-1)

typedef struct quiver_server_ops {
	uint32_t abi_version; /* QUIVER_SERVER_ABI_VERSION */
	void *db;             /* the database every session connects to; passed back to open_session */

	/* A new duckdb::Connection on db. */
	int32_t (*open_session)(void *db, quiver_server_session **out, quiver_server_error *err);
	/* Rolls back a transaction the session left open, closes its cursors' queries, frees it. */
	void (*close_session)(quiver_server_session *session);
	/* Interrupts the session's running statement, if any. Any thread. */
	void (*interrupt)(quiver_server_session *session);
	/* Whether the session is inside a transaction it opened with BEGIN. */
	int32_t (*in_transaction)(quiver_server_session *session);

	/* Runs sql: one or more statements, or exactly one with parameters (each row executes it once).
	 * With stream_input non-NULL, the statement may read that one batch stream (taken) through the
	 * table function quiver_server_batch() — how inserts reach DuckDB. *rows_changed: the sum the
	 * last statement reports, or QUIVER_SERVER_NO_COUNT. */
	int32_t (*execute)(quiver_server_session *session, const char *sql, size_t sql_len,
	                   struct ArrowArrayStream *parameters, struct ArrowArrayStream *stream_input,
	                   int64_t *rows_changed, quiver_server_error *err);
	/* Starts one statement whose result is read through a cursor, batch_rows rows per batch at most. */
	int32_t (*query)(quiver_server_session *session, const char *sql, size_t sql_len,
	                 struct ArrowArrayStream *parameters, int64_t batch_rows, quiver_server_cursor **out,
	                 quiver_server_error *err);

	/* Prepares one statement. *result_schema is left released (release == NULL) when the statement
	 * returns no rows. */
	int32_t (*prepare)(quiver_server_session *session, const char *sql, size_t sql_len,
	                   quiver_server_prepared **out, int64_t *parameter_count, struct ArrowSchema *result_schema,
	                   quiver_server_error *err);
	int32_t (*execute_prepared)(quiver_server_prepared *prepared, struct ArrowArrayStream *parameters,
	                            int64_t *rows_changed, quiver_server_error *err);
	int32_t (*query_prepared)(quiver_server_prepared *prepared, struct ArrowArrayStream *parameters,
	                          int64_t batch_rows, quiver_server_cursor **out, quiver_server_error *err);
	void (*close_prepared)(quiver_server_prepared *prepared);
	/* The statement's parameters as a struct schema: one child per parameter, in order, named by position
	 * ("1", "2", ...), of the type DuckDB expects; a parameter whose type DuckDB cannot infer (SELECT ?)
	 * is the Arrow null type ("n"). No children for a statement without parameters. */
	int32_t (*prepared_parameter_types)(quiver_server_prepared *prepared, struct ArrowSchema *out,
	                                    quiver_server_error *err);

	/* The result's schema (a struct schema, one child per column); known as soon as the cursor exists. */
	int32_t (*cursor_schema)(quiver_server_cursor *cursor, struct ArrowSchema *out, quiver_server_error *err);
	/* The next batch (a struct array), or *end = 1 and nothing written once the result is exhausted. */
	int32_t (*cursor_next)(quiver_server_cursor *cursor, struct ArrowArray *out, int32_t *end,
	                       quiver_server_error *err);
	/* Ends the query (an unread rest is discarded) and frees the cursor. */
	void (*cursor_close)(quiver_server_cursor *cursor);
} quiver_server_ops;

/* ---- implemented by the Rust server (crates/quiver-server/src/ffi.rs) ---------------------------- */

/* QUIVER_SERVER_ABI_VERSION as the Rust server was built. */
uint32_t quiver_serve_abi_version(void);

typedef struct quiver_serve_options {
	const char *token;        /* required on TCP listeners; NULL: generate one (see quiver_serve_start) */
	int32_t no_auth;          /* serve TCP without a token; refused unless every TCP listener is loopback */
	int64_t max_connections;  /* <= 0: the protocol's default */
	int64_t message_bytes_max; /* <= 0: the protocol's default */
	const char *database;     /* what connect reports as the database (a path or ":memory:") */
	const char *duckdb_version; /* what connect reports as DuckDB's version */
	const char *tls_cert;     /* PEM certificate chain of a grpc+tls:// listener; NULL: none */
	const char *tls_key;      /* PEM private key of a grpc+tls:// listener; NULL: none */
	int64_t auth_deadline_ms; /* how long a connection may take to authenticate; <= 0: the default (10 s) */
	int64_t unauthenticated_max; /* connections each listener holds before they authenticate; <= 0: 16 */
	int64_t slow_statement_ms; /* statements at least this slow are logged (0: all); < 0: none */
	int32_t log_json;         /* log events as JSON lines instead of key=value text */
	const char *metrics;      /* tcp://HOST:PORT of the metrics listener (announced METRICS:<url>); NULL: none */
} quiver_serve_options;

/* Starts serving on listen_urls (newline-separated tcp://host:port, unix:///path, and at most one
 * Flight SQL listener grpc://host:port or grpc+tls://host:port) in background threads and returns. ops
 * (and ops->db) must stay valid until quiver_serve_stop returns. On success writes one line per
 * listener into bound[0..bound_cap): "PORT:<n>", "UNIX:<absolute path>" or "FLIGHT_SQL:<uri>", then,
 * when a token was generated, "TOKEN:<hex>". One server per process: a second start fails. */
int32_t quiver_serve_start(const quiver_server_ops *ops, const char *listen_urls, const quiver_serve_options *options,
                           char *bound, size_t bound_cap, char *err, size_t err_cap);

/* Stops the server: stops accepting, interrupts running statements (their callers get
 * ServerStoppingError), closes every session (rolling back open transactions), removes Unix sockets.
 * Returns once every session ended (bounded wait). Returns 0 when nothing was serving, 1 otherwise. */
int32_t quiver_serve_stop(void);

#ifdef __cplusplus
}
#endif

#endif /* QUIVER_SERVER_H */
