//! DuckDB type names (a manifest's `schema`, what `DESCRIBE` says of the part files) sorted into
//! classes, and the one rule of compatibility with a dataset's declared type (its contract): the
//! source must be of the same kind and at least as wide. A narrowed type (`BIGINT` data for a
//! `BIGINT` contract turning `INTEGER`) is a breaking change and is refused, as offloader's
//! `additive_only` policy does; a widened one is allowed, and the materialize's `CAST` to the
//! declared type then checks every value (an integer that overflows fails the materialize).

use crate::project::ColumnType;

/// What a DuckDB type is, as far as serving cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeClass {
    Boolean,
    /// An integer of `bits` bits.
    Integer {
        bits: u8,
        signed: bool,
    },
    Float,
    Double,
    Decimal,
    Varchar,
    Date,
    Timestamp,
    TimestampTz,
    /// `STRUCT`, `MAP`, a list, or `JSON`.
    Nested,
}

/// The class of a DuckDB type name; `None` for a type a snapshot may not hold.
pub fn classify(type_text: &str) -> Option<TypeClass> {
    let upper = type_text.trim().to_ascii_uppercase();
    if upper.ends_with(']')
        || upper.starts_with("STRUCT")
        || upper.starts_with("MAP")
        || upper.starts_with("LIST")
        || upper == "JSON"
    {
        return Some(TypeClass::Nested);
    }
    if upper.starts_with("DECIMAL") || upper.starts_with("NUMERIC") {
        return Some(TypeClass::Decimal);
    }
    let integer = |bits, signed| Some(TypeClass::Integer { bits, signed });
    match upper.as_str() {
        "BOOLEAN" | "BOOL" | "LOGICAL" => Some(TypeClass::Boolean),
        "TINYINT" | "INT1" => integer(8, true),
        "SMALLINT" | "INT2" | "SHORT" => integer(16, true),
        "INTEGER" | "INT" | "INT4" | "SIGNED" => integer(32, true),
        "BIGINT" | "INT8" | "LONG" => integer(64, true),
        "UTINYINT" => integer(8, false),
        "USMALLINT" => integer(16, false),
        "UINTEGER" => integer(32, false),
        "UBIGINT" => integer(64, false),
        "FLOAT" | "FLOAT4" | "REAL" => Some(TypeClass::Float),
        "DOUBLE" | "FLOAT8" => Some(TypeClass::Double),
        "VARCHAR" | "TEXT" | "STRING" | "CHAR" | "BPCHAR" => Some(TypeClass::Varchar),
        "DATE" => Some(TypeClass::Date),
        "TIMESTAMP" | "DATETIME" | "TIMESTAMP_S" | "TIMESTAMP_MS" | "TIMESTAMP_NS"
        | "TIMESTAMP_US" => Some(TypeClass::Timestamp),
        "TIMESTAMP WITH TIME ZONE" | "TIMESTAMPTZ" => Some(TypeClass::TimestampTz),
        _ => None,
    }
}

/// Whether a `source` column may feed a column declared `target`: the same kind, at least as
/// wide.
pub fn compatible(source: &TypeClass, target: ColumnType) -> bool {
    use TypeClass as S;
    match target {
        ColumnType::Boolean => *source == S::Boolean,
        ColumnType::Integer => integer_at_least(source, 32),
        ColumnType::Bigint => integer_at_least(source, 64),
        ColumnType::Double => matches!(source, S::Double | S::Decimal),
        ColumnType::Varchar => *source == S::Varchar,
        ColumnType::Date => matches!(source, S::Date | S::Timestamp | S::TimestampTz),
        ColumnType::Timestamp => matches!(source, S::Timestamp | S::TimestampTz),
        ColumnType::Json => matches!(source, S::Nested | S::Varchar),
    }
}

/// Whether an integer type holds at least `bits` bits.
fn integer_at_least(source: &TypeClass, bits: u8) -> bool {
    matches!(*source, TypeClass::Integer { bits: from, .. } if from >= bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_is_refused_and_widening_allowed() {
        let class = |text| classify(text).unwrap();
        assert!(
            !compatible(&class("INTEGER"), ColumnType::Bigint),
            "BIGINT -> INTEGER narrows"
        );
        assert!(compatible(&class("int8"), ColumnType::Bigint));
        assert!(
            compatible(&class("BIGINT"), ColumnType::Integer),
            "a widened source"
        );
        assert!(!compatible(&class("SMALLINT"), ColumnType::Integer));
        assert!(!compatible(&class("FLOAT"), ColumnType::Double));
        assert!(compatible(&class("DECIMAL(18,2)"), ColumnType::Double));
        assert!(!compatible(&class("DATE"), ColumnType::Timestamp));
        assert!(compatible(&class("TIMESTAMP"), ColumnType::Date));
        assert!(!compatible(&class("VARCHAR"), ColumnType::Integer));
        assert!(!compatible(&class("INTEGER"), ColumnType::Varchar));
        assert!(compatible(&class("STRUCT(a INTEGER)"), ColumnType::Json));
        assert!(compatible(&class("INTEGER[]"), ColumnType::Json));
        assert_eq!(classify("HUGEINT"), None);
        assert_eq!(classify("BLOB"), None);
    }
}
