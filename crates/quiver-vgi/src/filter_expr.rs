//! The predicate trees a worker evaluates exactly, and the typing rules both the parser
//! (`filters.rs`) and the evaluator (`filter_eval.rs`) follow.

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    DistinctFrom,
    NotDistinctFrom,
}

/// An expression the worker evaluates exactly.
#[derive(Clone, Debug)]
pub enum Expr {
    /// A column of the unprojected output.
    Column { index: usize, data_type: DataType },
    /// One typed value (possibly NULL).
    Literal(ArrayRef),
    /// `left op right`, both sides cast to `common` first.
    Compare {
        op: CmpOp,
        left: Box<Expr>,
        right: Box<Expr>,
        common: DataType,
    },
    /// Three-valued AND of two or more children.
    And(Vec<Expr>),
    /// Three-valued OR of two or more children.
    Or(Vec<Expr>),
    /// Three-valued NOT.
    Not(Box<Expr>),
    /// `IS NULL` (or `IS NOT NULL` when negated); never NULL itself.
    IsNull { expr: Box<Expr>, negated: bool },
    /// `expr [NOT] IN (candidates)` with SQL semantics; both cast to `common`.
    In {
        expr: Box<Expr>,
        candidates: ArrayRef,
        negated: bool,
        common: DataType,
    },
}

impl Expr {
    /// The Arrow type the expression evaluates to.
    pub fn data_type(&self) -> DataType {
        match self {
            Expr::Column { data_type, .. } => data_type.clone(),
            Expr::Literal(value) => value.data_type().clone(),
            _ => DataType::Boolean,
        }
    }

    pub(crate) fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Column { index, .. } => out.push(*index),
            Expr::Literal(_) => {}
            Expr::Compare { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
            Expr::And(children) | Expr::Or(children) => {
                children.iter().for_each(|c| c.columns(out))
            }
            Expr::Not(expr) | Expr::IsNull { expr, .. } | Expr::In { expr, .. } => {
                expr.columns(out)
            }
        }
    }
}

/// Types the comparison kernels handle.
pub fn is_comparable(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Null | Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float16
            | Float32
            | Float64
            | Utf8
            | LargeUtf8
            | Utf8View
            | Binary
            | LargeBinary
            | BinaryView
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(_, _)
            | Duration(_)
            | Decimal128(_, _)
            | Decimal256(_, _)
    )
}

/// The type two comparable types are compared in: the same type, or the one
/// both widen to (integers to INT64, numbers with a float to DOUBLE, string and
/// binary flavours to their plain form); `None` if there is none.
pub fn common_type(left: &DataType, right: &DataType) -> Option<DataType> {
    use DataType::*;
    if left == right {
        return Some(left.clone());
    }
    let string = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let binary = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    match (left, right) {
        (Null, other) | (other, Null) => Some(other.clone()),
        (l, r) if l.is_integer() && r.is_integer() => match (l, r) {
            (UInt64, r) if r.is_unsigned_integer() => Some(UInt64),
            (l, UInt64) if l.is_unsigned_integer() => Some(UInt64),
            (UInt64, _) | (_, UInt64) => None,
            _ => Some(Int64),
        },
        (l, r) if l.is_numeric() && r.is_numeric() && (l.is_floating() || r.is_floating()) => {
            let decimal = |t: &DataType| matches!(t, Decimal128(_, _) | Decimal256(_, _));
            (!decimal(l) && !decimal(r)).then_some(Float64)
        }
        (l, r) if string(l) && string(r) => Some(Utf8),
        (l, r) if binary(l) && binary(r) => Some(Binary),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_types() {
        assert_eq!(
            common_type(&DataType::Int32, &DataType::Int64),
            Some(DataType::Int64)
        );
        assert_eq!(
            common_type(&DataType::Int64, &DataType::Float32),
            Some(DataType::Float64)
        );
        assert_eq!(
            common_type(&DataType::LargeUtf8, &DataType::Utf8),
            Some(DataType::Utf8)
        );
        assert_eq!(common_type(&DataType::UInt64, &DataType::Int64), None);
        assert_eq!(common_type(&DataType::Utf8, &DataType::Int64), None);
    }
}
