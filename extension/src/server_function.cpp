//===----------------------------------------------------------------------===//
// quiver — quiver_serve(listen, ...) and quiver_serve_stop(): any DuckDB process with quiver loaded
// becomes a quiver server (crates/quiver-server) serving the database the call ran in.
//
//   SELECT * FROM quiver_serve('tcp://127.0.0.1:0,unix:///tmp/q.sock,grpc://127.0.0.1:0', token := 'secret');
//
// returns one row per announcement (kind PORT / UNIX / FLIGHT_SQL / TOKEN, value) and keeps serving in
// background threads until quiver_serve_stop() (or the process ends). A grpc+tls:// listener takes
// tls_cert := and tls_key := (PEM files). auth_deadline_ms, unauthenticated_max, slow_statement_ms,
// log_json and metrics := 'tcp://127.0.0.1:0' (a METRICS row) tune admission, the log and the metrics.
//===----------------------------------------------------------------------===//
#include "quiver_functions.hpp"

#include <mutex>

#include "duckdb/common/types/data_chunk.hpp"
#include "duckdb/function/table_function.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/main/config.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "quiver_server.h"
#include "server_batch.hpp"
#include "server_session.hpp"

namespace duckdb {
namespace quiver {

namespace {

constexpr size_t ANNOUNCEMENT_BYTES_MAX = 16384;
constexpr size_t ERROR_BYTES_MAX = 2048;

//! What the running server borrows: the ops table and the database it keeps open.
struct ServingState {
	std::mutex lock;
	shared_ptr<DatabaseInstance> db;
	quiver_server_ops ops;
};

ServingState &Serving() {
	static ServingState state;
	return state;
}

struct ServeBindData : public TableFunctionData {
	string listen;
	string token;
	bool has_token = false;
	bool no_auth = false;
	int64_t max_connections = 0;
	int64_t message_bytes_max = 0;
	string tls_cert;
	string tls_key;
	int64_t auth_deadline_ms = 0;
	int64_t unauthenticated_max = 0;
	int64_t slow_statement_ms = -1;
	bool log_json = false;
	string metrics;
};

struct RowsState : public GlobalTableFunctionState {
	vector<pair<string, string>> rows;
	idx_t next = 0;
	bool started = false;
};

unique_ptr<FunctionData> ServeBind(ClientContext &, TableFunctionBindInput &input, vector<LogicalType> &return_types,
                                   vector<Identifier> &names) {
	auto data = make_uniq<ServeBindData>();
	if (input.inputs[0].IsNull()) {
		throw BinderException("quiver_serve: the listen address must not be NULL");
	}
	data->listen = input.inputs[0].ToString();
	for (auto &entry : input.named_parameters) {
		auto &name = entry.first.GetIdentifierName();
		if (entry.second.IsNull()) {
			continue;
		}
		if (name == "token") {
			data->token = entry.second.ToString();
			data->has_token = true;
		} else if (name == "no_auth") {
			data->no_auth = entry.second.GetValue<bool>();
		} else if (name == "max_connections") {
			data->max_connections = entry.second.GetValue<int64_t>();
		} else if (name == "message_bytes_max") {
			data->message_bytes_max = entry.second.GetValue<int64_t>();
		} else if (name == "tls_cert") {
			data->tls_cert = entry.second.ToString();
		} else if (name == "tls_key") {
			data->tls_key = entry.second.ToString();
		} else if (name == "auth_deadline_ms") {
			data->auth_deadline_ms = entry.second.GetValue<int64_t>();
		} else if (name == "unauthenticated_max") {
			data->unauthenticated_max = entry.second.GetValue<int64_t>();
		} else if (name == "slow_statement_ms") {
			data->slow_statement_ms = entry.second.GetValue<int64_t>();
		} else if (name == "log_json") {
			data->log_json = entry.second.GetValue<bool>();
		} else if (name == "metrics") {
			data->metrics = entry.second.ToString();
		}
	}
	return_types = {LogicalType::VARCHAR, LogicalType::VARCHAR};
	names = {Identifier("kind"), Identifier("value")};
	return std::move(data);
}

unique_ptr<GlobalTableFunctionState> RowsInit(ClientContext &, TableFunctionInitInput &) {
	return make_uniq<RowsState>();
}

void EmitRows(RowsState &state, DataChunk &output) {
	idx_t count = 0;
	while (state.next < state.rows.size() && count < STANDARD_VECTOR_SIZE) {
		output.data[0].SetValue(count, Value(state.rows[state.next].first));
		output.data[1].SetValue(count, Value(state.rows[state.next].second));
		state.next++;
		count++;
	}
	output.SetChildCardinality(count);
}

//! One URL per line: commas separate addresses too.
string ListenLines(string listen) {
	for (auto &c : listen) {
		if (c == ',') {
			c = '\n';
		}
	}
	return listen;
}

void Start(ClientContext &context, const ServeBindData &data, RowsState &state) {
	auto &serving = Serving();
	std::lock_guard<std::mutex> guard(serving.lock);
	if (serving.db) {
		throw InvalidInputException("quiver_serve: this process is serving already; call quiver_serve_stop() first");
	}
	if (quiver_serve_abi_version() != QUIVER_SERVER_ABI_VERSION) {
		throw InternalException("quiver server speaks C ABI %u, the glue expects %u", quiver_serve_abi_version(),
		                        static_cast<uint32_t>(QUIVER_SERVER_ABI_VERSION));
	}
	serving.db = context.db;
	serving.ops = ServerOps(*serving.db);
	auto database = DBConfig::GetConfig(*serving.db).options.database_path;
	if (database.empty()) {
		database = ":memory:";
	}
	string version = DuckDB::LibraryVersion();
	quiver_serve_options options;
	options.token = data.has_token ? data.token.c_str() : nullptr;
	options.no_auth = data.no_auth ? 1 : 0;
	options.max_connections = data.max_connections;
	options.message_bytes_max = data.message_bytes_max;
	options.database = database.c_str();
	options.duckdb_version = version.c_str();
	options.tls_cert = data.tls_cert.empty() ? nullptr : data.tls_cert.c_str();
	options.tls_key = data.tls_key.empty() ? nullptr : data.tls_key.c_str();
	options.auth_deadline_ms = data.auth_deadline_ms;
	options.unauthenticated_max = data.unauthenticated_max;
	options.slow_statement_ms = data.slow_statement_ms;
	options.log_json = data.log_json ? 1 : 0;
	options.metrics = data.metrics.empty() ? nullptr : data.metrics.c_str();
	vector<char> bound(ANNOUNCEMENT_BYTES_MAX, '\0');
	char error[ERROR_BYTES_MAX] = {0};
	auto listen = ListenLines(data.listen);
	if (quiver_serve_start(&serving.ops, listen.c_str(), &options, bound.data(), bound.size(), error,
	                       sizeof(error)) != 0) {
		serving.db.reset();
		throw InvalidInputException("quiver_serve: %s", error);
	}
	auto lines = StringUtil::Split(string(bound.data()), '\n');
	for (auto &line : lines) {
		auto colon = line.find(':');
		if (colon == string::npos) {
			continue;
		}
		state.rows.emplace_back(line.substr(0, colon), line.substr(colon + 1));
	}
}

void ServeScan(ClientContext &context, TableFunctionInput &input, DataChunk &output) {
	auto &state = input.global_state->Cast<RowsState>();
	if (!state.started) {
		state.started = true;
		Start(context, input.bind_data->Cast<ServeBindData>(), state);
	}
	EmitRows(state, output);
}

unique_ptr<FunctionData> StopBind(ClientContext &, TableFunctionBindInput &, vector<LogicalType> &return_types,
                                  vector<Identifier> &names) {
	return_types = {LogicalType::BOOLEAN};
	names = {Identifier("stopped")};
	return nullptr;
}

void StopScan(ClientContext &context, TableFunctionInput &input, DataChunk &output) {
	auto &state = input.global_state->Cast<RowsState>();
	if (state.started) {
		return;
	}
	state.started = true;
	if (SessionContexts().Contains(context)) {
		throw InvalidInputException("quiver_serve_stop() cannot run in a session of the server it stops");
	}
	auto &serving = Serving();
	bool stopped;
	{
		std::lock_guard<std::mutex> guard(serving.lock);
		stopped = quiver_serve_stop() != 0;
		serving.db.reset();
	}
	output.data[0].SetValue(0, Value::BOOLEAN(stopped));
	output.SetChildCardinality(1);
}

} // namespace

void RegisterServerFunctions(ExtensionLoader &loader) {
	TableFunction serve(Identifier("quiver_serve"), vector<LogicalType> {}, ServeScan, ServeBind, RowsInit);
	auto &signature = serve.GetSignature();
	signature.AddPositionalOnly(Identifier("listen"), LogicalType::VARCHAR);
	signature.WithTypedKwargs("options", [&](TypedKwargs &options) {
		options.Add(Identifier("token"), LogicalType::VARCHAR);
		options.Add(Identifier("no_auth"), LogicalType::BOOLEAN);
		options.Add(Identifier("max_connections"), LogicalType::BIGINT);
		options.Add(Identifier("message_bytes_max"), LogicalType::BIGINT);
		options.Add(Identifier("tls_cert"), LogicalType::VARCHAR);
		options.Add(Identifier("tls_key"), LogicalType::VARCHAR);
		options.Add(Identifier("auth_deadline_ms"), LogicalType::BIGINT);
		options.Add(Identifier("unauthenticated_max"), LogicalType::BIGINT);
		options.Add(Identifier("slow_statement_ms"), LogicalType::BIGINT);
		options.Add(Identifier("log_json"), LogicalType::BOOLEAN);
		options.Add(Identifier("metrics"), LogicalType::VARCHAR);
	});
	loader.RegisterFunction(serve);
	TableFunction stop("quiver_serve_stop", {}, StopScan, StopBind, RowsInit);
	loader.RegisterFunction(stop);
	RegisterServerBatchFunction(loader);
}

} // namespace quiver
} // namespace duckdb
