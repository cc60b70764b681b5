package dev.quiver.rpc;

import dev.quiver.wire.Json;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.DictionaryEncoding;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The protocol hash: one digest of a protocol's wire surface, equal in every port
 * (crates/quiver-rpc/src/protocol_hash.rs, python/quiver/rpc/protocol_hash.py). The preimage is
 * canonical JSON (sorted keys, no whitespace) of the protocol name and, per method sorted by name,
 * its kind, {@code has_return}, {@code has_header} and its schemas as {@code {name, nullable, type}}
 * lists, with every type spelled as a text token, so no number ever enters the JSON.
 */
public final class ProtocolHash {
  /** Moves only when the hash's definition moves. */
  static final String HASH_DOMAIN = "vgi_rpc.protocol_hash.v1|";

  private ProtocolHash() {}

  /** The lowercase hex SHA-256 of {@code protocol}'s canonical description. */
  public static String of(Protocol protocol) {
    Map<String, Object> preimage = new TreeMap<>();
    preimage.put("protocol", protocol.name());
    List<Object> methods = new ArrayList<>();
    for (Method method : new TreeMap<>(protocol.methods()).values()) {
      methods.add(methodEntry(method));
    }
    preimage.put("methods", methods);
    byte[] text = (HASH_DOMAIN + Json.encodeCompact(preimage)).getBytes(StandardCharsets.UTF_8);
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK provides SHA-256", e);
    }
  }

  /** Whether a method's description carries a result: an absent result differs from an empty one. */
  static boolean hasReturn(Method method) {
    return !method.kind().isStream() && method.result() != null;
  }

  private static Map<String, Object> methodEntry(Method method) {
    Map<String, Object> entry = new TreeMap<>();
    entry.put("name", method.name());
    entry.put("type", method.kind().isStream() ? "stream" : "unary");
    entry.put("has_return", hasReturn(method));
    entry.put("has_header", method.header() != null);
    entry.put("params", schemaTokens(method.params()));
    if (hasReturn(method)) {
      entry.put("result", schemaTokens(method.resultSchema()));
    }
    if (method.header() != null) {
      entry.put("header", schemaTokens(method.header()));
    }
    return entry;
  }

  /** A schema's fields in declaration order (the order is part of the contract). */
  static List<Object> schemaTokens(Schema schema) {
    List<Object> fields = new ArrayList<>();
    for (Field field : schema.getFields()) {
      Map<String, Object> token = new TreeMap<>();
      token.put("name", field.getName());
      token.put("nullable", field.isNullable());
      token.put("type", fieldType(field));
      fields.add(token);
    }
    return fields;
  }

  /**
   * The canonical token of a field's type. Arrow Java keeps dictionary encoding on the field (its
   * type is the value type), where Arrow C++ and Rust make it a type of its own; the token is theirs.
   */
  public static String fieldType(Field field) {
    DictionaryEncoding encoding = field.getDictionary();
    String value = typeToken(field);
    if (encoding == null) {
      return value;
    }
    return "dictionary<index:" + typeToken(encoding.getIndexType(), List.of()) + ",value:" + value + ">"
        + (encoding.isOrdered() ? ",ordered" : "");
  }

  private static String typeToken(Field field) {
    return typeToken(field.getType(), field.getChildren());
  }

  private static String typeToken(ArrowType type, List<Field> children) {
    String simple = parameterless(type);
    if (simple != null) {
      return simple;
    }
    if (type instanceof ArrowType.Int i) {
      return (i.getIsSigned() ? "int" : "uint") + i.getBitWidth();
    }
    if (type instanceof ArrowType.FloatingPoint f) {
      return switch (f.getPrecision()) {
        case HALF -> "float16";
        case SINGLE -> "float32";
        case DOUBLE -> "float64";
      };
    }
    if (type instanceof ArrowType.Date d) {
      return d.getUnit() == org.apache.arrow.vector.types.DateUnit.DAY ? "date32" : "date64";
    }
    if (type instanceof ArrowType.Interval i) {
      return switch (i.getUnit()) {
        case YEAR_MONTH -> "interval_months";
        case DAY_TIME -> "interval_day_time";
        case MONTH_DAY_NANO -> "interval_month_day_nano";
      };
    }
    if (type instanceof ArrowType.FixedSizeBinary b) {
      return "fixed_size_binary(" + b.getByteWidth() + ")";
    }
    if (type instanceof ArrowType.Decimal d) {
      return "decimal" + d.getBitWidth() + "(" + d.getPrecision() + "," + d.getScale() + ")";
    }
    if (type instanceof ArrowType.Time t) {
      return "time" + t.getBitWidth() + "(" + unit(t.getUnit()) + ")";
    }
    if (type instanceof ArrowType.Timestamp t) {
      return t.getTimezone() == null
          ? "timestamp(" + unit(t.getUnit()) + ")"
          : "timestamp(" + unit(t.getUnit()) + ",tz=" + t.getTimezone() + ")";
    }
    if (type instanceof ArrowType.Duration d) {
      return "duration(" + unit(d.getUnit()) + ")";
    }
    if (type instanceof ArrowType.FixedSizeList l) {
      return "fixed_size_list(" + l.getListSize() + ")<" + anonymous(only(children, type), "item") + ">";
    }
    String listKind = listKind(type);
    if (listKind != null) {
      return listKind + "<" + anonymous(only(children, type), "item") + ">";
    }
    if (type instanceof ArrowType.Map m) {
      return mapToken(m, children);
    }
    if (type instanceof ArrowType.Struct) {
      return "struct<" + String.join(",", children.stream().map(ProtocolHash::named).toList()) + ">";
    }
    if (type instanceof ArrowType.Union u) {
      return unionToken(u, children);
    }
    if (type instanceof ArrowType.RunEndEncoded) {
      if (children.size() != 2) {
        throw new IllegalArgumentException("run-end encoding needs two children: " + type);
      }
      return "run_end_encoded<run_ends:" + fieldType(children.get(0)) + ",values:" + fieldType(children.get(1)) + ">";
    }
    if (type instanceof ArrowType.ExtensionType e) {
      return "extension(" + e.extensionName() + ")<" + typeToken(e.storageType(), children) + ">";
    }
    throw new IllegalArgumentException("Arrow type " + type + " has no canonical token for the protocol hash");
  }

  private static String parameterless(ArrowType type) {
    if (type instanceof ArrowType.Null) {
      return "null";
    } else if (type instanceof ArrowType.Bool) {
      return "bool";
    } else if (type instanceof ArrowType.Utf8) {
      return "utf8";
    } else if (type instanceof ArrowType.LargeUtf8) {
      return "large_utf8";
    } else if (type instanceof ArrowType.Utf8View) {
      return "utf8_view";
    } else if (type instanceof ArrowType.Binary) {
      return "binary";
    } else if (type instanceof ArrowType.LargeBinary) {
      return "large_binary";
    } else if (type instanceof ArrowType.BinaryView) {
      return "binary_view";
    }
    return null;
  }

  private static String listKind(ArrowType type) {
    if (type instanceof ArrowType.List) {
      return "list";
    } else if (type instanceof ArrowType.LargeList) {
      return "large_list";
    } else if (type instanceof ArrowType.ListView) {
      return "list_view";
    } else if (type instanceof ArrowType.LargeListView) {
      return "large_list_view";
    }
    return null;
  }

  private static String mapToken(ArrowType.Map map, List<Field> children) {
    Field entries = only(children, map);
    if (entries.getChildren().size() != 2) {
      throw new IllegalArgumentException("map entries need two children: " + entries);
    }
    return "map<" + anonymous(entries.getChildren().get(0), "key") + "," + anonymous(entries.getChildren().get(1), "value")
        + ">" + (map.getKeysSorted() ? ",keys_sorted" : "");
  }

  private static String unionToken(ArrowType.Union union, List<Field> children) {
    List<String> members = new ArrayList<>();
    int[] codes = union.getTypeIds();
    for (int i = 0; i < children.size(); i++) {
      int code = codes == null ? i : codes[i];
      members.add(code + "=" + named(children.get(i)));
    }
    String kind = union.getMode() == org.apache.arrow.vector.types.UnionMode.Sparse ? "sparse_union" : "dense_union";
    return kind + "<" + String.join(",", members) + ">";
  }

  private static Field only(List<Field> children, ArrowType type) {
    if (children.size() != 1) {
      throw new IllegalArgumentException(type + " needs exactly one child, has " + children.size());
    }
    return children.get(0);
  }

  /** A struct or union child: its name is part of the type. */
  private static String named(Field field) {
    return anonymous(field, field.getName());
  }

  /** A list item or map key/value: Arrow's type equality ignores the child's name, so it is fixed here. */
  private static String anonymous(Field field, String name) {
    return name + (field.isNullable() ? "?" : "") + ":" + fieldType(field);
  }

  private static String unit(TimeUnit unit) {
    return switch (unit) {
      case SECOND -> "s";
      case MILLISECOND -> "ms";
      case MICROSECOND -> "us";
      case NANOSECOND -> "ns";
    };
  }
}
