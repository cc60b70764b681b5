package dev.quiver.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The allocation table in a mapped segment's header: the occupied regions, sorted by offset;
 * free space is the gaps between them. First-fit allocate, free by offset
 * (crates/quiver-shm/src/table.rs, python/quiver/shm/table.py). The peer writes this table too,
 * so every operation re-reads and validates it first.
 */
final class AllocationTable {
  private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private final MemorySegment memory;
  private final long sizeBytes;

  AllocationTable(MemorySegment memory) {
    this.memory = memory;
    this.sizeBytes = memory.byteSize();
  }

  /** Throws unless the header is a version-1 VGIS header for this size. */
  void checkHeader() throws ShmException {
    int magic = memory.get(U32, 0);
    int version = memory.get(U32, Layout.VERSION_AT);
    long dataSize = memory.get(U64, Layout.DATA_SIZE_AT);
    if (magic != Layout.MAGIC) {
      throw new ShmException("bad magic 0x" + Integer.toHexString(magic) + ", expected \"VGIS\"");
    }
    if (version != Layout.VERSION) {
      throw new ShmException("unsupported layout version " + version + ", expected " + Layout.VERSION);
    }
    if (dataSize != sizeBytes - Layout.HEADER_BYTES) {
      throw new ShmException("header data_size " + dataSize + " does not match segment size " + sizeBytes);
    }
  }

  /** The validated entries as {offset, length} pairs, sorted by offset. */
  long[] entries() throws ShmException {
    int count = memory.get(U32, Layout.COUNT_AT);
    if (count < 0 || count > Layout.ALLOCATIONS_MAX) {
      throw new ShmException("allocation count " + Integer.toUnsignedString(count) + " exceeds the maximum "
          + Layout.ALLOCATIONS_MAX);
    }
    long[] entries = new long[2 * count];
    long previousEnd = Layout.HEADER_BYTES;
    for (int i = 0; i < count; i++) {
      long offset = memory.get(U64, Layout.ENTRIES_AT + (long) i * Layout.ENTRY_BYTES);
      long length = memory.get(U64, Layout.ENTRIES_AT + (long) i * Layout.ENTRY_BYTES + 8);
      if (length <= 0 || offset < previousEnd || offset > sizeBytes - length) {
        throw new ShmException("corrupt allocation table entry offset=" + Long.toUnsignedString(offset) + " length="
            + Long.toUnsignedString(length));
      }
      entries[2 * i] = offset;
      entries[2 * i + 1] = length;
      previousEnd = offset + length;
    }
    return entries;
  }

  /** Reserves {@code size} bytes at an aligned offset; -1 when nothing fits or the table is unreadable. */
  long allocate(long size) {
    long[] entries;
    try {
      entries = entries();
    } catch (ShmException e) {
      return -1;
    }
    int count = entries.length / 2;
    if (size <= 0 || count >= Layout.ALLOCATIONS_MAX) {
      return -1;
    }
    long previousEnd = Layout.HEADER_BYTES;
    for (int i = 0; i < count; i++) {
      long start = Layout.align(previousEnd);
      if (entries[2 * i] - start >= size) {
        store(insert(entries, i, start, size));
        return start;
      }
      previousEnd = entries[2 * i] + entries[2 * i + 1];
    }
    long start = Layout.align(previousEnd);
    if (sizeBytes - start < size) {
      return -1;
    }
    store(insert(entries, count, start, size));
    return start;
  }

  /** Releases the region that starts at {@code offset}. */
  void free(long offset) throws ShmException {
    long[] entries = entries();
    for (int i = 0; i < entries.length / 2; i++) {
      if (entries[2 * i] == offset) {
        long[] kept = new long[entries.length - 2];
        System.arraycopy(entries, 0, kept, 0, 2 * i);
        System.arraycopy(entries, 2 * i + 2, kept, 2 * i, entries.length - 2 * i - 2);
        store(kept);
        return;
      }
    }
    throw new ShmException("no allocation at offset " + offset);
  }

  /** The allocated length of the region at {@code offset}, or -1 when there is none. */
  long find(long offset) throws ShmException {
    long[] entries = entries();
    for (int i = 0; i < entries.length / 2; i++) {
      if (entries[2 * i] == offset) {
        return entries[2 * i + 1];
      }
    }
    return -1;
  }

  private static long[] insert(long[] entries, int index, long offset, long length) {
    long[] grown = new long[entries.length + 2];
    System.arraycopy(entries, 0, grown, 0, 2 * index);
    grown[2 * index] = offset;
    grown[2 * index + 1] = length;
    System.arraycopy(entries, 2 * index, grown, 2 * index + 2, entries.length - 2 * index);
    return grown;
  }

  /** Writes the entries, then the count, so a reader never sees a count beyond valid entries. */
  private void store(long[] entries) {
    assert entries.length / 2 <= Layout.ALLOCATIONS_MAX;
    for (int i = 0; i < entries.length; i++) {
      memory.set(U64, Layout.ENTRIES_AT + (long) i * 8, entries[i]);
    }
    memory.set(U32, Layout.COUNT_AT, entries.length / 2);
  }
}
