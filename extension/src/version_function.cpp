//===----------------------------------------------------------------------===//
// quiver — quiver_version(): proves the C++ glue reaches the Rust core.
//===----------------------------------------------------------------------===//
#include "quiver_functions.hpp"

#include "duckdb/common/types/data_chunk.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "quiver_core.h"

namespace duckdb {
namespace quiver {

namespace {

struct VersionState : public GlobalTableFunctionState {
	bool done = false;
};

unique_ptr<FunctionData> VersionBind(ClientContext &, TableFunctionBindInput &, vector<LogicalType> &return_types,
                                     vector<Identifier> &names) {
	return_types.emplace_back(LogicalType::VARCHAR);
	names.emplace_back("version");
	return nullptr;
}

unique_ptr<GlobalTableFunctionState> VersionInit(ClientContext &, TableFunctionInitInput &) {
	return make_uniq<VersionState>();
}

void VersionScan(ClientContext &, TableFunctionInput &input, DataChunk &output) {
	auto &state = input.global_state->Cast<VersionState>();
	if (state.done) {
		return;
	}
	state.done = true;
	output.SetChildCardinality(1);
	output.data[0].SetValue(0, Value(quiver_core_version()));
}

} // namespace

void RegisterVersionFunction(ExtensionLoader &loader) {
	TableFunction function("quiver_version", {}, VersionScan, VersionBind, VersionInit);
	loader.RegisterFunction(function);
}

} // namespace quiver
} // namespace duckdb
