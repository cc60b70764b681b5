package dev.quiver.shm;

/**
 * Attaching a segment on JDK 22+, through {@code java.lang.foreign} ({@link Posix}); the JDK 17
 * class of the same name declines. The launcher passes {@code --enable-native-access=ALL-UNNAMED}.
 */
public final class SharedMemory {
  private SharedMemory() {}

  /** Whether this JVM can attach a segment: POSIX shared memory lives under /dev/shm on Linux. */
  public static boolean available() {
    return Posix.SHM_DIRECTORY.toFile().isDirectory();
  }

  public static Segment attach(String name) throws ShmException {
    return MappedSegment.attach(name);
  }
}
