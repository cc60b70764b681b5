package dev.quiver.wire;

import java.util.LinkedHashMap;
import java.util.Map;

/** A message for the client's log, with optional extras (sent as a JSON object). */
public record LogRecord(LogLevel level, String message, Map<String, Object> extra) {
  public LogRecord {
    if (level == LogLevel.EXCEPTION) {
      throw new IllegalArgumentException("EXCEPTION is reserved for error reports");
    }
    extra = Map.copyOf(extra);
  }

  public LogRecord(LogLevel level, String message) {
    this(level, message, Map.of());
  }

  /** The record as the metadata of a zero-row log batch (without server and request ids). */
  public Map<String, String> toMetadata() {
    Map<String, String> metadata = new LinkedHashMap<>();
    metadata.put(Keys.LOG_LEVEL, level.name());
    metadata.put(Keys.LOG_MESSAGE, message);
    if (!extra.isEmpty()) {
      metadata.put(Keys.LOG_EXTRA, Json.encode(new java.util.TreeMap<>(extra)));
    }
    return metadata;
  }
}
