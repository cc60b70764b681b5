//===----------------------------------------------------------------------===//
// quiver — DuckDB extension glue
//
// quiver_functions.hpp: what the extension registers. Each function is a thin adapter:
// arguments in, a call into the Rust core (quiver_core.h), Arrow C data out, converted by
// DuckDB's own Arrow code. One file per function kind.
//===----------------------------------------------------------------------===//
#pragma once

#include "duckdb/common/common.hpp"

namespace duckdb {
class ExtensionLoader;
struct CreateFunctionInfo;

namespace quiver {

struct WorkerFunction;

//! quiver_version(): one row, column `version` = the Rust core's version string.
void RegisterVersionFunction(ExtensionLoader &loader);

//! quiver_numbers(n BIGINT): rows 0..n-1 in column `n`, produced by the Rust core as an
//! ArrowArrayStream and scanned by DuckDB's ArrowTableFunction (zero-copy for int64). The bench
//! flavour only (QUIVER_BENCH_FUNCTIONS); numbers_function.cpp is not linked into the product.
void RegisterNumbersFunction(ExtensionLoader &loader);

//! quiver_arrow_drain(sql VARCHAR, batch_rows BIGINT): runs sql through the server's own Arrow result
//! stream in process and releases each batch; one row (rows, batches). The in-process ceiling of
//! ./quiver bench server's queries; the bench flavour only (arrow_drain_function.cpp).
void RegisterArrowDrainFunction(ExtensionLoader &loader);

//! quiver_serve(listen, ...), quiver_serve_stop() and quiver_server_batch(): the quiver server
//! (server_function.cpp, server_session.cpp, server_batch.cpp).
void RegisterServerFunctions(ExtensionLoader &loader);

//! ATTACH '<location>' AS w (TYPE quiver): a worker's functions as catalog `w` (quiver_catalog.cpp).
void RegisterStorage(ExtensionLoader &loader);

//! A worker's table function (table_function.cpp): parallel scans, projection and filter pushdown.
unique_ptr<CreateFunctionInfo> CreateWorkerTableFunction(shared_ptr<WorkerFunction> function);

//! A worker's table-in-out function (table_in_out_function.cpp): `w.f((SELECT ...))`.
unique_ptr<CreateFunctionInfo> CreateWorkerInOutFunction(shared_ptr<WorkerFunction> function);

//! A worker's aggregate function (aggregate_function.cpp): `w.f(x) ... GROUP BY`, windows.
unique_ptr<CreateFunctionInfo> CreateWorkerAggregateFunction(shared_ptr<WorkerFunction> function);

//! A worker's scalar function (scalar_function.cpp): `w.f(x)`.
unique_ptr<CreateFunctionInfo> CreateWorkerScalarFunction(shared_ptr<WorkerFunction> function);

} // namespace quiver
} // namespace duckdb
