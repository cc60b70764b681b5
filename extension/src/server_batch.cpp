//===----------------------------------------------------------------------===//
// quiver — quiver_server_batch(): scans the Arrow stream the calling thread lent (server_batch.hpp).
// A thread-local, not an argument: a pointer in SQL text would let any SQL user read memory.
//===----------------------------------------------------------------------===//
#include "server_batch.hpp"

#include "duckdb/common/arrow/arrow_wrapper.hpp"
#include "duckdb/function/table/arrow.hpp"
#include "duckdb/main/extension/extension_loader.hpp"

namespace duckdb {
namespace quiver {

namespace {

thread_local shared_ptr<LentStream> lent_stream;

struct LentStreamFactory : public ArrowScanFactory {
	explicit LentStreamFactory(shared_ptr<LentStream> lent_p) : lent(std::move(lent_p)) {
	}

	void GetSchema(ArrowSchema &schema) override {
		auto &stream = lent->stream;
		if (!stream.release) {
			throw InvalidInputException("quiver_server_batch: the batch stream was already read");
		}
		if (stream.get_schema(&stream, &schema) != 0) {
			auto error = stream.get_last_error(&stream);
			throw InvalidInputException("quiver_server_batch: %s", error ? error : "no schema");
		}
	}

	unique_ptr<ArrowArrayStreamWrapper> ProduceStream(ArrowStreamParameters &) override {
		if (!lent->stream.release) {
			throw InvalidInputException("quiver_server_batch: the batch stream was already read");
		}
		auto wrapper = make_uniq<ArrowArrayStreamWrapper>();
		wrapper->arrow_array_stream = lent->stream;
		lent->stream.release = nullptr;
		return wrapper;
	}

	shared_ptr<LentStream> lent;
};

unique_ptr<FunctionData> BatchBind(ClientContext &context, TableFunctionBindInput &, vector<LogicalType> &return_types,
                                   vector<Identifier> &names) {
	if (!lent_stream) {
		throw BinderException("quiver_server_batch() reads the batches of a quiver server call; none is in progress");
	}
	auto result = make_uniq<ArrowScanFunctionData>(make_shared_ptr<LentStreamFactory>(lent_stream));
	result->factory->GetSchema(result->schema_root.arrow_schema);
	ArrowTableFunction::PopulateArrowTableSchema(context, result->arrow_table, result->schema_root.arrow_schema);
	names = StringsToIdentifiers(result->arrow_table.GetNames());
	return_types = result->arrow_table.GetTypes();
	result->all_types = return_types;
	// The stream always carries every column.
	result->projection_pushdown_enabled = false;
	return std::move(result);
}

//! The batch index of the Arrow array a scan state holds (DuckDB's arrow scan numbers them as it pulls
//! them from the stream). Declaring it is what lets DuckDB scan in parallel and still keep the order.
OperatorPartitionData BatchPartitionData(ClientContext &, TableFunctionGetPartitionInput &input) {
	if (input.partition_info.RequiresPartitionColumns()) {
		throw InternalException("quiver_server_batch() has no partition columns");
	}
	auto &state = input.local_state->Cast<ArrowScanLocalState>();
	return OperatorPartitionData(state.batch_index);
}

} // namespace

LentStream::LentStream(ArrowArrayStream *source) {
	stream = *source;
	source->release = nullptr;
}

LentStream::~LentStream() {
	if (stream.release) {
		stream.release(&stream);
	}
}

ScopedLentStream::ScopedLentStream(ArrowArrayStream *stream) : previous(std::move(lent_stream)) {
	lent_stream = stream && stream->release ? make_shared_ptr<LentStream>(stream) : nullptr;
}

ScopedLentStream::~ScopedLentStream() {
	lent_stream = std::move(previous);
}

void RegisterServerBatchFunction(ExtensionLoader &loader) {
	TableFunction function("quiver_server_batch", {}, ArrowTableFunction::ArrowScanFunction, BatchBind,
	                       ArrowTableFunction::ArrowScanInitGlobal, ArrowTableFunction::ArrowScanInitLocal);
	function.projection_pushdown = false;
	function.filter_pushdown = false;
	// DuckDB's threads take the stream's batches in turn and append them in parallel; the batch index
	// keeps the stream's order in the table and in a parameter query's result.
	function.get_partition_data = BatchPartitionData;
	loader.RegisterFunction(function);
}

} // namespace quiver
} // namespace duckdb
