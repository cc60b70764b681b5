package dev.quiver.shm;

/**
 * Attaching a segment: this is the JDK 17 class, where mapping memory from another process needs
 * what JDK 17 does not have. The jar's {@code META-INF/versions/22} holds the class that does it
 * with {@code java.lang.foreign}.
 */
public final class SharedMemory {
  private SharedMemory() {}

  /** Whether this JVM can attach a segment. */
  public static boolean available() {
    return false;
  }

  public static Segment attach(String name) throws ShmException {
    throw new ShmException("shared memory needs JDK 22 or newer (java.lang.foreign); this is "
        + Runtime.version());
  }
}
