//! The RPC method names of vgi.v2: what the engine calls and a worker serves. `bind`, `init` and
//! the catalog discovery methods are required; `table_function_cardinality` and
//! `catalog_contents` are optional (an engine falls back when a worker lacks them).

/// Binds a call: arguments (and input schema) in, output schema out.
pub const BIND: &str = "bind";
/// Opens a call's stream: the `GlobalInitResponse` header, then batches.
pub const INIT: &str = "init";
/// An estimate of a table function's row count.
pub const TABLE_FUNCTION_CARDINALITY: &str = "table_function_cardinality";
/// Plans a table scan into named splits, one page per call (`splits.rs`).
pub const TABLE_FUNCTION_PLAN: &str = "table_function_plan";
/// Buffered table functions: stores one input batch (`buffering.rs`).
pub const TABLE_BUFFERING_PROCESS: &str = "table_buffering_process";
/// Buffered table functions: the input ended; answers the finalize ids.
pub const TABLE_BUFFERING_COMBINE: &str = "table_buffering_combine";
/// Buffered table functions: best-effort cleanup.
pub const TABLE_BUFFERING_DESTRUCTOR: &str = "table_buffering_destructor";
/// The catalogs a worker offers.
pub const CATALOG_CATALOGS: &str = "catalog_catalogs";
/// Attaches one catalog; answers the token later calls carry.
pub const CATALOG_ATTACH: &str = "catalog_attach";
/// Detaches a catalog.
pub const CATALOG_DETACH: &str = "catalog_detach";
/// The schemas of an attached catalog.
pub const CATALOG_SCHEMAS: &str = "catalog_schemas";
/// One schema of an attached catalog.
pub const CATALOG_SCHEMA_GET: &str = "catalog_schema_get";
/// The functions of one schema.
pub const CATALOG_SCHEMA_CONTENTS_FUNCTIONS: &str = "catalog_schema_contents_functions";
/// The macros of one schema.
pub const CATALOG_SCHEMA_CONTENTS_MACROS: &str = "catalog_schema_contents_macros";
/// Everything an attached catalog holds, in one call.
pub const CATALOG_CONTENTS: &str = "catalog_contents";
/// The catalog's version, for caching.
pub const CATALOG_VERSION: &str = "catalog_version";
/// The `COPY ... FROM` formats a catalog offers.
pub const CATALOG_COPY_FROM_FORMATS: &str = "catalog_copy_from_formats";
/// Starts a catalog transaction.
pub const CATALOG_TRANSACTION_BEGIN: &str = "catalog_transaction_begin";
