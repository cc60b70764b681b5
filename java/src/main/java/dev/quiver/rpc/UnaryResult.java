package dev.quiver.rpc;

import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;

/**
 * A unary method's one-row {@code result} column and the dictionaries it refers to (null when
 * not dictionary-encoded). The session owns and closes the vector once written.
 */
public record UnaryResult(FieldVector vector, DictionaryProvider dictionaries) {
  public UnaryResult {
    if (vector.getValueCount() != 1) {
      throw new IllegalArgumentException("a unary result holds exactly one row, got " + vector.getValueCount());
    }
  }

  public static UnaryResult of(FieldVector vector) {
    return new UnaryResult(vector, null);
  }
}
