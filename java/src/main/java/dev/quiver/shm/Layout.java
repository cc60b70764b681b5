package dev.quiver.shm;

/**
 * The segment's byte layout, shared with vgi-rpc 0.52.2 and quiver's Rust and Python spines
 * (crates/quiver-shm/src/layout.rs, python/quiver/shm/layout.py). Little-endian; offsets are
 * absolute. These numbers are a wire format: changing any of them breaks every peer.
 *
 * <pre>
 * offset  size     field
 * 0       4        magic "VGIS"
 * 4       4        version: u32 = 1
 * 8       8        data_size: u64 = segment size - HEADER_BYTES
 * 16      4        allocation count: u32
 * 20      4        padding (zero)
 * 24      16 * n   allocations: (offset: u64, length: u64), sorted by offset
 * 65536   ...      data area
 * </pre>
 */
public final class Layout {
  private Layout() {}

  public static final int HEADER_BYTES = 65536;
  /** "VGIS" read as a little-endian u32. */
  public static final int MAGIC = 'V' | 'G' << 8 | 'I' << 16 | 'S' << 24;
  public static final int VERSION = 1;
  public static final int VERSION_AT = 4;
  public static final int DATA_SIZE_AT = 8;
  public static final int COUNT_AT = 16;
  public static final int ENTRIES_AT = 24;
  public static final int ENTRY_BYTES = 16;
  /** Most allocations the header can describe at once (4094). */
  public static final int ALLOCATIONS_MAX = (HEADER_BYTES - ENTRIES_AT) / ENTRY_BYTES;
  /** Alignment of the offsets this side hands out, so buffers read in place are aligned. */
  public static final int ALIGNMENT = 64;
  /** Largest segment attached; beyond this a size is more likely a typo than a plan. */
  public static final long SEGMENT_BYTES_MAX = 64L << 30;
  /** Longest segment name accepted (NAME_MAX). */
  public static final int NAME_LENGTH_MAX = 255;

  static {
    assert ALLOCATIONS_MAX == 4094;
  }

  /** Rounds {@code value} up to {@link #ALIGNMENT}. */
  public static long align(long value) {
    return (value + ALIGNMENT - 1) & -(long) ALIGNMENT;
  }

  /** Throws unless {@code name} can name a POSIX shared-memory object (advertised without its slash). */
  public static void checkName(String name) throws ShmException {
    if (name.isEmpty() || name.length() > NAME_LENGTH_MAX || name.contains("/") || name.indexOf('\0') >= 0
        || name.equals(".") || name.equals("..")) {
      throw new ShmException("invalid shared-memory name '" + name + "'");
    }
  }

  /** Throws unless a segment of {@code sizeBytes} has a data area and is within the limit. */
  public static void checkSize(long sizeBytes) throws ShmException {
    if (sizeBytes <= HEADER_BYTES || sizeBytes > SEGMENT_BYTES_MAX) {
      throw new ShmException("segment size " + sizeBytes + " must exceed " + HEADER_BYTES + " and be at most "
          + SEGMENT_BYTES_MAX);
    }
  }
}
