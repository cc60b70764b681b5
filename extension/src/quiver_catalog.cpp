//===----------------------------------------------------------------------===//
// quiver — ATTACH '<location>' AS w (TYPE quiver): a StorageExtension whose attach starts (or
// reaches) the worker, discovers its functions through the core, and returns a QuiverCatalog.
//
// QuiverCatalog is an in-memory DuckCatalog whose schemas hold the worker's functions, created
// once at Initialize like DuckDB's built-ins (system transaction): `w.numbers(...)` resolves
// through DuckDB's own lookup and every function is listed in duckdb_functions(). DETACH tells
// the worker and shuts it down; the catalog's destruction releases the core's handle.
//===----------------------------------------------------------------------===//
#include "quiver_core.hpp"
#include "quiver_functions.hpp"

#include "duckdb/catalog/catalog_transaction.hpp"
#include "duckdb/catalog/duck_catalog.hpp"
#include "duckdb/main/attached_database.hpp"
#include "duckdb/main/config.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parsed_data/attach_info.hpp"
#include "duckdb/parser/parsed_data/create_function_info.hpp"
#include "duckdb/parser/parsed_data/create_scalar_function_info.hpp"
#include "duckdb/parser/parsed_data/create_schema_info.hpp"
#include "duckdb/parser/parsed_data/create_table_function_info.hpp"
#include "duckdb/storage/storage_extension.hpp"
#include "duckdb/transaction/duck_transaction_manager.hpp"
#include "duckdb/function/table/arrow/arrow_duck_schema.hpp"

namespace duckdb {
namespace quiver {

namespace {

//! The DuckDB type of one field of an Arrow schema.
LogicalType ArrowFieldType(ClientContext &context, ArrowSchema &field) {
	auto type = ArrowType::GetArrowLogicalType(context, field);
	type->ThrowIfInvalid();
	return type->GetDuckType();
}

//! Everything DuckDB needs to register function `index` of the worker.
shared_ptr<WorkerFunction> DescribeFunction(ClientContext &context, const shared_ptr<quiver_worker> &worker,
                                            idx_t index) {
	auto function = make_shared_ptr<WorkerFunction>();
	function->worker = worker;
	function->index = index;
	CoreError error;
	Check(quiver_worker_function(worker.get(), index, &function->info, error.data(), error.size()), error,
	      Phase::BIND);
	function->name = function->info.name;
	ArrowSchemaWrapper arguments;
	Check(quiver_worker_function_arguments(worker.get(), index, &arguments.arrow_schema, error.data(), error.size()),
	      error, Phase::BIND);
	for (int64_t i = 0; i < arguments.arrow_schema.n_children; i++) {
		quiver_parameter parameter;
		Check(quiver_worker_parameter(worker.get(), index, NumericCast<idx_t>(i), &parameter, error.data(),
		                              error.size()),
		      error, Phase::BIND);
		WorkerParameter param;
		param.name = parameter.name;
		param.named = parameter.named != 0;
		param.table = parameter.table != 0;
		param.constant = parameter.constant != 0;
		if (param.table) {
			param.type = LogicalType::TABLE;
		} else if (parameter.any) {
			param.type = LogicalType::ANY;
		} else {
			param.type = ArrowFieldType(context, *arguments.arrow_schema.children[i]);
		}
		function->parameters.push_back(std::move(param));
	}
	if (function->info.kind == QUIVER_KIND_SCALAR) {
		ArrowSchemaWrapper result;
		Check(quiver_worker_function_result(worker.get(), index, &result.arrow_schema, error.data(), error.size()),
		      error, Phase::BIND);
		function->result_type = ArrowFieldType(context, *result.arrow_schema.children[0]);
	}
	return function;
}

//! The placeholder of a function the engine cannot call yet: every bind fails with its refusal.
struct RefusalScalarInfo : public ScalarFunctionInfo {
	explicit RefusalScalarInfo(string refusal_p) : refusal(std::move(refusal_p)) {
	}
	string refusal;
};
struct RefusalTableInfo : public TableFunctionInfo {
	explicit RefusalTableInfo(string refusal_p) : refusal(std::move(refusal_p)) {
	}
	string refusal;
};

unique_ptr<FunctionData> RefuseScalarBind(BindScalarFunctionInput &input) {
	throw NotImplementedException("quiver: %s",
	                              input.GetBoundFunction().GetExtraFunctionInfo().Cast<RefusalScalarInfo>().refusal);
}

void RefuseScalarExecute(DataChunk &, ExpressionState &, Vector &) {
	throw NotImplementedException("quiver: this function cannot be called");
}

unique_ptr<FunctionData> RefuseTableBind(ClientContext &, TableFunctionBindInput &input, vector<LogicalType> &,
                                         vector<Identifier> &) {
	throw NotImplementedException("quiver: %s", input.info->Cast<RefusalTableInfo>().refusal);
}

void RefuseTableScan(ClientContext &, TableFunctionInput &, DataChunk &) {
	throw NotImplementedException("quiver: this function cannot be called");
}

//! A placeholder for a function of a kind the engine cannot call yet, registered under its name so
//! that it is listed (its description says what it is) and a call says why it fails instead of
//! "does not exist". A buffered table function is a table function; anything else (an aggregate)
//! is called like a scalar.
unique_ptr<CreateFunctionInfo> CreateRefusedFunction(const quiver_skipped_function &skipped) {
	string refusal = skipped.refusal;
	if (string(skipped.kind) == "table_buffering") {
		TableFunction table(Identifier(skipped.name), vector<LogicalType> {}, RefuseTableScan, RefuseTableBind);
		table.GetSignature().AddArgs(Identifier("args"), LogicalType::ANY);
		table.function_info = make_shared_ptr<RefusalTableInfo>(refusal);
		return make_uniq<CreateTableFunctionInfo>(std::move(table));
	}
	FunctionSignature signature;
	signature.AddArgs(Identifier("args"), LogicalType::ANY);
	signature.SetReturnType(LogicalType::SQLNULL);
	ScalarFunction scalar(Identifier(skipped.name), std::move(signature), RefuseScalarExecute);
	scalar.SetBindCallback(RefuseScalarBind);
	scalar.SetFallible();
	scalar.SetExtraFunctionInfo(make_shared_ptr<RefusalScalarInfo>(refusal));
	return make_uniq<CreateScalarFunctionInfo>(std::move(scalar));
}

//! Marks a create info as a function of this attached catalog, in `schema`, described.
void Place(CreateFunctionInfo &created, const string &schema, const string &name, FunctionDescription description) {
	created.SetQualifiedName(QualifiedName({Identifier(schema)}, Identifier(name)));
	// The create infos mark functions internal (built-in); in a catalog other than the system one
	// entries must not be.
	created.internal = false;
	created.on_conflict = OnCreateConflict::ALTER_ON_CONFLICT;
	created.descriptions.push_back(std::move(description));
}

//! An in-memory DuckCatalog holding one worker's functions.
class QuiverCatalog : public DuckCatalog {
public:
	QuiverCatalog(AttachedDatabase &db, shared_ptr<quiver_worker> worker_p,
	              vector<unique_ptr<CreateFunctionInfo>> functions_p)
	    : DuckCatalog(db), worker(std::move(worker_p)), functions(std::move(functions_p)) {
		auto declared = quiver_worker_default_schema(worker.get());
		if (declared && *declared) {
			default_schema = Identifier(string(declared));
		}
	}

	//! The worker's default schema: `USE w` resolves unqualified names there.
	optional<Identifier> GetDefaultSchema() const override {
		if (default_schema) {
			return default_schema;
		}
		return DuckCatalog::GetDefaultSchema();
	}

	void Initialize(bool load_builtin) override {
		DuckCatalog::Initialize(false);
		auto data = CatalogTransaction::GetSystemTransaction(GetDatabase());
		if (default_schema && *default_schema != Identifier::DefaultSchema()) {
			// `USE w` lands here even when the worker put no function in it.
			CreateSchemaInfo info;
			info.SetQualifiedName(QualifiedName({*default_schema}, Identifier()));
			info.on_conflict = OnCreateConflict::IGNORE_ON_CONFLICT;
			CreateSchema(data, info);
		}
		for (auto &function : functions) {
			auto &schema = function->GetQualifiedName().Schema();
			if (schema != Identifier::DefaultSchema()) {
				CreateSchemaInfo info;
				info.SetQualifiedName(QualifiedName({schema}, Identifier()));
				info.on_conflict = OnCreateConflict::IGNORE_ON_CONFLICT;
				CreateSchema(data, info);
			}
			CreateFunction(data, *function);
		}
		functions.clear();
	}

	string GetCatalogType() override {
		return "quiver";
	}

	void OnDetach(ClientContext &context) override {
		CoreError error;
		// Best effort: a worker that is already gone must not make DETACH fail.
		quiver_worker_detach(worker.get(), error.data(), error.size());
		DuckCatalog::OnDetach(context);
	}

private:
	shared_ptr<quiver_worker> worker;
	vector<unique_ptr<CreateFunctionInfo>> functions;
	optional<Identifier> default_schema;
};

unique_ptr<Catalog> QuiverAttach(optional_ptr<StorageExtensionInfo>, ClientContext &context, AttachedDatabase &db,
                                 const string &name, AttachInfo &info, AttachOptions &options) {
	string catalog_name;
	for (auto &option : options.options) {
		if (StringUtil::CIEquals(option.first, "catalog")) {
			catalog_name = option.second.ToString();
		} else {
			throw BinderException("quiver: unknown ATTACH option '%s' (known: CATALOG)", option.first);
		}
	}
	// Consumed here: the in-memory storage behind the catalog refuses options it does not know.
	options.options.clear();
	CoreError error;
	quiver_worker *opened = nullptr;
	Check(quiver_worker_open(info.path.c_str(), name.c_str(), catalog_name.empty() ? nullptr : catalog_name.c_str(),
	                         InterruptOf(context), &opened, error.data(), error.size()),
	      error, Phase::BIND);
	shared_ptr<quiver_worker> worker(opened, WorkerFree());
	vector<unique_ptr<CreateFunctionInfo>> functions;
	auto count = quiver_worker_function_count(worker.get());
	for (idx_t i = 0; i < count; i++) {
		auto function = DescribeFunction(context, worker, i);
		switch (function->info.kind) {
		case QUIVER_KIND_SCALAR:
			functions.push_back(CreateWorkerScalarFunction(function));
			break;
		case QUIVER_KIND_TABLE:
			functions.push_back(CreateWorkerTableFunction(function));
			break;
		case QUIVER_KIND_TABLE_IN_OUT:
		case QUIVER_KIND_TABLE_BUFFERING:
			functions.push_back(CreateWorkerInOutFunction(function));
			break;
		default:
			continue;
		}
		FunctionDescription description;
		description.description = function->info.description;
		for (auto &parameter : function->parameters) {
			description.parameter_names.push_back(parameter.name);
			description.parameter_types.push_back(parameter.type);
		}
		Place(*functions.back(), function->info.schema, function->name, std::move(description));
	}
	auto skipped_count = quiver_worker_skipped_count(worker.get());
	for (idx_t i = 0; i < skipped_count; i++) {
		quiver_skipped_function skipped;
		Check(quiver_worker_skipped(worker.get(), i, &skipped, error.data(), error.size()), error, Phase::BIND);
		functions.push_back(CreateRefusedFunction(skipped));
		FunctionDescription description;
		description.description = skipped.refusal;
		Place(*functions.back(), skipped.schema, skipped.name, std::move(description));
	}
	// The catalog keeps nothing on disk: its storage is an empty in-memory database.
	info.path = IN_MEMORY_PATH;
	return make_uniq<QuiverCatalog>(db, std::move(worker), std::move(functions));
}

unique_ptr<TransactionManager> QuiverTransactionManager(optional_ptr<StorageExtensionInfo>, AttachedDatabase &db,
                                                        Catalog &) {
	return make_uniq<DuckTransactionManager>(db);
}

class QuiverStorageExtension : public StorageExtension {
public:
	QuiverStorageExtension() {
		attach = QuiverAttach;
		create_transaction_manager = QuiverTransactionManager;
	}
};

} // namespace

void RegisterStorage(ExtensionLoader &loader) {
	auto &config = DBConfig::GetConfig(loader.GetDatabaseInstance());
	StorageExtension::Register(config, "quiver", make_shared_ptr<QuiverStorageExtension>());
}

} // namespace quiver
} // namespace duckdb
