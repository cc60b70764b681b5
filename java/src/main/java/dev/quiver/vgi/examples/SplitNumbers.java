package dev.quiver.vgi.examples;

import dev.quiver.vgi.Arg;
import dev.quiver.vgi.Function;
import dev.quiver.vgi.Worker;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A worker whose table function is planned into splits, with the Rust and Python examples'
 * semantics: {@code split_numbers(n, splits => 4)}, the integers 0..n-1 as column n in
 * {@code splits} contiguous ranges, one split each; each redemption reads only its own range. Beside
 * it, the buffered table function {@code row_count(TABLE)}: one row, the rows of the whole input.
 */
public final class SplitNumbers {
  private SplitNumbers() {}

  static final ArrowType INT64 = new ArrowType.Int(64, true);
  static final Schema NUMBERS = new Schema(List.of(new Field("n", FieldType.notNullable(INT64), null)));
  static final int BATCH_ROWS = 1 << 20;

  /** [0, n) in k contiguous ranges (the first n % k one row longer), as 16-byte payloads. */
  static List<byte[]> ranges(long n, long k) {
    List<byte[]> payloads = new ArrayList<>();
    long base = n / k;
    long extra = n % k;
    long lo = 0;
    for (long i = 0; i < k; i++) {
      long hi = lo + base + (i < extra ? 1 : 0);
      payloads.add(ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(lo).putLong(hi).array());
      lo = hi;
    }
    return payloads;
  }

  public static Worker worker() {
    Worker worker = new Worker("split_numbers", "VGI example worker: a split-planned scan");
    splitNumbers(worker);
    rowCount(worker);
    return worker;
  }

  /** Declares {@code split_numbers} on {@code worker}. */
  static Function splitNumbers(Worker worker) {
    return worker.table("split_numbers")
        .doc("The integers 0..n-1 as column n, planned into splits: each init reads one range")
        .arg(Arg.of("n", INT64).doc("how many numbers").min(0))
        .arg(Arg.named("splits", INT64).doc("how many splits").min(1).max(1_000_000).defaultsTo(4L))
        .output(NUMBERS)
        .projectionPushdown()
        .splits(8, args -> ranges(args.int64("n"), args.int64("splits")))
        .scan(args -> {
          long[] range = null;
          long[][] state = {range};
          return (scan, allocator) -> {
            if (state[0] == null) {
              ByteBuffer split = ByteBuffer.wrap(scan.split()).order(ByteOrder.LITTLE_ENDIAN);
              state[0] = new long[] {split.getLong(), split.getLong()};
            }
            long next = state[0][0];
            long end = state[0][1];
            if (next >= end) {
              return null;
            }
            int count = (int) Math.min(BATCH_ROWS, end - next);
            VectorSchemaRoot batch = VectorSchemaRoot.create(NUMBERS, allocator);
            BigIntVector column = (BigIntVector) batch.getVector(0);
            column.allocateNew(count);
            for (int i = 0; i < count; i++) {
              column.set(i, next + i);
            }
            column.setValueCount(count);
            batch.setRowCount(count);
            state[0][0] = next + count;
            return batch;
          };
        });
  }

  /** Declares {@code row_count} on {@code worker}. */
  static Function rowCount(Worker worker) {
    Schema counted = new Schema(List.of(new Field("rows", FieldType.nullable(INT64), null)));
    return worker.bufferedTable("row_count")
        .doc("One row: how many rows the whole input has (a buffered table function)")
        .arg(Arg.table("data").doc("the rows to count"))
        .buffered(counted, (args, input, allocator) -> {
          long rows = input.stream().mapToLong(VectorSchemaRoot::getRowCount).sum();
          VectorSchemaRoot result = VectorSchemaRoot.create(counted, allocator);
          BigIntVector column = (BigIntVector) result.getVector(0);
          column.allocateNew(1);
          column.set(0, rows);
          column.setValueCount(1);
          result.setRowCount(1);
          return result;
        });
  }

  public static void main(String[] args) {
    System.exit(worker().main(args));
  }
}
