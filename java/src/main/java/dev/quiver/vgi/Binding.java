package dev.quiver.vgi;

import dev.quiver.wire.Limits;
import dev.quiver.wire.StreamReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ReadChannel;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * {@code bind}: resolve the function, check the call's shape and arguments, and compute the
 * (unprojected) output schema (python/quiver/vgi/bind.py). {@code init} repeats this from
 * {@code InitRequest.bind_call}, because a secondary connection never sees the bind, so it is
 * pure and cheap.
 */
final class Binding {
  private Binding() {}

  record Bound(Function function, Args args, Schema inputSchema, Schema outputSchema) {}

  static Bound bind(Catalog catalog, Map<String, Object> request, BufferAllocator allocator) {
    Function function = catalog.resolve((String) request.get("function_name"), (List<?>) request.get("schema_path"));
    Object typeValue = request.get("function_type");
    String functionType = typeValue == null ? "TABLE" : (String) typeValue;
    Schema input = Rows.readSchema((byte[]) request.get("input_schema"));
    String name = function.name;
    if (function.kind == Function.Kind.SCALAR) {
      if (!functionType.equals("SCALAR")) {
        throw VgiErrors.invalidArgument(name + "() is a scalar function, but was bound as " + functionType);
      }
      if (input == null) {
        throw VgiErrors.invalidArgument(name + "() is a scalar function: it needs its column arguments as input");
      }
      List<Arg> columns = function.args;
      if (input.getFields().size() != columns.size()) {
        throw VgiErrors.argumentValidation(name + "() takes " + columns.size() + " column argument(s), got "
            + input.getFields().size());
      }
      for (int i = 0; i < columns.size(); i++) {
        ArrowType got = input.getFields().get(i).getType();
        if (!got.equals(columns.get(i).type()) && !(got instanceof ArrowType.Null)) {
          throw VgiErrors.argumentValidation(name + "(): column argument " + i + " '" + columns.get(i).name()
              + "' must be " + sqlName(columns.get(i).type()) + ", got " + sqlName(got));
        }
      }
      Args args = bindArguments(function, (byte[]) request.get("arguments"), allocator);
      Schema output = new Schema(List.of(new Field("result", FieldType.nullable(function.returns), null)));
      return new Bound(function, args, input, output);
    }
    if (!functionType.equals(function.kind.wireName())) {
      throw VgiErrors.invalidArgument(name + "() is " + function.kind.described + ", but was bound as " + functionType);
    }
    if (function.kind == Function.Kind.TABLE && input != null) {
      throw VgiErrors.invalidArgument(name + "() is a table function: it takes no input table");
    }
    if (function.kind != Function.Kind.TABLE && input == null) {
      throw VgiErrors.invalidArgument(name + "() is " + function.kind.described + ": it needs an input table");
    }
    Args args = bindArguments(function, (byte[]) request.get("arguments"), allocator);
    return new Bound(function, args, input, function.kind == Function.Kind.TABLE_IN_OUT ? input : function.output);
  }

  /** A value as the call sent it, with its type. */
  private record Sent(ArrowType type, Object value) {}

  /** Decodes {@code BindRequest.arguments} and checks it against the signature. */
  static Args bindArguments(Function function, byte[] data, BufferAllocator allocator) {
    Map<Integer, Sent> positional = new HashMap<>();
    Map<String, Sent> named = new LinkedHashMap<>();
    if (data != null && data.length > 0) {
      try (StreamReader reader = StreamReader.open(new ReadChannel(Channels.newChannel(new ByteArrayInputStream(data))),
          allocator, Limits.DEFAULT)) {
        var batch = reader == null ? null : reader.read();
        if (batch != null && !batch.root().getFieldVectors().isEmpty()
            && batch.root().getVector(0) instanceof StructVector struct) {
          for (FieldVector child : struct.getChildrenFromFields()) {
            Object value = batch.rowCount() == 0 ? null : Rows.value(child, 0, batch.dictionaries());
            Sent sent = new Sent(child.getField().getType(), value);
            String childName = child.getName();
            if (childName.startsWith("positional_")) {
              positional.put(Integer.parseInt(childName.substring("positional_".length())), sent);
            } else if (childName.startsWith("named_")) {
              named.put(childName.substring("named_".length()), sent);
            }
          }
        }
      } catch (IOException | NumberFormatException e) {
        throw VgiErrors.invalidArgument("malformed BindRequest.arguments: " + e.getMessage());
      }
    }
    List<Arg> declared = switch (function.kind) {
      case SCALAR -> List.of();
      case AGGREGATE -> function.args.stream().filter(Arg::constant).toList();
      default -> function.positional();
    };
    if (positional.size() > declared.size()) {
      throw VgiErrors.argumentValidation(function.name + "() takes " + declared.size()
          + " positional argument(s) but " + positional.size() + " were given");
    }
    Map<String, Object> values = new LinkedHashMap<>();
    for (int i = 0; i < declared.size(); i++) {
      Arg arg = declared.get(i);
      Sent sent = positional.get(i);
      if (sent == null) {
        throw VgiErrors.argumentValidation(function.name + "(): missing argument " + i + " '" + arg.name() + "' ("
            + sqlName(arg.type()) + ")");
      }
      values.put(arg.name(), check(function, arg, String.valueOf(i), sent));
    }
    Map<String, Arg> byName = new HashMap<>();
    function.namedArgs().forEach(a -> byName.put(a.name(), a));
    for (Map.Entry<String, Sent> entry : named.entrySet()) {
      Arg arg = byName.get(entry.getKey());
      if (arg == null) {
        throw VgiErrors.argumentValidation(function.name + "() has no named argument '" + entry.getKey() + "'");
      }
      values.put(arg.name(), check(function, arg, "'" + arg.name() + "'", entry.getValue()));
    }
    for (Arg arg : function.namedArgs()) {
      values.putIfAbsent(arg.name(), arg.defaultValue());
    }
    return new Args(values);
  }

  private static Object check(Function function, Arg arg, String where, Sent sent) {
    if (!sent.type().equals(arg.type()) && !(sent.type() instanceof ArrowType.Null)) {
      if (!(sent.type() instanceof ArrowType.Int && arg.type() instanceof ArrowType.Int)) {
        throw VgiErrors.argumentValidation(function.name + "(): argument " + where + " '" + arg.name() + "' must be "
            + sqlName(arg.type()) + ", got " + sqlName(sent.type()));
      }
    }
    Object value = sent.value();
    if (value instanceof Long number) {
      if (arg.min() != null && number < arg.min()) {
        throw VgiErrors.argumentValidation(function.name + "(): argument '" + arg.name() + "' = " + number
            + " is too small (must be >= " + arg.min() + ")");
      }
      if (arg.max() != null && number > arg.max()) {
        throw VgiErrors.argumentValidation(function.name + "(): argument '" + arg.name() + "' = " + number
            + " is too large (must be <= " + arg.max() + ")");
      }
    }
    return value;
  }

  /** {@code FunctionInfo.parameter_default_values}: one row of the defaults, or null when none. */
  static byte[] defaultValues(Function function, BufferAllocator allocator) {
    List<Field> fields = new ArrayList<>();
    Map<String, Object> row = new LinkedHashMap<>();
    for (Arg arg : function.args) {
      if (arg.defaultValue() != null) {
        fields.add(new Field(arg.name(), FieldType.nullable(arg.type()), null));
        row.put(arg.name(), arg.defaultValue());
      }
    }
    return fields.isEmpty() ? null : Rows.row(new Schema(fields), row, allocator);
  }

  /** DuckDB's name for an Arrow type, as error messages spell it. */
  static String sqlName(ArrowType type) {
    if (type instanceof ArrowType.Int i) {
      String base = switch (i.getBitWidth()) {
        case 8 -> "TINYINT";
        case 16 -> "SMALLINT";
        case 32 -> "INTEGER";
        default -> "BIGINT";
      };
      return i.getIsSigned() ? base : "U" + base;
    }
    if (type instanceof ArrowType.FloatingPoint f) {
      return f.getPrecision() == FloatingPointPrecision.SINGLE ? "FLOAT" : "DOUBLE";
    }
    if (type instanceof ArrowType.Utf8 || type instanceof ArrowType.LargeUtf8) {
      return "VARCHAR";
    }
    if (type instanceof ArrowType.Bool) {
      return "BOOLEAN";
    }
    if (type instanceof ArrowType.Binary) {
      return "BLOB";
    }
    if (type instanceof ArrowType.Null) {
      return "NULL";
    }
    if (type instanceof ArrowType.Date) {
      return "DATE";
    }
    return type.toString();
  }
}
