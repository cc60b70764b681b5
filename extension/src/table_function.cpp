//===----------------------------------------------------------------------===//
// quiver — a worker's table function: `SELECT ... FROM w.numbers(1000000)`.
//
//  bind:   arguments -> the worker's `bind` (through the core) -> output schema -> column types
//  filter: DuckDB's filters on the scan -> vgi.filters.v2 (filter_pushdown.cpp); DuckDB keeps every
//          filter the worker does not promise to apply exactly
//  init:   the primary `init` stream (global state), then one secondary stream per further thread,
//          up to the worker's max_workers; projected columns are sent as projection_ids
//  scan:   each thread pulls Arrow batches from its own stream and converts them with DuckDB's
//          own Arrow scan (ArrowToDuckDB), referencing the buffers in place where it can
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"
#include "quiver_filters.hpp"
#include "quiver_functions.hpp"

#include "duckdb/parser/parsed_data/create_table_function_info.hpp"
#include "duckdb/planner/operator/logical_get.hpp"

namespace duckdb {
namespace quiver {

namespace {

struct WorkerTableInfo : public TableFunctionInfo {
	explicit WorkerTableInfo(shared_ptr<WorkerFunction> function_p) : function(std::move(function_p)) {
	}
	shared_ptr<WorkerFunction> function;
};

struct TableBindData : public TableFunctionData {
	shared_ptr<WorkerFunction> function;
	shared_ptr<quiver_bind> bind;
	shared_ptr<ArrowTableSchema> arrow_table;
	vector<LogicalType> types;
	int64_t estimate = -1;
	int64_t max = -1;
	//! Filters translated at optimization (pushdown_complex_filter), sent with every init.
	shared_ptr<TranslatedFilters> filters;

	unique_ptr<FunctionData> Copy() const override {
		auto copy = make_uniq<TableBindData>();
		copy->function = function;
		copy->bind = bind;
		copy->arrow_table = arrow_table;
		copy->types = types;
		copy->estimate = estimate;
		copy->max = max;
		copy->filters = filters;
		return std::move(copy);
	}
	bool Equals(const FunctionData &other) const override {
		return bind == other.Cast<TableBindData>().bind;
	}
	bool SupportStatementCache() const override {
		// A bind is a call to a worker, whose answer may change between executions.
		return false;
	}
};

//! The arguments of a table call: positional values in order, named ones by name.
void CollectArguments(const WorkerFunction &function, TableFunctionBindInput &input, vector<Value> &positional,
                      vector<pair<string, Value>> &named) {
	for (auto &value : input.inputs) {
		if (value.type().id() == LogicalTypeId::TABLE) {
			continue; // the input table of a table-in-out call travels as its input stream
		}
		positional.push_back(value);
	}
	for (auto &entry : input.named_parameters) {
		named.emplace_back(entry.first.GetIdentifierName(), entry.second);
	}
}

unique_ptr<FunctionData> TableBind(ClientContext &context, TableFunctionBindInput &input,
                                   vector<LogicalType> &return_types, vector<Identifier> &names) {
	auto &function = input.info->Cast<WorkerTableInfo>().function;
	vector<Value> positional;
	vector<pair<string, Value>> named;
	CollectArguments(*function, input, positional, named);
	auto result = make_uniq<TableBindData>();
	result->function = function;
	result->bind = BindWorkerCall(context, *function, positional, named, nullptr);
	ArrowSchemaWrapper schema;
	result->arrow_table = make_shared_ptr<ArrowTableSchema>();
	BoundOutputSchema(context, *result->bind, schema, *result->arrow_table);
	names = StringsToIdentifiers(result->arrow_table->GetNames());
	return_types = result->arrow_table->GetTypes();
	result->types = return_types;
	CoreError error;
	Check(quiver_bind_cardinality(result->bind.get(), InterruptOf(context), &result->estimate, &result->max,
	                              error.data(), error.size()),
	      error, Phase::BIND);
	return std::move(result);
}

unique_ptr<NodeStatistics> TableCardinality(ClientContext &, const FunctionData *bind_data) {
	auto &data = bind_data->Cast<TableBindData>();
	if (data.estimate < 0) {
		return make_uniq<NodeStatistics>();
	}
	auto estimate = NumericCast<idx_t>(data.estimate);
	if (data.max < 0) {
		return make_uniq<NodeStatistics>(estimate);
	}
	return make_uniq<NodeStatistics>(estimate, NumericCast<idx_t>(data.max));
}

void TableFilterPushdown(ClientContext &context, LogicalGet &get, FunctionData *bind_data,
                         vector<unique_ptr<Expression>> &filters) {
	auto &data = bind_data->Cast<TableBindData>();
	auto exact = data.function->info.filters_exactly_applied != 0;
	auto translated = TranslateFilters(get, data.arrow_table->GetNames(), filters, exact);
	if (translated) {
		data.filters = std::move(translated);
	}
}

struct TableGlobalState : public GlobalTableFunctionState {
	mutex lock;
	ExecutionPtr execution;
	//! The primary stream, until the first thread takes it.
	StreamPtr primary;
	idx_t max_threads = 1;

	idx_t MaxThreads() const override {
		return max_threads;
	}
};

//! One thread's stream, and DuckDB's Arrow scan state over its current batch.
struct TableLocalState : public ArrowScanLocalState {
	TableLocalState(ClientContext &context) : ArrowScanLocalState(make_uniq<ArrowArrayWrapper>(), context) {
	}
	StreamPtr stream;
	bool done = false;
};

//! The columns a scan asks the worker for, in output order: the scanned columns (anything that is
//! not a real column, such as a row id, takes column 0 as a placeholder so positions line up).
vector<int64_t> Projection(const TableBindData &data, const vector<column_t> &column_ids) {
	vector<int64_t> projection;
	for (auto &id : column_ids) {
		projection.push_back(id < data.types.size() ? NumericCast<int64_t>(id) : 0);
	}
	if (projection.empty()) {
		projection.push_back(0); // rows without columns (count(*)): the cheapest column
	}
	return projection;
}

unique_ptr<GlobalTableFunctionState> TableInitGlobal(ClientContext &context, TableFunctionInitInput &input) {
	auto &data = input.bind_data->Cast<TableBindData>();
	auto result = make_uniq<TableGlobalState>();
	auto projection = Projection(data, input.column_ids);
	auto projected = data.function->info.projection_pushdown != 0;
	ArrowSchemaWrapper values_schema;
	ArrowArrayWrapper values;
	const char *spec = nullptr;
	if (data.filters && !data.filters->spec.empty()) {
		spec = data.filters->spec.c_str();
		ValuesToArrow(context, data.filters->values, data.filters->value_names, values_schema, values);
	}
	auto has_values = data.filters && !data.filters->values.empty();
	CoreError error;
	quiver_execution *execution = nullptr;
	quiver_stream *primary = nullptr;
	int64_t max_workers = 1;
	auto code = quiver_table_start(data.bind.get(), projected ? projection.data() : nullptr, projection.size(),
	                               spec, has_values ? &values_schema.arrow_schema : nullptr,
	                               has_values ? &values.arrow_array : nullptr, InterruptOf(context), &execution,
	                               &primary, &max_workers, error.data(), error.size());
	Check(code, error);
	result->execution = ExecutionPtr(execution);
	result->primary = StreamPtr(primary);
	result->max_threads = NumericCast<idx_t>(MaxValue<int64_t>(max_workers, 1));
	return std::move(result);
}

unique_ptr<LocalTableFunctionState> TableInitLocal(ExecutionContext &context, TableFunctionInitInput &input,
                                                   GlobalTableFunctionState *global_state) {
	auto &global = global_state->Cast<TableGlobalState>();
	auto &data = input.bind_data->Cast<TableBindData>();
	auto result = make_uniq<TableLocalState>(context.client);
	result->column_ids = input.column_ids;
	if (data.function->info.projection_pushdown == 0) {
		result->column_ids.clear();
	}
	{
		lock_guard<mutex> guard(global.lock);
		result->stream = std::move(global.primary);
	}
	if (!result->stream) {
		CoreError error;
		quiver_stream *stream = nullptr;
		Check(quiver_execution_join(global.execution.get(), InterruptOf(context.client), &stream, error.data(),
		                            error.size()),
		      error);
		result->stream = StreamPtr(stream);
	}
	return std::move(result);
}

//! The next batch of this thread's stream into the scan state; false at the end of the stream.
bool NextBatch(ClientContext &context, TableLocalState &state) {
	auto batch = make_shared_ptr<ArrowArrayWrapper>();
	int32_t end = 0;
	CoreError error;
	Check(quiver_stream_next(state.stream.get(), InterruptOf(context), &batch->arrow_array, &end, error.data(),
	                         error.size()),
	      error);
	if (end) {
		Check(quiver_stream_close(state.stream.get(), InterruptOf(context), error.data(), error.size()), error);
		state.stream.reset();
		state.done = true;
		return false;
	}
	state.chunk = std::move(batch);
	state.Reset();
	return true;
}

void TableScan(ClientContext &context, TableFunctionInput &input, DataChunk &output) {
	auto &state = input.local_state->Cast<TableLocalState>();
	auto &data = input.bind_data->Cast<TableBindData>();
	while (state.chunk_offset >= NumericCast<idx_t>(state.chunk->arrow_array.length)) {
		if (state.done || !NextBatch(context, state)) {
			return;
		}
	}
	auto size = MinValue<idx_t>(STANDARD_VECTOR_SIZE,
	                            NumericCast<idx_t>(state.chunk->arrow_array.length) - state.chunk_offset);
	output.SetChildCardinality(size);
	ArrowTableFunction::ArrowToDuckDB(state, data.arrow_table->GetColumns(), output);
	state.chunk_offset += size;
}

} // namespace

unique_ptr<CreateFunctionInfo> CreateWorkerTableFunction(shared_ptr<WorkerFunction> function) {
	TableFunction table(Identifier(function->name), vector<LogicalType> {}, TableScan, TableBind, TableInitGlobal,
	                    TableInitLocal);
	auto &signature = table.GetSignature();
	vector<reference<WorkerParameter>> named;
	for (auto &parameter : function->parameters) {
		if (parameter.named) {
			named.push_back(parameter);
		} else {
			signature.AddPositionalOnly(Identifier(parameter.name), parameter.type);
		}
	}
	if (!named.empty()) {
		// Named parameters are options: one the call leaves out is not sent, the worker's default applies.
		signature.WithTypedKwargs("options", [&](TypedKwargs &options) {
			for (auto &parameter : named) {
				options.Add(Identifier(parameter.get().name), parameter.get().type);
			}
		});
	}
	table.cardinality = TableCardinality;
	table.projection_pushdown = function->info.projection_pushdown != 0;
	table.filter_pushdown = false;
	if (function->info.filter_pushdown) {
		table.pushdown_complex_filter = TableFilterPushdown;
	}
	table.order_preservation_type =
	    function->info.max_workers == 1 ? OrderPreservationType::INSERTION_ORDER : OrderPreservationType::NO_ORDER;
	table.function_info = make_shared_ptr<WorkerTableInfo>(function);
	return make_uniq<CreateTableFunctionInfo>(std::move(table));
}

} // namespace quiver
} // namespace duckdb
