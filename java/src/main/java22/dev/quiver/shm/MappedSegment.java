package dev.quiver.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;

/**
 * A client's segment mapped into this process with {@code java.lang.foreign}. Accesses through
 * {@link #memory} are bounds-checked and fail once the segment is closed; a claimed region is an
 * {@link ArrowBuf} over the mapping itself (Arrow Java reads raw addresses), so the mapping stays
 * until the last claim is released.
 */
final class MappedSegment implements Segment {
  private final String name;
  private final int fd;
  private final MemorySegment address;
  private final Arena arena = Arena.ofShared();
  private final MemorySegment memory;
  private final AllocationTable table;
  /** Regions whose claims were released, freed at the next {@link #collect()}. */
  private final ArrayDeque<Long> released = new ArrayDeque<>();
  private int liveClaims;
  private boolean closed;

  private MappedSegment(String name, int fd, MemorySegment address, long size) {
    this.name = name;
    this.fd = fd;
    this.address = address;
    this.memory = address.reinterpret(size, arena, null);
    this.table = new AllocationTable(memory);
  }

  static MappedSegment attach(String name) throws ShmException {
    Layout.checkName(name);
    Path path = Posix.SHM_DIRECTORY.resolve(name);
    long size;
    try {
      size = Files.size(path);
    } catch (IOException e) {
      throw new ShmException("cannot open shared memory '" + name + "': " + e);
    }
    Layout.checkSize(size);
    int fd = Posix.open(path);
    if (fd < 0) {
      throw new ShmException("cannot open shared memory '" + name + "'");
    }
    MemorySegment address = Posix.map(fd, size);
    if (address == null) {
      Posix.close(fd);
      throw new ShmException("cannot map shared memory '" + name + "' (" + size + " bytes)");
    }
    MappedSegment segment = new MappedSegment(name, fd, address, size);
    try {
      segment.table.checkHeader();
    } catch (ShmException e) {
      segment.close();
      throw e;
    }
    return segment;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public long sizeBytes() {
    return memory.byteSize();
  }

  @Override
  public int allocationCount() {
    try {
      return table.entries().length / 2;
    } catch (ShmException e) {
      return 0;
    }
  }

  @Override
  public long allocate(long size) {
    if (closed) {
      return -1;
    }
    long offset = table.allocate(size);
    if (offset < 0) {
      return -1;
    }
    if (!Posix.commit(fd, offset, size)) {
      try {
        table.free(offset);
      } catch (ShmException e) {
        throw new IllegalStateException("a region just allocated cannot be freed: " + e.getMessage(), e);
      }
      return -1;
    }
    return offset;
  }

  @Override
  public java.nio.ByteBuffer writable(long offset, int length) throws ShmException {
    checkBounds(offset, length);
    return memory.asSlice(offset, length).asByteBuffer();
  }

  @Override
  public ArrowBuf claim(long offset, long length, BufferAllocator allocator) throws ShmException {
    checkBounds(offset, length);
    long allocated = table.find(offset);
    if (allocated < length || length <= 0) {
      throw new ShmException("no allocated region of " + length + " bytes at offset " + offset);
    }
    liveClaims++;
    return allocator.wrapForeignAllocation(new ForeignAllocation(length, address.address() + offset) {
      @Override
      protected void release0() {
        liveClaims--;
        released.add(offset);
      }
    });
  }

  @Override
  public int collect() {
    int count = 0;
    while (!released.isEmpty()) {
      long offset = released.poll();
      if (!closed) {
        try {
          table.free(offset);
        } catch (ShmException e) {
          // The peer rewrote the table under us; the region is lost to this side, not corrupted.
          System.err.println("[quiver-shm] cannot free offset " + offset + " in " + name + ": " + e.getMessage());
        }
      }
      count++;
    }
    return count;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    collect();
    closed = true;
    arena.close();
    if (liveClaims == 0) {
      Posix.unmap(address, memory.byteSize());
    }
    Posix.close(fd);
  }

  private void checkBounds(long offset, long length) throws ShmException {
    if (closed) {
      throw new ShmException("segment " + name + " is closed");
    }
    if (offset < Layout.HEADER_BYTES || length < 0 || offset > memory.byteSize() - length) {
      throw new ShmException("region offset=" + offset + " length=" + length + " lies outside segment " + name);
    }
  }
}
