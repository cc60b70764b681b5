"""The on-segment byte layout shared with vgi-rpc 0.52.2 and quiver's Rust spine.

::

    offset  size     field
    0       4        magic "VGIS"
    4       4        version: u32 = 1
    8       8        data_size: u64 = segment size - HEADER_BYTES
    16      4        allocation count: u32
    20      4        padding (zero)
    24      16 * n   allocations: (offset: u64, length: u64), sorted by offset
    65536   ...      data area

Little-endian; offsets are absolute (from byte 0 of the segment). These numbers are a
wire format: changing any of them breaks every peer.
"""

HEADER_BYTES = 65536
MAGIC = b"VGIS"
VERSION = 1

VERSION_AT = 4
DATA_SIZE_AT = 8
COUNT_AT = 16
ENTRIES_AT = 24
ENTRY_BYTES = 16

ALLOCATIONS_MAX = (HEADER_BYTES - ENTRIES_AT) // ENTRY_BYTES
"""Most allocations the header can describe at once (4094)."""

ALIGNMENT = 64
"""Alignment of the offsets quiver hands out, so buffers decoded in place are aligned.
Peers only rely on the table being sorted and non-overlapping."""

SEGMENT_BYTES_MAX = 64 << 30
"""Largest segment created or attached; beyond this a size is more likely a typo than a plan."""

assert ALLOCATIONS_MAX == 4094
