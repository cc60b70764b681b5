"""Oracle for direction (b): vgi-rpc creates and owns a segment that quiver attaches.

argv: SIZE ROWS. Creates a segment with ShmSegment.create, writes one batch with
allocate_and_write and one raw region with the allocator, and prints
{"name", "size", "batch": [off, len], "raw": [off, len], "table": [[off, len], ...]}.
Then serves commands from stdin, one per line, answering each with one JSON line:
  resolve OFF LEN  -> decode quiver's IPC stream at OFF via resolve_shm_batch, check, release
  table            -> the current allocation table
  quit             -> close and unlink the segment, exit
"""

import json
import sys

import pyarrow as pa
from vgi_rpc.shm import ShmSegment, make_shm_pointer_batch, resolve_shm_batch

size, rows = int(sys.argv[1]), int(sys.argv[2])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.utf8(), nullable=False)])
BATCH = pa.RecordBatch.from_arrays(
    [pa.array(range(rows), pa.int64()), pa.array([f"row{i}" for i in range(rows)], pa.utf8())],
    schema=SCHEMA,
)


def reply(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def table(segment: ShmSegment) -> list:
    return [list(entry) for entry in segment.allocator._read_allocs()]


segment = ShmSegment.create(size)
batch_at = segment.allocate_and_write(BATCH)
assert batch_at is not None
raw_len = 1000
raw_offset = segment.allocator.allocate(raw_len)
assert raw_offset is not None
segment.buf[raw_offset : raw_offset + raw_len] = bytes((i * 7 + 3) % 251 for i in range(raw_len))
reply(
    {
        "name": segment.name,
        "size": segment.size,
        "batch": list(batch_at),
        "raw": [raw_offset, raw_len],
        "table": table(segment),
    }
)

try:
    for line in sys.stdin:
        command = line.split()
        if command[0] == "resolve":
            offset, length = int(command[1]), int(command[2])
            pointer, pointer_metadata = make_shm_pointer_batch(SCHEMA, offset, length)
            batch, _, release = resolve_shm_batch(pointer, pointer_metadata, segment)
            equal = batch.equals(BATCH)
            del batch
            release()
            reply({"equal": equal, "table": table(segment)})
        elif command[0] == "table":
            reply({"table": table(segment)})
        elif command[0] == "quit":
            break
finally:
    segment.unlink()
    segment.close()
reply({"unlinked": segment.name})
