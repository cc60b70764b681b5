//===----------------------------------------------------------------------===//
// quiver — a worker's aggregate function: `SELECT g, w.q_sum(x) FROM t GROUP BY g`.
//
//  bind:     constant arguments (vgi_const) are folded and sent once, in the worker's
//            `aggregate_bind`; the other arguments become the value columns. The bind data holds
//            the execution (quiver_aggregate) for the whole query.
//  state:    one int64 group id, handed out by the core; the worker keeps the real state.
//  update:   the chunk's value columns (DuckDB's Arrow converter) with each row's group id
//  combine:  (source, target) id pairs; finalize: ids in, one value per group out, read by
//            DuckDB's Arrow scan.
//  DISTINCT, FILTER, ORDER BY inside the call, GROUP BY and window use (segment trees over
//  update/combine/finalize) are DuckDB's own.
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"
#include "quiver_functions.hpp"

#include "duckdb/common/vector/vector_iterator.hpp"
#include "duckdb/function/aggregate_function.hpp"
#include "duckdb/parser/parsed_data/create_aggregate_function_info.hpp"

namespace duckdb {
namespace quiver {

namespace {

struct WorkerAggregateInfo : public AggregateFunctionInfo {
	explicit WorkerAggregateInfo(shared_ptr<WorkerFunction> function_p) : function(std::move(function_p)) {
	}
	shared_ptr<WorkerFunction> function;
};

struct AggregateFree {
	void operator()(quiver_aggregate *aggregate) const {
		quiver_aggregate_free(aggregate);
	}
};

struct AggregateBindData : public FunctionData {
	shared_ptr<WorkerFunction> function;
	shared_ptr<quiver_aggregate> aggregate;
	//! The query's context: DuckDB's aggregate callbacks receive none, but they run within it.
	ClientContext *context = nullptr;
	//! The arguments sent per row (the others were constants, sent at bind), and their types.
	vector<idx_t> columns;
	vector<LogicalType> column_types;
	shared_ptr<ArrowTableSchema> result;

	unique_ptr<FunctionData> Copy() const override {
		return make_uniq<AggregateBindData>(*this);
	}
	bool Equals(const FunctionData &other) const override {
		return aggregate == other.Cast<AggregateBindData>().aggregate;
	}
	bool SupportStatementCache() const override {
		return false;
	}
};

using GroupId = int64_t;

//! The bind data of a callback (DuckDB passes it as optional_ptr<FunctionData> or <const ...>).
template <class POINTER>
const AggregateBindData &BindDataOf(POINTER bind_data) {
	if (!bind_data) {
		throw InvalidInputException("quiver: an aggregate call without its bind data");
	}
	return bind_data->template Cast<AggregateBindData>();
}

unique_ptr<FunctionData> AggregateBind(BindAggregateFunctionInput &input) {
	auto &context = input.GetClientContext();
	auto &function = input.GetBoundFunction().GetExtraFunctionInfo().Cast<WorkerAggregateInfo>().function;
	auto &arguments = input.GetArguments();
	auto result = make_uniq<AggregateBindData>();
	result->function = function;
	result->context = &context;
	vector<Value> constants;
	vector<string> names;
	for (idx_t i = 0; i < arguments.size(); i++) {
		auto *parameter = i < function->parameters.size() ? &function->parameters[i] : nullptr;
		if (parameter && parameter->constant) {
			constants.push_back(input.GetConstant(i));
			continue;
		}
		result->columns.push_back(i);
		// The declared type: DuckDB casts the argument to it after this bind.
		auto declared = parameter && parameter->type.id() != LogicalTypeId::ANY;
		result->column_types.push_back(declared ? parameter->type : arguments[i]->GetReturnType());
		names.push_back(parameter ? parameter->name : "arg" + to_string(i));
	}
	ArrowSchemaWrapper arguments_schema;
	ArrowArrayWrapper argument_values;
	vector<string> constant_names;
	for (idx_t i = 0; i < constants.size(); i++) {
		constant_names.push_back("positional_" + to_string(i));
	}
	ValuesToArrow(context, constants, constant_names, arguments_schema, argument_values);
	ArrowSchemaWrapper input_schema;
	if (!result->columns.empty()) {
		TypesToArrowSchema(context, result->column_types, names, input_schema);
	}
	CoreError error;
	quiver_aggregate *bound = nullptr;
	Check(quiver_aggregate_bind(function->worker.get(), function->index,
	                            constants.empty() ? nullptr : &arguments_schema.arrow_schema,
	                            constants.empty() ? nullptr : &argument_values.arrow_array,
	                            result->columns.empty() ? nullptr : &input_schema.arrow_schema, InterruptOf(context),
	                            &bound, error.data(), error.size()),
	      error, Phase::BIND);
	result->aggregate = shared_ptr<quiver_aggregate>(bound, AggregateFree());
	ArrowSchemaWrapper output_schema;
	Check(quiver_aggregate_output_schema(bound, &output_schema.arrow_schema, error.data(), error.size()), error,
	      Phase::BIND);
	result->result = make_shared_ptr<ArrowTableSchema>();
	ArrowTableFunction::PopulateArrowTableSchema(context, *result->result, output_schema.arrow_schema);
	auto &types = result->result->GetTypes();
	if (types.size() != 1 || types[0] != function->result_type) {
		throw BinderException("quiver: %s() was registered returning %s but binds to %s", function->name,
		                      function->result_type.ToString(), types.empty() ? "nothing" : types[0].ToString());
	}
	return std::move(result);
}

idx_t AggregateStateSize(AggregateStateInput &) {
	return sizeof(GroupId);
}

void AggregateInitialize(AggregateStateInput &input, data_ptr_t *states, idx_t count) {
	auto &data = BindDataOf(input.bind_data);
	CoreError error;
	for (idx_t i = 0; i < count; i++) {
		GroupId id = 0;
		Check(quiver_aggregate_new_group(data.aggregate.get(), &id, error.data(), error.size()), error);
		Store<GroupId>(id, states[i]);
	}
}

//! The group of each of the chunk's rows: from the state vector, or from DuckDB's clustered runs.
vector<GroupId> RowGroups(AggregateInputData &input, Vector &states, idx_t count) {
	vector<GroupId> groups(count);
	if (input.clustered) {
		idx_t position = 0;
		for (auto &run : input.clustered->runs()) {
			auto id = Load<GroupId>(run.state);
			for (idx_t i = 0; i < run.count; i++) {
				auto row = run.sel ? idx_t(run.sel[i]) : position + i;
				if (row >= count) {
					throw InvalidInputException("quiver: a clustered aggregate run points past its chunk");
				}
				groups[row] = id;
			}
			position += run.count;
		}
		return groups;
	}
	auto addresses = states.Values<data_ptr_t>();
	for (idx_t i = 0; i < count; i++) {
		groups[i] = Load<GroupId>(addresses[i].GetValueUnsafe());
	}
	return groups;
}

void AggregateUpdate(Vector inputs[], AggregateInputData &input, idx_t input_count, Vector &states, idx_t count) {
	auto &data = BindDataOf(input.bind_data);
	auto &context = *data.context;
	auto groups = RowGroups(input, states, count);
	ArrowArray values;
	bool has_values = !data.columns.empty();
	if (has_values) {
		DataChunk chunk;
		chunk.InitializeEmpty(data.column_types);
		for (idx_t i = 0; i < data.columns.size(); i++) {
			if (data.columns[i] >= input_count) {
				throw InvalidInputException("quiver: aggregate input column %llu of %llu", data.columns[i],
				                            input_count);
			}
			chunk.data[i].Reference(inputs[data.columns[i]]);
		}
		chunk.SetCardinalityUnsafe(count);
		chunk.Flatten();
		ChunkToArrow(context, chunk, values);
	}
	CoreError error;
	Check(quiver_aggregate_update(data.aggregate.get(), groups.data(), groups.size(), has_values ? &values : nullptr,
	                              InterruptOf(context), error.data(), error.size()),
	      error);
}

void AggregateCombine(Vector &source, Vector &target, AggregateInputData &input, idx_t count) {
	auto &data = BindDataOf(input.bind_data);
	auto sources_in = source.Values<data_ptr_t>();
	auto targets_in = target.Values<data_ptr_t>();
	vector<GroupId> sources;
	vector<GroupId> targets;
	optional<UnifiedVectorFormat> multiplicities;
	const int64_t *multiplicity = nullptr;
	if (input.combine_multiplicities) {
		multiplicities.emplace();
		input.combine_multiplicities->ToUnifiedFormat(*multiplicities);
		multiplicity = UnifiedVectorFormat::GetData<int64_t>(*multiplicities);
	}
	for (idx_t i = 0; i < count; i++) {
		idx_t times = 1;
		if (multiplicity) {
			auto index = multiplicities->sel->get_index(i);
			if (!multiplicities->validity.RowIsValid(index) || multiplicity[index] <= 0) {
				continue;
			}
			times = NumericCast<idx_t>(multiplicity[index]);
		}
		for (idx_t t = 0; t < times; t++) {
			sources.push_back(Load<GroupId>(sources_in[i].GetValueUnsafe()));
			targets.push_back(Load<GroupId>(targets_in[i].GetValueUnsafe()));
		}
	}
	if (sources.empty()) {
		return;
	}
	CoreError error;
	Check(quiver_aggregate_combine(data.aggregate.get(), sources.data(), targets.data(), sources.size(),
	                               InterruptOf(*data.context), error.data(), error.size()),
	      error);
}

void AggregateFinalize(Vector &states, AggregateFinalizeInputData &input, Vector &result, idx_t count,
                       idx_t offset) {
	auto &data = BindDataOf(input.bind_data);
	auto &context = *data.context;
	bool constant = states.GetVectorType() == VectorType::CONSTANT_VECTOR;
	auto rows = constant ? idx_t(1) : count;
	auto addresses = states.Values<data_ptr_t>();
	vector<GroupId> groups(rows);
	for (idx_t i = 0; i < rows; i++) {
		groups[i] = Load<GroupId>(addresses[i].GetValueUnsafe());
	}
	auto answer = make_shared_ptr<ArrowArrayWrapper>();
	CoreError error;
	Check(quiver_aggregate_finalize(data.aggregate.get(), groups.data(), groups.size(), InterruptOf(context),
	                                &answer->arrow_array, error.data(), error.size()),
	      error);
	ArrowScanLocalState scan(make_uniq<ArrowArrayWrapper>(), context);
	scan.chunk = std::move(answer);
	scan.Reset();
	DataChunk output;
	output.Initialize(context, data.result->GetTypes(), rows);
	output.SetChildCardinality(rows);
	ArrowTableFunction::ArrowToDuckDB(scan, data.result->GetColumns(), output);
	if (constant) {
		ConstantVector::Reference(result, output.data[0].GetValue(0), count_t(count));
		return;
	}
	output.data[0].Flatten();
	for (idx_t i = 0; i < rows; i++) {
		result.SetValue(offset + i, output.data[0].GetValue(i));
	}
}

} // namespace

unique_ptr<CreateFunctionInfo> CreateWorkerAggregateFunction(shared_ptr<WorkerFunction> function) {
	vector<LogicalType> arguments;
	for (auto &parameter : function->parameters) {
		arguments.push_back(parameter.type);
	}
	AggregateFunction aggregate(Identifier(function->name), arguments, function->result_type, AggregateStateSize,
	                            AggregateInitialize, AggregateUpdate, AggregateCombine, AggregateFinalize,
	                            FunctionNullHandling::SPECIAL_HANDLING, nullptr, AggregateBind);
	// Any call may fail (the worker raises, answers the wrong shape, or dies): DuckDB must then pass
	// our typed error on rather than call it an internal error.
	// Named parameters, as duckdb_functions() lists them (the constructor above names them col0...).
	FunctionSignature signature;
	for (auto &parameter : function->parameters) {
		signature.AddPositionalOnly(Identifier(parameter.name), parameter.type);
	}
	signature.SetReturnType(function->result_type);
	aggregate.GetSignature() = std::move(signature);
	aggregate.SetFallible();
	// ORDER BY inside the call is kept (DuckDB sorts each group's rows before they reach update)
	// only for a function that declares its result depends on the order.
	aggregate.SetOrderDependent(function->info.order_dependent ? AggregateOrderDependent::ORDER_DEPENDENT
	                                                           : AggregateOrderDependent::NOT_ORDER_DEPENDENT);
	aggregate.SetDistinctDependent(function->info.distinct_dependent
	                                   ? AggregateDistinctDependent::DISTINCT_DEPENDENT
	                                   : AggregateDistinctDependent::NOT_DISTINCT_DEPENDENT);
	aggregate.SetExtraFunctionInfo(make_shared_ptr<WorkerAggregateInfo>(function));
	return make_uniq<CreateAggregateFunctionInfo>(std::move(aggregate));
}

} // namespace quiver
} // namespace duckdb
