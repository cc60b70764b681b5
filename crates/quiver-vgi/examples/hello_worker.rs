//! A complete VGI worker with one function of each kind, in a few lines each.
//!
//! ```sh
//! cargo run --release -p quiver-vgi --example hello_worker            # stdio
//! cargo run --release -p quiver-vgi --example hello_worker -- --unix /tmp/hello.sock
//! ```
//!
//! Then, from an engine: `ATTACH 'hello' AS hello (TYPE vgi, LOCATION '<path to the binary>')`,
//! `SELECT hello.main.add_one(41)`, `SELECT * FROM hello.main.squares(10)`,
//! `SELECT * FROM hello.main.total_rows((SELECT * FROM range(5)))`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use quiver_vgi::{
    Arg, Emitter, InOutState, ScalarFunction, Scan, TableFunction, TableInOutFunction, Worker,
};
use quiver_wire::ErrorReport;

fn main() {
    // Scalar: columns in, one value per row out.
    let add_one = ScalarFunction::new("add_one", DataType::Int64)
        .doc("x + 1")
        .arg(Arg::new("x", DataType::Int64).doc("a number"))
        .body(|input| {
            let x = input.columns[0].as_primitive::<Int64Type>();
            Ok(Arc::new(x.unary::<_, Int64Type>(|v| v.wrapping_add(1))) as ArrayRef)
        });

    // Table: parallel over up to 4 connections; each claims rows from a shared counter.
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("square", DataType::Int64, false),
    ]));
    let output = schema.clone();
    let squares = TableFunction::new("squares")
        .doc("i and i*i for i in 0..n")
        .arg(Arg::new("n", DataType::Int64).doc("how many rows").min(0))
        .output(schema)
        .projection_pushdown()
        .filter_pushdown()
        .max_workers(4)
        .shared_work(|args| Ok(args.i64("n")? as u64))
        .scan(move |_| {
            let output = output.clone();
            Ok(move |scan: &mut Scan<'_>| {
                let Some(rows) = scan.claim(100_000)? else {
                    return Ok(None);
                };
                let i = Int64Array::from_iter_values(rows.start as i64..rows.end as i64);
                let square = i.unary::<_, Int64Type>(|v| v.wrapping_mul(v));
                Ok(Some(
                    RecordBatch::try_new(output.clone(), vec![Arc::new(i), Arc::new(square)])
                        .expect("two columns"),
                ))
            })
        });

    // Table-in-out with a finalize: counts the input rows, emits the total at the end.
    let total_rows = TableInOutFunction::new("total_rows")
        .doc("The number of rows of its input table")
        .arg(Arg::table("data").doc("any table"))
        .output(Arc::new(Schema::new(vec![Field::new(
            "rows",
            DataType::Int64,
            false,
        )])))
        .state_with_finalize(|_| Ok(RowCount(0)));

    Worker::new("hello")
        .function(add_one)
        .function(squares)
        .function(total_rows)
        .run();
}

struct RowCount(i64);

impl InOutState for RowCount {
    fn process(&mut self, input: &RecordBatch, out: &mut Emitter) -> Result<(), ErrorReport> {
        self.0 += input.num_rows() as i64;
        out.emit(RecordBatch::new_empty(Arc::new(Schema::new(vec![
            Field::new("rows", DataType::Int64, false),
        ]))));
        Ok(())
    }

    fn finalize(&mut self, out: &mut Emitter) -> Result<(), ErrorReport> {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "rows",
            DataType::Int64,
            false,
        )]));
        out.emit(
            RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(vec![self.0]))])
                .expect("one row"),
        );
        Ok(())
    }
}
