//===----------------------------------------------------------------------===//
// quiver — DuckDB's filters on a worker's table scan, translated to vgi.filters.v2.
//===----------------------------------------------------------------------===//
#pragma once

#include "duckdb/common/types/value.hpp"
#include "duckdb/planner/expression.hpp"

namespace duckdb {
class ClientContext;
class LogicalGet;

namespace quiver {

//! A vgi.filters.v2 snapshot document and its literals (columns value_<N> of a one-row batch).
struct TranslatedFilters {
	string spec;
	vector<Value> values;
	vector<string> value_names;
};

//! Translates the filters DuckDB offers a scan (pushdown_complex_filter) into predicates over the
//! unprojected output (`names`, `types`). With `exact` (the function applies pushed filters exactly)
//! translated filters are `required` and removed from `filters`; otherwise they are `advisory` and
//! stay, so DuckDB applies them too. Filters that do not translate always stay. Returns null when
//! nothing translates.
shared_ptr<TranslatedFilters> TranslateFilters(LogicalGet &get, const vector<string> &names,
                                               vector<unique_ptr<Expression>> &filters, bool exact);

} // namespace quiver
} // namespace duckdb
