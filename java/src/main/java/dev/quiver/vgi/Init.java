package dev.quiver.vgi;

import dev.quiver.rpc.CallContext;
import dev.quiver.rpc.Output;
import dev.quiver.rpc.StreamCall;
import dev.quiver.rpc.StreamState;
import dev.quiver.wire.Batch;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * {@code init}: start, join or finalize an execution and answer with the right kind of stream
 * (python/quiver/vgi/init.py). A scalar call and a table-in-out INPUT call are exchanges (a batch
 * in, a batch out); a table scan and a table-in-out FINALIZE are producers. Every stream's header
 * is a {@code GlobalInitResponse}.
 */
final class Init {
  /** {@code GlobalInitResponse.max_workers} when the worker sets no bound of its own. */
  static final long UNBOUNDED_WORKERS = 99999;
  /** Largest projection a call may ask for. */
  static final int PROJECTION_MAX = 4096;

  private static final SecureRandom RANDOM = new SecureRandom();

  private Init() {}

  static StreamCall init(Worker worker, Map<String, Object> init, BufferAllocator allocator) {
    Map<String, Object> bindCall = Rows.readRow((byte[]) init.get("bind_call"), allocator);
    Binding.Bound bound = Binding.bind(worker.catalog, bindCall, allocator);
    Function function = bound.function();
    Object phase = init.get("phase");
    byte[] executionId = (byte[]) init.get("execution_id");
    boolean secondary = executionId != null;
    if (!secondary) {
      executionId = new byte[16];
      RANDOM.nextBytes(executionId);
    }
    byte[] opaque = secondary ? (byte[]) init.get("init_opaque_data") : null;
    String executionHex = HexFormat.of().formatHex(executionId);
    Log.debug("init " + function.name + "() " + (secondary ? "secondary" : "primary") + " phase=" + phase);
    switch (function.kind) {
      case SCALAR -> {
        if (phase != null) {
          throw VgiErrors.invalidArgument(function.name + "() is a scalar function: init takes no phase (" + phase + ")");
        }
        return StreamCall.exchange(bound.outputSchema(), bound.inputSchema(), scalar(bound))
            .withHeader(header(executionId, opaque, UNBOUNDED_WORKERS, allocator));
      }
      case TABLE -> {
        if (phase != null) {
          throw VgiErrors.invalidArgument(function.name + "() is a table function: init takes no phase (" + phase + ")");
        }
        Executions.Counter counter;
        long maxWorkers = UNBOUNDED_WORKERS;
        byte[] split = null;
        List<?> tokens = (List<?>) init.get("split_tokens");
        if (tokens != null) {
          split = Splits.redeem(function, bindCall, tokens);
          counter = null;
          maxWorkers = 1;
        } else if (function.splits != null) {
          throw VgiErrors.invalidArgument(function.name + "() plans its scan into splits: call table_function_plan, "
              + "then init with split_tokens");
        } else if (function.sharedWork == null) {
          counter = null;
          maxWorkers = 1;
        } else if (secondary) {
          counter = worker.executions.join(executionId);
          Log.debug("secondary init of execution " + executionHex);
        } else {
          counter = worker.executions.start(executionId, function.sharedWork.units(bound.args()));
          maxWorkers = function.maxWorkers;
          Log.debug("execution " + executionHex + " started");
        }
        List<Integer> projection = function.projectionPushdown ? projection(init, bound.outputSchema()) : null;
        byte[] filterBytes = (byte[]) init.get("pushdown_filters");
        Filters filters = function.filterPushdown && filterBytes != null && filterBytes.length > 0
            ? Filters.parse(filterBytes, bound.outputSchema(), allocator) : null;
        Schema output = projected(bound.outputSchema(), projection);
        Scan scan = new Scan(counter, bound.args(), split);
        StreamState state = table(function, function.scan.start(bound.args()), scan, filters, projection);
        return StreamCall.producer(output, state).withHeader(header(executionId, opaque, maxWorkers, allocator));
      }
      case TABLE_BUFFERING -> {
        if ("TABLE_BUFFERING".equals(phase)) {
          worker.buffered.open(executionId, bound);
          return StreamCall.producer(bound.outputSchema(), (input, out, ctx) -> out.finish())
              .withHeader(header(executionId, null, 1, allocator));
        }
        if ("TABLE_BUFFERING_FINALIZE".equals(phase) && secondary) {
          return StreamCall.producer(bound.outputSchema(), worker.buffered.output(executionId))
              .withHeader(header(executionId, null, 1, allocator));
        }
        throw VgiErrors.invalidArgument(function.name + "() is a buffered table function: init takes phase "
            + "TABLE_BUFFERING, or TABLE_BUFFERING_FINALIZE with its execution_id (got " + phase + ")");
      }
      default -> {
        String key = executionHex + "/" + HexFormat.of().formatHex(
            init.get("substream_id") == null ? new byte[0] : (byte[]) init.get("substream_id"));
        if ("INPUT".equals(phase)) {
          Object callState = new java.util.concurrent.ConcurrentHashMap<String, Object>();
          worker.executions.states.put(key, callState);
          return StreamCall.exchange(bound.outputSchema(), bound.inputSchema(), inOut(bound, callState))
              .withHeader(header(executionId, opaque, UNBOUNDED_WORKERS, allocator));
        }
        if ("FINALIZE".equals(phase)) {
          Object callState = worker.executions.states.remove(key);
          return StreamCall.producer(bound.outputSchema(), finalizer(bound, callState))
              .withHeader(header(executionId, opaque, UNBOUNDED_WORKERS, allocator));
        }
        throw VgiErrors.invalidArgument(function.name + "() is a table-in-out function: init requires an input row "
            + "stream (phase INPUT or FINALIZE, got " + phase + ")");
      }
    }
  }

  private static StreamCall.HeaderBatch header(byte[] executionId, byte[] opaque, long maxWorkers,
      BufferAllocator allocator) {
    VectorSchemaRoot root = VectorSchemaRoot.create(Dataclasses.GLOBAL_INIT_RESPONSE, allocator);
    ((VarBinaryVector) root.getVector("execution_id")).setSafe(0, executionId);
    if (opaque == null) {
      ((VarBinaryVector) root.getVector("opaque_data")).setNull(0);
    } else {
      ((VarBinaryVector) root.getVector("opaque_data")).setSafe(0, opaque);
    }
    ((BigIntVector) root.getVector("max_workers")).setSafe(0, maxWorkers);
    root.setRowCount(1);
    return new StreamCall.HeaderBatch(root, Dataclasses.GLOBAL_INIT_RESPONSE, null);
  }

  private static List<Integer> projection(Map<String, Object> init, Schema output) {
    Object ids = init.get("projection_ids");
    if (ids == null) {
      return null;
    }
    List<?> list = (List<?>) ids;
    if (list.size() > PROJECTION_MAX) {
      throw VgiErrors.invalidArgument("projection of " + list.size() + " columns exceeds " + PROJECTION_MAX);
    }
    List<Integer> columns = new ArrayList<>();
    for (Object id : list) {
      long index = ((Number) id).longValue();
      if (index < 0 || index >= output.getFields().size()) {
        throw VgiErrors.invalidArgument("projection id " + index + " is outside the " + output.getFields().size()
            + " output columns");
      }
      columns.add((int) index);
    }
    return columns;
  }

  private static Schema projected(Schema schema, List<Integer> projection) {
    if (projection == null) {
      return schema;
    }
    List<Field> fields = new ArrayList<>();
    projection.forEach(i -> fields.add(schema.getFields().get(i)));
    return new Schema(fields);
  }

  /** The columns {@code projection} names, moved out of {@code root} into a new root (which is closed). */
  private static VectorSchemaRoot project(VectorSchemaRoot root, List<Integer> projection, BufferAllocator allocator) {
    if (projection == null) {
      return root;
    }
    try (root) {
      List<FieldVector> vectors = new ArrayList<>();
      for (int index : projection) {
        FieldVector from = root.getVector(index);
        var transfer = from.getTransferPair(allocator);
        transfer.transfer();
        vectors.add((FieldVector) transfer.getTo());
      }
      VectorSchemaRoot moved = new VectorSchemaRoot(vectors);
      moved.setRowCount(root.getRowCount());
      return moved;
    }
  }

  /** The vectors of {@code root} moved into a root the caller owns. */
  private static VectorSchemaRoot moved(VectorSchemaRoot root, BufferAllocator allocator) {
    List<FieldVector> vectors = new ArrayList<>();
    for (FieldVector from : root.getFieldVectors()) {
      var transfer = from.getTransferPair(allocator);
      transfer.transfer();
      vectors.add((FieldVector) transfer.getTo());
    }
    VectorSchemaRoot moved = new VectorSchemaRoot(vectors);
    moved.setRowCount(root.getRowCount());
    return moved;
  }

  private static StreamState scalar(Binding.Bound bound) {
    Function function = bound.function();
    Field result = bound.outputSchema().getFields().get(0);
    return (Batch input, Output out, CallContext ctx) -> {
      int rows = input.rowCount();
      FieldVector values = function.scalar.apply(input.root().getFieldVectors(), rows, out.allocator());
      try {
        if (values.getValueCount() != rows) {
          throw new IllegalStateException(function.name + "() returned " + values.getValueCount() + " values for "
              + rows + " rows");
        }
        if (!values.getField().getType().equals(result.getType())) {
          throw new IllegalStateException(function.name + "() returned " + values.getField().getType() + ", declared "
              + result.getType());
        }
        var transfer = values.getTransferPair(result, out.allocator());
        transfer.transfer();
        VectorSchemaRoot root = new VectorSchemaRoot(List.of((FieldVector) transfer.getTo()));
        root.setRowCount(rows);
        out.emit(root);
      } finally {
        values.close();
      }
    };
  }

  private static StreamState table(Function function, Function.TableScan tableScan, Scan scan, Filters filters,
      List<Integer> projection) {
    return (Batch input, Output out, CallContext ctx) -> {
      VectorSchemaRoot batch = tableScan.next(scan, out.allocator());
      if (batch == null) {
        Log.debug(function.name + "(): connection emitted " + scan.rows + " row(s)");
        out.finish();
        return;
      }
      if (filters != null) {
        batch = filters.apply(batch, out.allocator());
      }
      scan.rows += batch.getRowCount();
      out.emit(project(batch, projection, out.allocator()));
    };
  }

  private static StreamState inOut(Binding.Bound bound, Object callState) {
    Function function = bound.function();
    return (Batch input, Output out, CallContext ctx) -> {
      VectorSchemaRoot result = function.inOut.apply(bound.args(), callState, input.root(), out.allocator());
      if (result == null) {
        result = VectorSchemaRoot.create(bound.outputSchema(), out.allocator());
        result.setRowCount(0);
      } else if (result == input.root()) {
        // The input belongs to the session; passing it through moves its buffers out.
        result = moved(result, out.allocator());
      }
      out.emit(result);
    };
  }

  private static StreamState finalizer(Binding.Bound bound, Object callState) {
    Function function = bound.function();
    boolean[] done = {false};
    return (Batch input, Output out, CallContext ctx) -> {
      VectorSchemaRoot result = done[0] || function.finalizer == null ? null
          : function.finalizer.apply(bound.args(), callState, out.allocator());
      done[0] = true;
      if (result == null) {
        out.finish();
      } else {
        out.emit(result);
      }
    };
  }
}
