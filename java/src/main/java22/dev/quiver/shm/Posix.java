package dev.quiver.shm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * The few libc calls a segment needs, bound with the FFM linker: open the object under /dev/shm
 * (where glibc's shm_open puts it), map it shared, commit a region's pages before it is written
 * (a full /dev/shm then fails the allocation instead of raising SIGBUS on the first write, as
 * crates/quiver-shm/src/mapping.rs does), unmap and close.
 */
final class Posix {
  private Posix() {}

  static final Path SHM_DIRECTORY = Path.of("/dev/shm");
  private static final int O_RDWR = 2;
  private static final int PROT_READ_WRITE = 1 | 2;
  private static final int MAP_SHARED = 1;
  private static final long MAP_FAILED = -1L;

  private static final Linker LINKER = Linker.nativeLinker();
  private static final SymbolLookup LIBC = LINKER.defaultLookup();
  private static final MethodHandle OPEN = bind("open",
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
      Linker.Option.firstVariadicArg(2));
  private static final MethodHandle CLOSE = bind("close",
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
  private static final MethodHandle MMAP = bind("mmap", FunctionDescriptor.of(ValueLayout.ADDRESS,
      ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
      ValueLayout.JAVA_LONG));
  private static final MethodHandle MUNMAP = bind("munmap",
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
  private static final MethodHandle FALLOCATE = bind("posix_fallocate",
      FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));

  private static MethodHandle bind(String name, FunctionDescriptor descriptor, Linker.Option... options) {
    MemorySegment symbol = LIBC.find(name).orElseThrow(() -> new IllegalStateException("libc has no " + name));
    return LINKER.downcallHandle(symbol, descriptor, options);
  }

  /** Opens {@code path} read-write; a negative result means it could not be opened. */
  static int open(Path path) {
    try (Arena arena = Arena.ofConfined()) {
      return (int) OPEN.invokeExact(arena.allocateFrom(path.toString()), O_RDWR, 0);
    } catch (Throwable e) {
      throw new IllegalStateException("open(" + path + ") failed in the linker", e);
    }
  }

  static void close(int fd) {
    try {
      int ignored = (int) CLOSE.invokeExact(fd);
    } catch (Throwable e) {
      throw new IllegalStateException("close failed in the linker", e);
    }
  }

  /** Maps {@code size} bytes of {@code fd} shared; the raw address, or null when mmap failed. */
  static MemorySegment map(int fd, long size) {
    try {
      MemorySegment address = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, size, PROT_READ_WRITE, MAP_SHARED,
          fd, 0L);
      return address.address() == MAP_FAILED ? null : address;
    } catch (Throwable e) {
      throw new IllegalStateException("mmap failed in the linker", e);
    }
  }

  static void unmap(MemorySegment address, long size) {
    try {
      int ignored = (int) MUNMAP.invokeExact(address, size);
    } catch (Throwable e) {
      throw new IllegalStateException("munmap failed in the linker", e);
    }
  }

  /** Backs {@code size} bytes at {@code offset} with pages now; false when /dev/shm cannot. */
  static boolean commit(int fd, long offset, long size) {
    try {
      return (int) FALLOCATE.invokeExact(fd, offset, size) == 0;
    } catch (Throwable e) {
      throw new IllegalStateException("posix_fallocate failed in the linker", e);
    }
  }
}
