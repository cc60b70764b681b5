package dev.quiver.conformance;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FloatingPointVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import dev.quiver.wire.RpcError;

/** Dataclass values: a binary column holding a one-row IPC stream of the dataclass's fields. */
final class Dataclasses {
  private Dataclasses() {}

  /** The {@code (x, y)} of a serialized {@code Point}. */
  static double[] point(byte[] ipc, BufferAllocator allocator) throws IOException {
    try (ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(ipc), allocator)) {
      if (!reader.loadNextBatch() || reader.getVectorSchemaRoot().getRowCount() != 1) {
        throw new RpcError("TypeError", "a Point is a one-row IPC stream");
      }
      VectorSchemaRoot root = reader.getVectorSchemaRoot();
      return new double[] {coordinate(root, "x"), coordinate(root, "y")};
    }
  }

  private static double coordinate(VectorSchemaRoot root, String name) {
    FieldVector vector = root.getVector(name);
    if (!(vector instanceof FloatingPointVector floats) || vector.isNull(0)) {
      throw new RpcError("TypeError", "Point has no float field " + name);
    }
    return floats.getValueAsDouble(0);
  }

  /** {@code root} as the bytes of an IPC stream (with the dictionaries its encoded columns use). */
  static byte[] toIpc(VectorSchemaRoot root, org.apache.arrow.vector.dictionary.DictionaryProvider dictionaries)
      throws IOException {
    var bytes = new java.io.ByteArrayOutputStream();
    try (ArrowStreamWriter writer = new ArrowStreamWriter(root, dictionaries, bytes)) {
      writer.start();
      writer.writeBatch();
      writer.end();
    }
    return bytes.toByteArray();
  }
}
