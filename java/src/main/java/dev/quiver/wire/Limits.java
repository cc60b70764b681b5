package dev.quiver.wire;

/**
 * Bounds on everything a peer can make us allocate: a message announcing more than a limit
 * allows is refused before its body is read (the same defaults as python/quiver/wire/limits.py).
 */
public record Limits(long metadataBytesMax, long bodyBytesMax, long messagesPerStreamMax) {
  public static final Limits DEFAULT = new Limits(16L << 20, 4L << 30, 1L << 24);

  public Limits {
    if (metadataBytesMax <= 0 || bodyBytesMax <= 0 || messagesPerStreamMax <= 0) {
      throw new IllegalArgumentException("limits must be positive");
    }
  }
}
