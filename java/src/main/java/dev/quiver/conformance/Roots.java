package dev.quiver.conformance;

import dev.quiver.rpc.Output;
import dev.quiver.wire.Batch;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/** Builds the small batches the conformance states emit. */
final class Roots {
  private Roots() {}

  /** Rows {@code index = first..first+rows-1, value = index * 10} on the counter schema. */
  static VectorSchemaRoot counter(Output out, long first, int rows) {
    VectorSchemaRoot root = out.newRoot();
    BigIntVector index = (BigIntVector) root.getVector("index");
    BigIntVector value = (BigIntVector) root.getVector("value");
    index.allocateNew(rows);
    value.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      index.set(i, first + i);
      value.set(i, (first + i) * 10);
    }
    root.setRowCount(rows);
    return root;
  }

  static void setText(VectorSchemaRoot root, String column, int row, String text) {
    ((VarCharVector) root.getVector(column)).setSafe(row, text.getBytes(StandardCharsets.UTF_8));
  }

  static void setDouble(VectorSchemaRoot root, String column, int row, double value) {
    ((Float8Vector) root.getVector(column)).setSafe(row, value);
  }

  /** The input batch's columns moved into a root the output owns (the input is read-once). */
  static VectorSchemaRoot take(Batch input, Output out) {
    List<FieldVector> vectors = new ArrayList<>();
    for (FieldVector vector : input.root().getFieldVectors()) {
      var transfer = vector.getTransferPair(out.allocator());
      transfer.transfer();
      vectors.add((FieldVector) transfer.getTo());
    }
    VectorSchemaRoot root = new VectorSchemaRoot(vectors);
    root.setRowCount(input.rowCount());
    return root;
  }
}
