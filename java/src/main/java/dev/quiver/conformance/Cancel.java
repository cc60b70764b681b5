package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.COUNTER;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.SCALE;
import static dev.quiver.conformance.Fields.field;

import dev.quiver.rpc.CallContext;
import dev.quiver.rpc.Method;
import dev.quiver.rpc.Output;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.StreamCall;
import dev.quiver.rpc.StreamState;
import dev.quiver.rpc.UnaryResult;
import dev.quiver.wire.Batch;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.impl.UnionListWriter;

/**
 * The cancel methods and their process-wide probe: how many producer turns, exchange turns and
 * cancel hooks ran, read back over the wire by {@code cancel_probe_counters}.
 */
final class Cancel {
  private Cancel() {}

  private static final AtomicLong PRODUCE_CALLS = new AtomicLong();
  private static final AtomicLong EXCHANGE_CALLS = new AtomicLong();
  private static final AtomicLong ON_CANCEL_CALLS = new AtomicLong();

  static void register(Protocol protocol) {
    protocol.add(Method.producer("cancellable_producer", List.of(), (params, ctx) -> {
      long[] current = {0};
      return StreamCall.producer(COUNTER, new StreamState() {
        @Override
        public void process(Batch input, Output out, CallContext turn) {
          PRODUCE_CALLS.incrementAndGet();
          out.emit(Roots.counter(out, current[0], 1));
          current[0]++;
        }

        @Override
        public void onCancel(CallContext turn) {
          ON_CANCEL_CALLS.incrementAndGet();
        }
      });
    }));
    protocol.add(Method.exchange("cancellable_exchange", List.of(),
        (params, ctx) -> StreamCall.exchange(SCALE, SCALE, new StreamState() {
          @Override
          public void process(Batch input, Output out, CallContext turn) {
            EXCHANGE_CALLS.incrementAndGet();
            out.emit(Roots.take(input, out));
          }

          @Override
          public void onCancel(CallContext turn) {
            ON_CANCEL_CALLS.incrementAndGet();
          }
        })));
    protocol.add(Method.unary("cancel_probe_counters", List.of(),
        Fields.listOf("result", field("item", INT64, true), false), (params, ctx) -> {
          ListVector list = ListVector.empty("result", ctx.allocator());
          UnionListWriter writer = list.getWriter();
          writer.setPosition(0);
          writer.startList();
          for (AtomicLong counter : List.of(PRODUCE_CALLS, EXCHANGE_CALLS, ON_CANCEL_CALLS)) {
            writer.writeBigInt(counter.get());
          }
          writer.endList();
          list.setValueCount(1);
          return UnaryResult.of(list);
        }));
    protocol.add(Method.unary("reset_cancel_probe", List.of(), null, (params, ctx) -> {
      PRODUCE_CALLS.set(0);
      EXCHANGE_CALLS.set(0);
      ON_CANCEL_CALLS.set(0);
      return null;
    }));
  }
}
