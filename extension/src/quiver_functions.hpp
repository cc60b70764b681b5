//===----------------------------------------------------------------------===//
// quiver — DuckDB extension glue
//
// quiver_functions.hpp: the table functions the extension registers. Each is a thin
// adapter: arguments in, a call into the Rust core (quiver_core.h), Arrow C data out,
// converted by DuckDB's own Arrow scan.
//===----------------------------------------------------------------------===//
#pragma once

namespace duckdb {
class ExtensionLoader;

namespace quiver {

//! quiver_version(): one row, column `version` = the Rust core's version string.
void RegisterVersionFunction(ExtensionLoader &loader);

//! quiver_numbers(n BIGINT): rows 0..n-1 in column `n`, produced by the Rust core as an
//! ArrowArrayStream and scanned by DuckDB's ArrowTableFunction (zero-copy for int64).
void RegisterNumbersFunction(ExtensionLoader &loader);

} // namespace quiver
} // namespace duckdb
