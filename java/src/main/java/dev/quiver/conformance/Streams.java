package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.BOOL;
import static dev.quiver.conformance.Fields.COUNTER;
import static dev.quiver.conformance.Fields.FLOAT64;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.SCALE;
import static dev.quiver.conformance.Fields.UTF8;
import static dev.quiver.conformance.Fields.field;
import static dev.quiver.conformance.Fields.schema;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Output;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.StreamCall;
import dev.quiver.rpc.StreamState;
import dev.quiver.wire.LogLevel;
import dev.quiver.wire.RpcError;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/** The producer and exchange methods, with and without headers. */
final class Streams {
  private Streams() {}

  /** The non-ASCII label {@code produce_annotated_batches} stamps on every batch. */
  static final String ANNOTATED_EMIT_LABEL = "\u00fcn\u00efcode-\u03bb";
  static final String TICK_KEY = "vgi.conformance.tick";
  static final String INPUT_METADATA_KEY = "vgi.conformance.input";

  /** A producer that emits {@code count} counter rows, one per tick, then finishes. */
  private static StreamState counting(long count) {
    long[] current = {0};
    return (input, out, ctx) -> {
      if (current[0] >= count) {
        out.finish();
        return;
      }
      out.emit(Roots.counter(out, current[0], 1));
      current[0]++;
    };
  }

  static void register(Protocol protocol) {
    protocol.add(Method.producer("produce_n", List.of(field("count", INT64)),
        (params, ctx) -> StreamCall.producer(COUNTER, counting(params.int64("count")))));
    protocol.add(Method.producer("produce_empty", List.of(),
        (params, ctx) -> StreamCall.producer(COUNTER, counting(0))));
    protocol.add(Method.producer("produce_single", List.of(),
        (params, ctx) -> StreamCall.producer(COUNTER, counting(1))));
    protocol.add(Method.producer("produce_tick_metadata", List.of(field("count", INT64)), (params, ctx) -> {
      long count = params.int64("count");
      long[] current = {0};
      Schema output = schema(field("index", INT64, true), field("seen", UTF8, true));
      return StreamCall.producer(output, (input, out, turn) -> {
        VectorSchemaRoot root = out.newRoot();
        ((BigIntVector) root.getVector("index")).setSafe(0, current[0]);
        Roots.setText(root, "seen", 0, input.metadata().getOrDefault(TICK_KEY, ""));
        root.setRowCount(1);
        out.emit(root);
        if (++current[0] >= count) {
          out.finish();
        }
      });
    }));
    protocol.add(Method.producer("produce_large_batches",
        List.of(field("rows_per_batch", INT64), field("batch_count", INT64)), (params, ctx) -> {
          int rows = rowCount(params.int64("rows_per_batch"));
          long batches = params.int64("batch_count");
          long[] current = {0};
          return StreamCall.producer(COUNTER, (input, out, turn) -> {
            if (current[0] >= batches) {
              out.finish();
              return;
            }
            out.emit(Roots.counter(out, current[0] * rows, rows));
            current[0]++;
          });
        }));
    protocol.add(Method.producer("produce_annotated_batches",
        List.of(field("count", INT64), field("rows_per_batch", INT64)), (params, ctx) -> {
          long count = params.int64("count");
          int rows = rowCount(params.int64("rows_per_batch"));
          long[] current = {0};
          return StreamCall.producer(schema(field("value", INT64, true)), (input, out, turn) -> {
            if (current[0] >= count) {
              out.finish();
              return;
            }
            VectorSchemaRoot root = out.newRoot();
            BigIntVector value = (BigIntVector) root.getVector("value");
            value.allocateNew(rows);
            for (int i = 0; i < rows; i++) {
              value.set(i, current[0] * 1_000_000 + i);
            }
            root.setRowCount(rows);
            out.emit(root, Map.of(
                "conformance.batch_index", Long.toString(current[0]),
                "conformance.batch_total", Long.toString(count),
                "conformance.emit_label", ANNOTATED_EMIT_LABEL));
            current[0]++;
          });
        }));
    protocol.add(Method.producer("produce_with_logs", List.of(field("count", INT64)), (params, ctx) -> {
      long count = params.int64("count");
      long[] current = {0};
      return StreamCall.producer(COUNTER, (input, out, turn) -> {
        if (current[0] >= count) {
          out.finish();
          return;
        }
        out.log(LogLevel.INFO, "producing batch " + current[0]);
        out.emit(Roots.counter(out, current[0], 1));
        current[0]++;
      });
    }));
    protocol.add(Method.producer("produce_error_mid_stream", List.of(field("emit_before_error", INT64)),
        (params, ctx) -> {
          long limit = params.int64("emit_before_error");
          long[] current = {0};
          return StreamCall.producer(COUNTER, (input, out, turn) -> {
            if (current[0] >= limit) {
              throw new RpcError("RuntimeError", "intentional error after " + limit + " batches");
            }
            out.emit(Roots.counter(out, current[0], 1));
            current[0]++;
          });
        }));
    protocol.add(Method.producer("produce_error_on_init", List.of(), (params, ctx) -> {
      throw new RpcError("RuntimeError", "intentional init error");
    }));
    protocol.add(Method.producer("produce_oversized_batch", List.of(field("rows_per_batch", INT64)),
        (params, ctx) -> {
          int rows = rowCount(params.int64("rows_per_batch"));
          boolean[] emitted = {false};
          return StreamCall.producer(COUNTER, (input, out, turn) -> {
            if (emitted[0]) {
              out.finish();
              return;
            }
            emitted[0] = true;
            out.emit(Roots.counter(out, 0, rows));
          });
        }));
    protocol.add(Method.producer("produce_with_header", List.of(field("count", INT64)), (params, ctx) -> {
      long count = params.int64("count");
      return StreamCall.producer(COUNTER, counting(count))
          .withHeader(header(ctx.allocator(), count, "producing " + count + " batches"));
    }).withHeader(HEADER));
    protocol.add(Method.producer("produce_with_header_and_logs", List.of(field("count", INT64)), (params, ctx) -> {
      long count = params.int64("count");
      ctx.log(LogLevel.INFO, "stream init log");
      return StreamCall.producer(COUNTER, counting(count))
          .withHeader(header(ctx.allocator(), count, "producing " + count + " with logs"));
    }).withHeader(HEADER));
    protocol.add(Method.producer("produce_with_rich_header", List.of(field("seed", INT64), field("count", INT64)),
        (params, ctx) -> StreamCall.producer(COUNTER, counting(params.int64("count")))
            .withHeader(RichHeader.build(params.int64("seed"), ctx.allocator()))).withHeader(RichHeader.SCHEMA));
    protocol.add(Method.producer("produce_dynamic_schema",
        List.of(field("seed", INT64), field("count", INT64), field("include_strings", BOOL),
            field("include_floats", BOOL)),
        (params, ctx) -> dynamicSchema(params.int64("count"), params.bool("include_strings"),
            params.bool("include_floats")).withHeader(RichHeader.build(params.int64("seed"), ctx.allocator())))
        .withHeader(RichHeader.SCHEMA));
    registerExchanges(protocol);
    Cancel.register(protocol);
  }

  private static void registerExchanges(Protocol protocol) {
    protocol.add(Method.exchange("exchange_scale", List.of(field("factor", FLOAT64)),
        (params, ctx) -> StreamCall.exchange(SCALE, SCALE, scale(params.float64("factor")))));
    protocol.add(Method.exchange("exchange_cast_compatible", List.of(),
        (params, ctx) -> StreamCall.exchange(SCALE, SCALE, scale(1.0))));
    protocol.add(Method.exchange("exchange_with_header", List.of(field("factor", FLOAT64)), (params, ctx) -> {
      double factor = params.float64("factor");
      return StreamCall.exchange(SCALE, SCALE, scale(factor))
          .withHeader(header(ctx.allocator(), 0, "scale by " + PythonText.floatRepr(factor)));
    }).withHeader(HEADER));
    protocol.add(Method.exchange("exchange_with_rich_header", List.of(field("seed", INT64), field("factor", FLOAT64)),
        (params, ctx) -> StreamCall.exchange(SCALE, SCALE, scale(params.float64("factor")))
            .withHeader(RichHeader.build(params.int64("seed"), ctx.allocator()))).withHeader(RichHeader.SCHEMA));
    protocol.add(Method.exchange("exchange_accumulate", List.of(), (params, ctx) -> {
      Schema output = schema(field("running_sum", FLOAT64, true), field("exchange_count", INT64, true));
      double[] sum = {0};
      long[] exchanges = {0};
      return StreamCall.exchange(output, SCALE, (input, out, turn) -> {
        Float8Vector values = (Float8Vector) input.root().getVector("value");
        for (int i = 0; i < input.rowCount(); i++) {
          if (!values.isNull(i)) {
            sum[0] += values.get(i);
          }
        }
        exchanges[0]++;
        VectorSchemaRoot root = out.newRoot();
        Roots.setDouble(root, "running_sum", 0, sum[0]);
        ((BigIntVector) root.getVector("exchange_count")).setSafe(0, exchanges[0]);
        root.setRowCount(1);
        out.emit(root);
      });
    }));
    protocol.add(Method.exchange("exchange_with_logs", List.of(),
        (params, ctx) -> StreamCall.exchange(SCALE, SCALE, (input, out, turn) -> {
          out.log(LogLevel.INFO, "exchange processing");
          out.log(LogLevel.DEBUG, "exchange debug");
          out.emit(Roots.take(input, out));
        })));
    protocol.add(Method.exchange("exchange_zero_columns", List.of(), (params, ctx) -> {
      Schema empty = StreamCall.EMPTY_SCHEMA;
      return StreamCall.exchange(empty, empty, (input, out, turn) -> out.emit(out.newRoot()));
    }));
    protocol.add(Method.exchange("exchange_input_metadata", List.of(), (params, ctx) -> {
      Schema output = schema(field("seen", UTF8, true), field("keys", UTF8, true));
      return StreamCall.exchange(output, SCALE, (input, out, turn) -> {
        VectorSchemaRoot root = out.newRoot();
        Roots.setText(root, "seen", 0, input.metadata().getOrDefault(INPUT_METADATA_KEY, ""));
        Roots.setText(root, "keys", 0, String.join(",", new TreeSet<>(input.metadata().keySet())));
        root.setRowCount(1);
        out.emit(root);
      });
    }));
    protocol.add(Method.exchange("exchange_error_on_nth", List.of(field("fail_on", INT64)), (params, ctx) -> {
      long failOn = params.int64("fail_on");
      long[] exchanges = {0};
      return StreamCall.exchange(SCALE, SCALE, (input, out, turn) -> {
        exchanges[0]++;
        if (exchanges[0] >= failOn) {
          throw new RpcError("RuntimeError", "intentional error on exchange " + exchanges[0]);
        }
        out.emit(Roots.take(input, out));
      });
    }));
    protocol.add(Method.exchange("exchange_error_on_init", List.of(), (params, ctx) -> {
      throw new RpcError("RuntimeError", "intentional exchange init error");
    }));
    protocol.add(Method.exchange("exchange_oversized", List.of(field("rows_per_batch", INT64)), (params, ctx) -> {
      int rows = rowCount(params.int64("rows_per_batch"));
      return StreamCall.exchange(COUNTER, SCALE, (input, out, turn) -> out.emit(Roots.counter(out, 0, rows)));
    }));
  }

  /** {@code index}, then {@code label: utf8} and {@code score: float64} as asked, one row per tick. */
  private static StreamCall dynamicSchema(long count, boolean strings, boolean floats) {
    List<org.apache.arrow.vector.types.pojo.Field> fields = new java.util.ArrayList<>();
    fields.add(field("index", INT64, true));
    if (strings) {
      fields.add(field("label", UTF8, true));
    }
    if (floats) {
      fields.add(field("score", FLOAT64, true));
    }
    long[] current = {0};
    return StreamCall.producer(new Schema(fields), (input, out, ctx) -> {
      if (current[0] >= count) {
        out.finish();
        return;
      }
      VectorSchemaRoot root = out.newRoot();
      ((BigIntVector) root.getVector("index")).setSafe(0, current[0]);
      if (strings) {
        Roots.setText(root, "label", 0, "row-" + current[0]);
      }
      if (floats) {
        Roots.setDouble(root, "score", 0, current[0] * 1.5);
      }
      root.setRowCount(1);
      out.emit(root);
      current[0]++;
    });
  }

  /** Multiplies each input {@code value} by {@code factor}. */
  static StreamState scale(double factor) {
    return (input, out, ctx) -> {
      Float8Vector values = (Float8Vector) input.root().getVector("value");
      int rows = input.rowCount();
      VectorSchemaRoot root = out.newRoot();
      Float8Vector scaled = (Float8Vector) root.getVector("value");
      scaled.allocateNew(rows);
      for (int i = 0; i < rows; i++) {
        if (values.isNull(i)) {
          scaled.setNull(i);
        } else {
          scaled.set(i, values.get(i) * factor);
        }
      }
      root.setRowCount(rows);
      out.emit(root);
    };
  }

  /** {@code ConformanceHeader}: what the plain header methods declare and send. */
  static final Schema HEADER = schema(field("total_expected", INT64), field("description", UTF8));

  /** A {@code ConformanceHeader(total_expected, description)} as a one-row header batch. */
  static StreamCall.HeaderBatch header(BufferAllocator allocator, long totalExpected, String description) {
    VectorSchemaRoot root = VectorSchemaRoot.create(HEADER, allocator);
    ((BigIntVector) root.getVector("total_expected")).setSafe(0, totalExpected);
    ((VarCharVector) root.getVector("description")).setSafe(0, description.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    root.setRowCount(1);
    return new StreamCall.HeaderBatch(root, HEADER, null);
  }

  /** Rows per emitted batch, bounded so a request cannot ask for an unbounded allocation. */
  static int rowCount(long requested) {
    long rowsMax = 1L << 24;
    if (requested < 0 || requested > rowsMax) {
      throw new RpcError("ValueError", "rows_per_batch must be within 0.." + rowsMax + ", got " + requested);
    }
    return (int) requested;
  }

}
