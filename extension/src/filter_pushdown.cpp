//===----------------------------------------------------------------------===//
// quiver — filter pushdown: DuckDB expressions over a scan's columns -> vgi.filters.v2 predicates.
//
// Translated: column <op> constant (the eight comparisons, either side), BETWEEN, IN / NOT IN over
// constants, IS [NOT] NULL, NOT, AND, OR. Anything else (casts on the column, functions,
// several columns in one comparison) is left to DuckDB. A literal travels as a typed Arrow value
// (value_<N>), so the worker compares with DuckDB's own type, not a JSON rendering of it.
//===----------------------------------------------------------------------===//
#include "quiver_filters.hpp"

#include "duckdb/planner/expression/bound_between_expression.hpp"
#include "duckdb/planner/expression/bound_columnref_expression.hpp"
#include "duckdb/planner/expression/bound_comparison_expression.hpp"
#include "duckdb/planner/expression/bound_conjunction_expression.hpp"
#include "duckdb/planner/expression/bound_constant_expression.hpp"
#include "duckdb/planner/expression/bound_function_expression.hpp"
#include "duckdb/planner/expression/bound_operator_expression.hpp"
#include "duckdb/planner/operator/logical_get.hpp"

namespace duckdb {
namespace quiver {

namespace {

string JsonString(const string &text) {
	string out = "\"";
	for (unsigned char c : text) {
		switch (c) {
		case '"':
			out += "\\\"";
			break;
		case '\\':
			out += "\\\\";
			break;
		case '\n':
			out += "\\n";
			break;
		case '\r':
			out += "\\r";
			break;
		case '\t':
			out += "\\t";
			break;
		default:
			if (c < 0x20) {
				char escaped[8];
				snprintf(escaped, sizeof(escaped), "\\u%04x", c);
				out += escaped;
			} else {
				out += static_cast<char>(c);
			}
		}
	}
	return out + "\"";
}

const char *ComparisonOp(ExpressionType type) {
	switch (type) {
	case ExpressionType::COMPARE_EQUAL:
		return "eq";
	case ExpressionType::COMPARE_NOTEQUAL:
		return "ne";
	case ExpressionType::COMPARE_LESSTHAN:
		return "lt";
	case ExpressionType::COMPARE_LESSTHANOREQUALTO:
		return "le";
	case ExpressionType::COMPARE_GREATERTHAN:
		return "gt";
	case ExpressionType::COMPARE_GREATERTHANOREQUALTO:
		return "ge";
	case ExpressionType::COMPARE_DISTINCT_FROM:
		return "distinct_from";
	case ExpressionType::COMPARE_NOT_DISTINCT_FROM:
		return "not_distinct_from";
	default:
		return nullptr;
	}
}

//! Builds the JSON of one filter; returns false (leaving the literals as they were) when it cannot.
class Translator {
public:
	Translator(LogicalGet &get, const vector<string> &names, TranslatedFilters &out)
	    : get(get), names(names), out(out) {
	}

	bool Translate(const Expression &expr, string &json) {
		auto values_before = out.values.size();
		if (Node(expr, json, 0)) {
			return true;
		}
		out.values.resize(values_before);
		out.value_names.resize(values_before);
		return false;
	}

private:
	static constexpr idx_t DEPTH_MAX = 32;

	bool Node(const Expression &expr, string &json, idx_t depth) {
		if (depth > DEPTH_MAX) {
			return false;
		}
		auto type = expr.GetExpressionType();
		switch (expr.GetExpressionClass()) {
		case ExpressionClass::BOUND_CONJUNCTION: {
			auto &conjunction = expr.Cast<BoundConjunctionExpression>();
			auto node = type == ExpressionType::CONJUNCTION_AND ? "and" : "or";
			return Children(node, conjunction.GetChildren(), json, depth);
		}
		case ExpressionClass::BOUND_OPERATOR:
			return Operator(expr.Cast<BoundOperatorExpression>(), json, depth);
		case ExpressionClass::BOUND_FUNCTION: {
			auto &function = expr.Cast<BoundFunctionExpression>();
			if (type == ExpressionType::COMPARE_BETWEEN) {
				return Between(function, json);
			}
			if (BoundComparisonExpression::IsComparison(expr)) {
				return Comparison(type, BoundComparisonExpression::Left(function),
				                  BoundComparisonExpression::Right(function), json);
			}
			return false;
		}
		default:
			return false;
		}
	}

	bool Children(const char *node, const vector<unique_ptr<Expression>> &children, string &json, idx_t depth) {
		if (children.size() < 2) {
			return children.size() == 1 && Node(*children[0], json, depth + 1);
		}
		json = string("{\"node\":\"") + node + "\",\"children\":[";
		for (idx_t i = 0; i < children.size(); i++) {
			string child;
			if (!Node(*children[i], child, depth + 1)) {
				return false;
			}
			json += (i ? "," : "") + child;
		}
		json += "]}";
		return true;
	}

	bool Operator(const BoundOperatorExpression &op, string &json, idx_t depth) {
		auto &children = op.GetChildren();
		switch (op.GetExpressionType()) {
		case ExpressionType::OPERATOR_NOT: {
			string child;
			if (children.size() != 1 || !Node(*children[0], child, depth + 1)) {
				return false;
			}
			json = "{\"node\":\"not\",\"expression\":" + child + "}";
			return true;
		}
		case ExpressionType::OPERATOR_IS_NULL:
		case ExpressionType::OPERATOR_IS_NOT_NULL: {
			string column;
			if (children.size() != 1 || !Column(*children[0], column)) {
				return false;
			}
			auto negated = op.GetExpressionType() == ExpressionType::OPERATOR_IS_NOT_NULL;
			json = "{\"node\":\"is_null\",\"expression\":" + column + ",\"negated\":" + (negated ? "true" : "false") +
			       "}";
			return true;
		}
		case ExpressionType::COMPARE_IN:
		case ExpressionType::COMPARE_NOT_IN: {
			string column;
			if (children.size() < 2 || !Column(*children[0], column)) {
				return false;
			}
			vector<Value> candidates;
			for (idx_t i = 1; i < children.size(); i++) {
				if (children[i]->GetExpressionClass() != ExpressionClass::BOUND_CONSTANT) {
					return false;
				}
				candidates.push_back(children[i]->Cast<BoundConstantExpression>().GetValue());
			}
			auto set = Literal(Value::LIST(children[0]->GetReturnType(), std::move(candidates)));
			auto negated = op.GetExpressionType() == ExpressionType::COMPARE_NOT_IN;
			json = "{\"node\":\"in\",\"expression\":" + column + ",\"set\":{\"kind\":\"literal\",\"value_ref\":" +
			       to_string(set) + "},\"negated\":" + (negated ? "true" : "false") + "}";
			return true;
		}
		default:
			return false;
		}
	}

	bool Comparison(ExpressionType type, const Expression &left, const Expression &right, string &json) {
		auto op = ComparisonOp(type);
		if (!op) {
			return false;
		}
		string column;
		string literal;
		if (Column(left, column) && Constant(right, literal)) {
			json = string("{\"node\":\"comparison\",\"op\":\"") + op + "\",\"left\":" + column + ",\"right\":" +
			       literal + "}";
			return true;
		}
		if (Constant(left, literal) && Column(right, column)) {
			json = string("{\"node\":\"comparison\",\"op\":\"") + op + "\",\"left\":" + literal + ",\"right\":" +
			       column + "}";
			return true;
		}
		return false;
	}

	bool Between(const BoundFunctionExpression &between, string &json) {
		string lower;
		string upper;
		auto &input = BoundBetweenExpression::Input(between);
		if (!Comparison(BoundBetweenExpression::LowerComparisonType(between), input,
		                BoundBetweenExpression::LowerBound(between), lower) ||
		    !Comparison(BoundBetweenExpression::UpperComparisonType(between), input,
		                BoundBetweenExpression::UpperBound(between), upper)) {
			return false;
		}
		json = "{\"node\":\"and\",\"children\":[" + lower + "," + upper + "]}";
		return true;
	}

	//! A column of this scan, by its index in the unprojected output.
	bool Column(const Expression &expr, string &json) {
		if (expr.GetExpressionClass() != ExpressionClass::BOUND_COLUMN_REF) {
			return false;
		}
		auto &binding = expr.Cast<BoundColumnRefExpression>().Binding();
		auto &column_ids = get.GetColumnIds();
		if (binding.table_index != get.table_index || binding.column_index.GetIndex() >= column_ids.size()) {
			return false;
		}
		auto column = column_ids[binding.column_index.GetIndex()].GetPrimaryIndex();
		if (column >= names.size()) {
			return false; // a row id or another virtual column
		}
		json = "{\"node\":\"column_ref\",\"column_index\":" + to_string(column) +
		       ",\"column_name\":" + JsonString(names[column]) + "}";
		return true;
	}

	bool Constant(const Expression &expr, string &json) {
		if (expr.GetExpressionClass() != ExpressionClass::BOUND_CONSTANT) {
			return false;
		}
		auto &value = expr.Cast<BoundConstantExpression>().GetValue();
		json = "{\"node\":\"literal\",\"value_ref\":" + to_string(Literal(value)) + "}";
		return true;
	}

	idx_t Literal(Value value) {
		auto index = out.values.size();
		out.values.push_back(std::move(value));
		out.value_names.push_back("value_" + to_string(index));
		return index;
	}

	LogicalGet &get;
	const vector<string> &names;
	TranslatedFilters &out;
};

} // namespace

shared_ptr<TranslatedFilters> TranslateFilters(LogicalGet &get, const vector<string> &names,
                                               vector<unique_ptr<Expression>> &filters, bool exact) {
	auto result = make_shared_ptr<TranslatedFilters>();
	Translator translator(get, names, *result);
	string predicates;
	idx_t count = 0;
	for (idx_t i = 0; i < filters.size(); i++) {
		string expression;
		if (!translator.Translate(*filters[i], expression)) {
			continue;
		}
		predicates += (count ? "," : "") + string("{\"id\":\"query:") + to_string(count) +
		              "\",\"revision\":0,\"mode\":\"" + (exact ? "required" : "advisory") +
		              "\",\"source\":\"query\",\"expression\":" + expression + "}";
		count++;
		if (exact) {
			filters.erase_at(i);
			i--;
		}
	}
	if (count == 0) {
		return nullptr;
	}
	result->spec = "{\"encoding\":\"vgi.filters.v2\",\"semantics\":\"vgi.duckdb.standard.v1\",\"kind\":\"snapshot\","
	               "\"predicates\":[" +
	               predicates + "]}";
	return result;
}

} // namespace quiver
} // namespace duckdb
