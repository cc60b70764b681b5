"""Writes small valid IPC streams into fuzz/seeds/ for the fuzz targets' corpora.

Run with a Python that has pyarrow (the oracle's, or /tmp/vgi313/bin/python):
    python fuzz/gen_seeds.py
Streams carry per-batch custom metadata (the vgi-rpc v1 keys), dictionaries
(including deltas), strings, nested lists/structs/maps/unions, run-end and view
types, zero-row and zero-column batches, the legacy (pre-0.15) framing, and two
streams back to back as a request and its input are.
"""

import io
import pathlib

import pyarrow as pa
import pyarrow.ipc as ipc

OUT = pathlib.Path(__file__).resolve().parent / "seeds"


def stream(schema, batches, **options):
    sink = io.BytesIO()
    with ipc.new_stream(sink, schema, options=ipc.IpcWriteOptions(**options)) as writer:
        for batch, metadata in batches:
            writer.write_batch(batch, custom_metadata=metadata)
    return sink.getvalue()


def write(name, data):
    (OUT / f"{name}.arrows").write_bytes(data)


def main():
    OUT.mkdir(exist_ok=True)
    request = {
        "vgi_rpc.method": "add",
        "vgi_rpc.request_version": "1",
        "vgi_rpc.protocol": "Test",
        "vgi_rpc.protocol_version": "1.0.0",
        "vgi_rpc.request_id": "r1",
    }

    # A unary request: one row of parameters with the request keys.
    params = pa.record_batch({"a": pa.array([1.5]), "b": pa.array([2.0])})
    write("request_add", stream(params.schema, [(params, request)]))

    # Strings, binary, booleans and nulls, plus a zero-row log and error batch.
    schema = pa.schema([("s", pa.string()), ("b", pa.binary()), ("t", pa.bool_()), ("i", pa.int32())])
    data = pa.record_batch(
        [
            pa.array(["x", None, "zzz"]),
            pa.array([b"\x00", b"", None]),
            pa.array([True, None, False]),
            pa.array([1, None, 3], pa.int32()),
        ],
        schema=schema,
    )
    log = {"vgi_rpc.log_level": "INFO", "vgi_rpc.log_message": "hello", "vgi_rpc.log_extra": '{"k": 1}'}
    error = {
        "vgi_rpc.log_level": "EXCEPTION",
        "vgi_rpc.log_message": "ValueError: boom",
        "vgi_rpc.log_extra": '{"exception_type": "ValueError", "error_code": "INVALID_ARGUMENT",'
        ' "error_details": [{"a": 1}]}',
        "vgi_rpc.error_code": "INVALID_ARGUMENT",
        "vgi_rpc.server_id": "s1",
    }
    write("strings_logs", stream(schema, [(data, None), (data.slice(0, 0), log), (data.slice(0, 0), error)]))

    # Dictionaries: the same dictionary twice, then a delta.
    dict_type = pa.dictionary(pa.int8(), pa.string())
    first = pa.record_batch(
        {"d": pa.DictionaryArray.from_arrays(pa.array([0, 1, None], pa.int8()), pa.array(["a", "b"]))}
    )
    second = pa.record_batch(
        {"d": pa.DictionaryArray.from_arrays(pa.array([2, 0], pa.int8()), pa.array(["a", "b", "c"]))}
    )
    assert first.schema.field("d").type == dict_type
    write(
        "dictionary_delta",
        stream(first.schema, [(first, {"n": "1"}), (second, {"n": "2"})], emit_dictionary_deltas=True),
    )
    write(
        "dictionary_replace",
        stream(
            first.schema,
            [
                (first, None),
                (
                    pa.record_batch({"d": pa.DictionaryArray.from_arrays(pa.array([0], pa.int8()), pa.array(["q"]))}),
                    None,
                ),
            ],
        ),
    )

    # Nested: list<struct<x: int64, y: list<string>>>, map, fixed-size list, struct with nulls.
    inner = pa.struct([("x", pa.int64()), ("y", pa.list_(pa.string()))])
    nested = pa.record_batch(
        {
            "l": pa.array([[{"x": 1, "y": ["a"]}, None], [], None], pa.list_(inner)),
            "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int32())),
            "f": pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int16(), 2)),
            "s": pa.array([{"p": 1.0}, None, {"p": None}], pa.struct([("p", pa.float64())])),
        }
    )
    write("nested", stream(nested.schema, [(nested, {"vgi_rpc.method": "nested"}), (nested.slice(1, 1), None)]))

    # Unions, decimals, temporal types, run-end encoded and view types, large offsets.
    sparse = pa.UnionArray.from_sparse(pa.array([0, 1, 0], pa.int8()), [pa.array([1, 2, 3]), pa.array(["a", "b", "c"])])
    dense = pa.UnionArray.from_dense(
        pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()), [pa.array([7]), pa.array([1.5])]
    )
    write("unions", stream(pa.schema([("u", sparse.type)]), [(pa.record_batch({"u": sparse}), None)]))
    write("dense_union", stream(pa.schema([("u", dense.type)]), [(pa.record_batch({"u": dense}), None)]))
    misc = pa.record_batch(
        {
            "dec": pa.array([1, None], pa.decimal128(10, 2)),
            "ts": pa.array([1, 2], pa.timestamp("us", tz="UTC")),
            "dt": pa.array([1, None], pa.date32()),
            "ls": pa.array(["big", None], pa.large_string()),
            "sv": pa.array(["short", "a string longer than twelve bytes"], pa.string_view()),
            "lv": pa.array([[1], None], pa.list_view(pa.int32())),
            "ree": pa.RunEndEncodedArray.from_arrays(pa.array([2], pa.int32()), pa.array(["r"])),
            "n": pa.nulls(2),
        }
    )
    write("misc_types", stream(misc.schema, [(misc, {"k": "v"})]))

    # Zero columns (the empty schema of protocol replies and producer ticks), zero rows.
    empty = pa.record_batch([], schema=pa.schema([]))
    tick = stream(empty.schema, [(empty, None)])
    cancel = stream(empty.schema, [(empty, {"vgi_rpc.cancel": "1"})])
    write("empty_schema_tick", tick)
    write("empty_schema_no_batches", stream(empty.schema, []))
    write(
        "shm_pointer",
        stream(params.schema, [(params.slice(0, 0), {"vgi_rpc.shm_offset": "4096", "vgi_rpc.shm_length": "512"})]),
    )

    # Back to back: a stream request, then its input stream with ticks and a cancel.
    write(
        "back_to_back", stream(params.schema, [(params, dict(request, **{"vgi_rpc.method": "count"}))]) + tick + cancel
    )

    # Legacy framing (no continuation marker) and metadata version V4.
    write("legacy_framing", stream(params.schema, [(params, request)], use_legacy_format=True))
    # A compressed body, which quiver-wire (arrow-ipc without codecs) must refuse cleanly.
    write("compressed_lz4", stream(data.schema, [(data, None)], compression="lz4"))
    write("metadata_v4", stream(data.schema, [(data, {"v": "4"})], metadata_version=ipc.MetadataVersion.V4))


if __name__ == "__main__":
    main()
