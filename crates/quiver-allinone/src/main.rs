//! `quiver-allinone`: the example VGI worker every benchmark and demo uses.
//!
//! * `numbers(n BIGINT)` — table function, column `n` = 0..n-1, parallel across
//!   connections through a shared counter, projection and filter pushdown,
//!   batches of `--batch-rows` rows (default 4M rows = 32 MB).
//! * `split_numbers(n BIGINT, splits := k)` — table function planned into `k` splits.
//! * `echo(TABLE)` — table-in-out function, every input batch passed through.
//! * `row_count(TABLE)` — buffered table function, the rows of its whole input.
//! * `upper_case(s VARCHAR) -> VARCHAR` — scalar, Unicode upper case.
//! * `multiply(value BIGINT, factor BIGINT) -> BIGINT` — scalar, the product, an error on
//!   overflow as DuckDB's `*` (see `multiply.rs`).
//! * `sum_int`, `avg_double`, `concat_agg` — aggregates (see `aggregates.rs`).
//!
//! `split_numbers` and `row_count` are in `splits.rs`.
//!
//! ```sh
//! quiver-allinone                      # stdio, as ATTACH ... LOCATION '<cmd>' runs it
//! quiver-allinone --unix /tmp/w.sock   # prints UNIX:/tmp/w.sock, many connections
//! ```

mod aggregates;
mod multiply;
mod numbers;
mod splits;
mod upper;

use clap::Parser;
use quiver_vgi::{Arg, LaunchArgs, SchemaDecl, TableInOutFunction, Worker};

/// The catalog's comment; the Python and Java example workers say the same.
const CATALOG_COMMENT: &str =
    "quiver's example VGI worker: a parallel generator, a pass-through table function and Unicode upper case";
/// The `main` schema's `vgi.categories` registry, which each function's `vgi.category` names.
const CATEGORIES: &str = r#"[{"name": "aggregates", "title": "Aggregates", "description": "Functions over the rows of a group"}, {"name": "generators", "title": "Generators", "description": "Functions that make rows"}, {"name": "math", "title": "Math", "description": "Functions over numbers"}, {"name": "tables", "title": "Tables", "description": "Functions over a whole table"}, {"name": "text", "title": "Text", "description": "Functions over strings"}]"#;
/// The catalog's `vgi.doc_llm` tag.
const CATALOG_DOC: &str = "numbers(n) generates the integers 0..n-1 in parallel; echo(TABLE) \
    returns its input table; upper_case(s) upper-cases text with Unicode full case mapping; \
    multiply(value, factor) multiplies two BIGINTs (an error on overflow).";

/// The all-in-one example worker.
#[derive(Parser)]
#[command(
    version,
    about = "VGI example worker: numbers, split_numbers, echo, row_count, upper_case, multiply, sum_int, avg_double, concat_agg"
)]
struct Args {
    #[command(flatten)]
    launch: LaunchArgs,
    /// Rows per numbers() batch unless the query names batch_rows.
    #[arg(long, default_value_t = 4 << 20, value_parser = clap::value_parser!(i64).range(1..=numbers::BATCH_ROWS_MAX))]
    batch_rows: i64,
    /// Most connections one numbers() scan may use.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_workers: u32,
}

fn main() {
    let args = Args::parse();
    let echo = TableInOutFunction::new("echo")
        .doc("Returns its input table unchanged, batch for batch")
        .arg(Arg::table("data").doc("The input table"))
        .max_workers(1)
        .map(|batch| Ok(batch.clone()))
        .comment("Returns its input table unchanged")
        .tag("vgi.category", "tables")
        .category("tables")
        .example(
            "SELECT count(*) FROM allinone.main.echo((SELECT * FROM range(10)))",
            "Ten rows passed through: 10",
        );
    Worker::new("allinone")
        .comment(CATALOG_COMMENT)
        .tag("vgi.title", "quiver all-in-one example")
        .tag("vgi.doc_llm", CATALOG_DOC)
        .schema(
            SchemaDecl::new("main")
                .comment("The example functions")
                .tag("vgi.title", "Examples")
                .tag("vgi.categories", CATEGORIES),
        )
        .function(numbers::numbers(args.batch_rows, args.max_workers))
        .function(splits::split_numbers())
        .function(echo)
        .function(splits::row_count())
        .function(upper::upper_case())
        .function(multiply::multiply())
        .function(aggregates::sum_int())
        .function(aggregates::avg_double())
        .function(aggregates::concat_agg())
        .run_with(&args.launch);
}
