package dev.quiver.vgi;

import java.util.Collections;
import java.util.Map;

/** A call's bound arguments by name: Long for integers, String, byte[], Boolean, Double, or null. */
public final class Args {
  private final Map<String, Object> values;

  Args(Map<String, Object> values) {
    this.values = Collections.unmodifiableMap(values);
  }

  public Object get(String name) {
    if (!values.containsKey(name)) {
      throw new IllegalArgumentException("no argument '" + name + "'");
    }
    return values.get(name);
  }

  public long int64(String name) {
    Object value = get(name);
    if (!(value instanceof Long number)) {
      throw new IllegalArgumentException("argument '" + name + "' is " + value + ", not an integer");
    }
    return number;
  }

  public String string(String name) {
    return (String) get(name);
  }

  Map<String, Object> asMap() {
    return values;
  }
}
