//===----------------------------------------------------------------------===//
// quiver — a worker's table-in-out function: `SELECT * FROM w.echo((SELECT ...))`.
//
//  bind:    the non-TABLE arguments and the input table's columns -> the worker's `bind`
//  execute: per thread, an INPUT exchange stream. DuckDB hands over 2048-row chunks; they are
//           gathered into batches of BATCH_ROWS before each exchange (one round trip per batch, not
//           per chunk). An answer the worker splits (HAVE_MORE_OUTPUT) is asked for with CONTINUE.
//  final:   the last partial batch, then — for functions with a finalize — the FINALIZE stream on the
//           same connection, drained to its end
//  buffered (table_buffering): one call per query (global state); every thread sinks its gathered
//           batches into it and produces nothing until its input ends; the last thread to end gets
//           the worker's output stream (the Rust core counts the threads) and drains it
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"
#include "quiver_functions.hpp"

#include "duckdb/execution/execution_context.hpp"
#include "duckdb/parser/parsed_data/create_table_function_info.hpp"

namespace duckdb {
namespace quiver {

namespace {

//! Input rows gathered per exchange.
constexpr idx_t BATCH_ROWS = 64 * STANDARD_VECTOR_SIZE;

struct WorkerInOutInfo : public TableFunctionInfo {
	explicit WorkerInOutInfo(shared_ptr<WorkerFunction> function_p) : function(std::move(function_p)) {
	}
	shared_ptr<WorkerFunction> function;
};

struct InOutBindData : public TableFunctionData {
	shared_ptr<WorkerFunction> function;
	shared_ptr<quiver_bind> bind;
	shared_ptr<ArrowTableSchema> arrow_table;
	vector<LogicalType> input_types;

	unique_ptr<FunctionData> Copy() const override {
		return make_uniq<InOutBindData>(*this);
	}
	bool Equals(const FunctionData &other) const override {
		return bind == other.Cast<InOutBindData>().bind;
	}
	bool SupportStatementCache() const override {
		return false;
	}
};

unique_ptr<FunctionData> InOutBind(ClientContext &context, TableFunctionBindInput &input,
                                   vector<LogicalType> &return_types, vector<Identifier> &names) {
	auto &function = input.info->Cast<WorkerInOutInfo>().function;
	// The TABLE argument travels as the input stream; the others are numbered in declaration order.
	vector<reference<WorkerParameter>> declared;
	for (auto &parameter : function->parameters) {
		if (!parameter.named) {
			declared.push_back(parameter);
		}
	}
	vector<Value> positional;
	for (idx_t i = 0; i < input.inputs.size(); i++) {
		auto is_table = i < declared.size() ? declared[i].get().table
		                                    : input.inputs[i].type().id() == LogicalTypeId::TABLE;
		if (!is_table) {
			positional.push_back(input.inputs[i]);
		}
	}
	vector<pair<string, Value>> named;
	for (auto &entry : input.named_parameters) {
		named.emplace_back(entry.first.GetIdentifierName(), entry.second);
	}
	vector<string> input_names;
	for (idx_t i = 0; i < input.input_table_types.size(); i++) {
		auto name = i < input.input_table_names.size() ? input.input_table_names[i].GetIdentifierName() : string();
		input_names.push_back(name.empty() ? "col" + to_string(i) : name);
	}
	auto result = make_uniq<InOutBindData>();
	result->function = function;
	result->input_types = input.input_table_types;
	ArrowSchemaWrapper input_schema;
	TypesToArrowSchema(context, result->input_types, input_names, input_schema);
	result->bind = BindWorkerCall(context, *function, positional, named, &input_schema);
	ArrowSchemaWrapper output_schema;
	result->arrow_table = make_shared_ptr<ArrowTableSchema>();
	BoundOutputSchema(context, *result->bind, output_schema, *result->arrow_table);
	names = StringsToIdentifiers(result->arrow_table->GetNames());
	return_types = result->arrow_table->GetTypes();
	return std::move(result);
}

bool IsBuffered(const InOutBindData &data) {
	return data.function->info.kind == QUIVER_KIND_TABLE_BUFFERING;
}

//! A buffered call's sink, shared by the query's threads (empty for a streaming table-in-out).
struct InOutGlobalState : public GlobalTableFunctionState {
	BufferedPtr buffered;
};

unique_ptr<GlobalTableFunctionState> InOutInitGlobal(ClientContext &context, TableFunctionInitInput &input) {
	auto &data = input.bind_data->Cast<InOutBindData>();
	auto result = make_uniq<InOutGlobalState>();
	if (IsBuffered(data)) {
		CoreError error;
		quiver_buffered *call = nullptr;
		Check(quiver_buffered_start(data.bind.get(), InterruptOf(context), &call, error.data(), error.size()), error);
		result->buffered = BufferedPtr(call);
	}
	return std::move(result);
}

struct InOutLocalState : public ArrowScanLocalState {
	InOutLocalState(ClientContext &context) : ArrowScanLocalState(make_uniq<ArrowArrayWrapper>(), context) {
	}
	StreamPtr stream;
	//! Input gathered for the next exchange.
	DataChunk buffer;
	//! The current input chunk is in the buffer (DuckDB passes it again while we return HAVE_MORE_OUTPUT).
	bool input_taken = false;
	//! The worker has more output for the last input batch.
	bool more = false;
	//! The input has ended and the FINALIZE phase began.
	bool finalizing = false;
	//! A buffered call: the query's sink (owned by the global state).
	quiver_buffered *buffered = nullptr;
};

unique_ptr<LocalTableFunctionState> InOutInitLocal(ExecutionContext &context, TableFunctionInitInput &input,
                                                   GlobalTableFunctionState *global_state) {
	auto &data = input.bind_data->Cast<InOutBindData>();
	auto result = make_uniq<InOutLocalState>(context.client);
	result->buffer.Initialize(context.client, data.input_types, BATCH_ROWS);
	CoreError error;
	if (IsBuffered(data)) {
		result->buffered = global_state->Cast<InOutGlobalState>().buffered.get();
		Check(quiver_buffered_enter(result->buffered, error.data(), error.size()), error);
		return std::move(result);
	}
	quiver_stream *stream = nullptr;
	Check(quiver_in_out_start(data.bind.get(), InterruptOf(context.client), &stream, error.data(), error.size()),
	      error);
	result->stream = StreamPtr(stream);
	return std::move(result);
}

//! Sends the gathered input (or, when `buffered` is false, asks for more output of the last one).
void Exchange(ClientContext &context, InOutLocalState &state, bool buffered) {
	ArrowArray input;
	if (buffered) {
		ChunkToArrow(context, state.buffer, input);
		state.buffer.Reset();
	}
	auto answer = make_shared_ptr<ArrowArrayWrapper>();
	int32_t more = 0;
	CoreError error;
	Check(quiver_stream_exchange(state.stream.get(), buffered ? &input : nullptr, InterruptOf(context),
	                             &answer->arrow_array, &more, error.data(), error.size()),
	      error);
	state.more = more != 0;
	state.chunk = std::move(answer);
	state.Reset();
}

//! A buffered call: sends the gathered input to the worker, which answers nothing yet.
void Sink(ClientContext &context, InOutLocalState &state) {
	ArrowArray input;
	ChunkToArrow(context, state.buffer, input);
	state.buffer.Reset();
	CoreError error;
	Check(quiver_buffered_sink(state.buffered, &input, InterruptOf(context), error.data(), error.size()), error);
}

//! Moves up to one vector of the current answer into `output`; false when nothing was left.
bool Emit(const InOutBindData &data, InOutLocalState &state, DataChunk &output) {
	auto length = NumericCast<idx_t>(state.chunk->arrow_array.length);
	if (state.chunk_offset >= length) {
		return false;
	}
	auto size = MinValue<idx_t>(STANDARD_VECTOR_SIZE, length - state.chunk_offset);
	output.SetChildCardinality(size);
	ArrowTableFunction::ArrowToDuckDB(state, data.arrow_table->GetColumns(), output);
	state.chunk_offset += size;
	return true;
}

OperatorResultType InOutFunction(ExecutionContext &context, TableFunctionInput &data_p, DataChunk &input,
                                 DataChunk &output) {
	auto &data = data_p.bind_data->Cast<InOutBindData>();
	auto &state = data_p.local_state->Cast<InOutLocalState>();
	if (state.buffered) {
		if (state.buffer.size() + input.size() > BATCH_ROWS) {
			Sink(context.client, state);
		}
		state.buffer.Append(input);
		return OperatorResultType::NEED_MORE_INPUT;
	}
	while (true) {
		if (Emit(data, state, output)) {
			return OperatorResultType::HAVE_MORE_OUTPUT;
		}
		if (state.more) {
			Exchange(context.client, state, false);
			continue;
		}
		if (!state.input_taken) {
			if (state.buffer.size() + input.size() > BATCH_ROWS) {
				Exchange(context.client, state, true);
				continue;
			}
			state.buffer.Append(input);
			state.input_taken = true;
		}
		if (state.buffer.size() + STANDARD_VECTOR_SIZE > BATCH_ROWS) {
			Exchange(context.client, state, true);
			continue;
		}
		state.input_taken = false;
		return OperatorResultType::NEED_MORE_INPUT;
	}
}

OperatorFinalizeResultType InOutFinal(ExecutionContext &context, TableFunctionInput &data_p, DataChunk &output) {
	auto &data = data_p.bind_data->Cast<InOutBindData>();
	auto &state = data_p.local_state->Cast<InOutLocalState>();
	CoreError error;
	while (true) {
		if (Emit(data, state, output)) {
			return OperatorFinalizeResultType::HAVE_MORE_OUTPUT;
		}
		if (!state.finalizing && state.buffered) {
			if (state.buffer.size() > 0) {
				Sink(context.client, state);
			}
			state.finalizing = true;
			quiver_stream *output_stream = nullptr;
			Check(quiver_buffered_leave(state.buffered, InterruptOf(context.client), &output_stream, error.data(),
			                            error.size()),
			      error);
			state.stream = StreamPtr(output_stream);
			continue;
		}
		if (!state.stream) {
			return OperatorFinalizeResultType::FINISHED;
		}
		if (!state.finalizing) {
			if (state.more) {
				Exchange(context.client, state, false);
				continue;
			}
			if (state.buffer.size() > 0) {
				Exchange(context.client, state, true);
				continue;
			}
			state.finalizing = true;
			quiver_stream *finalize = nullptr;
			auto code = quiver_stream_finalize(state.stream.release(), InterruptOf(context.client), &finalize,
			                                   error.data(), error.size());
			Check(code, error);
			state.stream = StreamPtr(finalize);
			continue;
		}
		auto batch = make_shared_ptr<ArrowArrayWrapper>();
		int32_t end = 0;
		Check(quiver_stream_next(state.stream.get(), InterruptOf(context.client), &batch->arrow_array, &end,
		                         error.data(), error.size()),
		      error);
		if (end) {
			Check(quiver_stream_close(state.stream.get(), InterruptOf(context.client), error.data(), error.size()),
			      error);
			state.stream.reset();
			continue;
		}
		state.chunk = std::move(batch);
		state.Reset();
	}
}

} // namespace

unique_ptr<CreateFunctionInfo> CreateWorkerInOutFunction(shared_ptr<WorkerFunction> function) {
	TableFunction table(Identifier(function->name), vector<LogicalType> {}, nullptr, InOutBind, InOutInitGlobal,
	                    InOutInitLocal);
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
		signature.WithTypedKwargs("options", [&](TypedKwargs &options) {
			for (auto &parameter : named) {
				options.Add(Identifier(parameter.get().name), parameter.get().type);
			}
		});
	}
	table.in_out_function = InOutFunction;
	table.in_out_function_final = InOutFinal;
	table.projection_pushdown = false;
	table.filter_pushdown = false;
	table.function_info = make_shared_ptr<WorkerInOutInfo>(function);
	return make_uniq<CreateTableFunctionInfo>(std::move(table));
}

} // namespace quiver
} // namespace duckdb
