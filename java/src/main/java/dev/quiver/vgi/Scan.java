package dev.quiver.vgi;

/** What a table function's scan sees: its share of the execution's work. */
public final class Scan {
  /** A claimed range of units, {@code [start, end)}. */
  public record Range(long start, long end) {
    public Range {
      if (start < 0 || end <= start) {
        throw new IllegalArgumentException("empty or negative range " + start + ".." + end);
      }
    }

    public int size() {
      return Math.toIntExact(end - start);
    }
  }

  private final Executions.Counter counter;
  final Args args;
  private final byte[] split;
  long rows;

  Scan(Executions.Counter counter, Args args, byte[] split) {
    this.counter = counter;
    this.args = args;
    this.split = split;
  }

  /** The payload of the split this connection reads (a split-planned scan), or null. */
  public byte[] split() {
    return split == null ? null : split.clone();
  }

  public Args args() {
    return args;
  }

  /** The next range of at most {@code units} units, or null when the execution's work is done. */
  public Range claim(long units) {
    return counter == null ? null : counter.claim(units);
  }
}
