"""Oracle for direction (a): vgi-rpc attaches a segment that quiver created.

argv: NAME SIZE SPEC_JSON where SPEC_JSON = {"table": [[off, len], ...], "raw": [off, len],
"ipc": [off, len], "rows": N}. Checks the allocation table and both regions through vgi_rpc.shm's
own API, frees both regions the way a vgi-rpc reader does, then writes one batch of its own into
the segment with ShmSegment.allocate_and_write and reports where, for quiver to read and free.
Prints one JSON object; exits non-zero (with a traceback) on any mismatch.
"""

import json
import sys

import pyarrow as pa
from vgi_rpc.shm import ShmSegment, make_shm_pointer_batch, resolve_shm_batch

name, size, spec = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.utf8(), nullable=False)])


def expected_batch(rows: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(range(rows), pa.int64()), pa.array([f"row{i}" for i in range(rows)], pa.utf8())],
        schema=SCHEMA,
    )


# track=False: like vgi-rpc's server, a non-owner must not let the resource tracker unlink it.
segment = ShmSegment.attach(name, size, track=False)
allocator = segment.allocator
table = [list(entry) for entry in allocator._read_allocs()]
assert table == spec["table"], f"table {table} != expected {spec['table']}"
assert allocator.num_allocs == len(spec["table"])

raw_offset, raw_len = spec["raw"]
raw = segment.read_buffer(raw_offset, raw_len).to_pybytes()
assert raw == bytes((i * 7 + 3) % 251 for i in range(raw_len)), "raw bytes differ"
del raw

ipc_offset, ipc_len = spec["ipc"]
pointer, pointer_metadata = make_shm_pointer_batch(SCHEMA, ipc_offset, ipc_len)
batch, metadata, release = resolve_shm_batch(pointer, pointer_metadata, segment)
assert batch.equals(expected_batch(spec["rows"])), "decoded batch differs"
assert metadata.get(b"vgi_rpc.shm_source") == name.encode()
del batch
release()  # the reader frees
segment.free(raw_offset)
assert allocator.num_allocs == 0, f"table not empty: {allocator._read_allocs()}"

# vgi-rpc now allocates in our segment: quiver reads and frees it.
written = segment.allocate_and_write(expected_batch(spec["rows"]))
assert written is not None, "vgi-rpc could not allocate in quiver's segment"
table_after = [list(entry) for entry in allocator._read_allocs()]
segment.close()
print(json.dumps({"ok": True, "written": list(written), "table": table_after}))
