//===----------------------------------------------------------------------===//
// quiver — quiver_arrow_drain(sql, batch_rows): the in-process ceiling of a query's Arrow result.
//
// Runs sql through the server's own operations (server_session.cpp: a session's connection, the
// query's Arrow result stream, one batch per cursor_next) and releases every batch as it arrives:
// the result DuckDB produces for a quiver client, with no wire, no client and no copy. One row back:
// the rows and batches drained. The bench flavour only (QUIVER_BENCH_FUNCTIONS).
//===----------------------------------------------------------------------===//
#include "quiver_functions.hpp"

#include "duckdb/common/arrow/arrow.hpp"
#include "duckdb/common/types/data_chunk.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/database.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "quiver_server.h"
#include "server_session.hpp"

namespace duckdb {
namespace quiver {

namespace {

struct DrainBindData : public TableFunctionData {
	DrainBindData(string sql_p, int64_t batch_rows_p) : sql(std::move(sql_p)), batch_rows(batch_rows_p) {
	}
	string sql;
	int64_t batch_rows;
};

struct DrainState : public GlobalTableFunctionState {
	bool done = false;
};

//! What one drain saw.
struct Drained {
	int64_t rows = 0;
	int64_t batches = 0;
};

[[noreturn]] void Throw(const quiver_server_error &err) {
	throw InvalidInputException("quiver_arrow_drain: %s: %s", err.type, err.message);
}

//! The session, the cursor and each batch are released on every path, an error's included.
Drained Drain(DatabaseInstance &db, const string &sql, int64_t batch_rows) {
	auto ops = ServerOps(db);
	quiver_server_error err {};
	quiver_server_session *session = nullptr;
	if (ops.open_session(ops.db, &session, &err) != QUIVER_SERVER_OK) {
		Throw(err);
	}
	quiver_server_cursor *cursor = nullptr;
	Drained drained;
	int32_t status = ops.query(session, sql.data(), sql.size(), nullptr, batch_rows, &cursor, &err);
	while (status == QUIVER_SERVER_OK) {
		ArrowArray array {};
		int32_t end = 0;
		status = ops.cursor_next(cursor, &array, &end, &err);
		if (status != QUIVER_SERVER_OK || end) {
			break;
		}
		drained.rows += array.length;
		drained.batches += 1;
		array.release(&array);
	}
	ops.cursor_close(cursor);
	ops.close_session(session);
	if (status != QUIVER_SERVER_OK) {
		Throw(err);
	}
	return drained;
}

unique_ptr<FunctionData> DrainBind(ClientContext &, TableFunctionBindInput &input, vector<LogicalType> &return_types,
                                   vector<Identifier> &names) {
	for (auto &argument : input.inputs) {
		if (argument.IsNull()) {
			throw BinderException("quiver_arrow_drain: arguments must not be NULL");
		}
	}
	auto batch_rows = input.inputs[1].GetValue<int64_t>();
	if (batch_rows < 1 || batch_rows > (int64_t(1) << 24)) {
		throw BinderException("quiver_arrow_drain: batch_rows must be in 1..16777216, got %lld",
		                      static_cast<long long>(batch_rows));
	}
	for (auto name : {"rows", "batches"}) {
		return_types.emplace_back(LogicalType::BIGINT);
		names.emplace_back(name);
	}
	return make_uniq<DrainBindData>(input.inputs[0].GetValue<string>(), batch_rows);
}

unique_ptr<GlobalTableFunctionState> DrainInit(ClientContext &, TableFunctionInitInput &) {
	return make_uniq<DrainState>();
}

void DrainScan(ClientContext &context, TableFunctionInput &input, DataChunk &output) {
	auto &state = input.global_state->Cast<DrainState>();
	if (state.done) {
		return;
	}
	state.done = true;
	auto &bind = input.bind_data->Cast<DrainBindData>();
	auto drained = Drain(DatabaseInstance::GetDatabase(context), bind.sql, bind.batch_rows);
	output.SetChildCardinality(1);
	output.data[0].SetValue(0, Value::BIGINT(drained.rows));
	output.data[1].SetValue(0, Value::BIGINT(drained.batches));
}

} // namespace

void RegisterArrowDrainFunction(ExtensionLoader &loader) {
	TableFunction function("quiver_arrow_drain", {LogicalType::VARCHAR, LogicalType::BIGINT}, DrainScan, DrainBind,
	                       DrainInit);
	loader.RegisterFunction(function);
}

} // namespace quiver
} // namespace duckdb
