package dev.quiver.wire;

/** Log levels, spelled exactly as on the wire. */
public enum LogLevel {
  EXCEPTION,
  ERROR,
  WARN,
  INFO,
  DEBUG,
  TRACE
}
