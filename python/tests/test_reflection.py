"""vgi_rpc.Reflection.v1 on every server, the protocol hash, and conformance.Secondary.v1."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import pyarrow as pa
import pytest

from quiver import RpcError, Server, connect, spawn
from quiver.conformance import make_server
from quiver.conformance.secondary import (
    ECHO_PREFIX,
    FAIL_ERROR_INFO,
    OVERSIZED_KIND,
    PROBE_DETAIL,
    SECONDARY_PROTOCOL,
    STATUS_CODES,
    Secondary,
)
from quiver.rpc import ArrowType
from quiver.rpc.method import MethodKind, protocol_spec
from quiver.rpc.protocol_hash import UnsupportedArrowTypeError, canonical_json, protocol_hash, type_token
from quiver.rpc.reflection import REFLECTION_PROTOCOL, Reflection, ServiceDescription
from quiver.shm import ShmConfig

from .conftest import REPO

# Read off vgi-rpc 0.52.2's reference conformance worker (`vgi-rpc-conformance --describe`)
# through its own client: the hash is defined to be equal in every port for one protocol.
REFERENCE_HASHES = {
    "ConformanceService": "05479410c96f34410a2b10a4f6a49d59dcfd9d6d1d45ce9a9807d060a3bd6014",
    SECONDARY_PROTOCOL: "58557cf1611546ad22d1c379bc3ce1b04166082f78375e9fc959f0086347eab6",
    REFLECTION_PROTOCOL: "3c7db4cae8cdfc93dc4a76e73b8b759e18e45e6a5811adba4e520366344b919a",
}


@pytest.fixture
def server() -> Server:
    server = make_server()
    server.shm = ShmConfig()
    return server


@pytest.fixture
def reflection(server: Server) -> Iterator[Any]:
    client = connect(Reflection, server.in_process(), shm=ShmConfig())
    yield client.api
    client.close()


def test_every_server_hosts_reflection_last(server: Server) -> None:
    assert list(server.protocols) == ["ConformanceService", SECONDARY_PROTOCOL, REFLECTION_PROTOCOL]
    assert list(Server().protocols) == [REFLECTION_PROTOCOL]


def test_list_protocols_names_versions_and_hashes(reflection: Any, server: Server) -> None:
    listing = reflection.list_protocols()
    assert listing.server_id == server.server_id
    assert listing.request_version == "1"
    assert [(p.protocol, p.protocol_version) for p in listing.protocols] == [
        ("ConformanceService", "2.0.0"),
        (SECONDARY_PROTOCOL, ""),
        (REFLECTION_PROTOCOL, ""),
    ]
    assert {p.protocol: p.protocol_hash for p in listing.protocols} == REFERENCE_HASHES
    assert all(p.features == [] and not p.deprecated for p in listing.protocols)


def test_describe_carries_every_method_schema(reflection: Any) -> None:
    described = reflection.describe("ConformanceService")
    assert isinstance(described, ServiceDescription)
    assert described.protocol_hash == REFERENCE_HASHES["ConformanceService"]
    names = [method.name for method in described.methods]
    assert names == sorted(names) and len(names) == 90
    by_name = {method.name: method for method in described.methods}

    void = by_name["void_noop"]
    assert (void.method_type, void.has_return, void.result_schema_ipc) == ("unary", False, b"")
    decimal = by_name["echo_decimal"]
    assert pa.ipc.read_schema(pa.py_buffer(decimal.params_schema_ipc)).field("value").type == pa.decimal128(20, 4)
    assert pa.ipc.read_schema(pa.py_buffer(decimal.result_schema_ipc)).names == ["result"]
    producer = by_name["produce_with_header"]
    assert (producer.method_type, producer.stream_kind, producer.has_header) == ("stream", "producer", True)
    assert pa.ipc.read_schema(pa.py_buffer(producer.header_schema_ipc)).names == ["total_expected", "description"]
    assert by_name["exchange_scale"].stream_kind == "exchange"
    assert by_name["exchange_scale"].header_schema_ipc == b""


def test_describe_an_unhosted_protocol_is_a_typed_error_and_the_connection_survives(reflection: Any) -> None:
    with pytest.raises(RpcError) as refused:
        reflection.describe("Nope")
    assert refused.value.error_type == "ProtocolNotSupportedError"
    assert (refused.value.error_code, refused.value.error_kind) == ("UNIMPLEMENTED", "protocol_not_supported")
    assert "does not host protocol 'Nope'" in refused.value.error_message
    assert reflection.describe(REFLECTION_PROTOCOL).protocol_hash == REFERENCE_HASHES[REFLECTION_PROTOCOL]


@pytest.mark.parametrize(
    ("dtype", "token"),
    [
        (pa.int8(), "int8"),
        (pa.uint64(), "uint64"),
        (pa.string(), "utf8"),
        (pa.large_binary(), "large_binary"),
        (pa.binary(8), "fixed_size_binary(8)"),
        (pa.decimal128(20, 4), "decimal128(20,4)"),
        (pa.timestamp("us", tz="UTC"), "timestamp(us,tz=UTC)"),
        (pa.timestamp("ns"), "timestamp(ns)"),
        (pa.time64("us"), "time64(us)"),
        (pa.duration("us"), "duration(us)"),
        (pa.list_(pa.field("element", pa.string(), nullable=False)), "list<item:utf8>"),
        (pa.map_(pa.string(), pa.int64()), "map<key:utf8,value?:int64>"),
        (pa.struct([("a", pa.int32()), pa.field("b", pa.string(), nullable=False)]), "struct<a?:int32,b:utf8>"),
        (pa.dictionary(pa.int16(), pa.string()), "dictionary<index:int16,value:utf8>"),
    ],
)
def test_type_tokens(dtype: pa.DataType, token: str) -> None:
    assert type_token(dtype) == token


def test_the_preimage_holds_no_numbers_and_unknown_types_are_refused() -> None:
    assert canonical_json({"b": [True, "x"], "a": None}) == b'{"a":null,"b":[true,"x"]}'
    with pytest.raises(TypeError):
        canonical_json({"n": 1})
    with pytest.raises(UnsupportedArrowTypeError):
        type_token(pa.decimal32(5, 2))  # no port has agreed a token for it yet


def test_the_hash_moves_with_the_wire_surface() -> None:
    class One:
        def f(self, value: int) -> int: ...

    class Narrower:
        def f(self, value: Annotated[int, ArrowType(pa.int32())]) -> int: ...

    class Decimals:
        def f(self, value: Annotated[Decimal, ArrowType(pa.decimal128(20, 4))]) -> int: ...

    hashes = {protocol_hash("P", protocol_spec(p).methods) for p in (One, Narrower, Decimals)}
    assert len(hashes) == 3
    assert protocol_hash("P", protocol_spec(One).methods) != protocol_hash("Q", protocol_spec(One).methods)


@pytest.fixture
def secondary(server: Server) -> Iterator[Any]:
    client = connect(Secondary, server.in_process(), shm=ShmConfig())
    yield client.api
    client.close()


def test_secondary_routes_by_protocol_and_method(server: Server, secondary: Any) -> None:
    assert secondary.echo_string("x") == ECHO_PREFIX + "x"
    assert protocol_spec(Secondary).methods["echo_string"].kind is MethodKind.UNARY


@pytest.mark.parametrize("code", sorted(STATUS_CODES))
def test_secondary_fail_carries_code_kind_and_details(secondary: Any, code: str) -> None:
    with pytest.raises(RpcError) as failed:
        secondary.fail(code, "why", 2.0)
    error = failed.value
    assert (error.error_type, error.error_code, error.error_kind) == ("StatusError", code, "why")
    assert error.error_details == [
        FAIL_ERROR_INFO,
        {"@type": "vgi_rpc.RetryInfo", "retry_delay_seconds": 2},
        PROBE_DETAIL,
    ]


def test_secondary_refuses_a_code_outside_the_set(secondary: Any) -> None:
    with pytest.raises(RpcError) as failed:
        secondary.fail("OK", "", 0.0)
    assert (failed.value.error_code, failed.value.error_kind) == ("INVALID_ARGUMENT", "invalid_code")
    assert failed.value.error_details[0]["@type"] == "vgi_rpc.BadRequest"


def test_secondary_oversized_details_are_dropped_whole(secondary: Any) -> None:
    with pytest.raises(RpcError) as failed:
        secondary.fail_oversized()
    assert (failed.value.error_code, failed.value.error_kind) == ("RESOURCE_EXHAUSTED", OVERSIZED_KIND)
    assert not failed.value.error_details
    assert json.dumps(failed.value.error_details or []) == "[]"


def test_quiver_client_reads_the_reference_workers_reflection(worker_env: dict[str, str], server: Server) -> None:
    """The descriptions quiver's client decodes off vgi-rpc's reference worker equal our own, schema for schema."""
    reference = Path(os.environ.get("QUIVER_ORACLE_BIN") or REPO / ".venv-oracle" / "bin") / "vgi-rpc-conformance"
    if not reference.exists():
        pytest.skip(f"{reference} not found; run tools/setup.sh or set $QUIVER_ORACLE_BIN")
    ours = connect(Reflection, server.in_process(), shm=ShmConfig())
    with connect(Reflection, spawn([str(reference), "--describe"], env=worker_env), shm=ShmConfig()) as theirs:
        listing = theirs.list_protocols()
        assert {p.protocol: p.protocol_hash for p in listing.protocols} == REFERENCE_HASHES
        for protocol in REFERENCE_HASHES:
            assert _decoded(theirs.describe(protocol)) == _decoded(ours.api.describe(protocol))
    ours.close()


def _decoded(description: ServiceDescription) -> list[tuple[Any, ...]]:
    """A description with its schemas decoded: two Arrow writers may encode one schema differently."""

    def schema(data: bytes) -> pa.Schema | None:
        return pa.ipc.read_schema(pa.py_buffer(data)) if data else None

    return [
        (
            *(m.name, m.method_type, m.has_return, m.has_header, m.stream_kind, m.idempotency),
            *(schema(m.params_schema_ipc), schema(m.result_schema_ipc), schema(m.header_schema_ipc)),
        )
        for m in description.methods
    ]
