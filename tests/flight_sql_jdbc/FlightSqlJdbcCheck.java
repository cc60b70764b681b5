import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.JDBCType;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

/**
 * The JDBC half of tests/test_flight_sql_jdbc.py: drives a quiver server's Flight SQL listener through the
 * Arrow Flight SQL JDBC driver (fetched by tools/setup_jdbc.sh) and prints one JSON object with what it
 * saw on stdout. The Python test owns the SQL and the expectations; this program only reports.
 *
 * <pre>
 *   query  URL SQL PRINT_ROWS_MAX   columns (name, JDBC type), the Java classes of the first row's
 *                                   values, the first rows as text, the row count and the sum of the
 *                                   first column when it is integral
 *   ingest URL TABLE ROWS           CREATE TABLE TABLE (id BIGINT, name VARCHAR, value DOUBLE), then ROWS
 *                                   rows through one prepared INSERT with addBatch / executeBatch, then the
 *                                   table's aggregates and one row read back through a prepared query
 *   metadata URL PATTERN            DatabaseMetaData as a SQL tool reads it: the table types, the
 *                                   catalogs, the tables named like PATTERN in getTables and their
 *                                   columns in getColumns
 *   keys   URL TABLE                getPrimaryKeys of TABLE (column, sequence, key name) and getTypeInfo
 *                                   (each type's name and JDBC type)
 *   rollback URL TABLE              with autocommit off: one row inserted into TABLE (id INTEGER),
 *                                   rollback(), then the rows TABLE has
 * </pre>
 *
 * A SQLException is printed as {"error": ..., "sql_state": ...} with exit status 3, so a test can assert
 * on a refusal (a wrong token) as on a result. Any other failure is a bug here: exit status 1.
 */
public final class FlightSqlJdbcCheck {
    private static final int EXIT_SQL_ERROR = 3;
    /** Bound on the rows a query prints (its count and sum cover every row). */
    private static final int PRINT_ROWS_LIMIT = 1000;
    /** Bound on the rows an ingest sends: one executeBatch holds them all in memory. */
    private static final int INGEST_ROWS_LIMIT = 1_000_000;
    /** Every seventh row's name is NULL, so NULL parameters travel too. */
    private static final int NULL_NAME_EVERY = 7;

    private FlightSqlJdbcCheck() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            usage();
        }
        String mode = args[0];
        String url = args[1];
        Json result;
        try {
            if (mode.equals("query") && args.length == 4) {
                result = query(url, args[2], boundedCount(args[3], PRINT_ROWS_LIMIT));
            } else if (mode.equals("ingest") && args.length == 4) {
                result = ingest(url, args[2], boundedCount(args[3], INGEST_ROWS_LIMIT));
            } else if (mode.equals("metadata") && args.length == 3) {
                result = metadata(url, args[2]);
            } else if (mode.equals("keys") && args.length == 3) {
                result = keys(url, args[2]);
            } else if (mode.equals("rollback") && args.length == 3) {
                result = rollback(url, args[2]);
            } else {
                usage();
                return;
            }
        } catch (SQLException error) {
            error.printStackTrace();
            Json failure = new Json();
            failure.put("error", messages(error));
            failure.put("sql_state", error.getSQLState());
            System.out.println(failure.text());
            System.exit(EXIT_SQL_ERROR);
            return;
        }
        System.out.println(result.text());
    }

    private static Json query(String url, String sql, int printRowsMax) throws SQLException {
        Json result = new Json();
        try (Connection connection = DriverManager.getConnection(url);
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            ResultSetMetaData meta = rows.getMetaData();
            int columnCount = meta.getColumnCount();
            List<Object> columns = new ArrayList<>();
            for (int column = 1; column <= columnCount; column++) {
                Json described = new Json();
                described.put("name", meta.getColumnLabel(column));
                described.put("type", JDBCType.valueOf(meta.getColumnType(column)).getName());
                columns.add(described);
            }
            boolean firstIntegral = isIntegral(meta.getColumnType(1));
            List<Object> printed = new ArrayList<>();
            List<Object> classes = new ArrayList<>();
            long rowCount = 0;
            long firstSum = 0;
            while (rows.next()) {
                rowCount += 1;
                if (firstIntegral) {
                    firstSum += rows.getLong(1);
                }
                if (printed.size() < printRowsMax) {
                    List<Object> row = new ArrayList<>();
                    for (int column = 1; column <= columnCount; column++) {
                        Object value = rows.getObject(column);
                        row.add(value == null ? null : value.toString());
                        if (rowCount == 1) {
                            classes.add(value == null ? null : value.getClass().getName());
                        }
                    }
                    printed.add(row);
                }
            }
            result.put("columns", columns);
            result.put("classes", classes);
            result.put("rows", printed);
            result.put("row_count", rowCount);
            result.put("first_column_sum", firstIntegral ? firstSum : null);
        }
        return result;
    }

    private static Json ingest(String url, String table, int rowCount) throws SQLException {
        Json result = new Json();
        try (Connection connection = DriverManager.getConnection(url)) {
            try (Statement statement = connection.createStatement()) {
                statement.executeUpdate(
                        "CREATE TABLE " + table + " (id BIGINT, name VARCHAR, value DOUBLE)");
            }
            try (PreparedStatement insert =
                    connection.prepareStatement("INSERT INTO " + table + " VALUES (?, ?, ?)")) {
                result.put("parameter_types", parameterTypes(insert.getParameterMetaData()));
                for (int row = 0; row < rowCount; row++) {
                    insert.setLong(1, row);
                    if (row % NULL_NAME_EVERY == 0) {
                        insert.setNull(2, Types.VARCHAR);
                    } else {
                        insert.setString(2, "name-" + row);
                    }
                    insert.setDouble(3, row * 0.5);
                    insert.addBatch();
                }
                List<Object> counts = new ArrayList<>();
                for (long count : insert.executeLargeBatch()) {
                    counts.add(count);
                }
                result.put("batch_counts", counts);
            }
            try (Statement statement = connection.createStatement();
                    ResultSet rows = statement.executeQuery(
                            "SELECT count(*), sum(id), count(name), sum(value) FROM " + table)) {
                if (!rows.next()) {
                    throw new IllegalStateException("an aggregate returned no row");
                }
                result.put("count", rows.getLong(1));
                result.put("id_sum", rows.getLong(2));
                result.put("name_count", rows.getLong(3));
                result.put("value_sum", rows.getDouble(4));
            }
            try (PreparedStatement lookup =
                    connection.prepareStatement("SELECT id, name, value FROM " + table + " WHERE id = ?")) {
                lookup.setLong(1, rowCount - 1);
                try (ResultSet rows = lookup.executeQuery()) {
                    List<Object> found = new ArrayList<>();
                    while (rows.next()) {
                        List<Object> row = new ArrayList<>();
                        row.add(rows.getLong(1));
                        row.add(rows.getString(2));
                        row.add(rows.getDouble(3));
                        found.add(row);
                    }
                    result.put("lookup", found);
                }
            }
        }
        return result;
    }

    private static Json metadata(String url, String tablePattern) throws SQLException {
        Json result = new Json();
        try (Connection connection = DriverManager.getConnection(url)) {
            DatabaseMetaData meta = connection.getMetaData();
            try (ResultSet rows = meta.getTableTypes()) {
                result.put("table_types", strings(rows, "TABLE_TYPE"));
            }
            try (ResultSet rows = meta.getCatalogs()) {
                result.put("catalogs", strings(rows, "TABLE_CAT"));
            }
            try (ResultSet rows = meta.getTables(null, null, tablePattern, null)) {
                result.put("tables", strings(rows, "TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"));
            }
            try (ResultSet rows = meta.getColumns(null, null, tablePattern, null)) {
                List<Object> columns = new ArrayList<>();
                while (rows.next()) {
                    List<Object> column = new ArrayList<>();
                    column.add(rows.getString("TABLE_NAME"));
                    column.add(rows.getString("COLUMN_NAME"));
                    column.add(JDBCType.valueOf(rows.getInt("DATA_TYPE")).getName());
                    column.add(rows.getInt("ORDINAL_POSITION"));
                    column.add(rows.getString("IS_NULLABLE"));
                    columns.add(column);
                }
                result.put("columns", columns);
            }
        }
        return result;
    }

    private static Json keys(String url, String table) throws SQLException {
        Json result = new Json();
        try (Connection connection = DriverManager.getConnection(url)) {
            DatabaseMetaData meta = connection.getMetaData();
            try (ResultSet rows = meta.getPrimaryKeys(null, null, table)) {
                List<Object> keys = new ArrayList<>();
                while (rows.next()) {
                    List<Object> key = new ArrayList<>();
                    key.add(rows.getString("TABLE_NAME"));
                    key.add(rows.getString("COLUMN_NAME"));
                    key.add(rows.getInt("KEY_SEQ"));
                    key.add(rows.getString("PK_NAME"));
                    keys.add(key);
                }
                result.put("primary_keys", keys);
            }
            try (ResultSet rows = meta.getTypeInfo()) {
                List<Object> types = new ArrayList<>();
                while (rows.next()) {
                    List<Object> type = new ArrayList<>();
                    type.add(rows.getString("TYPE_NAME"));
                    type.add(JDBCType.valueOf(rows.getInt("DATA_TYPE")).getName());
                    types.add(type);
                }
                result.put("types", types);
            }
        }
        return result;
    }

    private static Json rollback(String url, String table) throws SQLException {
        Json result = new Json();
        try (Connection connection = DriverManager.getConnection(url)) {
            connection.setAutoCommit(false);
            try (Statement statement = connection.createStatement()) {
                statement.executeUpdate("INSERT INTO " + table + " VALUES (1)");
            }
            connection.rollback();
            try (Statement statement = connection.createStatement();
                    ResultSet rows = statement.executeQuery("SELECT count(*) FROM " + table)) {
                rows.next();
                result.put("rows_after_rollback", rows.getLong(1));
            }
        }
        return result;
    }

    /** The named string columns of every row, one list per row (one string per row for one name). */
    private static List<Object> strings(ResultSet rows, String... names) throws SQLException {
        List<Object> out = new ArrayList<>();
        while (rows.next()) {
            if (names.length == 1) {
                out.add(rows.getString(names[0]));
                continue;
            }
            List<Object> row = new ArrayList<>();
            for (String name : names) {
                row.add(rows.getString(name));
            }
            out.add(row);
        }
        return out;
    }

    private static List<Object> parameterTypes(ParameterMetaData meta) throws SQLException {
        List<Object> types = new ArrayList<>();
        for (int parameter = 1; parameter <= meta.getParameterCount(); parameter++) {
            types.add(JDBCType.valueOf(meta.getParameterType(parameter)).getName());
        }
        return types;
    }

    private static boolean isIntegral(int jdbcType) {
        return jdbcType == Types.TINYINT
                || jdbcType == Types.SMALLINT
                || jdbcType == Types.INTEGER
                || jdbcType == Types.BIGINT;
    }

    /** The exception's message and its causes', so a wrapped server status stays visible. */
    private static String messages(Throwable error) {
        StringBuilder text = new StringBuilder();
        int depth = 0;
        for (Throwable cause = error; cause != null && depth < 16; cause = cause.getCause(), depth++) {
            if (text.length() > 0) {
                text.append(" / ");
            }
            text.append(cause.getClass().getSimpleName()).append(": ").append(cause.getMessage());
        }
        return text.toString();
    }

    private static int boundedCount(String text, int max) {
        int value = Integer.parseInt(text);
        if (value < 1 || value > max) {
            throw new IllegalArgumentException("expected 1.." + max + ", got " + value);
        }
        return value;
    }

    private static void usage() {
        System.err.println("usage: FlightSqlJdbcCheck query URL SQL PRINT_ROWS_MAX");
        System.err.println("       FlightSqlJdbcCheck ingest URL TABLE ROWS");
        System.err.println("       FlightSqlJdbcCheck metadata URL PATTERN");
        System.err.println("       FlightSqlJdbcCheck keys URL TABLE");
        System.err.println("       FlightSqlJdbcCheck rollback URL TABLE");
        System.exit(2);
    }

    /** A JSON object with keys in insertion order; values are null, Boolean, Number, String, List, Json. */
    private static final class Json {
        private final List<String> keys = new ArrayList<>();
        private final List<Object> values = new ArrayList<>();

        void put(String key, Object value) {
            keys.add(key);
            values.add(value);
        }

        String text() {
            StringBuilder out = new StringBuilder();
            write(out, this);
            return out.toString();
        }

        private static void write(StringBuilder out, Object value) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer) {
                out.append(value);
            } else if (value instanceof Double) {
                double number = (Double) value;
                if (Double.isNaN(number) || Double.isInfinite(number)) {
                    throw new IllegalArgumentException("JSON has no " + number);
                }
                out.append(number);
            } else if (value instanceof String) {
                writeString(out, (String) value);
            } else if (value instanceof List) {
                out.append('[');
                List<?> list = (List<?>) value;
                for (int index = 0; index < list.size(); index++) {
                    if (index > 0) {
                        out.append(',');
                    }
                    write(out, list.get(index));
                }
                out.append(']');
            } else if (value instanceof Json) {
                Json object = (Json) value;
                out.append('{');
                for (int index = 0; index < object.keys.size(); index++) {
                    if (index > 0) {
                        out.append(',');
                    }
                    writeString(out, object.keys.get(index));
                    out.append(':');
                    write(out, object.values.get(index));
                }
                out.append('}');
            } else {
                throw new IllegalArgumentException("no JSON form for " + value.getClass());
            }
        }

        private static void writeString(StringBuilder out, String text) {
            out.append('"');
            for (int index = 0; index < text.length(); index++) {
                char c = text.charAt(index);
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        }
    }
}
