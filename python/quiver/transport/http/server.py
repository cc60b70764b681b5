"""A small threaded HTTP/1.1 server for any WSGI application, standard library only.

Why not :mod:`wsgiref`: its server speaks HTTP/1.0 and closes every connection, so each
call would pay a TCP handshake and a new thread. This one keeps connections alive (one
thread per connection, at most ``connections_max`` at once), reads each request whole
within limits, and answers with one vectored ``sendmsg``. Any other WSGI server
(waitress, gunicorn, uWSGI) can serve :class:`~quiver.transport.http.WsgiApp` as well.

Non-standard environ keys it sets, for apps that want them: ``quiver.body`` (the whole
request body as ``bytes``, already read) and ``quiver.buffers`` (``True``: the app may
return buffer objects such as ``pyarrow.Buffer`` instead of ``bytes``).
"""

from __future__ import annotations

import contextlib
import io
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote

from ...wire.error import ConnectionClosed
from ..connection import SocketConnection
from .message import Head, HttpError, body_length, head_bytes, read_body, read_head

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[Any]]

REQUEST_BYTES_MAX = 4 << 30
CONNECTIONS_MAX = 64
IDLE_TIMEOUT_S = 300.0
LISTEN_BACKLOG = 128
SERVER_SOFTWARE = "quiver-http/0.1"


class HttpServer:
    """Serves a WSGI app on ``host:port`` (port 0 picks a free one) until :meth:`close`.

    >>> with HttpServer(app) as server:
    ...     server.start()                       # accept loop on a daemon thread
    ...     url = f"http://127.0.0.1:{server.port}"
    """

    def __init__(
        self,
        app: WsgiApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        connections_max: int = CONNECTIONS_MAX,
        request_bytes_max: int = REQUEST_BYTES_MAX,
        idle_timeout_s: float | None = IDLE_TIMEOUT_S,
    ) -> None:
        assert connections_max > 0 and request_bytes_max >= 0
        self.app = app
        self.socket = socket.create_server((host, port), backlog=LISTEN_BACKLOG)
        self.host = host
        self.request_bytes_max = request_bytes_max
        self.idle_timeout_s = idle_timeout_s
        self._slots = threading.BoundedSemaphore(connections_max)
        self._stopped = False
        self._connections: set[SocketConnection] = set()
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        """The bound TCP port."""
        return int(self.socket.getsockname()[1])

    def serve_forever(self) -> None:
        """Accepts connections until :meth:`close`, each served on its own daemon thread."""
        while True:
            try:
                sock, address = self.socket.accept()
            except OSError:
                if self._stopped:
                    return
                raise
            if not self._slots.acquire(blocking=False):
                _refuse(sock)
                continue
            threading.Thread(
                target=self._serve_connection, args=(sock, address), name=f"quiver http {address}", daemon=True
            ).start()

    def start(self) -> threading.Thread:
        """Runs :meth:`serve_forever` on a daemon thread and returns it."""
        thread = threading.Thread(target=self.serve_forever, name="quiver http accept", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        """Stops accepting and closes every open connection."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.close()

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- one connection -----------------------------------------------------------------

    def _serve_connection(self, sock: socket.socket, address: Any) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.idle_timeout_s)
        connection = SocketConnection(sock, peer=f"tcp:{address[0]}:{address[1]}")
        with self._lock:
            self._connections.add(connection)
        try:
            while not self._stopped and self._serve_request(connection, address):
                pass
        except (ConnectionClosed, OSError):
            pass
        finally:
            with self._lock:
                self._connections.discard(connection)
            connection.close()
            self._slots.release()

    def _serve_request(self, connection: SocketConnection, address: Any) -> bool:
        """Serves one request; ``False`` once the connection should close."""
        try:
            head = read_head(connection.reader)
            if head is None:
                return False
            method, _, version = head.start
            if not version.startswith("HTTP/1."):
                raise HttpError(f"unsupported protocol version {version!r}", 505)
            if (head.header("expect") or "").lower() == "100-continue":
                connection.send([b"HTTP/1.1 100 Continue\r\n\r\n"])
            body = read_body(connection.reader, head, self.request_bytes_max)
        except HttpError as exc:
            _send_plain(connection, exc.status, str(exc))
            return False
        keep_alive = _keep_alive(head)
        environ = self._environ(head, body, address)
        status, headers, chunks = _run(self.app, environ)
        if not keep_alive:
            headers = [*headers, ("Connection", "close")]
        if method == "HEAD":
            chunks = []
        connection.send([head_bytes(f"HTTP/1.1 {status}", headers), *chunks])
        return keep_alive

    def _environ(self, head: Head, body: bytes, address: Any) -> dict[str, Any]:
        method, target, version = head.start
        path, _, query = target.partition("?")
        if path.startswith(("http://", "https://")):  # absolute form
            path = "/" + path.split("/", 3)[3] if path.count("/") >= 3 else "/"
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, encoding="latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": self.host,
            "SERVER_PORT": str(self.port),
            "SERVER_PROTOCOL": version,
            "SERVER_SOFTWARE": SERVER_SOFTWARE,
            "REMOTE_ADDR": str(address[0]),
            "REMOTE_PORT": str(address[1]),
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "quiver.body": body,
            "quiver.buffers": True,
        }
        for name, value in head.headers.items():
            if name == "content-type":
                environ["CONTENT_TYPE"] = value
            elif name not in ("content-length", "transfer-encoding"):
                environ["HTTP_" + name.upper().replace("-", "_")] = value
        return environ


def _run(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], list[Any]]:
    """Calls the app; its status, headers (with Content-Length) and body chunks."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[Any], None]:
        if exc_info is not None and started:
            raise exc_info[1].with_traceback(exc_info[2])
        started[:] = [status, list(headers)]
        return written.append

    written: list[Any] = []
    try:
        result = app(environ, start_response)
        try:
            chunks = [*written, *(chunk for chunk in result if len(chunk))]
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if not started:
            raise RuntimeError("the WSGI app returned without calling start_response")
    except Exception:  # an app failure is a 500, never a dead connection
        traceback.print_exc(file=sys.stderr)
        return (
            "500 Internal Server Error",
            [("Content-Type", "text/plain"), ("Content-Length", "21")],
            [b"internal server error"],
        )
    status, headers = started
    headers = [(name, value) for name, value in headers if name.lower() != "content-length"]
    headers.append(("Content-Length", str(body_length(chunks))))
    return status, headers, chunks


def _keep_alive(head: Head) -> bool:
    connection = (head.header("connection") or "").lower()
    if head.start[2] == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _send_plain(connection: SocketConnection, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    with contextlib.suppress(ConnectionClosed, OSError):
        connection.send([head_bytes(f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}", headers), body])


def _refuse(sock: socket.socket) -> None:
    """Answers 503 on a connection over the limit, and closes it."""
    body = b"too many connections"
    head = head_bytes(
        "HTTP/1.1 503 Service Unavailable",
        [("Content-Length", str(len(body))), ("Connection", "close"), ("Retry-After", "1")],
    )
    with contextlib.suppress(OSError):
        sock.sendall(head + body)
    sock.close()


_REASONS = {
    400: "Bad Request",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    505: "HTTP Version Not Supported",
}
