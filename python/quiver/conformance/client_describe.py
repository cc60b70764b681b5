"""The client driver's ``describe``: two calls on ``vgi_rpc.Reflection.v1`` through quiver's client.

``list_protocols``, then ``describe`` of the first hosted protocol that is not the framework's own
(its name does not start with ``vgi_rpc.``), decoded into the JSON description vgi-rpc's harness
rebuilds. The reflection dataclasses are as ``python/quiver/rpc/reflection.py`` encodes them.
"""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa
from pyarrow import ipc

from ..rpc.client import Client
from ..transport.http import HttpClient
from ..wire import keys

REFLECTION_PROTOCOL = "vgi_rpc.Reflection.v1"
#: The introspection format version vgi-rpc's ``DESCRIBE_VERSION`` names.
DESCRIBE_VERSION = "5"


def describe(client: Client[Any] | HttpClient[Any]) -> dict[str, Any]:
    """``{"describe": ...}``, or ``{"error": ...}`` when a reflection call failed."""
    from .client_driver import error_object

    try:
        listing = _reflect(client, "list_protocols", None)
        names = [p["protocol"] for p in listing["protocols"]]
        name = next((n for n in names if not n.startswith("vgi_rpc.")), None)
        if name is None:
            return {
                "error": {
                    "error_type": "ProtocolError",
                    "error_message": "the server hosts no application protocol",
                    "traceback": "",
                    "error_code": "",
                    "error_kind": "",
                    "error_details": [],
                }
            }
        described = _reflect(client, "describe", name)
    except Exception as exc:  # a failed call is relayed as the client reported it
        return {"error": error_object(exc)}
    methods = [_method(m) for m in described["methods"]]
    return {
        "describe": {
            "protocol_name": described["protocol"],
            "protocol_version": described["protocol_version"],
            "protocol_hash": described["protocol_hash"],
            "request_version": listing["request_version"],
            "server_id": listing["server_id"],
            "describe_version": DESCRIBE_VERSION,
            "methods": methods,
        }
    }


def _method(method: dict[str, Any]) -> dict[str, Any]:
    def schema(key: str) -> str | None:
        data = method.get(key)
        return base64.standard_b64encode(data).decode("ascii") if data else None

    is_exchange = {"exchange": True, "producer": False}.get(method.get("stream_kind") or "")
    return {
        "name": method["name"],
        "method_type": method["method_type"],
        "has_return": bool(method["has_return"]),
        "has_header": bool(method["has_header"]),
        "is_exchange": is_exchange,
        "params_schema_b64": schema("params_schema_ipc"),
        "result_schema_b64": schema("result_schema_ipc"),
        "header_schema_b64": schema("header_schema_ipc"),
    }


def _reflect(client: Client[Any] | HttpClient[Any], method: str, protocol: str | None) -> dict[str, Any]:
    """One reflection call's dataclass, as a dict of Python values."""
    if protocol is None:
        params = pa.RecordBatch.from_arrays([], schema=pa.schema([]))
    else:
        params = pa.RecordBatch.from_pydict(
            {"protocol": [protocol]}, schema=pa.schema([("protocol", pa.utf8(), False)])
        )
    metadata = {
        keys.METHOD: method,
        keys.REQUEST_VERSION: keys.REQUEST_VERSION_VALUE,
        keys.PROTOCOL: REFLECTION_PROTOCOL,
    }
    reply = client.call_raw(params, metadata)
    if reply is None:
        raise ValueError(f"{method}: no reply")
    data = reply[0].column("result")[0].as_py()
    rows = ipc.open_stream(pa.py_buffer(data)).read_all().to_pylist()
    if len(rows) != 1:
        raise ValueError(f"{method}: expected one dataclass row, got {len(rows)}")
    return rows[0]
