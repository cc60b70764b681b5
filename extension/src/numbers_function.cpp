//===----------------------------------------------------------------------===//
// quiver — quiver_numbers(n): the data path Rust → Arrow C data → DuckDB DataChunk.
//
// The Rust core hands over an ArrowArrayStream; DuckDB's own Arrow scan (ArrowTableFunction)
// pulls batches from it and turns them into vectors, referencing int64 buffers in place.
// This is the shape every worker-backed table function will take: only the factory changes.
//===----------------------------------------------------------------------===//
#include "quiver_functions.hpp"

#include "duckdb/common/arrow/arrow_wrapper.hpp"
#include "duckdb/execution/partition_info.hpp"
#include "duckdb/function/table/arrow.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "quiver_core.h"

namespace duckdb {
namespace quiver {

namespace {

//! Error buffer size for calls into the core; longer messages are truncated by the core.
constexpr size_t ERROR_BYTES_MAX = 1024;

//! Hands DuckDB's Arrow scan the schema and stream of one quiver_numbers(n) call.
struct NumbersFactory : public ArrowScanFactory {
	explicit NumbersFactory(int64_t n_p) : n(n_p) {
	}

	void GetSchema(ArrowSchema &schema) override {
		char error[ERROR_BYTES_MAX] = {0};
		if (quiver_numbers_schema(&schema, error, sizeof(error)) != QUIVER_OK) {
			throw InvalidInputException("quiver_numbers: %s", error);
		}
	}

	unique_ptr<ArrowArrayStreamWrapper> ProduceStream(ArrowStreamParameters &) override {
		auto stream = make_uniq<ArrowArrayStreamWrapper>();
		char error[ERROR_BYTES_MAX] = {0};
		if (quiver_numbers_stream(n, 0, &stream->arrow_array_stream, error, sizeof(error)) != QUIVER_OK) {
			throw InvalidInputException("quiver_numbers: %s", error);
		}
		return stream;
	}

	const int64_t n;
};

unique_ptr<FunctionData> NumbersBind(ClientContext &context, TableFunctionBindInput &input,
                                     vector<LogicalType> &return_types, vector<Identifier> &names) {
	auto &argument = input.inputs[0];
	if (argument.IsNull()) {
		throw BinderException("quiver_numbers: n must not be NULL");
	}
	auto n = argument.GetValue<int64_t>();
	if (n < 0) {
		throw BinderException("quiver_numbers: n must be >= 0, got %lld", static_cast<long long>(n));
	}
	// The same steps as ArrowTableFunction::ArrowScanBind, with our factory instead of bind_info.
	auto result = make_uniq<ArrowScanFunctionData>(make_shared_ptr<NumbersFactory>(n));
	result->factory->GetSchema(result->schema_root.arrow_schema);
	ArrowTableFunction::PopulateArrowTableSchema(context, result->arrow_table, result->schema_root.arrow_schema);
	names = StringsToIdentifiers(result->arrow_table.GetNames());
	return_types = result->arrow_table.GetTypes();
	result->all_types = return_types;
	// One column, nothing to project away: the stream always carries it.
	result->projection_pushdown_enabled = false;
	return std::move(result);
}

unique_ptr<NodeStatistics> NumbersCardinality(ClientContext &, const FunctionData *bind_data) {
	auto &factory = bind_data->Cast<ArrowScanFunctionData>().factory->Cast<NumbersFactory>();
	auto rows = static_cast<idx_t>(factory.n);
	return make_uniq<NodeStatistics>(rows, rows);
}

//! Batch index of the chunk a thread is scanning: lets DuckDB keep insertion order across threads.
OperatorPartitionData NumbersPartitionData(ClientContext &, TableFunctionGetPartitionInput &input) {
	if (input.partition_info.RequiresPartitionColumns()) {
		throw InternalException("quiver_numbers: partition columns not supported");
	}
	return OperatorPartitionData(input.local_state->Cast<ArrowScanLocalState>().batch_index);
}

} // namespace

void RegisterNumbersFunction(ExtensionLoader &loader) {
	TableFunction function("quiver_numbers", {LogicalType::BIGINT}, ArrowTableFunction::ArrowScanFunction,
	                       NumbersBind, ArrowTableFunction::ArrowScanInitGlobal,
	                       ArrowTableFunction::ArrowScanInitLocal);
	function.cardinality = NumbersCardinality;
	function.get_partition_data = NumbersPartitionData;
	function.projection_pushdown = false;
	function.filter_pushdown = false;
	// The stream is pulled under a lock; conversion into vectors runs on every thread.
	function.parallelism = TableFunctionParallelism::SEQUENTIAL;
	loader.RegisterFunction(function);
}

} // namespace quiver
} // namespace duckdb
