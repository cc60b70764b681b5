//===----------------------------------------------------------------------===//
// quiver — the C++ side of the core's C ABI: exceptions from error codes, the interrupt check,
// Arrow out of Values and DataChunks (DuckDB's own converter), binding a worker call.
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"

#include "duckdb/common/arrow/arrow_converter.hpp"
#include "duckdb/common/exception.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"

namespace duckdb {
namespace quiver {

//! Set when the last interrupt check on this thread fired because max_execution_time passed.
static thread_local bool deadline_passed = false;

void ThrowCoreError(int32_t code, const CoreError &error, Phase phase) {
	string message = error.text;
	switch (code) {
	case QUIVER_ERR_INTERRUPTED:
		if (deadline_passed) {
			deadline_passed = false;
			throw InterruptException(ClientContext::QUERY_DEADLINE_ERROR);
		}
		throw InterruptException();
	case QUIVER_ERR_REMOTE:
		if (phase == Phase::BIND) {
			throw BinderException("quiver: %s", message);
		}
		throw InvalidInputException("quiver: %s", message);
	case QUIVER_ERR_WORKER:
		throw IOException("quiver: %s", message);
	case QUIVER_ERR_INVALID:
		throw InvalidInputException("quiver: %s", message);
	default:
		// Not InternalException: that would invalidate the whole database for a bug in one call.
		throw InvalidInputException("quiver: internal error in the core (code %d): %s", code, message);
	}
}

//! Interrupted, or past the query's max_execution_time: a hung worker then ends the query too.
static int32_t CheckInterrupted(void *ctx) {
	auto &context = *static_cast<ClientContext *>(ctx);
	if (context.IsInterrupted()) {
		return 1;
	}
	try {
		context.BlockingInterruptCheck();
	} catch (std::exception &) {
		deadline_passed = true;
		return 1;
	}
	return 0;
}

quiver_interrupt InterruptOf(ClientContext &context) {
	quiver_interrupt interrupt;
	interrupt.check = CheckInterrupted;
	interrupt.ctx = &context;
	return interrupt;
}

void TypesToArrowSchema(ClientContext &context, const vector<LogicalType> &types, const vector<string> &names,
                        ArrowSchemaWrapper &schema) {
	auto properties = context.GetClientProperties();
	ArrowConverter::ToArrowSchema(&schema.arrow_schema, types, names, properties);
}

void ChunkToArrow(ClientContext &context, DataChunk &chunk, ArrowArray &out) {
	auto extensions = ArrowTypeExtensionData::GetExtensionTypes(context, chunk.GetTypes());
	ArrowConverter::ToArrowArray(chunk, &out, context.GetClientProperties(), extensions);
}

void ValuesToArrow(ClientContext &context, const vector<Value> &values, const vector<string> &names,
                   ArrowSchemaWrapper &schema, ArrowArrayWrapper &array) {
	if (values.empty()) {
		return;
	}
	vector<LogicalType> types;
	for (auto &value : values) {
		types.push_back(value.type());
	}
	DataChunk chunk;
	chunk.Initialize(context, types, 1);
	chunk.SetChildCardinality(1);
	for (idx_t i = 0; i < values.size(); i++) {
		chunk.data[i].SetValue(0, values[i]);
	}
	TypesToArrowSchema(context, types, names, schema);
	ChunkToArrow(context, chunk, array.arrow_array);
}

shared_ptr<quiver_bind> BindWorkerCall(ClientContext &context, const WorkerFunction &function,
                                       const vector<Value> &positional, const vector<pair<string, Value>> &named,
                                       optional_ptr<ArrowSchemaWrapper> input_schema) {
	vector<Value> values;
	vector<string> names;
	for (idx_t i = 0; i < positional.size(); i++) {
		values.push_back(positional[i]);
		names.push_back("positional_" + to_string(i));
	}
	for (auto &entry : named) {
		values.push_back(entry.second);
		names.push_back("named_" + entry.first);
	}
	ArrowSchemaWrapper arguments_schema;
	ArrowArrayWrapper arguments;
	ValuesToArrow(context, values, names, arguments_schema, arguments);
	CoreError error;
	quiver_bind *bound = nullptr;
	auto code = quiver_bind_call(function.worker.get(), function.index,
	                             values.empty() ? nullptr : &arguments_schema.arrow_schema,
	                             values.empty() ? nullptr : &arguments.arrow_array,
	                             input_schema ? &input_schema->arrow_schema : nullptr, InterruptOf(context), &bound,
	                             error.data(), error.size());
	Check(code, error, Phase::BIND);
	return shared_ptr<quiver_bind>(bound, BindFree());
}

void BoundOutputSchema(ClientContext &context, quiver_bind &bind, ArrowSchemaWrapper &schema,
                       ArrowTableSchema &table) {
	CoreError error;
	Check(quiver_bind_output_schema(&bind, &schema.arrow_schema, error.data(), error.size()), error, Phase::BIND);
	ArrowTableFunction::PopulateArrowTableSchema(context, table, schema.arrow_schema);
}

} // namespace quiver
} // namespace duckdb
