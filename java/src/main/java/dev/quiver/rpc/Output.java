package dev.quiver.rpc;

import dev.quiver.wire.LogLevel;
import dev.quiver.wire.LogRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/** Collects what one stream turn emits, in order: logs and at most one data batch. */
public final class Output {
  /** A data batch and its custom metadata; the session closes the root once written. */
  public record Emitted(VectorSchemaRoot root, Map<String, String> metadata) {}

  private final Schema schema;
  private final BufferAllocator allocator;
  private final List<Object> items = new ArrayList<>();
  private int dataCount;
  private boolean finished;

  Output(Schema schema, BufferAllocator allocator) {
    this.schema = schema;
    this.allocator = allocator;
  }

  /** The stream's output schema. */
  public Schema schema() {
    return schema;
  }

  /** The allocator batches for this turn come from. */
  public BufferAllocator allocator() {
    return allocator;
  }

  /** A fresh root on the output schema for the caller to fill and {@link #emit}. */
  public VectorSchemaRoot newRoot() {
    return VectorSchemaRoot.create(schema, allocator);
  }

  /** Emits this turn's data batch; the session takes ownership of {@code root}. */
  public void emit(VectorSchemaRoot root, Map<String, String> metadata) {
    if (dataCount > 0) {
      root.close();
      throw new IllegalStateException("Only one data batch may be emitted per call");
    }
    dataCount = 1;
    items.add(new Emitted(root, Map.copyOf(metadata)));
  }

  public void emit(VectorSchemaRoot root) {
    emit(root, Map.of());
  }

  /** Sends a log record to the client ahead of this turn's data. */
  public void log(LogLevel level, String message) {
    if (items.size() >= CallContext.LOG_RECORDS_MAX) {
      throw new IllegalStateException("more than " + CallContext.LOG_RECORDS_MAX + " log records in one turn");
    }
    items.add(new LogRecord(level, message));
  }

  /** Ends a producer stream after this turn. */
  public void finish() {
    finished = true;
  }

  boolean finished() {
    return finished;
  }

  int dataCount() {
    return dataCount;
  }

  List<Object> items() {
    return items;
  }

  /** Closes any batch not yet written (after an error). */
  void release() {
    for (Object item : items) {
      if (item instanceof Emitted emitted) {
        emitted.root().close();
      }
    }
    items.clear();
  }
}
