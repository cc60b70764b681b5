package dev.quiver.rpc;

import dev.quiver.wire.Batch;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * An exchange input batch made to fit the declared input schema: columns selected by name in
 * declared order, integers and float32 widened to a declared float64 (the casts vgi-rpc's server
 * applies, python/quiver/rpc/conform.py). Anything else is a {@code TypeError}.
 */
final class Conformed implements AutoCloseable {
  private final Batch batch;
  private final VectorSchemaRoot owned;

  private Conformed(Batch batch, VectorSchemaRoot owned) {
    this.batch = batch;
    this.owned = owned;
  }

  Batch batch() {
    return batch;
  }

  static Conformed input(Schema declared, Schema sent, Batch item, BufferAllocator allocator) {
    if (sameFields(declared, sent)) {
      return new Conformed(item, null);
    }
    var declaredNames = new HashSet<String>();
    declared.getFields().forEach(f -> declaredNames.add(f.getName()));
    var sentNames = new HashSet<String>();
    sent.getFields().forEach(f -> sentNames.add(f.getName()));
    if (!declaredNames.equals(sentNames)) {
      throw mismatch(declared, sent);
    }
    List<FieldVector> columns = new ArrayList<>();
    try {
      for (Field want : declared.getFields()) {
        FieldVector column = item.root().getVector(want.getName());
        columns.add(cast(column, want, allocator, declared, sent));
      }
    } catch (RuntimeException e) {
      columns.forEach(FieldVector::close);
      throw e;
    }
    VectorSchemaRoot root = new VectorSchemaRoot(columns);
    root.setRowCount(item.rowCount());
    return new Conformed(new Batch(root, item.dictionaries(), item.metadata()), root);
  }

  private static boolean sameFields(Schema declared, Schema sent) {
    List<Field> a = declared.getFields();
    List<Field> b = sent.getFields();
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.get(i).getName().equals(b.get(i).getName()) || !a.get(i).getType().equals(b.get(i).getType())) {
        return false;
      }
    }
    return true;
  }

  private static FieldVector cast(FieldVector column, Field want, BufferAllocator allocator, Schema declared, Schema sent) {
    int rows = column.getValueCount();
    if (column.getField().getType().equals(want.getType())) {
      var transfer = column.getTransferPair(want, allocator);
      transfer.splitAndTransfer(0, rows);
      return (FieldVector) transfer.getTo();
    }
    boolean toDouble = want.getType() instanceof ArrowType.FloatingPoint fp
        && fp.getPrecision() == FloatingPointPrecision.DOUBLE;
    if (!toDouble || !(column instanceof BaseIntVector || column instanceof Float4Vector)) {
      throw mismatch(declared, sent);
    }
    Float8Vector out = new Float8Vector(want, allocator);
    out.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      if (column.isNull(i)) {
        out.setNull(i);
      } else if (column instanceof Float4Vector floats) {
        out.set(i, floats.get(i));
      } else {
        out.set(i, (double) ((BaseIntVector) column).getValueAsLong(i));
      }
    }
    out.setValueCount(rows);
    return out;
  }

  private static ClassCastException mismatch(Schema declared, Schema sent) {
    return new ClassCastException("Input schema mismatch: expected " + declared + ", got " + sent);
  }

  @Override
  public void close() {
    if (owned != null) {
      owned.close();
    }
  }
}
