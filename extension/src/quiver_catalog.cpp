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

//! A worker's comment and tags on a catalog entry (`duckdb_*()` show them).
void ApplyDocs(const quiver_docs &docs, Value &comment, InsertionOrderPreservingMap<string> &tags) {
	if (docs.comment) {
		comment = Value(docs.comment);
	}
	for (size_t i = 0; i < docs.tag_count; i++) {
		tags[docs.tag_keys[i]] = docs.tag_values[i];
	}
}

//! One schema the worker declares, as the catalog creates it.
struct DeclaredSchema {
	Identifier name;
	Value comment;
	InsertionOrderPreservingMap<string> tags;
};

//! Every schema of the worker, with its comment and tags.
vector<DeclaredSchema> DeclaredSchemas(const quiver_worker *worker) {
	vector<DeclaredSchema> schemas;
	CoreError error;
	auto count = quiver_worker_schema_count(worker);
	for (idx_t i = 0; i < count; i++) {
		const char *name = nullptr;
		quiver_docs docs;
		Check(quiver_worker_schema(worker, i, &name, &docs, error.data(), error.size()), error, Phase::BIND);
		DeclaredSchema schema;
		schema.name = Identifier(string(name));
		ApplyDocs(docs, schema.comment, schema.tags);
		schemas.push_back(std::move(schema));
	}
	return schemas;
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
	if (function->info.kind == QUIVER_KIND_SCALAR || function->info.kind == QUIVER_KIND_AGGREGATE) {
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

unique_ptr<FunctionData> RefuseScalarBind(BindScalarFunctionInput &input) {
	throw NotImplementedException("quiver: %s",
	                              input.GetBoundFunction().GetExtraFunctionInfo().Cast<RefusalScalarInfo>().refusal);
}

void RefuseScalarExecute(DataChunk &, ExpressionState &, Vector &) {
	throw NotImplementedException("quiver: this function cannot be called");
}

//! A placeholder for a function of a kind the engine cannot call yet, registered under its name so
//! that it is listed (its description says what it is) and a call says why it fails instead of
//! "does not exist". Its kind is unknown here, so it is registered as a scalar taking anything.
unique_ptr<CreateFunctionInfo> CreateRefusedFunction(const quiver_skipped_function &skipped) {
	string refusal = skipped.refusal;
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
	              vector<unique_ptr<CreateFunctionInfo>> functions_p, vector<DeclaredSchema> schemas_p)
	    : DuckCatalog(db), worker(std::move(worker_p)), functions(std::move(functions_p)),
	      schemas(std::move(schemas_p)) {
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
		// Every schema the worker declares (the default one among them, so `USE w` lands there even
		// when it holds no function), with its comment and tags; `main` only when the worker has it.
		bool has_main = false;
		for (auto &schema : schemas) {
			has_main = has_main || schema.name == Identifier::DefaultSchema();
			CreateSchemaInfo info;
			info.SetQualifiedName(QualifiedName({schema.name}, Identifier()));
			info.comment = schema.comment;
			info.tags = schema.tags;
			info.on_conflict = OnCreateConflict::IGNORE_ON_CONFLICT;
			if (!CreateSchema(data, info)) {
				// `main` exists already (DuckCatalog made it, internal): the worker's now, described.
				EntryLookupInfo lookup(CatalogType::SCHEMA_ENTRY, QualifiedName(schema.name));
				auto existing = DuckCatalog::LookupSchema(data, lookup, OnEntryNotFound::RETURN_NULL);
				if (existing) {
					existing->internal = false;
					existing->comment = schema.comment;
					existing->tags = schema.tags;
				}
			}
		}
		hide_main = !has_main;
		for (auto &function : functions) {
			auto &schema = function->GetQualifiedName().Schema();
			if (schema != Identifier::DefaultSchema()) {
				CreateSchemaInfo info;
				info.SetQualifiedName(QualifiedName({schema}, Identifier()));
				info.on_conflict = OnCreateConflict::IGNORE_ON_CONFLICT;
				CreateSchema(data, info);
			}
			auto entry = CreateFunction(data, *function);
			if (entry) {
				// A function entry keeps the create info's descriptions but not its comment and tags.
				entry->comment = function->comment;
				entry->tags = function->tags;
			}
		}
		functions.clear();
	}

	string GetCatalogType() override {
		return "quiver";
	}

	//! The schemas, less `main` when the worker has none (DuckCatalog always creates one).
	void ScanSchemas(ClientContext &context, std::function<void(SchemaCatalogEntry &)> callback) override {
		DuckCatalog::ScanSchemas(context, [&](SchemaCatalogEntry &schema) {
			if (!IsHidden(schema.name)) {
				callback(schema);
			}
		});
	}

	optional_ptr<SchemaCatalogEntry> LookupSchema(CatalogTransaction transaction, const EntryLookupInfo &lookup,
	                                              OnEntryNotFound if_not_found) override {
		if (IsHidden(lookup.GetEntryIdentifier())) {
			if (if_not_found == OnEntryNotFound::THROW_EXCEPTION) {
				throw CatalogException::MissingEntry(lookup, string());
			}
			return nullptr;
		}
		return DuckCatalog::LookupSchema(transaction, lookup, if_not_found);
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
	vector<DeclaredSchema> schemas;
	optional<Identifier> default_schema;
	//! The worker declares no `main`: DuckCatalog's own is left out of every scan and lookup.
	bool hide_main = false;

	bool IsHidden(const Identifier &schema) const {
		return hide_main && schema == Identifier::DefaultSchema();
	}
};

unique_ptr<Catalog> QuiverAttach(optional_ptr<StorageExtensionInfo>, ClientContext &context, AttachedDatabase &db,
                                 const string &name, AttachInfo &info, AttachOptions &options) {
	string catalog_name;
	// TOKEN and CA_FILE reach an http(s) worker: a bearer token, the certificate authorities.
	unique_ptr<string> token, ca_file;
	for (auto &option : options.options) {
		if (StringUtil::CIEquals(option.first, "catalog")) {
			catalog_name = option.second.ToString();
		} else if (StringUtil::CIEquals(option.first, "token")) {
			token = make_uniq<string>(option.second.ToString());
		} else if (StringUtil::CIEquals(option.first, "ca_file")) {
			ca_file = make_uniq<string>(option.second.ToString());
		} else {
			throw BinderException("quiver: unknown ATTACH option '%s' (known: CATALOG, TOKEN, CA_FILE)",
			                      option.first);
		}
	}
	// Consumed here: the in-memory storage behind the catalog refuses options it does not know.
	options.options.clear();
	CoreError error;
	quiver_worker *opened = nullptr;
	Check(quiver_worker_open_remote(info.path.c_str(), name.c_str(),
	                                catalog_name.empty() ? nullptr : catalog_name.c_str(),
	                                token ? token->c_str() : nullptr, ca_file ? ca_file->c_str() : nullptr,
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
		case QUIVER_KIND_AGGREGATE:
			functions.push_back(CreateWorkerAggregateFunction(function));
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
		quiver_docs docs;
		Check(quiver_worker_function_docs(worker.get(), i, &docs, error.data(), error.size()), error, Phase::BIND);
		description.examples.assign(docs.examples, docs.examples + docs.example_count);
		description.categories.assign(docs.categories, docs.categories + docs.category_count);
		ApplyDocs(docs, functions.back()->comment, functions.back()->tags);
		Place(*functions.back(), function->info.schema, function->name, std::move(description));
	}
	auto skipped_count = quiver_worker_skipped_count(worker.get());
	for (idx_t i = 0; i < skipped_count; i++) {
		quiver_skipped_function skipped;
		Check(quiver_worker_skipped(worker.get(), i, &skipped, error.data(), error.size()), error, Phase::BIND);
		functions.push_back(CreateRefusedFunction(skipped));
		// A catalog view of what cannot be called: WHERE tags['quiver.unsupported_kind'] <> [].
		functions.back()->tags["quiver.unsupported_kind"] = skipped.kind;
		FunctionDescription description;
		description.description = skipped.refusal;
		Place(*functions.back(), skipped.schema, skipped.name, std::move(description));
	}
	quiver_docs catalog_docs;
	Check(quiver_worker_catalog_docs(worker.get(), &catalog_docs, error.data(), error.size()), error, Phase::BIND);
	ApplyDocs(catalog_docs, db.comment, db.tags);
	auto schemas = DeclaredSchemas(worker.get());
	// The catalog keeps nothing on disk: its storage is an empty in-memory database.
	info.path = IN_MEMORY_PATH;
	return make_uniq<QuiverCatalog>(db, std::move(worker), std::move(functions), std::move(schemas));
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
