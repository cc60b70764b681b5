"""RPC over HTTP, route- and token-compatible with vgi-rpc's HTTP transport.

Serve any :class:`~quiver.Server` as a WSGI application, with the standard-library
server here or any WSGI server; call it with :class:`HttpClient`::

    app = WsgiApp(Server(Calculator, CalculatorImpl()))
    serve_http(app, "127.0.0.1", 8000)                    # prints PORT:8000, serves until interrupted

    with http_connect(Calculator, "http://127.0.0.1:8000") as calc:
        calc.add(1.0, 2.0)

Unlike the rest of :mod:`quiver.transport`, this package speaks RPC (it imports
:mod:`quiver.rpc`): HTTP carries one call or turn per request, so the transport and the
dispatch cannot be split the way a byte stream allows. The pure-HTTP pieces are
:mod:`.message`, :mod:`.server` and :mod:`.connection`; :mod:`.app` and :mod:`.client`
map calls onto them; :mod:`.streams` keeps stream state between requests.
"""

from __future__ import annotations

from .app import ResponseTooLargeError, WsgiApp, make_wsgi_app
from .client import Capabilities, HttpClient, HttpStreamCall, UploadUrl, http_connect
from .connection import HttpConnection, Response, WsgiConnection
from .server import HttpServer
from .streams import StreamTable

__all__ = [
    "Capabilities",
    "HttpClient",
    "HttpConnection",
    "HttpServer",
    "HttpStreamCall",
    "Response",
    "ResponseTooLargeError",
    "StreamTable",
    "UploadUrl",
    "WsgiApp",
    "WsgiConnection",
    "http_connect",
    "make_wsgi_app",
    "serve_http",
]


def serve_http(app: WsgiApp, host: str = "127.0.0.1", port: int = 0, **options: object) -> None:
    """Serves ``app`` with :class:`HttpServer` on ``host:port``, prints ``PORT:<n>``, runs until interrupted."""
    with HttpServer(app, host, port, **options) as server:  # type: ignore[arg-type]
        print(f"PORT:{server.port}", flush=True)
        server.serve_forever()
