package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.BINARY;
import static dev.quiver.conformance.Fields.BOOL;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.UTF8;
import static dev.quiver.conformance.Fields.field;
import static dev.quiver.conformance.Fields.schema;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.StreamCall;
import dev.quiver.rpc.UnaryResult;
import java.util.List;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The methods whose purpose needs what a byte-stream worker has not: sticky sessions and external
 * storage are HTTP features, and an oversized unary reply probes an HTTP response cap. They are
 * declared (so reflection describes, and hashes, the whole protocol) and answer as
 * python/quiver/conformance/service.py does where those features are absent.
 */
final class Unbound {
  private Unbound() {}

  static final String SESSIONS_UNAVAILABLE = "sticky sessions not available on this transport";
  static final String NO_SESSION_COUNTER = "no sticky counter bound to this request";
  /** Largest oversized reply built: the probe needs a few megabytes, never an unbounded allocation. */
  static final long OVERSIZED_BYTES_MAX = 256L << 20;

  private static final Schema INT_VALUE = schema(field("value", INT64, true));
  private static final Schema SESSION_INPUT = schema(field("by", INT64, true));

  static void register(Protocol protocol) {
    protocol.add(Method.unary("open_counter", List.of(field("initial", INT64)), field("result", INT64),
        (params, ctx) -> {
          throw new IllegalStateException(SESSIONS_UNAVAILABLE);
        }));
    protocol.add(Method.unary("increment_counter", List.of(field("by", INT64)), field("result", INT64),
        (params, ctx) -> {
          throw new IllegalStateException(NO_SESSION_COUNTER);
        }));
    protocol.add(Method.unary("close_counter", List.of(), field("result", INT64), (params, ctx) -> {
      throw new IllegalStateException(NO_SESSION_COUNTER);
    }));
    // The stream opens; it finishes at once for count <= 0 and fails on its first batch otherwise.
    protocol.add(Method.producer("stream_session_counter", List.of(field("count", INT64)), (params, ctx) -> {
      long count = params.int64("count");
      return StreamCall.producer(INT_VALUE, (input, out, turn) -> {
        if (count > 0) {
          throw new IllegalStateException(NO_SESSION_COUNTER);
        }
        out.finish();
      });
    }));
    protocol.add(Method.exchange("exchange_session_counter", List.of(),
        (params, ctx) -> StreamCall.exchange(INT_VALUE, SESSION_INPUT, (input, out, turn) -> {
          throw new IllegalStateException(NO_SESSION_COUNTER);
        })));
    protocol.add(Method.unary("oversized_unary", List.of(field("target_bytes", INT64)), field("result", BINARY),
        (params, ctx) -> {
          long target = params.int64("target_bytes");
          if (target < 0) {
            throw new IllegalArgumentException("target_bytes must be non-negative");
          }
          if (target > OVERSIZED_BYTES_MAX) {
            throw new IllegalArgumentException("target_bytes is over " + OVERSIZED_BYTES_MAX);
          }
          VarBinaryVector result = new VarBinaryVector(field("result", BINARY), ctx.allocator());
          result.setSafe(0, new byte[(int) target]);
          result.setValueCount(1);
          return UnaryResult.of(result);
        }));
    protocol.add(Method.unary("published_string", List.of(field("value", UTF8), field("include_sha256", BOOL)),
        field("result", UTF8), (params, ctx) -> {
          throw new IllegalStateException("published_string requires external storage");
        }));
  }
}
