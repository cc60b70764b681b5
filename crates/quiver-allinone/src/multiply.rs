//! `multiply(value BIGINT, factor BIGINT) -> BIGINT`: the product; NULL when
//! either side is NULL; an error on overflow, as DuckDB's own `*` on BIGINT
//! raises one. The same meaning in every SDK's example worker (Python:
//! `python/quiver/vgi/allinone.py`, Java: `Multiply.java`).
//!
//! The product is taken over every slot in one branch-free pass (wrapping,
//! with the overflow flags OR-ed together), so the loop vectorises; only when
//! a flag is set are the rows looked at one by one, to tell an overflow in a
//! valid row (the error) from garbage under a NULL (ignored).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::DataType;
use quiver_vgi::{errors, Arg, Function, ScalarFunction};
use quiver_wire::ErrorReport;

/// The function's description, the same in every SDK.
pub const DESCRIPTION: &str = "Multiplies two BIGINTs; NULL when either is NULL; \
    an error on overflow, as DuckDB's own * on BIGINT.";

/// The `multiply` function.
pub fn multiply() -> Function {
    ScalarFunction::new("multiply", DataType::Int64)
        .doc(DESCRIPTION)
        .arg(Arg::new("value", DataType::Int64).doc("The number to multiply"))
        .arg(Arg::new("factor", DataType::Int64).doc("The factor"))
        .body(|input| {
            let value = input.columns[0].as_primitive::<Int64Type>();
            let factor = input.columns[1].as_primitive::<Int64Type>();
            Ok(Arc::new(product(value, factor)?) as ArrayRef)
        })
        .comment("Multiplies two integers, as DuckDB's * does")
        .tag("vgi.category", "math")
        .category("math")
        .example("SELECT allinone.main.multiply(21, 2)", "21 times 2: 42")
}

/// `value * factor` row by row; NULL where either is NULL.
pub fn product(value: &Int64Array, factor: &Int64Array) -> Result<Int64Array, ErrorReport> {
    let nulls = NullBuffer::union(value.nulls(), factor.nulls());
    let mut overflow = false;
    let products: ScalarBuffer<i64> = value
        .values()
        .iter()
        .zip(factor.values().iter())
        .map(|(&a, &b)| {
            let (p, o) = a.overflowing_mul(b);
            overflow |= o;
            p
        })
        .collect();
    if overflow {
        check(value, factor, nulls.as_ref())?;
    }
    Ok(Int64Array::new(products, nulls))
}

/// The error for the first valid row whose product overflows, if any.
fn check(
    value: &Int64Array,
    factor: &Int64Array,
    nulls: Option<&NullBuffer>,
) -> Result<(), ErrorReport> {
    for row in 0..value.len() {
        let (a, b) = (value.value(row), factor.value(row));
        if nulls.is_none_or(|n| n.is_valid(row)) && a.checked_mul(b).is_none() {
            return Err(errors::invalid_argument(format!(
                "multiply(): BIGINT overflow ({a} * {b})"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(value: &[Option<i64>], factor: &[Option<i64>]) -> Result<Vec<Option<i64>>, String> {
        product(
            &Int64Array::from(value.to_vec()),
            &Int64Array::from(factor.to_vec()),
        )
        .map(|a| a.iter().collect())
        .map_err(|e| e.message)
    }

    #[test]
    fn products_keep_nulls_of_either_side() {
        let got = run(
            &[Some(3), None, Some(-4), Some(5), Some(i64::MAX)],
            &[Some(2), Some(2), Some(2), None, Some(1)],
        );
        assert_eq!(
            got.unwrap(),
            [Some(6), None, Some(-8), None, Some(i64::MAX)]
        );
    }

    #[test]
    fn overflow_in_a_valid_row_is_an_error() {
        let err = run(&[Some(1), Some(i64::MAX)], &[Some(2), Some(2)]).unwrap_err();
        assert_eq!(
            err,
            format!("multiply(): BIGINT overflow ({} * 2)", i64::MAX)
        );
        assert!(run(&[Some(i64::MIN)], &[Some(-1)]).is_err());
    }

    #[test]
    fn values_under_a_null_never_overflow() {
        // A NULL slot's value is whatever the sender left there.
        let value = Int64Array::new(vec![i64::MAX, 7].into(), Some(vec![false, true].into()));
        let factor = Int64Array::from(vec![2, 2]);
        let got: Vec<Option<i64>> = product(&value, &factor).unwrap().iter().collect();
        assert_eq!(got, [None, Some(14)]);
    }
}
