//===----------------------------------------------------------------------===//
// quiver — a worker's scalar function: `SELECT w.upper_case(s) FROM t`.
//
//  bind:    constant arguments (vgi_const) are folded and sent once, in the worker's `bind`; the
//           other arguments become the input columns
//  execute: one exchange stream per thread (opened with the thread's state); every chunk's input
//           columns go out as an Arrow batch (DuckDB's converter), the `result` column comes back
//           and is read by DuckDB's Arrow scan, in place where it can be
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"
#include "quiver_functions.hpp"

#include "duckdb/execution/expression_executor_state.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/planner/expression/bound_function_expression.hpp"

namespace duckdb {
namespace quiver {

namespace {

struct WorkerScalarInfo : public ScalarFunctionInfo {
	explicit WorkerScalarInfo(shared_ptr<WorkerFunction> function_p) : function(std::move(function_p)) {
	}
	shared_ptr<WorkerFunction> function;
};

struct ScalarBindData : public FunctionData {
	shared_ptr<WorkerFunction> function;
	shared_ptr<quiver_bind> bind;
	//! The arguments sent per chunk (the others were constants, sent at bind), and their types.
	vector<idx_t> columns;
	vector<LogicalType> column_types;
	shared_ptr<ArrowTableSchema> result;

	unique_ptr<FunctionData> Copy() const override {
		return make_uniq<ScalarBindData>(*this);
	}
	bool Equals(const FunctionData &other) const override {
		return bind == other.Cast<ScalarBindData>().bind;
	}
	bool SupportStatementCache() const override {
		return false;
	}
};

unique_ptr<FunctionData> ScalarBind(BindScalarFunctionInput &input) {
	auto &context = input.GetClientContext();
	auto &function = input.GetBoundFunction().GetExtraFunctionInfo().Cast<WorkerScalarInfo>().function;
	auto &arguments = input.GetArguments();
	auto result = make_uniq<ScalarBindData>();
	result->function = function;
	vector<Value> constants;
	vector<string> names;
	for (idx_t i = 0; i < arguments.size(); i++) {
		auto *parameter = i < function->parameters.size() ? &function->parameters[i] : nullptr;
		if (parameter && parameter->constant) {
			constants.push_back(input.GetConstant(i));
			continue;
		}
		result->columns.push_back(i);
		result->column_types.push_back(arguments[i]->GetReturnType());
		names.push_back(parameter ? parameter->name : "arg" + to_string(i));
	}
	ArrowSchemaWrapper input_schema;
	TypesToArrowSchema(context, result->column_types, names, input_schema);
	result->bind = BindWorkerCall(context, *function, constants, {}, &input_schema);
	ArrowSchemaWrapper output_schema;
	result->result = make_shared_ptr<ArrowTableSchema>();
	BoundOutputSchema(context, *result->bind, output_schema, *result->result);
	auto &types = result->result->GetTypes();
	if (types.size() != 1 || types[0] != function->result_type) {
		throw BinderException("quiver: %s() was registered returning %s but binds to %s", function->name,
		                      function->result_type.ToString(), types.empty() ? "nothing" : types[0].ToString());
	}
	return std::move(result);
}

//! One thread's stream, and the state for converting its answers.
struct ScalarLocalState : public FunctionLocalState {
	ScalarLocalState(ClientContext &context) : scan(make_uniq<ArrowArrayWrapper>(), context) {
	}
	StreamPtr stream;
	DataChunk input;
	DataChunk output;
	ArrowScanLocalState scan;
};

unique_ptr<FunctionLocalState> ScalarInitLocal(ExpressionState &state, const BoundFunctionExpression &,
                                               FunctionData *bind_data) {
	auto &data = bind_data->Cast<ScalarBindData>();
	auto &context = state.GetContext();
	auto result = make_uniq<ScalarLocalState>(context);
	result->input.InitializeEmpty(data.column_types);
	result->output.Initialize(context, data.result->GetTypes());
	return std::move(result);
}

//! This thread's stream, opened on first use and again after a failed call (a worker's error
//! ends its stream; TRY() then calls again row by row).
quiver_stream &OpenStream(ClientContext &context, const ScalarBindData &data, ScalarLocalState &local) {
	if (!local.stream) {
		CoreError error;
		quiver_stream *stream = nullptr;
		Check(quiver_scalar_start(data.bind.get(), InterruptOf(context), &stream, error.data(), error.size()),
		      error);
		local.stream = StreamPtr(stream);
	}
	return *local.stream;
}

void ScalarExecute(DataChunk &args, ExpressionState &state, Vector &result) {
	auto &local = ExecuteFunctionState::GetFunctionState(state)->Cast<ScalarLocalState>();
	auto &data = state.expr.Cast<BoundFunctionExpression>().BindInfo()->Cast<ScalarBindData>();
	auto &context = state.GetContext();
	auto count = args.size();
	// Before the input is converted: the core takes the converted array only in the exchange.
	auto &stream = OpenStream(context, data, local);
	for (idx_t i = 0; i < data.columns.size(); i++) {
		local.input.data[i].Reference(args.data[data.columns[i]]);
	}
	local.input.SetCardinalityUnsafe(count);
	ArrowArray input;
	ChunkToArrow(context, local.input, input);
	auto answer = make_shared_ptr<ArrowArrayWrapper>();
	int32_t more = 0;
	CoreError error;
	auto code = quiver_stream_exchange(&stream, &input, InterruptOf(context), &answer->arrow_array, &more,
	                                   error.data(), error.size());
	if (code != QUIVER_OK) {
		local.stream.reset();
		ThrowCoreError(code, error, Phase::EXECUTE);
	}
	local.scan.chunk = std::move(answer);
	local.scan.Reset();
	local.output.Reset();
	local.output.SetChildCardinality(count);
	ArrowTableFunction::ArrowToDuckDB(local.scan, data.result->GetColumns(), local.output);
	result.Reference(local.output.data[0]);
}

} // namespace

unique_ptr<CreateFunctionInfo> CreateWorkerScalarFunction(shared_ptr<WorkerFunction> function) {
	FunctionSignature signature;
	for (auto &parameter : function->parameters) {
		signature.AddPositionalOnly(Identifier(parameter.name), parameter.type);
	}
	signature.SetReturnType(function->result_type);
	ScalarFunction scalar(Identifier(function->name), std::move(signature), ScalarExecute);
	scalar.SetBindCallback(ScalarBind);
	// Any call may fail (the worker raises, answers the wrong shape, or dies): DuckDB must then pass
	// our typed error on rather than call it an internal error and distrust the database.
	scalar.SetFallible();
	scalar.SetInitStateCallback(ScalarInitLocal);
	switch (function->info.stability) {
	case 1:
		scalar.SetStability(FunctionStability::VOLATILE);
		break;
	case 2:
		scalar.SetStability(FunctionStability::CONSISTENT_WITHIN_QUERY);
		break;
	default:
		scalar.SetStability(FunctionStability::CONSISTENT);
	}
	if (function->info.special_null_handling) {
		scalar.SetNullHandling(FunctionNullHandling::SPECIAL_HANDLING);
	}
	scalar.SetExtraFunctionInfo(make_shared_ptr<WorkerScalarInfo>(function));
	return make_uniq<CreateScalarFunctionInfo>(std::move(scalar));
}

} // namespace quiver
} // namespace duckdb
