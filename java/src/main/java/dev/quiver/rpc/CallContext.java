package dev.quiver.rpc;

import dev.quiver.wire.LogLevel;
import dev.quiver.wire.LogRecord;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;

/** The context a method body runs in: who is calling, an allocator, and a log for the client. */
public final class CallContext {
  /** Most log records one call (or one stream turn) may send; they are held until the turn ends. */
  public static final int LOG_RECORDS_MAX = 10_000;

  private final String method;
  private final Map<String, String> metadata;
  private final String requestId;
  private final String peer;
  private final BufferAllocator allocator;
  private final List<Object> records;

  CallContext(
      String method,
      Map<String, String> metadata,
      String requestId,
      String peer,
      BufferAllocator allocator,
      List<Object> records) {
    this.method = method;
    this.metadata = metadata;
    this.requestId = requestId;
    this.peer = peer;
    this.allocator = allocator;
    this.records = records;
  }

  public String method() {
    return method;
  }

  /** The custom metadata of the request (or of this turn's input batch). */
  public Map<String, String> metadata() {
    return metadata;
  }

  public String requestId() {
    return requestId;
  }

  public String peer() {
    return peer;
  }

  public BufferAllocator allocator() {
    return allocator;
  }

  /** Sends a log record to the client ahead of the call's result. */
  public void log(LogRecord record) {
    if (records.size() >= LOG_RECORDS_MAX) {
      throw new IllegalStateException("more than " + LOG_RECORDS_MAX + " log records in one call");
    }
    records.add(record);
  }

  public void log(LogLevel level, String message) {
    log(new LogRecord(level, message));
  }
}
