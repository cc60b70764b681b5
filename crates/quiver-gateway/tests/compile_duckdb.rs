//! Compiled statements run on a real quiver server (DuckDB): every filter op binds and casts as
//! DuckDB expects, and keyset pages under every sort, NULLs included, add up to exactly the
//! single-page result, in its order, with no row twice.

use std::sync::OnceLock;

use arrow_array::RecordBatch;
use arrow_cast::display::array_value_to_string;
use quiver_client::{params, Connection, ServerOptions, ServerProcess};
use quiver_gateway::compile::compile;
use quiver_gateway::compile::cursor::CursorKey;
use quiver_gateway::project::{load, DoubleSums, Project};

const ROWS: usize = 40;

fn server() -> &'static ServerProcess {
    static SERVER: OnceLock<ServerProcess> = OnceLock::new();
    SERVER.get_or_init(|| {
        ServerProcess::spawn(ServerOptions::default()).unwrap_or_else(|error| {
            panic!("the quiver server did not start ({error}); run tools/setup.sh or set QUIVER_SERVER_COMMAND")
        })
    })
}

/// The project, and a table `items` on the server (created once).
fn setup() -> (Project, Connection) {
    static PROJECT: OnceLock<Project> = OnceLock::new();
    let project = PROJECT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("quiver-gateway-compile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            ("gateway.yml", "version: 1\nauth: none\n"),
            (
                "datasets/items.yml",
                "id: items\nmanifest: m.json\nschema:\n  - { name: id, type: INTEGER }\n  - { name: grp, type: VARCHAR }\n  - { name: n, type: BIGINT }\n  - { name: x, type: DOUBLE }\n  - { name: d, type: DATE }\n  - { name: t, type: TIMESTAMP }\n  - { name: b, type: BOOLEAN }\n",
            ),
            (
                "endpoints/list.yml",
                "name: list\nversion: 1\ndataset: items\nparams:\n  - { name: grps, type: string }\n  - { name: n_range, type: integer }\n  - { name: grp_prefix, type: string }\n  - { name: no_grp, type: boolean }\n  - { name: after, type: timestamp }\n  - { name: on_or_after, type: date }\n  - { name: not_n, type: integer }\n  - { name: x_below, type: number }\nquery:\n  select:\n    - { as: id, column: id }\n    - { as: grp, column: grp }\n    - { as: n, column: n }\n    - { as: x, column: x }\n    - { as: d, column: d }\n    - { as: t, column: t }\n    - { as: b, column: b }\n  filters:\n    - { column: grp, op: in, param: grps }\n    - { column: n, op: between, param: n_range }\n    - { column: grp, op: prefix, param: grp_prefix }\n    - { column: grp, op: is_null, param: no_grp }\n    - { column: t, op: gt, param: after }\n    - { column: d, op: gte, param: on_or_after }\n    - { column: n, op: ne, param: not_n }\n    - { column: x, op: lt, param: x_below }\ncolumns: [id, grp, n, x, d, t, b]\nsort: [grp, n, x, d, t, b]\npagination: { default_limit: 3, max_limit: 1000 }\n",
            ),
            (
                "endpoints/totals.yml",
                "name: totals\nversion: 1\ndataset: items\nquery:\n  group_by: [grp]\n  select:\n    - { as: grp, column: grp }\n    - { as: total, column: n, agg: sum }\n    - { as: rows, column: id, agg: count }\n    - { as: mean, column: x, agg: avg }\n  order_by:\n    - { column: total, dir: desc }\ncolumns: [grp, total, rows, mean]\npagination: { default_limit: 2 }\n",
            ),
            (
                "endpoints/x_sums.yml",
                "name: x_sums\nversion: 1\ndataset: items\nquery:\n  group_by: [grp]\n  select:\n    - { as: grp, column: grp }\n    - { as: x_total, column: x, agg: sum }\n  order_by:\n    - { column: grp, dir: asc }\ncolumns: [grp, x_total]\npagination: { default_limit: 10 }\n",
            ),
        ] {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let project = load(&dir).unwrap_or_else(|diagnostics| panic!("{diagnostics}"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut connection = server().connect().unwrap();
        // NULLs in every column but id, duplicate values in each, so ties and NULL runs cross pages.
        connection
            .execute(&format!(
                "CREATE OR REPLACE TABLE items AS SELECT i::INTEGER AS id, \
                 CASE WHEN i % 5 = 0 THEN NULL ELSE 'g' || (i % 3) END AS grp, \
                 CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 4)::BIGINT END AS n, \
                 CASE WHEN i % 6 = 0 THEN NULL ELSE (i % 5) / 2.0 END AS x, \
                 CASE WHEN i % 8 = 0 THEN NULL ELSE DATE '2026-01-01' + (i % 3)::INTEGER END AS d, \
                 CASE WHEN i % 9 = 0 THEN NULL ELSE TIMESTAMP '2026-01-01 00:00:00' + INTERVAL (i % 4) HOUR END AS t, \
                 CASE WHEN i % 4 = 0 THEN NULL ELSE i % 2 = 0 END AS b \
                 FROM range({ROWS}) r(i)"
            ))
            .unwrap();
        project
    });
    (project.clone(), server().connect().unwrap())
}

fn key() -> CursorKey {
    CursorKey::from_bytes([3; 32])
}

/// Runs one request; returns its rows as text and its next cursor.
fn fetch(
    project: &Project,
    connection: &mut Connection,
    endpoint: &str,
    query: &[(String, String)],
) -> (Vec<String>, Option<String>) {
    let endpoint = project.endpoint(endpoint).unwrap();
    let dataset = project.dataset(&endpoint.dataset).unwrap();
    let compiled = compile(endpoint, dataset, "items", "s1", query, None, &key())
        .unwrap_or_else(|error| panic!("{error}"));
    let row = params::row(&quiver_gateway::http::query::bound(&compiled.values)).unwrap();
    let batches: Vec<RecordBatch> = connection
        .query_with(&compiled.sql, &row)
        .unwrap_or_else(|error| panic!("{error}: {}", compiled.sql))
        .collect::<Result<_, _>>()
        .unwrap();
    let page = compiled.finish(batches).unwrap();
    let mut rows = Vec::new();
    for batch in &page.batches {
        assert_eq!(batch.num_columns(), compiled.columns.len());
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .map(|column| {
                    if column.is_null(row) {
                        "NULL".into()
                    } else {
                        array_value_to_string(column, row).unwrap()
                    }
                })
                .collect();
            rows.push(cells.join("|"));
        }
    }
    assert_eq!(rows.len() as u64, page.row_count);
    (rows, page.next_cursor)
}

fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn keyset_pages_add_up_to_the_whole_result_under_every_sort() {
    let (project, mut connection) = setup();
    for sort in [
        "grp", "-grp", "n,-grp", "-n,grp", "x", "-x,-b", "d,-t", "-t", "b", "-b,-n",
    ] {
        let (all, none) = fetch(
            &project,
            &mut connection,
            "list",
            &query(&[("sort", sort), ("limit", "1000")]),
        );
        assert_eq!(all.len(), ROWS, "sort {sort}");
        assert!(none.is_none());
        for limit in ["1", "3", "7"] {
            let mut pages = Vec::new();
            let mut cursor: Option<String> = None;
            for _ in 0..=ROWS {
                let mut pairs = vec![("sort", sort), ("limit", limit)];
                if let Some(cursor) = &cursor {
                    pairs.push(("cursor", cursor));
                }
                let (rows, next) = fetch(&project, &mut connection, "list", &query(&pairs));
                pages.extend(rows);
                match next {
                    Some(next) => cursor = Some(next),
                    None => break,
                }
            }
            assert_eq!(
                pages, all,
                "sort {sort}, limit {limit}: the pages in order are the whole result"
            );
        }
    }
}

#[test]
fn grouped_pages_follow_the_aggregate_order() {
    let (project, mut connection) = setup();
    let (all, _) = fetch(
        &project,
        &mut connection,
        "totals",
        &query(&[("limit", "100")]),
    );
    assert_eq!(all.len(), 4, "g0, g1, g2 and NULL: {all:?}");
    let (first, cursor) = fetch(&project, &mut connection, "totals", &[]);
    let (second, last) = fetch(
        &project,
        &mut connection,
        "totals",
        &query(&[("cursor", &cursor.unwrap())]),
    );
    assert_eq!([first, second].concat(), all);
    assert!(last.is_none());
}

#[test]
fn every_filter_op_runs_on_duckdb() {
    let (project, mut connection) = setup();
    let count = |connection: &mut Connection, pairs: &[(&str, &str)]| {
        let mut pairs = pairs.to_vec();
        pairs.push(("limit", "1000"));
        fetch(&project, connection, "list", &query(&pairs)).0.len() as i64
    };
    let expect = |connection: &mut Connection, condition: &str| {
        connection
            .query_scalar_i64(&format!("SELECT count(*) FROM items WHERE {condition}"))
            .unwrap()
            .unwrap()
    };
    let cases: [(&[(&str, &str)], &str); 8] = [
        (&[("grps", "g1,g2")], "grp IN ('g1', 'g2')"),
        (&[("n_range", "1,2")], "n BETWEEN 1 AND 2"),
        (&[("grp_prefix", "g")], "starts_with(grp, 'g')"),
        (&[("no_grp", "true")], "grp IS NULL"),
        (&[("no_grp", "false")], "grp IS NOT NULL"),
        (
            &[("after", "2026-01-01T03:00:00+02:00")],
            "t > TIMESTAMP '2026-01-01 01:00:00'",
        ),
        (
            &[("on_or_after", "2026-01-02"), ("not_n", "3")],
            "d >= DATE '2026-01-02' AND n <> 3",
        ),
        (&[("x_below", "1.5")], "x < 1.5"),
    ];
    for (pairs, condition) in cases {
        let expected = expect(&mut connection, condition);
        assert!(expected > 0, "{condition} selects rows");
        assert_eq!(
            count(&mut connection, pairs),
            expected,
            "{pairs:?} ≡ {condition}"
        );
    }
}

/// Rows of `sql` as `fetch` writes them.
fn rows_of(connection: &mut Connection, sql: &str) -> Vec<String> {
    let batches = connection.query_arrow(sql).unwrap();
    let mut rows = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = batch
                .columns()
                .iter()
                .map(|column| {
                    if column.is_null(row) {
                        "NULL".into()
                    } else {
                        array_value_to_string(column, row).unwrap()
                    }
                })
                .collect();
            rows.push(cells.join("|"));
        }
    }
    rows
}

#[test]
fn a_sum_of_doubles_is_an_integer_as_offloader_casts_it_unless_the_project_keeps_doubles() {
    let (project, mut connection) = setup();
    let sums = |cast: &str| {
        format!(
            "SELECT grp, CAST(sum(x) AS {cast}) FROM items GROUP BY grp ORDER BY grp NULLS LAST"
        )
    };
    let (rounded, _) = fetch(&project, &mut connection, "x_sums", &[]);
    assert_eq!(rounded, rows_of(&mut connection, &sums("BIGINT")));
    assert!(rounded.iter().all(|row| !row.contains('.')), "{rounded:?}");

    let mut doubles = project.clone();
    for endpoint in &mut doubles.endpoints {
        for item in &mut endpoint.select {
            item.double_sums = DoubleSums::Double;
        }
    }
    let (exact, _) = fetch(&doubles, &mut connection, "x_sums", &[]);
    assert_eq!(exact, rows_of(&mut connection, &sums("DOUBLE")));
    assert_ne!(exact, rounded, "the data has sums with a fraction");
}
