package dev.quiver.rpc;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A protocol a server hosts: its wire name, its version (null when not gated) and its methods. */
public final class Protocol {
  private final String name;
  private final String version;
  private final Map<String, Method> methods = new LinkedHashMap<>();

  public Protocol(String name, String version) {
    this.name = name;
    this.version = version;
  }

  public Protocol add(Method method) {
    if (methods.putIfAbsent(method.name(), method) != null) {
      throw new IllegalArgumentException("method " + method.name() + " declared twice");
    }
    return this;
  }

  public String name() {
    return name;
  }

  public String version() {
    return version;
  }

  public Map<String, Method> methods() {
    return Collections.unmodifiableMap(methods);
  }
}
