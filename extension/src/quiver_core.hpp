//===----------------------------------------------------------------------===//
// quiver — C++ conveniences over the Rust core's C ABI (quiver_core.h): owning handles, error
// codes turned into DuckDB exceptions, the interrupt check, and Arrow in and out of DataChunks.
//===----------------------------------------------------------------------===//
#pragma once

#include "duckdb/common/arrow/arrow.hpp"
#include "duckdb/common/arrow/arrow_wrapper.hpp"
#include "duckdb/common/types/data_chunk.hpp"
#include "duckdb/function/table/arrow.hpp"
#include "duckdb/main/client_context.hpp"
#include "quiver_core.h"

namespace duckdb {
namespace quiver {

//! Room for one error message from the core; longer messages are truncated by the core.
constexpr size_t ERROR_BYTES_MAX = 8192;

//! An error buffer for one call into the core.
struct CoreError {
	char text[ERROR_BYTES_MAX] = {0};
	char *data() {
		return text;
	}
	static constexpr size_t size() {
		return ERROR_BYTES_MAX;
	}
};

//! Where an error surfaces: at bind a worker's complaint is a binder error, later it is an I/O error.
enum class Phase { BIND, EXECUTE };

//! Throws the DuckDB exception for a failed core call (code != QUIVER_OK).
[[noreturn]] void ThrowCoreError(int32_t code, const CoreError &error, Phase phase);

//! Throws unless code is QUIVER_OK.
inline void Check(int32_t code, const CoreError &error, Phase phase = Phase::EXECUTE) {
	if (code != QUIVER_OK) {
		ThrowCoreError(code, error, phase);
	}
}

//! The core polls this while it waits on a worker: stops when the query is interrupted.
quiver_interrupt InterruptOf(ClientContext &context);

struct WorkerFree {
	void operator()(quiver_worker *worker) const {
		quiver_worker_free(worker);
	}
};
struct BindFree {
	void operator()(quiver_bind *bind) const {
		quiver_bind_free(bind);
	}
};
struct StreamFree {
	void operator()(quiver_stream *stream) const {
		quiver_stream_free(stream);
	}
};
struct ExecutionFree {
	void operator()(quiver_execution *execution) const {
		quiver_execution_free(execution);
	}
};
struct BufferedFree {
	void operator()(quiver_buffered *call) const {
		quiver_buffered_free(call);
	}
};
using StreamPtr = unique_ptr<quiver_stream, StreamFree>;
using BufferedPtr = unique_ptr<quiver_buffered, BufferedFree>;
using ExecutionPtr = unique_ptr<quiver_execution, ExecutionFree>;

//! One parameter of a worker function, as DuckDB sees it.
struct WorkerParameter {
	string name;
	LogicalType type;
	bool named = false;
	bool table = false;
	bool constant = false;
};

//! A worker function as registered in the catalog: the worker, the function's index there, its
//! description and parameters. Shared by the catalog entry and every bind of it.
struct WorkerFunction {
	shared_ptr<quiver_worker> worker;
	idx_t index = 0;
	string name;
	quiver_function_info info {};
	vector<WorkerParameter> parameters;
	//! Scalar and aggregate functions: the result type.
	LogicalType result_type;
};

//! A one-row batch of values as an Arrow struct array (columns named as given), through DuckDB's
//! own converter. Leaves both structs released when there are no values.
void ValuesToArrow(ClientContext &context, const vector<Value> &values, const vector<string> &names,
                   ArrowSchemaWrapper &schema, ArrowArrayWrapper &array);

//! The Arrow schema DuckDB's converter writes for these columns.
void TypesToArrowSchema(ClientContext &context, const vector<LogicalType> &types, const vector<string> &names,
                        ArrowSchemaWrapper &schema);

//! A DataChunk as an Arrow struct array (taken by the core on the next call).
void ChunkToArrow(ClientContext &context, DataChunk &chunk, ArrowArray &out);

//! Binds a worker function: the arguments (positional_<i> / named_<name>) and, for scalar and
//! table-in-out calls, the input columns.
shared_ptr<quiver_bind> BindWorkerCall(ClientContext &context, const WorkerFunction &function,
                                       const vector<Value> &positional, const vector<pair<string, Value>> &named,
                                       optional_ptr<ArrowSchemaWrapper> input_schema);

//! The unprojected output schema of a bound call, as DuckDB's Arrow scan understands it.
void BoundOutputSchema(ClientContext &context, quiver_bind &bind, ArrowSchemaWrapper &schema,
                       ArrowTableSchema &table);

} // namespace quiver
} // namespace duckdb
