package dev.quiver.rpc;

import dev.quiver.wire.RpcError;
import java.nio.charset.StandardCharsets;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * A request's parameters: one row, one column per parameter, already checked against the
 * method's declaration. Valid while the method body runs.
 */
public final class Params {
  private final String method;
  private final Schema schema;
  private final org.apache.arrow.vector.VectorSchemaRoot root;
  private final DictionaryProvider dictionaries;

  Params(String method, Schema schema, org.apache.arrow.vector.VectorSchemaRoot root, DictionaryProvider dictionaries) {
    this.method = method;
    this.schema = schema;
    this.root = root;
    this.dictionaries = dictionaries;
  }

  /** The parameter's column (dictionary indices where encoded). */
  public FieldVector column(String name) {
    FieldVector vector = root.getVector(name);
    if (vector == null) {
      throw new RpcError("TypeError", method + "() has no parameter '" + name + "'");
    }
    return vector;
  }

  /** The parameter's field as sent (a dictionary-encoded field carries its value type). */
  public Field field(String name) {
    return schema.findField(name);
  }

  public DictionaryProvider dictionaries() {
    return dictionaries;
  }

  public boolean isNull(String name) {
    return column(name).isNull(0);
  }

  public String string(String name) {
    return new String(((VarCharVector) column(name)).get(0), StandardCharsets.UTF_8);
  }

  public byte[] bytes(String name) {
    return ((VarBinaryVector) column(name)).get(0);
  }

  public long int64(String name) {
    return ((BigIntVector) column(name)).get(0);
  }

  public double float64(String name) {
    return ((Float8Vector) column(name)).get(0);
  }

  public boolean bool(String name) {
    return ((BitVector) column(name)).get(0) != 0;
  }
}
