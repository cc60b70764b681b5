package dev.quiver.vgi.examples;

import dev.quiver.vgi.Arg;
import dev.quiver.vgi.Columns;
import dev.quiver.vgi.Scan;
import dev.quiver.vgi.Worker;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The example worker, with the Rust worker's semantics (crates/quiver-allinone):
 * {@code numbers(n, batch_rows => 4194304)} the integers 0..n-1 shared across the scan's
 * connections, {@code split_numbers(n, splits => 4)} and {@code row_count(TABLE)} ({@link SplitNumbers}),
 * {@code echo(TABLE)} its input unchanged, {@code upper_case(VARCHAR)} Unicode upper
 * case with NULL kept, {@code multiply(BIGINT, BIGINT)} the product ({@link Multiply}), and the
 * aggregates {@code sum_int}, {@code avg_double} and {@code concat_agg}
 * ({@link ExampleAggregates}).
 */
public final class AllInOne {
  private AllInOne() {}

  static final ArrowType INT64 = new ArrowType.Int(64, true);
  static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
  static final long DEFAULT_BATCH_ROWS = 4L << 20;
  static final long BATCH_ROWS_MAX = 64L << 20;
  /** The main schema's vgi.categories registry, which each function's vgi.category names. */
  static final String CATEGORIES = "[{\"name\": \"aggregates\", \"title\": \"Aggregates\", \"description\":"
      + " \"Functions over the rows of a group\"}, {\"name\": \"generators\", \"title\": \"Generators\","
      + " \"description\": \"Functions that make rows\"}, {\"name\": \"math\", \"title\": \"Math\","
      + " \"description\": \"Functions over numbers\"}, {\"name\": \"tables\", \"title\": \"Tables\", \"description\":"
      + " \"Functions over a whole table\"}, {\"name\": \"text\", \"title\": \"Text\", \"description\":"
      + " \"Functions over strings\"}]";
  static final Schema NUMBERS = new Schema(List.of(new Field("n", FieldType.notNullable(INT64), null)));

  public static Worker worker() {
    Worker worker = new Worker("allinone", "VGI example worker: numbers, split_numbers, echo, row_count,"
        + " upper_case, multiply, sum_int, avg_double, concat_agg")
        .comment("quiver's example VGI worker: a parallel generator, a pass-through table function and Unicode"
            + " upper case")
        .tag("vgi.title", "quiver all-in-one example")
        .tag("vgi.doc_llm", "numbers(n) generates the integers 0..n-1 in parallel; echo(TABLE) returns its input"
            + " table; upper_case(s) upper-cases text with Unicode full case mapping; multiply(value, factor)"
            + " multiplies two BIGINTs (an error on overflow).")
        .schema("main", "The example functions",
            Map.of("vgi.title", "Examples", "vgi.categories", CATEGORIES));
    worker.scalar("upper_case", UTF8)
        .doc("Converts a string to upper case (Unicode full case mapping); NULL stays NULL.")
        .arg(Arg.of("s", UTF8).doc("The string to convert"))
        .body((columns, rows, allocator) ->
            Columns.strings(columns.get(0), text -> text.toUpperCase(Locale.ROOT), allocator))
        .comment("Upper-cases text with Unicode full case mapping")
        .tag("vgi.category", "text")
        .category("text")
        .example("SELECT allinone.main.upper_case('straße')", "STRASSE: full case mapping turns ß into SS");
    Multiply.declare(worker);
    worker.table("numbers")
        .doc("The integers 0..n-1 as column n, generated in parallel across the scan's connections")
        .arg(Arg.of("n", INT64).doc("How many rows (0..n-1)").min(0))
        .arg(Arg.named("batch_rows", INT64).doc("Rows per batch").min(1).max(BATCH_ROWS_MAX)
            .defaultsTo(DEFAULT_BATCH_ROWS))
        .output(NUMBERS)
        .projectionPushdown()
        .filterPushdown()
        .sharedWork(8, args -> args.int64("n"))
        .comment("The integers 0..n-1, generated in parallel")
        .tag("vgi.category", "generators")
        .category("generators")
        .example("SELECT sum(n) FROM allinone.main.numbers(1000)", "The sum of 0..999: 499500")
        .scan(args -> (scan, allocator) -> {
          Scan.Range rows = scan.claim(args.int64("batch_rows"));
          if (rows == null) {
            return null;
          }
          VectorSchemaRoot batch = VectorSchemaRoot.create(NUMBERS, allocator);
          BigIntVector n = (BigIntVector) batch.getVector(0);
          int count = rows.size();
          n.allocateNew(count);
          // Straight into the buffers: every value is valid, so the validity bits are set in bulk.
          n.getValidityBuffer().setOne(0, (count + 7) / 8);
          var data = n.getDataBuffer();
          long start = rows.start();
          for (int i = 0; i < count; i++) {
            data.setLong((long) i * BigIntVector.TYPE_WIDTH, start + i);
          }
          n.setValueCount(count);
          batch.setRowCount(rows.size());
          return batch;
        });
    worker.tableInOut("echo")
        .doc("Returns its input table unchanged")
        .arg(Arg.table("data").doc("the rows to pass through"))
        .inOut((args, state, input, allocator) -> input)
        .finalizer((args, state, allocator) -> null)
        .comment("Returns its input table unchanged")
        .tag("vgi.category", "tables")
        .category("tables")
        .example("SELECT count(*) FROM allinone.main.echo((SELECT * FROM range(10)))", "Ten rows passed through: 10");
    SplitNumbers.splitNumbers(worker)
        .comment("The integers 0..n-1, planned into splits that run in parallel")
        .tag("vgi.category", "generators")
        .category("generators")
        .example("SELECT sum(n) FROM allinone.main.split_numbers(1000, splits := 8)", "The sum of 0..999: 499500");
    SplitNumbers.rowCount(worker)
        .comment("Counts the rows of its whole input table")
        .tag("vgi.category", "tables")
        .category("tables")
        .example("SELECT * FROM allinone.main.row_count((SELECT * FROM range(10)))", "Ten rows counted at once: 10");
    ExampleAggregates.declare(worker);
    return worker;
  }

  public static void main(String[] args) {
    System.exit(worker().main(args));
  }
}
