package dev.quiver.vgi.examples;

import dev.quiver.vgi.Aggregator;
import dev.quiver.vgi.Arg;
import dev.quiver.vgi.Args;
import dev.quiver.vgi.Worker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;

/**
 * The example aggregates, with the same meaning in every SDK's example worker
 * (crates/quiver-allinone/src/aggregates.rs): {@code sum_int(x BIGINT)} the sum of the non-NULL
 * values (NULL when none, an error on overflow), {@code avg_double(x DOUBLE)} their mean,
 * {@code concat_agg(s VARCHAR, sep VARCHAR constant)} the non-NULL strings joined by {@code sep} in
 * the order given.
 */
final class ExampleAggregates {
  private ExampleAggregates() {}

  static final ArrowType INT64 = new ArrowType.Int(64, true);
  static final ArrowType DOUBLE = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
  static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;

  static void declare(Worker worker) {
    worker.aggregate("sum_int", INT64)
        .doc("Sum of the non-NULL values; NULL when there are none; an error on overflow")
        .arg(Arg.of("x", INT64).doc("The values to add"))
        .aggregator(new SumInt())
        .comment("Adds up the non-NULL integers of a group")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example("SELECT allinone.main.sum_int(x) FROM range(5) t(x)", "The sum of 0..4: 10");
    worker.aggregate("avg_double", DOUBLE)
        .doc("Mean of the non-NULL values; NULL when there are none")
        .arg(Arg.of("x", DOUBLE).doc("The values to average"))
        .aggregator(new AvgDouble())
        .comment("Averages the non-NULL doubles of a group")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example("SELECT allinone.main.avg_double(x::DOUBLE) FROM range(5) t(x)", "The mean of 0..4: 2.0");
    worker.aggregate("concat_agg", UTF8)
        .doc("The non-NULL strings joined by sep, in the order given (ORDER BY inside the call)")
        .arg(Arg.of("s", UTF8).doc("The strings to join"))
        .arg(Arg.of("sep", UTF8).doc("The separator").asConstant())
        .orderDependent()
        .aggregator(new ConcatAgg())
        .comment("Joins the strings of a group with a separator, in the order given")
        .tag("vgi.category", "aggregates")
        .category("aggregates")
        .example("SELECT allinone.main.concat_agg(s, '-' ORDER BY s) FROM (VALUES ('b'), ('a'), ('c')) t(s)",
            "The strings in order, joined by '-': a-b-c");
  }

  /** The state is the sum so far; null until a non-NULL value arrives. */
  static final class SumInt implements Aggregator<Long> {
    @Override
    public Long init(Args args) {
      return null;
    }

    @Override
    public Long update(Long sum, List<FieldVector> columns, int[] rows, Args args) {
      BigIntVector x = (BigIntVector) columns.get(0);
      for (int row : rows) {
        if (!x.isNull(row)) {
          sum = add(sum == null ? 0L : sum, x.get(row));
        }
      }
      return sum;
    }

    @Override
    public Long combine(Long sum, Long other, Args args) {
      if (other == null) {
        return sum;
      }
      return add(sum == null ? 0L : sum, other);
    }

    @Override
    public FieldVector finalize(List<Long> states, Args args, BufferAllocator allocator) {
      BigIntVector result = new BigIntVector("result", allocator);
      result.allocateNew(states.size());
      for (int i = 0; i < states.size(); i++) {
        if (states.get(i) == null) {
          result.setNull(i);
        } else {
          result.set(i, states.get(i));
        }
      }
      result.setValueCount(states.size());
      return result;
    }

    private static long add(long a, long b) {
      try {
        return Math.addExact(a, b);
      } catch (ArithmeticException e) {
        throw Aggregator.invalidArgument("sum_int(): BIGINT overflow");
      }
    }
  }

  /** The state is {sum, count} of the non-NULL values. */
  static final class AvgDouble implements Aggregator<double[]> {
    @Override
    public double[] init(Args args) {
      return new double[2];
    }

    @Override
    public double[] update(double[] state, List<FieldVector> columns, int[] rows, Args args) {
      Float8Vector x = (Float8Vector) columns.get(0);
      for (int row : rows) {
        if (!x.isNull(row)) {
          state[0] += x.get(row);
          state[1] += 1;
        }
      }
      return state;
    }

    @Override
    public double[] combine(double[] state, double[] other, Args args) {
      return new double[] {state[0] + other[0], state[1] + other[1]};
    }

    @Override
    public FieldVector finalize(List<double[]> states, Args args, BufferAllocator allocator) {
      Float8Vector result = new Float8Vector("result", allocator);
      result.allocateNew(states.size());
      for (int i = 0; i < states.size(); i++) {
        double[] state = states.get(i);
        if (state == null || state[1] == 0) {
          result.setNull(i);
        } else {
          result.set(i, state[0] / state[1]);
        }
      }
      result.setValueCount(states.size());
      return result;
    }
  }

  /** The state is the strings seen, in order. */
  static final class ConcatAgg implements Aggregator<List<String>> {
    @Override
    public List<String> init(Args args) {
      return new ArrayList<>();
    }

    @Override
    public List<String> update(List<String> parts, List<FieldVector> columns, int[] rows, Args args) {
      VarCharVector s = (VarCharVector) columns.get(0);
      for (int row : rows) {
        if (!s.isNull(row)) {
          parts.add(new String(s.get(row), StandardCharsets.UTF_8));
        }
      }
      return parts;
    }

    @Override
    public List<String> combine(List<String> parts, List<String> other, Args args) {
      List<String> merged = new ArrayList<>(parts);
      merged.addAll(other);
      return merged;
    }

    @Override
    public FieldVector finalize(List<List<String>> states, Args args, BufferAllocator allocator) {
      String sep = args.string("sep");
      VarCharVector result = new VarCharVector("result", allocator);
      result.allocateNew(states.size());
      for (int i = 0; i < states.size(); i++) {
        List<String> parts = states.get(i);
        if (parts == null || parts.isEmpty()) {
          result.setNull(i);
        } else {
          result.setSafe(i, String.join(sep, parts).getBytes(StandardCharsets.UTF_8));
        }
      }
      result.setValueCount(states.size());
      return result;
    }
  }
}
