package dev.quiver.rpc;

import java.util.List;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One method of a protocol: its name, kind, parameters (one column each, in order), its result
 * field for a unary method (null for void), the schema of the header a stream method sends first
 * (null when it sends none; reflection describes it) and the body that answers it.
 */
public record Method(String name, MethodKind kind, Schema params, Field result, Schema header, Body body) {
  /** The body of a method: a unary method returns a {@link UnaryResult} (null for void), a stream method a {@link StreamCall}. */
  @FunctionalInterface
  public interface Body {
    Object call(Params params, CallContext ctx) throws Exception;
  }

  public Method {
    if (kind.isStream() && result != null) {
      throw new IllegalArgumentException(name + ": a stream method has no unary result field");
    }
    if (result != null && !"result".equals(result.getName())) {
      throw new IllegalArgumentException(name + ": the result field must be named 'result'");
    }
    if (header != null && !kind.isStream()) {
      throw new IllegalArgumentException(name + ": only a stream method sends a header");
    }
  }

  public static Method unary(String name, List<Field> params, Field result, Body body) {
    return new Method(name, MethodKind.UNARY, new Schema(params), result, null, body);
  }

  public static Method producer(String name, List<Field> params, Body body) {
    return new Method(name, MethodKind.PRODUCER, new Schema(params), null, null, body);
  }

  public static Method exchange(String name, List<Field> params, Body body) {
    return new Method(name, MethodKind.EXCHANGE, new Schema(params), null, null, body);
  }

  /** This stream method, declaring the schema of the header its calls send before any data. */
  public Method withHeader(Schema headerSchema) {
    return new Method(name, kind, params, result, headerSchema, body);
  }

  /** The schema of a unary reply: the {@code result} field, or no field for void. */
  public Schema resultSchema() {
    return result == null ? StreamCall.EMPTY_SCHEMA : new Schema(List.of(result));
  }
}
