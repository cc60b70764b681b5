//! `GetXdbcTypeInfo`: the SQL types DuckDB offers, as JDBC's `DatabaseMetaData.getTypeInfo` and
//! ODBC's `SQLGetTypeInfo` list them (a SQL tool builds its type pickers from this). One row per
//! DuckDB type a client can name in DDL, with the XDBC code it reads back as; answered through
//! arrow-flight's builder, which sorts by code and filters on the command's `data_type`.

use arrow_flight::sql::metadata::{XdbcTypeInfo, XdbcTypeInfoData, XdbcTypeInfoDataBuilder};
use arrow_flight::sql::{Nullable, Searchable, XdbcDataType, XdbcDatetimeSubcode};

/// A type's row: DuckDB's name, its XDBC code, its column size (precision in digits, or length).
struct Row {
    name: &'static str,
    code: XdbcDataType,
    size: Option<i32>,
}

const fn row(name: &'static str, code: XdbcDataType, size: Option<i32>) -> Row {
    Row { name, code, size }
}

/// The types, in DuckDB's names. Unsigned integers list the signed code of their width (XDBC
/// has no unsigned codes; `unsigned_attribute` says so).
const ROWS: [Row; 17] = [
    row("BOOLEAN", XdbcDataType::XdbcBit, Some(1)),
    row("TINYINT", XdbcDataType::XdbcTinyint, Some(3)),
    row("SMALLINT", XdbcDataType::XdbcSmallint, Some(5)),
    row("INTEGER", XdbcDataType::XdbcInteger, Some(10)),
    row("BIGINT", XdbcDataType::XdbcBigint, Some(19)),
    row("UTINYINT", XdbcDataType::XdbcTinyint, Some(3)),
    row("USMALLINT", XdbcDataType::XdbcSmallint, Some(5)),
    row("UINTEGER", XdbcDataType::XdbcInteger, Some(10)),
    row("UBIGINT", XdbcDataType::XdbcBigint, Some(20)),
    row("FLOAT", XdbcDataType::XdbcReal, Some(24)),
    row("DOUBLE", XdbcDataType::XdbcDouble, Some(53)),
    row("DECIMAL", XdbcDataType::XdbcDecimal, Some(38)),
    row("VARCHAR", XdbcDataType::XdbcVarchar, None),
    row("BLOB", XdbcDataType::XdbcVarbinary, None),
    row("DATE", XdbcDataType::XdbcDate, Some(10)),
    row("TIME", XdbcDataType::XdbcTime, Some(15)),
    row("TIMESTAMP", XdbcDataType::XdbcTimestamp, Some(26)),
];

/// The server's type table.
pub fn type_info() -> XdbcTypeInfoData {
    let mut builder = XdbcTypeInfoDataBuilder::new();
    for row in &ROWS {
        builder.append(info(row));
    }
    let mut zoned = info(&row("TIMESTAMPTZ", XdbcDataType::XdbcTimestamp, Some(32)));
    zoned.local_type_name = Some("TIMESTAMP WITH TIME ZONE".into());
    builder.append(zoned);
    builder.build().expect("the type table is well formed")
}

fn info(row: &Row) -> XdbcTypeInfo {
    use XdbcDataType as T;
    let numeric = matches!(
        row.code,
        T::XdbcBit
            | T::XdbcTinyint
            | T::XdbcSmallint
            | T::XdbcInteger
            | T::XdbcBigint
            | T::XdbcReal
            | T::XdbcDouble
            | T::XdbcDecimal
    );
    let quoted = matches!(
        row.code,
        T::XdbcVarchar | T::XdbcVarbinary | T::XdbcDate | T::XdbcTime | T::XdbcTimestamp
    );
    let (datetime_subcode, sql_data_type) = match row.code {
        // DATE's subcode is 1, which arrow-flight names by its alias, YEAR.
        T::XdbcDate => (Some(XdbcDatetimeSubcode::XdbcSubcodeYear), T::XdbcDatetime),
        T::XdbcTime => (Some(XdbcDatetimeSubcode::XdbcSubcodeTime), T::XdbcDatetime),
        T::XdbcTimestamp => (
            Some(XdbcDatetimeSubcode::XdbcSubcodeTimestamp),
            T::XdbcDatetime,
        ),
        code => (None, code),
    };
    let decimal = row.code == T::XdbcDecimal;
    XdbcTypeInfo {
        type_name: row.name.into(),
        data_type: row.code,
        column_size: row.size,
        literal_prefix: quoted.then(|| "'".into()),
        literal_suffix: quoted.then(|| "'".into()),
        create_params: decimal.then(|| vec!["precision".into(), "scale".into()]),
        nullable: Nullable::NullabilityNullable,
        case_sensitive: row.code == T::XdbcVarchar,
        searchable: Searchable::Full,
        unsigned_attribute: numeric.then(|| row.name.starts_with('U')),
        fixed_prec_scale: false,
        auto_increment: numeric.then_some(false),
        local_type_name: Some(row.name.into()),
        minimum_scale: decimal.then_some(0),
        maximum_scale: decimal.then_some(38),
        sql_data_type,
        datetime_subcode,
        num_prec_radix: numeric.then_some(10),
        interval_precision: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_flight::sql::CommandGetXdbcTypeInfo;

    #[test]
    fn the_table_builds_and_filters_by_code() {
        let table = type_info();
        let all = CommandGetXdbcTypeInfo { data_type: None }
            .into_builder(&table)
            .build()
            .unwrap();
        assert_eq!(all.num_rows(), ROWS.len() + 1);
        let integers = CommandGetXdbcTypeInfo {
            data_type: Some(XdbcDataType::XdbcInteger as i32),
        }
        .into_builder(&table)
        .build()
        .unwrap();
        assert_eq!(integers.num_rows(), 2); // INTEGER and UINTEGER
    }
}
