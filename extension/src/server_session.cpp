//===----------------------------------------------------------------------===//
// quiver — the server's DuckDB side: the quiver_server_ops table (quiver_server.h) over one
// duckdb::Connection per session. Statements, cursors (DuckDB's Arrow result stream: batches are
// produced as the client asks for them), prepared statements. Every DuckDB exception becomes a
// quiver_server_error carrying DuckDB's type name and message.
//===----------------------------------------------------------------------===//
#include "server_session.hpp"

#include <cstring>

#include "duckdb/common/arrow/arrow_converter.hpp"
#include "duckdb/common/arrow/arrow_format.hpp"
#include "duckdb/common/exception.hpp"
#include "duckdb/main/connection.hpp"
#include "duckdb/main/prepared_statement.hpp"
#include "duckdb/main/query_parameters.hpp"
#include "duckdb/main/query_result_stream.hpp"
#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node/merge_query_node.hpp"
#include "duckdb/parser/query_node/update_query_node.hpp"
#include "duckdb/parser/statement/delete_statement.hpp"
#include "duckdb/parser/statement/insert_statement.hpp"
#include "duckdb/parser/statement/merge_into_statement.hpp"
#include "duckdb/parser/statement/update_statement.hpp"
#include "quiver_server.h"
#include "server_batch.hpp"

using duckdb::ArrowFormat;
using duckdb::Connection;
using duckdb::ErrorData;
using duckdb::LogicalType;
using duckdb::PreparedStatement;
using duckdb::QueryResult;
using duckdb::QueryResultStream;
using duckdb::Value;

struct quiver_server_session {
	explicit quiver_server_session(duckdb::DatabaseInstance &db) : connection(db) {
		duckdb::quiver::SessionContexts().Add(*connection.context);
	}
	~quiver_server_session() {
		duckdb::quiver::SessionContexts().Remove(*connection.context);
	}
	Connection connection;
};

struct quiver_server_prepared {
	quiver_server_session *session;
	duckdb::unique_ptr<PreparedStatement> statement;
};

struct quiver_server_cursor {
	duckdb::unique_ptr<QueryResultStream<ArrowFormat>> stream;
};

namespace duckdb {
namespace quiver {

void ServerContexts::Add(ClientContext &context) {
	std::lock_guard<std::mutex> guard(lock);
	contexts.insert(&context);
}

void ServerContexts::Remove(ClientContext &context) {
	std::lock_guard<std::mutex> guard(lock);
	contexts.erase(&context);
}

bool ServerContexts::Contains(ClientContext &context) {
	std::lock_guard<std::mutex> guard(lock);
	return contexts.count(&context) != 0;
}

ServerContexts &SessionContexts() {
	static ServerContexts contexts;
	return contexts;
}

namespace {

void CopyText(char *out, size_t capacity, const string &text) {
	auto length = MinValue<size_t>(text.size(), capacity - 1);
	memcpy(out, text.data(), length);
	out[length] = '\0';
}

int32_t Fail(quiver_server_error *err, const ErrorData &error) {
	CopyText(err->type, sizeof(err->type), Exception::ExceptionTypeToString(error.Type()));
	CopyText(err->message, sizeof(err->message), error.Message());
	return QUIVER_SERVER_ERR;
}

//! Runs body; any exception becomes *err.
template <class BODY>
int32_t Guarded(quiver_server_error *err, BODY body) {
	try {
		body();
		return QUIVER_SERVER_OK;
	} catch (std::exception &ex) {
		return Fail(err, ErrorData(ex));
	}
}

template <class RESULT>
void ThrowIfError(RESULT &result) {
	if (result.HasError()) {
		result.GetErrorObject().Throw();
	}
}

//! The parameter rows a client sent, as Values: DuckDB's own Arrow scan converts them.
vector<vector<Value>> ParameterRows(Connection &connection, ArrowArrayStream *parameters) {
	vector<vector<Value>> rows;
	if (!parameters || !parameters->release) {
		return rows;
	}
	ScopedLentStream lent(parameters);
	auto result = connection.Query("SELECT * FROM quiver_server_batch()");
	ThrowIfError(*result);
	while (auto chunk = result->Fetch()) {
		for (idx_t row = 0; row < chunk->size(); row++) {
			vector<Value> values;
			for (idx_t column = 0; column < chunk->ColumnCount(); column++) {
				values.push_back(chunk->GetValue(column, row));
			}
			rows.push_back(std::move(values));
		}
	}
	return rows;
}

//! What a finished statement reports as changed rows.
int64_t RowsChanged(QueryResult &result) {
	ThrowIfError(result);
	if (result.GetStatementProperties().return_type != StatementReturnType::CHANGED_ROWS) {
		return QUIVER_SERVER_NO_COUNT;
	}
	auto chunk = result.Fetch();
	if (!chunk || chunk->size() == 0) {
		return 0;
	}
	return chunk->GetValue(0, 0).GetValue<int64_t>();
}

int64_t SumRowsChanged(int64_t total, int64_t rows) {
	if (rows == QUIVER_SERVER_NO_COUNT) {
		return total;
	}
	return total == QUIVER_SERVER_NO_COUNT ? rows : total + rows;
}

QueryParameters ArrowParameters(int64_t batch_rows) {
	D_ASSERT(batch_rows > 0);
	return QueryParameters(make_shared_ptr<ArrowFormat>(NumericCast<idx_t>(batch_rows)));
}

quiver_server_cursor *OpenCursor(unique_ptr<QueryResult> result) {
	ThrowIfError(*result);
	auto cursor = make_uniq<quiver_server_cursor>();
	cursor->stream = make_uniq<QueryResultStream<ArrowFormat>>(std::move(result));
	return cursor.release();
}

void ArrowSchemaOf(ClientProperties properties, const vector<LogicalType> &types, const vector<Identifier> &names,
                   ArrowSchema &out) {
	vector<string> column_names;
	for (auto &name : names) {
		column_names.push_back(name.GetIdentifierName());
	}
	ArrowConverter::ToArrowSchema(&out, types, column_names, properties);
}

// ---- the ops ------------------------------------------------------------------------------------

int32_t OpenSession(void *db, quiver_server_session **out, quiver_server_error *err) {
	return Guarded(err, [&]() { *out = new quiver_server_session(*static_cast<DatabaseInstance *>(db)); });
}

void CloseSession(quiver_server_session *session) {
	if (!session) {
		return;
	}
	try {
		if (!session->connection.IsAutoCommit()) {
			session->connection.Rollback();
		}
	} catch (std::exception &) {
		// The transaction is gone with the connection either way.
	}
	delete session;
}

void Interrupt(quiver_server_session *session) {
	session->connection.Interrupt();
}

int32_t InTransaction(quiver_server_session *session) {
	try {
		return session->connection.IsAutoCommit() ? 0 : 1;
	} catch (std::exception &) {
		return 0;
	}
}

int32_t Execute(quiver_server_session *session, const char *sql_p, size_t sql_len, ArrowArrayStream *parameters,
                ArrowArrayStream *stream_input, int64_t *rows_changed, quiver_server_error *err) {
	ScopedLentStream lent_input(stream_input);
	return Guarded(err, [&]() {
		auto &connection = session->connection;
		string sql(sql_p, sql_len);
		auto rows = ParameterRows(connection, parameters);
		int64_t total = QUIVER_SERVER_NO_COUNT;
		if (parameters) {
			auto prepared = connection.Prepare(sql);
			ThrowIfError(*prepared);
			for (auto &values : rows) {
				total = SumRowsChanged(total, RowsChanged(*prepared->Execute(values)));
			}
		} else {
			auto result = connection.Query(sql);
			for (auto current = result.get(); current; current = current->next.get()) {
				total = RowsChanged(*current);
			}
		}
		*rows_changed = total;
	});
}

int32_t Query(quiver_server_session *session, const char *sql_p, size_t sql_len, ArrowArrayStream *parameters,
              int64_t batch_rows, quiver_server_cursor **out, quiver_server_error *err) {
	return Guarded(err, [&]() {
		auto &connection = session->connection;
		string sql(sql_p, sql_len);
		auto rows = ParameterRows(connection, parameters);
		if (rows.size() > 1) {
			throw InvalidInputException("a query takes one row of parameters, got %llu", rows.size());
		}
		if (rows.empty()) {
			*out = OpenCursor(connection.Submit(sql, ArrowParameters(batch_rows)));
		} else {
			*out = OpenCursor(connection.Submit(sql, rows[0], ArrowParameters(batch_rows)));
		}
	});
}

//! A type DuckDB resolved while preparing: not SELECT ?'s unknown, which it learns only from the
//! bound value. Where a schema must be told before that, an unresolved type is told as NULL.
bool Bindable(const LogicalType &type) {
	return type.IsComplete() && !type.IsUnknown() && type.id() != LogicalTypeId::ANY &&
	       type.id() != LogicalTypeId::INVALID;
}

//! The types as a schema can tell them before execution.
vector<LogicalType> Resolved(const vector<LogicalType> &types) {
	vector<LogicalType> resolved;
	for (auto &type : types) {
		resolved.push_back(Bindable(type) ? type : LogicalType::SQLNULL);
	}
	return resolved;
}

// Whether a data-changing statement of this kind has a RETURNING clause.
template <class STATEMENT>
static bool HasReturning(const duckdb::SQLStatement &statement) {
	auto &node = statement.Cast<STATEMENT>().node;
	return node && !node->returning_list.empty();
}

// Whether a prepared statement returns a result set. DuckDB reports a statement whose parameter types it
// could not infer as a query of one UNKNOWN column, whatever its kind: a parameterized INSERT would then be
// taken for a query and run only when (and if) its result is read. For such a statement the kind decides:
// INSERT, UPDATE, DELETE and MERGE return rows only with RETURNING.
static bool ReturnsResultSet(Connection &connection, const string &sql, PreparedStatement &statement) {
	using duckdb::StatementType;
	auto &properties = statement.GetStatementProperties();
	if (properties.return_type != StatementReturnType::QUERY_RESULT) {
		return false;
	}
	if (properties.bound_all_parameters) {
		return true;
	}
	duckdb::Parser parser(*connection.context);
	parser.ParseQuery(sql);
	if (parser.statements.size() != 1) {
		return true;
	}
	auto &parsed = *parser.statements[0];
	switch (parsed.type) {
	case StatementType::INSERT_STATEMENT:
		return HasReturning<duckdb::InsertStatement>(parsed);
	case StatementType::UPDATE_STATEMENT:
		return HasReturning<duckdb::UpdateStatement>(parsed);
	case StatementType::DELETE_STATEMENT:
		return HasReturning<duckdb::DeleteStatement>(parsed);
	case StatementType::MERGE_INTO_STATEMENT:
		return HasReturning<duckdb::MergeIntoStatement>(parsed);
	default:
		return true;
	}
}

int32_t Prepare(quiver_server_session *session, const char *sql_p, size_t sql_len, quiver_server_prepared **out,
                int64_t *parameter_count, ArrowSchema *result_schema, quiver_server_error *err) {
	result_schema->release = nullptr;
	return Guarded(err, [&]() {
		string sql(sql_p, sql_len);
		auto statement = session->connection.Prepare(sql);
		ThrowIfError(*statement);
		*parameter_count = NumericCast<int64_t>(statement->GetParameterCount());
		if (ReturnsResultSet(session->connection, sql, *statement)) {
			ArrowSchemaOf(session->connection.context->GetClientProperties(), Resolved(statement->GetTypes()),
			              statement->GetNames(), *result_schema);
		}
		*out = new quiver_server_prepared {session, std::move(statement)};
	});
}

int32_t ExecutePrepared(quiver_server_prepared *prepared, ArrowArrayStream *parameters, int64_t *rows_changed,
                        quiver_server_error *err) {
	return Guarded(err, [&]() {
		auto rows = ParameterRows(prepared->session->connection, parameters);
		if (rows.empty()) {
			rows.emplace_back();
		}
		int64_t total = QUIVER_SERVER_NO_COUNT;
		for (auto &values : rows) {
			total = SumRowsChanged(total, RowsChanged(*prepared->statement->Execute(values)));
		}
		*rows_changed = total;
	});
}

int32_t QueryPrepared(quiver_server_prepared *prepared, ArrowArrayStream *parameters, int64_t batch_rows,
                      quiver_server_cursor **out, quiver_server_error *err) {
	return Guarded(err, [&]() {
		auto rows = ParameterRows(prepared->session->connection, parameters);
		if (rows.size() > 1) {
			throw InvalidInputException("a query takes one row of parameters, got %llu", rows.size());
		}
		if (rows.empty()) {
			rows.emplace_back();
		}
		*out = OpenCursor(prepared->statement->Submit(rows[0], ArrowParameters(batch_rows)));
	});
}

void ClosePrepared(quiver_server_prepared *prepared) {
	delete prepared;
}

int32_t PreparedParameterTypes(quiver_server_prepared *prepared, ArrowSchema *out, quiver_server_error *err) {
	out->release = nullptr;
	return Guarded(err, [&]() {
		auto &statement = *prepared->statement;
		auto expected = statement.GetExpectedParameterTypes();
		vector<LogicalType> types;
		vector<string> names;
		for (idx_t position = 1; position <= statement.GetParameterCount(); position++) {
			auto name = std::to_string(position);
			auto found = expected.find(name);
			bool bindable = found != expected.end() && Bindable(found->second);
			types.push_back(bindable ? found->second : LogicalType::SQLNULL);
			names.push_back(name);
		}
		auto properties = prepared->session->connection.context->GetClientProperties();
		ArrowConverter::ToArrowSchema(out, types, names, properties);
	});
}

int32_t CursorSchema(quiver_server_cursor *cursor, ArrowSchema *out, quiver_server_error *err) {
	return Guarded(err, [&]() {
		auto &stream = *cursor->stream;
		ArrowSchemaOf(stream.GetClientProperties(), stream.GetTypes(), stream.GetNames(), *out);
	});
}

int32_t CursorNext(quiver_server_cursor *cursor, ArrowArray *out, int32_t *end, quiver_server_error *err) {
	return Guarded(err, [&]() {
		auto &stream = *cursor->stream;
		auto array = stream.Fetch();
		if (!array) {
			if (stream.HasError()) {
				stream.GetErrorObject().Throw();
			}
			*end = 1;
			return;
		}
		*end = 0;
		array->MoveTo(*out);
	});
}

void CursorClose(quiver_server_cursor *cursor) {
	if (!cursor) {
		return;
	}
	try {
		cursor->stream->Close();
	} catch (std::exception &) {
		// Closing ends the query either way.
	}
	delete cursor;
}

} // namespace

quiver_server_ops ServerOps(DatabaseInstance &db) {
	quiver_server_ops ops;
	ops.abi_version = QUIVER_SERVER_ABI_VERSION;
	ops.db = &db;
	ops.open_session = OpenSession;
	ops.close_session = CloseSession;
	ops.interrupt = Interrupt;
	ops.in_transaction = InTransaction;
	ops.execute = Execute;
	ops.query = Query;
	ops.prepare = Prepare;
	ops.execute_prepared = ExecutePrepared;
	ops.query_prepared = QueryPrepared;
	ops.close_prepared = ClosePrepared;
	ops.prepared_parameter_types = PreparedParameterTypes;
	ops.cursor_schema = CursorSchema;
	ops.cursor_next = CursorNext;
	ops.cursor_close = CursorClose;
	return ops;
}

} // namespace quiver
} // namespace duckdb
