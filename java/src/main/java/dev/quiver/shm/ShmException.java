package dev.quiver.shm;

/** A segment cannot be attached or used; the message says why. */
public final class ShmException extends Exception {
  public ShmException(String message) {
    super(message);
  }
}
