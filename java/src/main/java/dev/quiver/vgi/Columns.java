package dev.quiver.vgi;

import java.nio.charset.StandardCharsets;
import java.util.function.LongUnaryOperator;
import java.util.function.UnaryOperator;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;

/** Helpers for scalar bodies: map a column value by value, NULL staying NULL. */
public final class Columns {
  private Columns() {}

  /** {@code f} applied to every non-null string of {@code column}; the caller owns the result. */
  public static FieldVector strings(FieldVector column, UnaryOperator<String> f, BufferAllocator allocator) {
    VarCharVector input = (VarCharVector) column;
    int rows = input.getValueCount();
    VarCharVector result = new VarCharVector("result", allocator);
    result.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      if (!input.isNull(i)) {
        result.setSafe(i, f.apply(new String(input.get(i), StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8));
      }
    }
    result.setValueCount(rows);
    return result;
  }

  /** {@code f} applied to every non-null BIGINT of {@code column}; the caller owns the result. */
  public static FieldVector int64s(FieldVector column, LongUnaryOperator f, BufferAllocator allocator) {
    BigIntVector input = (BigIntVector) column;
    int rows = input.getValueCount();
    BigIntVector result = new BigIntVector("result", allocator);
    result.allocateNew(rows);
    for (int i = 0; i < rows; i++) {
      if (!input.isNull(i)) {
        result.set(i, f.applyAsLong(input.get(i)));
      }
    }
    result.setValueCount(rows);
    return result;
  }
}
