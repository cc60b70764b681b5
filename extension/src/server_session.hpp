//===----------------------------------------------------------------------===//
// quiver — the server's DuckDB side (server_session.cpp): the operations table quiver_server.h
// describes, over one duckdb::Connection per session.
//===----------------------------------------------------------------------===//
#pragma once

#include <mutex>
#include <unordered_set>

#include "duckdb/main/database.hpp"
#include "quiver_server.h"

namespace duckdb {
class ClientContext;

namespace quiver {

//! The client contexts of the open server sessions: statements that must not run in one (a stop
//! would wait for the session it runs in) look themselves up here.
class ServerContexts {
public:
	void Add(ClientContext &context);
	void Remove(ClientContext &context);
	bool Contains(ClientContext &context);

private:
	std::mutex lock;
	std::unordered_set<ClientContext *> contexts;
};

ServerContexts &SessionContexts();

//! The operations the Rust server calls, every session a connection to db.
quiver_server_ops ServerOps(DatabaseInstance &db);

} // namespace quiver
} // namespace duckdb
