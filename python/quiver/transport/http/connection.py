"""The client end of HTTP/1.1: one kept-alive connection, requests sent one at a time.

Each request leaves in one vectored ``sendmsg`` (head plus body chunks, no join); each
response is read whole, de-chunked and, when the server compressed it, decoded. A
connection the server closed while idle is reopened once, transparently, when the
failure shows before any byte of the answer (the request never reached the server's
application, so sending it again cannot run it twice).
"""

from __future__ import annotations

import io
import socket
import ssl
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...wire.error import ConnectionClosed
from ..connection import SocketConnection
from . import codec
from .message import HttpError, body_length, head_bytes, read_body, read_head

RESPONSE_BYTES_MAX = 4 << 30
USER_AGENT = "quiver-http/0.1"


@dataclass(frozen=True, slots=True)
class Response:
    """A response: status code, headers (lower-case names) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        """The value of header ``name`` (lower-case), or ``default``."""
        return self.headers.get(name, default)


class HttpConnection:
    """A persistent connection to ``url`` (``http://host:port/base`` or ``https://...``).

    Not thread-safe: one request at a time, as a client's calls are.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float | None = None,
        response_bytes_max: int = RESPONSE_BYTES_MAX,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        self.response_bytes_max = response_bytes_max
        self._ssl_context = ssl_context
        self._connection: SocketConnection | None = None
        host_header = self.host if ":" not in self.host else f"[{self.host}]"
        default_port = 443 if parts.scheme == "https" else 80
        self._host_header = host_header if self.port == default_port else f"{host_header}:{self.port}"

    def request(
        self, method: str, path: str, body: Sequence[Any] = (), headers: Mapping[str, str] | None = None
    ) -> Response:
        """Sends one request (``path`` is appended to the URL's base path) and reads its response."""
        head = self._head(method, self.base_path + path, body, headers or {})
        reused = self._connection is not None
        try:
            return self._exchange(method, head, body)
        except _NoAnswer as stale:
            self.close()
            if not reused:
                raise stale.cause from None
        try:
            return self._exchange(method, head, body)
        except _NoAnswer as failed:
            self.close()
            raise failed.cause from None

    def close(self) -> None:
        """Closes the socket; the next request opens a new one."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> HttpConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _head(self, method: str, path: str, body: Sequence[Any], headers: Mapping[str, str]) -> bytes:
        fields = [("Host", self._host_header), ("User-Agent", USER_AGENT)]
        fields += [(name, value) for name, value in headers.items()]
        if body or method in ("POST", "PUT"):
            fields.append(("Content-Length", str(body_length(body))))
        return head_bytes(f"{method} {path or '/'} HTTP/1.1", fields)

    def _exchange(self, method: str, head: bytes, body: Sequence[Any]) -> Response:
        connection = self._connection or self._connect()
        try:
            connection.send([head, *body])
            response_head = read_head(connection.reader)
            while response_head is not None and response_head.start[1].startswith("1"):  # 100 Continue
                response_head = read_head(connection.reader)
        except (ConnectionClosed, ConnectionResetError, BrokenPipeError) as exc:
            raise _NoAnswer(exc) from exc
        if response_head is None:
            raise _NoAnswer(ConnectionClosed("the server closed the connection before answering"))
        version, code, _ = response_head.start
        try:
            status = int(code)
        except ValueError as exc:
            raise HttpError(f"malformed HTTP status line {response_head.start!r}") from exc
        closes = (response_head.header("connection") or "").lower() == "close" or version == "HTTP/1.0"
        if method == "HEAD" or status in (204, 304):
            data = b""
        else:
            try:
                data = read_body(connection.reader, response_head, self.response_bytes_max, until_close=closes)
            except (ConnectionClosed, OSError):
                self.close()
                raise
        if closes:
            self.close()
        coding = response_head.header("content-encoding") or response_head.header("x-vgi-content-encoding")
        if coding:
            data = codec.decode(data, coding, self.response_bytes_max)
        return Response(status, response_head.headers, data)

    def _connect(self) -> SocketConnection:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = f"{self.scheme}:{self.host}:{self.port}"
        if self.scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            self._connection = _TlsConnection(context.wrap_socket(sock, server_hostname=self.host), peer=peer)
        else:
            self._connection = SocketConnection(sock, peer=peer)
        return self._connection


class _NoAnswer(Exception):
    """The request failed before any byte of an answer arrived (safe to send again once)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _TlsConnection(SocketConnection):
    """TLS sockets have no ``sendmsg``: the chunks are joined and sent."""

    def _write_vector(self, buffers: list[memoryview]) -> int:
        return int(self.socket.send(b"".join(buffers)))


class WsgiConnection:
    """Requests answered by calling a WSGI app in this process: no socket, no thread.

    For tests and for measuring the application alone; same :meth:`request` as
    :class:`HttpConnection`.
    """

    def __init__(self, app: Callable[..., Iterable[Any]], *, response_bytes_max: int = RESPONSE_BYTES_MAX) -> None:
        self.app = app
        self.response_bytes_max = response_bytes_max

    def request(
        self, method: str, path: str, body: Sequence[Any] = (), headers: Mapping[str, str] | None = None
    ) -> Response:
        """Calls the app with a WSGI environ for this request; its response."""
        data = b"".join(body)
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "in-process",
            "SERVER_PORT": "0",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "in-process",
            "REMOTE_PORT": "0",
            "CONTENT_LENGTH": str(len(data)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "quiver.body": data,
        }
        for name, value in (headers or {}).items():
            key = name.upper().replace("-", "_")
            environ[key if key == "CONTENT_TYPE" else "HTTP_" + key] = value
        started: list[Any] = []

        def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, response_headers]
            return None

        result = self.app(environ, start_response)
        try:
            payload = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, response_headers = started
        fields = {name.lower(): value for name, value in response_headers}
        coding = fields.get("content-encoding") or fields.get("x-vgi-content-encoding")
        if coding:
            payload = codec.decode(payload, coding, self.response_bytes_max)
        return Response(int(status.split(" ", 1)[0]), fields, payload)

    def close(self) -> None:
        """Nothing to close."""
