//===----------------------------------------------------------------------===//
// quiver — the server's DuckDB side (server_session.cpp): the operations table quiver_server.h
// describes, over one duckdb::Connection per session.
//===----------------------------------------------------------------------===//
#pragma once

#include "duckdb/main/database.hpp"
#include "quiver_server.h"

namespace duckdb {
namespace quiver {

//! The operations the Rust server calls, every session a connection to db.
quiver_server_ops ServerOps(DatabaseInstance &db);

} // namespace quiver
} // namespace duckdb
