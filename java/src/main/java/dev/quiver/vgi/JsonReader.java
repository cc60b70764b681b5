package dev.quiver.vgi;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader for filter documents: objects become Maps, arrays Lists, numbers Long
 * (integral) or Double. Input length and nesting are bounded; anything malformed is an
 * IllegalArgumentException saying where.
 */
final class JsonReader {
  static final int TEXT_CHARS_MAX = 1 << 20;
  static final int DEPTH_MAX = 128;

  private final String text;
  private int at;

  private JsonReader(String text) {
    this.text = text;
  }

  static Object parse(String text) {
    if (text.length() > TEXT_CHARS_MAX) {
      throw new IllegalArgumentException("JSON text of " + text.length() + " chars exceeds " + TEXT_CHARS_MAX);
    }
    JsonReader reader = new JsonReader(text);
    Object value = reader.value(0);
    reader.skipSpace();
    if (reader.at != text.length()) {
      throw reader.error("trailing characters");
    }
    return value;
  }

  private Object value(int depth) {
    if (depth > DEPTH_MAX) {
      throw error("nested deeper than " + DEPTH_MAX);
    }
    skipSpace();
    if (at >= text.length()) {
      throw error("unexpected end");
    }
    char c = text.charAt(at);
    switch (c) {
      case '{' -> {
        at++;
        Map<String, Object> object = new LinkedHashMap<>();
        skipSpace();
        if (peek('}')) {
          return object;
        }
        do {
          skipSpace();
          if (at >= text.length() || text.charAt(at) != '"') {
            throw error("expected a key");
          }
          String key = string();
          skipSpace();
          expect(':');
          object.put(key, value(depth + 1));
          skipSpace();
        } while (peek(','));
        expect('}');
        return object;
      }
      case '[' -> {
        at++;
        List<Object> array = new ArrayList<>();
        skipSpace();
        if (peek(']')) {
          return array;
        }
        do {
          array.add(value(depth + 1));
          skipSpace();
        } while (peek(','));
        expect(']');
        return array;
      }
      case '"' -> {
        return string();
      }
      default -> {
        if (text.startsWith("true", at)) {
          at += 4;
          return Boolean.TRUE;
        }
        if (text.startsWith("false", at)) {
          at += 5;
          return Boolean.FALSE;
        }
        if (text.startsWith("null", at)) {
          at += 4;
          return null;
        }
        return number();
      }
    }
  }

  private Object number() {
    int start = at;
    while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
    String digits = text.substring(start, at);
    if (digits.isEmpty()) {
      throw error("unexpected character");
    }
    try {
      if (digits.matches("-?\\d{1,18}")) {
        return Long.parseLong(digits);
      }
      return Double.parseDouble(digits);
    } catch (NumberFormatException e) {
      throw error("bad number " + digits);
    }
  }

  private String string() {
    expect('"');
    StringBuilder out = new StringBuilder();
    while (at < text.length()) {
      char c = text.charAt(at++);
      if (c == '"') {
        return out.toString();
      }
      if (c != '\\') {
        out.append(c);
        continue;
      }
      if (at >= text.length()) {
        break;
      }
      char escaped = text.charAt(at++);
      switch (escaped) {
        case '"', '\\', '/' -> out.append(escaped);
        case 'b' -> out.append('\b');
        case 'f' -> out.append('\f');
        case 'n' -> out.append('\n');
        case 'r' -> out.append('\r');
        case 't' -> out.append('\t');
        case 'u' -> {
          if (at + 4 > text.length()) {
            throw error("short \\u escape");
          }
          out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          at += 4;
        }
        default -> throw error("bad escape \\" + escaped);
      }
    }
    throw error("unterminated string");
  }

  private void skipSpace() {
    while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
      at++;
    }
  }

  private boolean peek(char c) {
    if (at < text.length() && text.charAt(at) == c) {
      at++;
      return true;
    }
    return false;
  }

  private void expect(char c) {
    if (!peek(c)) {
      throw error("expected '" + c + "'");
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("bad JSON at offset " + at + ": " + what);
  }
}
