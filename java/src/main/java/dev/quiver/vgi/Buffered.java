package dev.quiver.vgi;

import dev.quiver.rpc.StreamState;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Buffered table functions ({@code table_buffering}): the sink init opens a call, each
 * {@code table_buffering_process} stores one input batch (its IPC bytes), combine answers one
 * finalize id, the finalize init runs the body over the whole input, the destructor forgets the call.
 * A call stays in this process, keyed by execution id: quiver's engine and vgi-python's Client send a
 * whole buffered call on one connection (crates/quiver-vgi/src/buffered.rs is the Rust twin).
 */
final class Buffered {
  /** Most buffered calls one process holds open at once. */
  static final int CALLS_MAX = 1024;

  private record Call(Binding.Bound bound, List<byte[]> batches) {}

  private final Map<String, Call> calls = new ConcurrentHashMap<>();

  void open(byte[] executionId, Binding.Bound bound) {
    if (calls.size() >= CALLS_MAX) {
      throw VgiErrors.invalidArgument("more than " + CALLS_MAX + " buffered calls are open in this worker");
    }
    calls.put(key(executionId), new Call(bound, java.util.Collections.synchronizedList(new ArrayList<>())));
  }

  private Call call(byte[] executionId) {
    Call call = executionId == null ? null : calls.get(key(executionId));
    if (call == null) {
      throw VgiErrors.invalidArgument("no buffered call is open for execution "
          + (executionId == null ? "(none)" : key(executionId)));
    }
    return call;
  }

  byte[] process(Map<String, Object> request, BufferAllocator allocator) {
    byte[] id = (byte[]) request.get("execution_id");
    call(id).batches.add((byte[]) request.get("input_batch"));
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("state_id", id);
    return Rows.row(Dataclasses.BUFFERING_PROCESS_RESPONSE, row, allocator);
  }

  byte[] combine(Map<String, Object> request, BufferAllocator allocator) {
    byte[] id = (byte[]) request.get("execution_id");
    call(id);
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("finalize_state_ids", List.of(id)); // one finalize stream reads the whole input
    return Rows.row(Dataclasses.BUFFERING_COMBINE_RESPONSE, row, allocator);
  }

  byte[] destruct(Map<String, Object> request, BufferAllocator allocator) {
    byte[] id = (byte[]) request.get("execution_id");
    if (id != null) {
      calls.remove(key(id));
    }
    return Rows.stream(new Schema(List.of()), List.of(), allocator);
  }

  /** The finalize stream: the body over every stored batch, emitted once. */
  StreamState output(byte[] executionId) {
    Call call = call(executionId);
    boolean[] done = {false};
    return (input, out, ctx) -> {
      if (done[0]) {
        out.finish();
        return;
      }
      done[0] = true;
      List<VectorSchemaRoot> batches = new ArrayList<>();
      try {
        for (byte[] bytes : call.batches) {
          batches.addAll(read(bytes, out.allocator()));
        }
        VectorSchemaRoot result = call.bound.function().buffered.apply(call.bound.args(), batches, out.allocator());
        if (result == null) {
          out.finish();
        } else {
          out.emit(result);
        }
      } finally {
        batches.forEach(VectorSchemaRoot::close);
      }
    };
  }

  private static List<VectorSchemaRoot> read(byte[] bytes, BufferAllocator allocator) {
    List<VectorSchemaRoot> roots = new ArrayList<>();
    try (ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(bytes), allocator)) {
      while (reader.loadNextBatch()) {
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        List<FieldVector> vectors = new ArrayList<>();
        for (FieldVector from : root.getFieldVectors()) {
          var transfer = from.getTransferPair(allocator);
          transfer.transfer();
          vectors.add((FieldVector) transfer.getTo());
        }
        VectorSchemaRoot kept = new VectorSchemaRoot(vectors);
        kept.setRowCount(root.getRowCount());
        roots.add(kept);
      }
    } catch (IOException e) {
      roots.forEach(VectorSchemaRoot::close);
      throw new UncheckedIOException(e);
    }
    return roots;
  }

  private static String key(byte[] id) {
    return HexFormat.of().formatHex(id);
  }
}
