package dev.quiver.rpc;

/** How a method answers: one result, or a stream driven by client ticks or client batches. */
public enum MethodKind {
  UNARY,
  PRODUCER,
  EXCHANGE;

  public boolean isStream() {
    return this != UNARY;
  }
}
