"""``python -m quiver.conformance.client_driver``: quiver's Python client behind vgi-rpc's client-driver protocol.

The harness (``vgi_rpc.conformance.client_driver`` in vgi-rpc) writes one JSON request per line on
stdin; this answers one JSON line per request on stdout, and every RPC is made by
:class:`quiver.rpc.client.Client` on the one connection ``connect`` opened. Batches cross as base64
one-batch Arrow IPC streams with their custom metadata; the driver never decodes values. ``ok``
says whether the driver carried out the op; ``error`` is the client's error when the call failed.
The suite in ``tests/vgi_rpc_suite/`` runs vgi-rpc's tests through it against the reference worker.

Byte-stream transports (``stdio``, ``shm``, ``unix``, ``tcp``) through :class:`quiver.rpc.client.Client`,
and ``http`` through :class:`quiver.transport.http.HttpClient`, which alone serves the HTTP-only ops
(capabilities, upload URLs, sticky-session scopes, resume tokens); on a byte stream they answer
``ok: false``. EOF on stdin is a shutdown. The Rust client's driver is
``crates/quiver-conformance/src/bin/quiver-client-driver``.
"""

from __future__ import annotations

import base64
import io
import json
import sys
from typing import Any, BinaryIO

import pyarrow as pa
from pyarrow import ipc

from ..rpc.client import Client, RpcError, StreamCall
from ..transport.connection import Connection
from ..transport.http import HttpClient, HttpStreamCall
from ..transport.socket import connect_tcp, connect_unix
from ..transport.subprocess import spawn
from ..wire import keys
from ..wire.log import LogRecord

#: The longest control line read: requests carry base64 batches of up to tens of MiB.
LINE_BYTES_MAX = 256 << 20
#: The segment a ``shm`` connection gets when the harness names no size, and the most it may ask.
SHM_SIZE_DEFAULT = 4 << 20
SHM_SIZE_MAX = 1 << 30
#: The zstd levels a harness may ask for on HTTP request bodies (zstd's own range).
ZSTD_LEVELS = range(-7, 23)
#: The most default headers a connect may set, and the longest value.
HEADERS_MAX = 64
HEADER_VALUE_BYTES_MAX = 8192


class Refused(Exception):
    """The driver could not carry out an op (``ok: false``)."""


def _relayed(protocol: str) -> type:
    """A protocol class with no methods: the client is bound to none, every request names its own."""
    return type("Relayed", (), {"protocol_name": protocol})


def decode_batch(text: str) -> tuple[pa.RecordBatch, dict[str, str]]:
    """The one batch of a base64 IPC stream, with its custom metadata."""
    reader = ipc.open_stream(pa.py_buffer(base64.standard_b64decode(text)))
    batch, metadata = reader.read_next_batch_with_custom_metadata()
    decoded = {k.decode(): v.decode() for k, v in (metadata or {}).items()}
    return batch, decoded


def encode_batch(batch: pa.RecordBatch, metadata: dict[str, str] | None) -> str:
    sink = io.BytesIO()
    with ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch, custom_metadata=metadata or None)
    return base64.standard_b64encode(sink.getvalue()).decode("ascii")


def error_object(error: BaseException) -> dict[str, Any]:
    """The structured error of a failed call, from the client's own error."""
    if isinstance(error, RpcError):
        return {
            "error_type": error.error_type,
            "error_message": error.error_message,
            "traceback": error.remote_traceback or "",
            "error_code": error.error_code or "",
            "error_kind": error.error_kind or "",
            "error_details": list(error.error_details or []),
        }
    return {
        "error_type": "TransportError",
        "error_message": f"{type(error).__name__}: {error}",
        "traceback": "",
        "error_code": "",
        "error_kind": "",
        "error_details": [],
    }


def log_object(record: LogRecord) -> dict[str, Any]:
    # vgi-rpc's client hands its log callback str() of every extra value; so does this.
    extra = {key: str(value) for key, value in record.extra.items()}
    return {"level": str(record.level), "message": record.message, "extra": extra}


class Driver:
    """One connection, its open stream call (if any), and the logs not yet relayed."""

    def __init__(self) -> None:
        self.client: Client[Any] | HttpClient[Any] | None = None
        self.stream: StreamCall | HttpStreamCall | None = None
        self.logs: list[LogRecord] = []

    # -- ops -------------------------------------------------------------------------------

    def connect(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.client is not None:
            raise Refused("connect arrives once per driver")
        protocol = request.get("protocol")
        if not isinstance(protocol, str) or not protocol:
            raise Refused("connect: protocol is required")
        transport, target = request.get("transport"), request.get("target")
        shm_size = None
        if transport in ("stdio", "shm"):
            if not isinstance(target, list) or not target or not all(isinstance(a, str) for a in target):
                raise Refused("connect: the target of stdio/shm is a non-empty argv array")
            connection: Connection = spawn(target)
            if transport == "shm":
                shm_size = request.get("shm_size") or SHM_SIZE_DEFAULT
                if not isinstance(shm_size, int) or not 0 < shm_size <= SHM_SIZE_MAX:
                    connection.close()
                    raise Refused(f"connect: shm_size {shm_size!r} outside 1..{SHM_SIZE_MAX}")
        elif transport == "unix" and isinstance(target, str):
            connection = connect_unix(target)
        elif transport == "tcp" and isinstance(target, str):
            host, _, port = target.rpartition(":")
            connection = connect_tcp(host or "127.0.0.1", int(port))
        elif transport == "http" and isinstance(target, str):
            self.client = self._http_client(request, protocol, target)
            return {}
        else:
            raise Refused(f"connect: unknown transport {transport!r} or bad target {target!r}")
        self.client = Client(_relayed(protocol), connection, on_log=self.logs.append, shm_size=shm_size)
        return {}

    def _http_client(self, request: dict[str, Any], protocol: str, url: str) -> HttpClient[Any]:
        headers = request.get("headers") or {}
        if not isinstance(headers, dict) or len(headers) > HEADERS_MAX:
            raise Refused(f"connect: headers is an object of at most {HEADERS_MAX} entries")
        if not all(isinstance(v, str) and len(v) <= HEADER_VALUE_BYTES_MAX for v in headers.values()):
            raise Refused(f"connect: every header value is a string of at most {HEADER_VALUE_BYTES_MAX} bytes")
        # Tri-state: absent is the client's default (bodies as they are), null disables, a number is a zstd level.
        level = request.get("compression_level")
        if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level not in ZSTD_LEVELS):
            raise Refused(f"connect: compression_level {level!r} is not a zstd level")
        return HttpClient(
            _relayed(protocol),
            url,
            on_log=self.logs.append,
            headers=headers,
            compression=None if level is None else "zstd",
            compression_level=level,
        )

    def unary(self, request: dict[str, Any]) -> dict[str, Any]:
        client = self._idle()
        batch, metadata = self._request(request)
        try:
            reply = client.call_raw(batch, metadata)
        except Exception as exc:  # the call failed: relayed as the client reported it
            return {"result_b64": None, "error": error_object(exc)}
        return {"result_b64": None if reply is None else encode_batch(*reply)}

    def stream_open(self, request: dict[str, Any]) -> dict[str, Any]:
        client = self._idle()
        batch, metadata = self._request(request)
        exchange, has_header = bool(request.get("is_exchange")), bool(request.get("has_header"))
        try:
            call = client.stream_raw(batch, metadata, exchange=exchange, has_header=has_header)
        except Exception as exc:
            return {"header_b64": None, "error": error_object(exc)}
        self.stream = call
        header = call.header_batch
        return {"header_b64": None if header is None else encode_batch(header, None)}

    def tick(self, request: dict[str, Any]) -> dict[str, Any]:
        call = self._open_stream()
        text = request.get("input_b64")
        metadata = decode_batch(text)[1] if isinstance(text, str) else None
        answer = self._stream_item(lambda: call.tick(metadata))
        if request.get("op") == "next_with_token":
            # A byte stream carries no resume token; over HTTP it is the cursor the next turn presents.
            resumable = isinstance(call, HttpStreamCall) and not answer["done"]
            answer["token"] = call.resume_token if resumable else None  # type: ignore[union-attr]
        return answer

    def exchange(self, request: dict[str, Any]) -> dict[str, Any]:
        call = self._open_stream()
        text = request.get("input_b64")
        if not isinstance(text, str):
            raise Refused("exchange: input_b64 is missing")
        batch, metadata = decode_batch(text)
        return self._stream_item(lambda: call.exchange(batch, metadata))

    def cancel(self, _: dict[str, Any]) -> dict[str, Any]:
        return self._end_stream(lambda call: call.cancel())

    def close(self, _: dict[str, Any]) -> dict[str, Any]:
        return self._end_stream(lambda call: call.close())

    def describe(self, _: dict[str, Any]) -> dict[str, Any]:
        from .client_describe import describe

        return describe(self._idle())

    # -- HTTP-only ops ---------------------------------------------------------------------

    def capabilities(self, _: dict[str, Any]) -> dict[str, Any]:
        client = self._http()
        try:
            caps = client.capabilities()
        except Exception as exc:
            return {"caps": None, "error": error_object(exc)}
        return {
            "caps": {
                "sticky_enabled": caps.sticky_enabled,
                "sticky_default_ttl": caps.sticky_default_ttl,
                "sticky_echo_headers": list(caps.sticky_echo_headers),
                "upload_url_support": caps.upload_url_support,
                "max_request_bytes": caps.max_request_bytes,
                "max_response_bytes": caps.max_response_bytes,
                "max_externalized_response_bytes": caps.max_externalized_response_bytes,
                "externalization_enabled": caps.externalization_enabled,
                "max_upload_bytes": caps.max_upload_bytes,
                "supported_encodings": list(caps.encodings),
            }
        }

    def request_upload_urls(self, request: dict[str, Any]) -> dict[str, Any]:
        client = self._http()
        count = request.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int):
            raise Refused(f"request_upload_urls: count {count!r} is not an integer")
        try:
            urls = client.request_upload_urls(count)
        except Exception as exc:
            return {"urls": None, "error": error_object(exc)}
        return {
            "urls": [
                {
                    "upload_url": url.upload_url,
                    "download_url": url.download_url,
                    "expires_at": None if url.expires_at is None else int(url.expires_at.timestamp()),
                }
                for url in urls
            ]
        }

    def session_begin(self, request: dict[str, Any]) -> dict[str, Any]:
        token = request.get("token")
        if token is not None and not isinstance(token, str):
            raise Refused(f"session_begin: token {token!r} is not a string")
        self._http().begin_session(token)
        return {}

    def session_token(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"token": self._http().session_token()}

    def session_echo_headers(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"headers": self._http().session_echo_headers()}

    def session_detach(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"token": self._http().detach_session()}

    def session_end(self, _: dict[str, Any]) -> dict[str, Any]:
        self._http().end_session()
        return {}

    def shutdown(self) -> None:
        self.stream = None
        if self.client is not None:
            self.client.close()
            self.client = None

    # -- internals -------------------------------------------------------------------------

    def _idle(self) -> Client[Any] | HttpClient[Any]:
        if self.client is None:
            raise Refused("no connection (connect first)")
        if self.stream is not None:
            raise Refused("a stream is open on this connection")
        return self.client

    def _http(self) -> HttpClient[Any]:
        if not isinstance(self.client, HttpClient):
            raise Refused("op requires http transport")
        return self.client

    def _open_stream(self) -> StreamCall | HttpStreamCall:
        if self.stream is None:
            raise Refused("no stream is open")
        return self.stream

    @staticmethod
    def _request(request: dict[str, Any]) -> tuple[pa.RecordBatch, dict[str, str]]:
        text = request.get("request_b64")
        if not isinstance(text, str):
            raise Refused("request_b64 is missing")
        batch, metadata = decode_batch(text)
        if keys.METHOD not in metadata:
            raise Refused(f"the request batch has no {keys.METHOD} metadata")
        return batch, metadata

    def _stream_item(self, step: Any) -> dict[str, Any]:
        try:
            item = step()
        except Exception as exc:
            self.stream = None
            return {"done": True, "batch_b64": None, "error": error_object(exc)}
        if item is None:
            self.stream = None
            return {"done": True, "batch_b64": None}
        return {"done": False, "batch_b64": encode_batch(item.batch, item.metadata)}

    def _end_stream(self, end: Any) -> dict[str, Any]:
        call, self.stream = self.stream, None
        if call is None:
            return {}
        try:
            end(call)
        except Exception as exc:
            return {"error": error_object(exc)}
        return {}


OPS = {
    "connect": Driver.connect,
    "unary": Driver.unary,
    "stream_open": Driver.stream_open,
    "tick": Driver.tick,
    "next_with_token": Driver.tick,
    "exchange": Driver.exchange,
    "cancel": Driver.cancel,
    "close": Driver.close,
    "describe": Driver.describe,
    "capabilities": Driver.capabilities,
    "request_upload_urls": Driver.request_upload_urls,
    "session_begin": Driver.session_begin,
    "session_token": Driver.session_token,
    "session_echo_headers": Driver.session_echo_headers,
    "session_detach": Driver.session_detach,
    "session_end": Driver.session_end,
}


def handle(driver: Driver, line: bytes) -> dict[str, Any]:
    """One request line's response."""
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise Refused("a control line is a JSON object")
        op = request.get("op")
        handler = OPS.get(op)  # type: ignore[arg-type]
        if handler is None:
            raise Refused(f"unknown op {op!r}")
        reply = handler(driver, request)
        reply["ok"] = True
    except Refused as exc:
        reply = {"ok": False, "error": str(exc)}
    except Exception as exc:  # the op was not carried out (a call's own failure is caught in its op)
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    reply["logs"] = [log_object(record) for record in driver.logs]
    driver.logs.clear()
    return reply


def serve(requests: BinaryIO, responses: BinaryIO) -> None:
    """Answers requests in lockstep until ``shutdown`` or end of input."""
    driver = Driver()
    try:
        while line := requests.readline(LINE_BYTES_MAX + 1):
            if len(line) > LINE_BYTES_MAX:
                while not line.endswith(b"\n") and (line := requests.readline(LINE_BYTES_MAX)):
                    pass  # the rest of the refused line
                _answer(responses, {"ok": False, "error": "control line too long"})
            elif b'"shutdown"' in line and _op(line) == "shutdown":
                driver.shutdown()
                _answer(responses, {"ok": True})
                return
            else:
                _answer(responses, handle(driver, line))
    finally:
        driver.shutdown()


def _op(line: bytes) -> object:
    try:
        request = json.loads(line)
    except ValueError:
        return None
    return request.get("op") if isinstance(request, dict) else None


def _answer(responses: BinaryIO, reply: dict[str, Any]) -> None:
    responses.write(json.dumps(reply).encode() + b"\n")
    responses.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
