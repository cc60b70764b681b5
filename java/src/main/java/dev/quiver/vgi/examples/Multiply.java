package dev.quiver.vgi.examples;

import dev.quiver.vgi.Arg;
import dev.quiver.vgi.Worker;
import dev.quiver.wire.ErrorCode;
import dev.quiver.wire.ErrorReport;
import dev.quiver.wire.RpcError;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;

/**
 * {@code multiply(value BIGINT, factor BIGINT) -> BIGINT}, with the Rust worker's meaning
 * (crates/quiver-allinone/src/multiply.rs): the product, NULL when either side is NULL, an error on
 * overflow as DuckDB's own {@code *} on BIGINT raises one.
 *
 * <p>The products are taken over every slot in one pass straight on the buffers (wrapping, the
 * overflow flags OR-ed together), and the validity is the bytewise AND of the inputs'; only when a
 * flag is set are the rows looked at one by one, to tell an overflow in a valid row (the error)
 * from garbage under a NULL (ignored).
 */
final class Multiply {
  private Multiply() {}

  static final String DESCRIPTION =
      "Multiplies two BIGINTs; NULL when either is NULL; an error on overflow, as DuckDB's own * on BIGINT.";

  static void declare(Worker worker) {
    worker.scalar("multiply", AllInOne.INT64)
        .doc(DESCRIPTION)
        .arg(Arg.of("value", AllInOne.INT64).doc("The number to multiply"))
        .arg(Arg.of("factor", AllInOne.INT64).doc("The factor"))
        .body(Multiply::product)
        .comment("Multiplies two integers, as DuckDB's * does")
        .tag("vgi.category", "math")
        .category("math")
        .example("SELECT allinone.main.multiply(21, 2)", "21 times 2: 42");
  }

  static FieldVector product(List<FieldVector> columns, int rows, BufferAllocator allocator) {
    BigIntVector value = (BigIntVector) columns.get(0);
    BigIntVector factor = (BigIntVector) columns.get(1);
    BigIntVector result = new BigIntVector("result", allocator);
    try {
      result.allocateNew(rows);
      ArrowBuf a = value.getDataBuffer();
      ArrowBuf b = factor.getDataBuffer();
      ArrowBuf out = result.getDataBuffer();
      boolean overflow = false;
      for (int i = 0; i < rows; i++) {
        long x = a.getLong((long) i * BigIntVector.TYPE_WIDTH);
        long y = b.getLong((long) i * BigIntVector.TYPE_WIDTH);
        long p = x * y;
        overflow |= Math.multiplyHigh(x, y) != (p >> 63);
        out.setLong((long) i * BigIntVector.TYPE_WIDTH, p);
      }
      ArrowBuf valid = result.getValidityBuffer();
      ArrowBuf validA = value.getValidityBuffer();
      ArrowBuf validB = factor.getValidityBuffer();
      for (int i = 0; i < (rows + 7) / 8; i++) {
        valid.setByte(i, validA.getByte(i) & validB.getByte(i));
      }
      result.setValueCount(rows);
      if (overflow) {
        check(value, factor, result, rows);
      }
      return result;
    } catch (RuntimeException e) {
      result.close();
      throw e;
    }
  }

  /** The error for the first valid row whose product overflows, if any. */
  private static void check(BigIntVector value, BigIntVector factor, BigIntVector result, int rows) {
    for (int i = 0; i < rows; i++) {
      if (!result.isNull(i)) {
        long x = value.get(i);
        long y = factor.get(i);
        try {
          Math.multiplyExact(x, y);
        } catch (ArithmeticException e) {
          throw new RpcError(new ErrorReport("InvalidArgumentError",
              "multiply(): BIGINT overflow (" + x + " * " + y + ")", ErrorCode.INVALID_ARGUMENT, null, null, null));
        }
      }
    }
  }
}
