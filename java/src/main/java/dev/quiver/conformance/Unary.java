package dev.quiver.conformance;

import static dev.quiver.conformance.Fields.BINARY;
import static dev.quiver.conformance.Fields.BOOL;
import static dev.quiver.conformance.Fields.FLOAT32;
import static dev.quiver.conformance.Fields.FLOAT64;
import static dev.quiver.conformance.Fields.INT32;
import static dev.quiver.conformance.Fields.INT64;
import static dev.quiver.conformance.Fields.UTF8;
import static dev.quiver.conformance.Fields.field;

import dev.quiver.rpc.Method;
import dev.quiver.rpc.Protocol;
import dev.quiver.rpc.UnaryResult;
import dev.quiver.wire.LogLevel;
import dev.quiver.wire.LogRecord;
import dev.quiver.wire.RpcError;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/** The unary methods: echoes of every wire type, void, defaults, errors and logs. */
final class Unary {
  private Unary() {}

  static void register(Protocol protocol) {
    echo(protocol, "echo_string", field("value", UTF8));
    echo(protocol, "echo_bytes", field("data", BINARY));
    echo(protocol, "echo_int", field("value", INT64));
    echo(protocol, "echo_float", field("value", FLOAT64));
    echo(protocol, "echo_bool", field("value", BOOL));
    echo(protocol, "echo_int32", field("value", INT32));
    echo(protocol, "echo_float32", field("value", FLOAT32));
    echo(protocol, "echo_large_binary", field("value", ArrowType.LargeBinary.INSTANCE));
    echo(protocol, "echo_optional_string", field("value", UTF8, true));
    echo(protocol, "echo_optional_int", field("value", INT64, true));
    echo(protocol, "echo_annotated_optional_int", field("value", INT32, true));
    echo(protocol, "echo_outer_optional_non_null", field("value", INT32));
    echo(protocol, "echo_list", Fields.listOf("values", field("item", UTF8, true), false));
    echo(protocol, "echo_dict", Fields.mapOf("mapping", field("value", INT64, true), false));
    echo(protocol, "echo_nested_list",
        Fields.listOf("matrix", Fields.listOf("item", field("item", INT64, true), true), false));
    echo(protocol, "echo_enum", Fields.enumField("status", 0, false));
    // Arrow's wider primitive types (vgi-rpc's Annotated[..., ArrowType(...)] parameters).
    echo(protocol, "echo_int8", field("value", new ArrowType.Int(8, true)));
    echo(protocol, "echo_int16", field("value", new ArrowType.Int(16, true)));
    echo(protocol, "echo_uint8", field("value", new ArrowType.Int(8, false)));
    echo(protocol, "echo_uint16", field("value", new ArrowType.Int(16, false)));
    echo(protocol, "echo_uint32", field("value", new ArrowType.Int(32, false)));
    echo(protocol, "echo_uint64", field("value", new ArrowType.Int(64, false)));
    echo(protocol, "echo_date", field("value", new ArrowType.Date(DateUnit.DAY)));
    echo(protocol, "echo_timestamp", field("value", new ArrowType.Timestamp(TimeUnit.MICROSECOND, null)));
    echo(protocol, "echo_timestamp_utc", field("value", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")));
    echo(protocol, "echo_time", field("value", new ArrowType.Time(TimeUnit.MICROSECOND, 64)));
    echo(protocol, "echo_duration", field("value", new ArrowType.Duration(TimeUnit.MICROSECOND)));
    echo(protocol, "echo_decimal", field("value", new ArrowType.Decimal(20, 4, 128)));
    echo(protocol, "echo_large_string", field("value", ArrowType.LargeUtf8.INSTANCE));
    echo(protocol, "echo_fixed_binary", field("value", new ArrowType.FixedSizeBinary(8)));
    echo(protocol, "echo_dict_encoded_string", Fields.enumField("value", 0, false));
    echo(protocol, "echo_wide_types", field("data", BINARY));
    echo(protocol, "echo_container_wide_types", field("data", BINARY));
    echo(protocol, "echo_embedded_arrow", field("data", BINARY));
    echo(protocol, "echo_deep_nested", field("data", BINARY));
    // A dataclass travels as a binary column holding a whole IPC stream; echoing the bytes is exact.
    echo(protocol, "echo_point", field("point", BINARY));
    echo(protocol, "echo_bounding_box", field("box", BINARY));
    echo(protocol, "echo_all_types", field("data", BINARY));
    echo(protocol, "echo_optional_point", field("point", BINARY, true));

    protocol.add(Method.unary("void_noop", List.of(), null, (params, ctx) -> null));
    protocol.add(Method.unary("void_with_param", List.of(field("value", INT64)), null, (params, ctx) -> null));
    protocol.add(Method.unary("inspect_point", List.of(field("point", BINARY)), field("result", UTF8),
        (params, ctx) -> {
          double[] point = Dataclasses.point(params.bytes("point"), ctx.allocator());
          return text(ctx.allocator(), "Point(" + PythonText.floatRepr(point[0]) + ", "
              + PythonText.floatRepr(point[1]) + ")");
        }));
    protocol.add(Method.unary("add_floats", List.of(field("a", FLOAT64), field("b", FLOAT64)),
        field("result", FLOAT64), (params, ctx) -> {
          Float8Vector result = new Float8Vector("result", ctx.allocator());
          result.allocateNew(1);
          result.set(0, params.float64("a") + params.float64("b"));
          result.setValueCount(1);
          return UnaryResult.of(result);
        }));
    protocol.add(Method.unary("concatenate",
        List.of(field("prefix", UTF8), field("suffix", UTF8), field("separator", UTF8)), field("result", UTF8),
        (params, ctx) -> text(ctx.allocator(),
            params.string("prefix") + params.string("separator") + params.string("suffix"))));
    protocol.add(Method.unary("with_defaults",
        List.of(field("required", INT64), field("optional_str", UTF8), field("optional_int", INT64)),
        field("result", UTF8),
        (params, ctx) -> text(ctx.allocator(), "required=" + params.int64("required") + ", optional_str="
            + params.string("optional_str") + ", optional_int=" + params.int64("optional_int"))));
    for (String[] pair : new String[][] {
        {"raise_value_error", "ValueError"}, {"raise_runtime_error", "RuntimeError"}, {"raise_type_error", "TypeError"}}) {
      String type = pair[1];
      protocol.add(Method.unary(pair[0], List.of(field("message", UTF8)), field("result", UTF8),
          (params, ctx) -> {
            throw new RpcError(type, params.string("message"));
          }));
    }
    logging(protocol, "echo_with_info_log", List.of(LogLevel.INFO), false);
    logging(protocol, "echo_with_multi_logs", List.of(LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN), false);
    logging(protocol, "echo_with_log_extras", List.of(LogLevel.INFO), true);
    logging(protocol, "echo_with_all_log_levels",
        List.of(LogLevel.TRACE, LogLevel.DEBUG, LogLevel.INFO, LogLevel.WARN, LogLevel.ERROR), false);
  }

  /** {@code name(param) -> result} returning its argument unchanged (same type, same dictionary). */
  private static void echo(Protocol protocol, String name, Field param) {
    Field result = new Field("result", param.getFieldType(), param.getChildren());
    protocol.add(Method.unary(name, List.of(param), result,
        (params, ctx) -> new UnaryResult(params.column(param.getName()), params.dictionaries())));
  }

  /** Echoes {@code value} after logging {@code <level>: <value>} at each level. */
  private static void logging(Protocol protocol, String name, List<LogLevel> levels, boolean withExtras) {
    protocol.add(Method.unary(name, List.of(field("value", UTF8)), field("result", UTF8), (params, ctx) -> {
      String value = params.string("value");
      for (LogLevel level : levels) {
        String message = level.name().toLowerCase(java.util.Locale.ROOT) + ": " + value;
        Map<String, Object> extra = withExtras ? Map.of("source", "conformance", "detail", value) : Map.of();
        ctx.log(new LogRecord(level, message, extra));
      }
      return text(ctx.allocator(), value);
    }));
  }

  static UnaryResult text(BufferAllocator allocator, String value) {
    VarCharVector result = new VarCharVector("result", allocator);
    result.allocateNew(1);
    result.setSafe(0, value.getBytes(StandardCharsets.UTF_8));
    result.setValueCount(1);
    return UnaryResult.of(result);
  }

}
