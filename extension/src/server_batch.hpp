//===----------------------------------------------------------------------===//
// quiver — how Arrow batches a server client sent reach DuckDB's SQL: the table function
// quiver_server_batch() scans the one stream the calling thread has lent it (server_batch.cpp).
// Inserts (INSERT INTO t SELECT * FROM quiver_server_batch()) and statement parameters (the rows
// read back as Values) both go through it, so DuckDB's own Arrow scan does every conversion.
//===----------------------------------------------------------------------===//
#pragma once

#include "duckdb/common/arrow/arrow.hpp"
#include "duckdb/common/common.hpp"

namespace duckdb {
class ExtensionLoader;

namespace quiver {

//! One Arrow stream a statement may scan once; releases it if nobody did.
struct LentStream {
	explicit LentStream(ArrowArrayStream *stream);
	~LentStream();
	ArrowArrayStream stream;
};

//! Lends `stream` (taken; may be null) to quiver_server_batch() calls bound on this thread while in scope.
class ScopedLentStream {
public:
	explicit ScopedLentStream(ArrowArrayStream *stream);
	~ScopedLentStream();

private:
	shared_ptr<LentStream> previous;
};

//! quiver_server_batch(): the calling thread's lent stream; a binder error when none is lent.
void RegisterServerBatchFunction(ExtensionLoader &loader);

} // namespace quiver
} // namespace duckdb
