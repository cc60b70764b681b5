package dev.quiver.shm;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;

/**
 * A mapped segment in the {@code VGIS} layout, attached by this side (the client owns and
 * unlinks it). Whoever writes a region allocates it; whoever reads it frees it. The lockstep
 * protocol means only the side whose turn it is touches the table, so no lock is taken; the table
 * is written by another process, so every operation re-reads and validates it.
 */
public interface Segment extends AutoCloseable {
  String name();

  long sizeBytes();

  /** Bytes available for regions. */
  default long dataSizeBytes() {
    return sizeBytes() - Layout.HEADER_BYTES;
  }

  /** How many regions are allocated now (0 when the table is unreadable). */
  int allocationCount();

  /** Reserves {@code size} bytes and commits their pages; -1 when they do not fit (the caller goes inline). */
  long allocate(long size);

  /** A buffer over {@code length} bytes of the region at {@code offset}, for writing it in place. */
  java.nio.ByteBuffer writable(long offset, int length) throws ShmException;

  /**
   * A buffer over the region the peer wrote at {@code offset}, without a copy. Once its last
   * reference is released the region is queued for freeing; {@link #collect()} frees it, when it
   * is this side's turn.
   */
  ArrowBuf claim(long offset, long length, BufferAllocator allocator) throws ShmException;

  /** Frees the regions whose claims were released; returns how many. */
  int collect();

  /** Unmaps the segment (left mapped while a claim is alive, so no buffer dangles). */
  @Override
  void close();
}
