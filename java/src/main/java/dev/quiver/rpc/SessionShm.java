package dev.quiver.rpc;

import dev.quiver.shm.SharedMemory;
import dev.quiver.shm.ShmException;
import dev.quiver.transport.Connection;
import dev.quiver.wire.Batch;
import dev.quiver.wire.BatchRole;
import dev.quiver.wire.Keys;
import dev.quiver.wire.StreamWriter;
import dev.quiver.wire.WireException;
import java.io.IOException;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One session's side of shared memory: the segment its client advertises (attached once, again
 * when the client names another), pointer batches resolved from it, replies written into it when
 * they qualify, regions freed as the reader, and the counts the debug summary reports. Without a
 * usable segment every method is a no-op and batches travel inline.
 */
final class SessionShm {
  private final Server server;
  private final Connection connection;
  private final BufferAllocator allocator;
  /** The segment the client advertised, once attached; null while every batch is inline. */
  private ShmRoute route;

  SessionShm(Server server, Connection connection, BufferAllocator allocator) {
    this.server = server;
    this.connection = connection;
    this.allocator = allocator;
  }

  /** Attaches (or re-attaches) the segment a request advertises, where this side can use one. */
  void attach(Map<String, String> metadata) throws ShmException {
    String name = metadata.get(Keys.SHM_SEGMENT_NAME);
    if (name == null || !usable()) {
      return;
    }
    if (route != null && route.segment.name().equals(name)) {
      return;
    }
    dev.quiver.shm.Segment segment;
    try {
      segment = SharedMemory.attach(name);
    } catch (ShmException e) {
      throw new ShmException("cannot attach shared memory '" + name + "': " + e.getMessage());
    }
    if (server.shm().debug()) {
      ShmRoute.debug("attached " + segment.name() + " size=" + segment.sizeBytes() + " data_size="
          + segment.dataSizeBytes());
    }
    close();
    route = new ShmRoute(segment, server.shm());
  }

  /** Whether this connection may use shared memory: enabled, a local peer, and a JVM that can map it. */
  boolean usable() {
    return !server.shm().disabled() && connection.local() && SharedMemory.available();
  }

  /** The batch a pointer refers to, or null for a batch that came inline. */
  ShmRoute.Resolved resolve(Batch batch, Schema sent) throws WireException {
    if (route != null) {
      route.stats.inboundTotal++;
    }
    if (batch.role() != BatchRole.SHM_POINTER) {
      return null;
    }
    if (route == null) {
      throw new WireException("shm pointer batch but no shared-memory segment is attached", true);
    }
    return route.resolve(batch, sent, allocator, server.limits());
  }

  /** Frees the regions this side has finished reading; called while it is this side's turn. */
  void collect() {
    if (route != null) {
      route.segment.collect();
    }
  }

  /** Detaches the segment, printing the debug summary when asked for. */
  void close() {
    if (route == null) {
      return;
    }
    if (route.config.debug()) {
      System.err.println(route.stats.summary(connection.peer(), "worker"));
      System.err.flush();
    }
    route.close();
    route = null;
  }

  /** Writes a data batch, through the segment when it qualifies. */
  void writeData(StreamWriter writer, VectorSchemaRoot root, Map<String, String> metadata) throws IOException {
    long started = System.nanoTime();
    Map<String, String> pointer = route == null ? null : route.tryWrite(root, writer.schema(), metadata, allocator);
    if (pointer != null) {
      writer.writeEmpty(pointer);
    } else {
      writer.write(root, metadata);
    }
    if (route != null) {
      route.stats.emitNanos += System.nanoTime() - started;
    }
  }

  /** Time this side spent waiting for its peer (the debug timeline). */
  void addWaiting(long nanos) {
    if (route != null) {
      route.stats.waitingNanos += nanos;
    }
  }

  /** Time this side spent in method bodies (the debug timeline). */
  void addProcess(long nanos) {
    if (route != null) {
      route.stats.processNanos += nanos;
    }
  }
}
