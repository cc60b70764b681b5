//! The example aggregates, with the same meaning in every SDK's example worker (Python:
//! `python/quiver/vgi/allinone.py`, Java: `AllInOne.java`):
//!
//! * `sum_int(x BIGINT) -> BIGINT` — the sum of the non-NULL values; NULL when there are none;
//!   an error on overflow.
//! * `avg_double(x DOUBLE) -> DOUBLE` — their mean; NULL when there are none.
//! * `concat_agg(s VARCHAR, sep VARCHAR constant) -> VARCHAR` — the non-NULL strings joined by
//!   `sep` in the order given (`concat_agg(s, ',' ORDER BY k)`); NULL when there are none.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use arrow_schema::DataType;
use quiver_vgi::{errors, AggregateFunction, AggregateInput, Aggregator, Arg, Args, Function};
use quiver_wire::ErrorReport;

struct SumInt;

impl Aggregator for SumInt {
    /// The sum, `None` until a non-NULL value arrives.
    type State = Option<i64>;

    fn init(&self, _: &Args) -> Option<i64> {
        None
    }

    fn update(
        &self,
        sum: &mut Option<i64>,
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport> {
        let x = input.columns[0].as_primitive::<Int64Type>();
        for &row in rows {
            if x.is_valid(row) {
                *sum = Some(add(sum.unwrap_or(0), x.value(row))?);
            }
        }
        Ok(())
    }

    fn combine(&self, sum: &mut Option<i64>, other: &Option<i64>) -> Result<(), ErrorReport> {
        if let Some(other) = other {
            *sum = Some(add(sum.unwrap_or(0), *other)?);
        }
        Ok(())
    }

    fn finalize(&self, states: &[Option<&Option<i64>>], _: &Args) -> Result<ArrayRef, ErrorReport> {
        Ok(Arc::new(
            states
                .iter()
                .map(|s| s.copied().flatten())
                .collect::<Int64Array>(),
        ))
    }
}

fn add(a: i64, b: i64) -> Result<i64, ErrorReport> {
    a.checked_add(b)
        .ok_or_else(|| errors::invalid_argument("sum_int(): BIGINT overflow"))
}

struct AvgDouble;

impl Aggregator for AvgDouble {
    /// (sum, count) of the non-NULL values.
    type State = (f64, i64);

    fn init(&self, _: &Args) -> (f64, i64) {
        (0.0, 0)
    }

    fn update(
        &self,
        state: &mut (f64, i64),
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport> {
        let x = input.columns[0].as_primitive::<Float64Type>();
        for &row in rows {
            if x.is_valid(row) {
                state.0 += x.value(row);
                state.1 += 1;
            }
        }
        Ok(())
    }

    fn combine(&self, state: &mut (f64, i64), other: &(f64, i64)) -> Result<(), ErrorReport> {
        state.0 += other.0;
        state.1 += other.1;
        Ok(())
    }

    fn finalize(&self, states: &[Option<&(f64, i64)>], _: &Args) -> Result<ArrayRef, ErrorReport> {
        Ok(Arc::new(
            states
                .iter()
                .map(|s| s.filter(|(_, n)| *n > 0).map(|(sum, n)| sum / *n as f64))
                .collect::<Float64Array>(),
        ))
    }
}

struct ConcatAgg;

impl Aggregator for ConcatAgg {
    /// The strings seen, in order.
    type State = Vec<String>;

    fn init(&self, _: &Args) -> Vec<String> {
        Vec::new()
    }

    fn update(
        &self,
        parts: &mut Vec<String>,
        input: &AggregateInput<'_>,
        rows: &[usize],
    ) -> Result<(), ErrorReport> {
        let s = input.columns[0].as_string::<i32>();
        parts.extend(
            rows.iter()
                .filter(|&&r| s.is_valid(r))
                .map(|&r| s.value(r).to_string()),
        );
        Ok(())
    }

    fn combine(&self, parts: &mut Vec<String>, other: &Vec<String>) -> Result<(), ErrorReport> {
        parts.extend(other.iter().cloned());
        Ok(())
    }

    fn finalize(
        &self,
        states: &[Option<&Vec<String>>],
        args: &Args,
    ) -> Result<ArrayRef, ErrorReport> {
        let sep = args.str("sep")?;
        Ok(Arc::new(
            states
                .iter()
                .map(|s| s.filter(|p| !p.is_empty()).map(|p| p.join(sep)))
                .collect::<StringArray>(),
        ))
    }
}

/// `sum_int`.
pub fn sum_int() -> Function {
    AggregateFunction::new("sum_int", DataType::Int64)
        .doc("Sum of the non-NULL values; NULL when there are none; an error on overflow")
        .arg(
            Arg::new("x", DataType::Int64)
                .doc("The values to add")
                .nullable(),
        )
        .aggregator(SumInt)
        .comment("Adds up the non-NULL integers of a group")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example(
            "SELECT allinone.main.sum_int(x) FROM range(5) t(x)",
            "The sum of 0..4: 10",
        )
}

/// `avg_double`.
pub fn avg_double() -> Function {
    AggregateFunction::new("avg_double", DataType::Float64)
        .doc("Mean of the non-NULL values; NULL when there are none")
        .arg(
            Arg::new("x", DataType::Float64)
                .doc("The values to average")
                .nullable(),
        )
        .aggregator(AvgDouble)
        .comment("Averages the non-NULL doubles of a group")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example(
            "SELECT allinone.main.avg_double(x::DOUBLE) FROM range(5) t(x)",
            "The mean of 0..4: 2.0",
        )
}

/// `concat_agg`.
pub fn concat_agg() -> Function {
    AggregateFunction::new("concat_agg", DataType::Utf8)
        .doc("The non-NULL strings joined by sep, in the order given (ORDER BY inside the call)")
        .arg(
            Arg::new("s", DataType::Utf8)
                .doc("The strings to join")
                .nullable(),
        )
        .arg(
            Arg::new("sep", DataType::Utf8)
                .doc("The separator")
                .constant(),
        )
        .order_dependent()
        .aggregator(ConcatAgg)
        .comment("Joins the strings of a group with a separator, in the order given")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example(
            "SELECT allinone.main.concat_agg(s, '-' ORDER BY s) FROM (VALUES ('b'), ('a'), ('c')) t(s)",
            "The strings in order, joined by '-': a-b-c",
        )
}
