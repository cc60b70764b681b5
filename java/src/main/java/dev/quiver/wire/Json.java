package dev.quiver.wire;

import java.util.List;
import java.util.Map;

/** The small JSON encoder the log extras need (strings, numbers, booleans, lists, maps). */
public final class Json {
  private Json() {}

  /** Python's {@code json.dumps(value)}: {@code ", "} and {@code ": "} between items. */
  public static String encode(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value, ", ", ": ");
    return out.toString();
  }

  /** Python's {@code json.dumps(value, separators=(",", ":"))}. */
  public static String encodeCompact(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value, ",", ":");
    return out.toString();
  }

  private static void write(StringBuilder out, Object value, String itemSeparator, String keySeparator) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof String text) {
      quote(out, text);
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        if (!first) {
          out.append(itemSeparator);
        }
        first = false;
        quote(out, String.valueOf(entry.getKey()));
        out.append(keySeparator);
        write(out, entry.getValue(), itemSeparator, keySeparator);
      }
      out.append('}');
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (int i = 0; i < list.size(); i++) {
        if (i > 0) {
          out.append(itemSeparator);
        }
        write(out, list.get(i), itemSeparator, keySeparator);
      }
      out.append(']');
    } else {
      quote(out, value.toString());
    }
  }

  private static void quote(StringBuilder out, String text) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
