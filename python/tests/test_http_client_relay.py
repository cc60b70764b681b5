"""The HTTP client's relay surface, and the client driver's ``http`` transport built on it.

Raw calls and the driver run against quiver's Python worker and vgi-rpc's reference worker
over HTTP; sticky sessions and upload URLs against vgi-rpc's server configured for them, and
the client's bookkeeping (nesting, detaching, every ``DELETE``) against quiver's own app with
a sticky server's headers added on the way back (:class:`StickyConnection`).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from quiver import RpcError, Server
from quiver.conformance import ConformanceService, ConformanceServiceImpl
from quiver.conformance.client_driver import decode_batch, encode_batch
from quiver.transport.http import Capabilities, HttpClient, Response, WsgiApp, WsgiConnection
from quiver.wire import keys
from quiver.wire.writer import encode_stream

from .test_client_driver import Driver, request
from .test_http import oracle_http, start, stop  # noqa: F401 - oracle_http is a fixture used by name

RELAYED = type("Relayed", (), {"protocol_name": "ConformanceService"})


@pytest.fixture(scope="module", params=["quiver", "reference"])
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "quiver":
        env = request.getfixturevalue("worker_env")
        command = [*request.getfixturevalue("python_worker"), "--http"]
    else:
        request.getfixturevalue("oracle_http")
        env = None
        oracle = Path(request.getfixturevalue("oracle_cli")).with_name("vgi-rpc-conformance")
        command = [str(oracle), "--describe", "--http", "0"]
    worker, url = start(command, env)
    yield url
    stop(worker)


def test_raw_calls_route_by_the_requests_own_protocol_and_method(server_url: str) -> None:
    client = HttpClient(RELAYED, server_url, compression="zstd", compression_level=3)
    reply = client.call_raw(*request("echo_string", value="hi"))
    assert reply is not None and reply[0].column("result").to_pylist() == ["hi"]
    with pytest.raises(RpcError) as raised:
        client.call_raw(*request("raise_value_error", message="boom"))
    assert raised.value.error_type == "ValueError"
    call = client.stream_raw(*request("produce_with_header", count=2), exchange=False, has_header=True)
    assert call.header_batch is not None and call.header_batch.num_rows == 1
    first = call.tick()
    assert first is not None and call.resume_token is not None
    assert call.tick() is not None and call.tick() is None
    assert call.resume_token is None
    client.close()


def test_a_zero_column_exchange_answers_every_turn(server_url: str) -> None:
    # vgi-rpc's server answers such a turn with the empty batch and then a token batch of its own.
    client = HttpClient(RELAYED, server_url)
    empty = pa.RecordBatch.from_arrays([], schema=pa.schema([]))
    _, metadata = request("exchange_zero_columns")
    call = client.stream_raw(empty, metadata, exchange=True, has_header=False)
    for _ in range(3):
        answer = call.exchange(empty)
        assert answer.batch.num_columns == 0 and answer.batch.num_rows == 0
    client.close()


# -- the driver over HTTP ------------------------------------------------------------------------


@pytest.fixture
def http_driver(server_url: str) -> Iterator[Driver]:
    driver = Driver()
    connected = driver.ask(
        op="connect", transport="http", target=server_url, protocol="ConformanceService", compression_level=1
    )
    assert connected["ok"], connected
    yield driver
    assert driver.ask(op="shutdown") == {"ok": True}
    assert driver.process.wait(timeout=30) == 0


def test_the_driver_relays_calls_and_resume_tokens_over_http(http_driver: Driver) -> None:
    reply = http_driver.ask(op="unary", request_b64=encode_batch(*request("echo_string", value="hi")))
    assert reply["ok"] and decode_batch(reply["result_b64"])[0].column("result").to_pylist() == ["hi"]
    opened = http_driver.ask(
        op="stream_open", request_b64=encode_batch(*request("produce_n", count=2)), is_exchange=False, has_header=False
    )
    assert opened["ok"] and opened.get("error") is None, opened
    first, second, done = (http_driver.ask(op="next_with_token") for _ in range(3))
    assert isinstance(first["token"], str) and first["token"], first
    assert second["done"] is False and second["token"] != first["token"]
    assert done["done"] is True and done["token"] is None
    described = http_driver.ask(op="describe")
    assert described["ok"] and described["describe"]["protocol_name"] == "ConformanceService", described
    caps = http_driver.ask(op="capabilities")
    assert caps["ok"] and caps["caps"]["sticky_enabled"] is False and "zstd" in caps["caps"]["supported_encodings"]
    # Session scopes are the client's state: usable on any HTTP server, stack-disciplined.
    assert http_driver.ask(op="session_begin", token="resumed")["ok"]
    assert http_driver.ask(op="session_token")["token"] == "resumed"
    assert http_driver.ask(op="session_end")["ok"] and http_driver.ask(op="session_end")["ok"]
    assert http_driver.ask(op="session_token")["token"] is None


def test_the_driver_refuses_a_bad_http_connect() -> None:
    for fields in ({"compression_level": "fast"}, {"compression_level": 99}, {"headers": {"X": 1}}):
        driver = Driver()
        refused = driver.ask(op="connect", transport="http", target="http://127.0.0.1:1", protocol="P", **fields)
        assert not refused["ok"] and "connect" in refused["error"], refused
        driver.process.stdin.close()  # type: ignore[union-attr]
        assert driver.process.wait(timeout=30) == 0


# -- sticky sessions and upload URLs, against quiver's app plus a sticky server's headers ---------


class StickyConnection:
    """Quiver's app in process, answering as a sticky server would; it records every request.

    It mints a token for a request that accepts a session and presents none, and closes the
    session on ``close_counter``.
    """

    def __init__(self) -> None:
        self.inner = WsgiConnection(WsgiApp(Server(ConformanceService, ConformanceServiceImpl())))
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.minted = 0

    def request(
        self, method: str, path: str, body: Sequence[Any] = (), headers: Mapping[str, str] | None = None
    ) -> Response:
        sent = dict(headers or {})
        self.requests.append((method, path, sent))
        if method == "DELETE":
            return Response(200, {}, b"")
        if path == "/__upload_url__/init":
            return self._upload_urls(body)
        response = self.inner.request(method, path, body, headers)
        extra: dict[str, str] = {}
        if sent.get("VGI-Session-Accept") == "true" and "VGI-Session" not in sent:
            self.minted += 1
            extra = {"vgi-session": f"t{self.minted}", "vgi-echo-backend": f"b{self.minted}"}
        if path.endswith("/close_counter"):
            extra["vgi-session-close"] = "true"
        return Response(response.status, {**response.headers, **extra}, response.body)

    def _upload_urls(self, body: Sequence[Any]) -> Response:
        import pyarrow.ipc as ipc

        reader = ipc.open_stream(pa.py_buffer(b"".join(body)))
        batch, metadata = reader.read_next_batch_with_custom_metadata()
        assert metadata[keys.METHOD.encode()] == b"__upload_url__"
        count = batch.column("count")[0].as_py()
        expires = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)
        rows = pa.RecordBatch.from_pydict(
            {
                "upload_url": [f"http://store/put/{i}" for i in range(count)],
                "download_url": [f"http://store/get/{i}" for i in range(count)],
                "expires_at": pa.array([expires] * count, pa.timestamp("us", tz="UTC")),
            }
        )
        return Response(200, {}, encode_stream(rows).to_pybytes())

    def close(self) -> None:
        self.inner.close()


def sent_session(connection: StickyConnection, index: int = -1) -> tuple[str | None, str | None]:
    _, _, headers = connection.requests[index]
    return headers.get("VGI-Session"), headers.get("VGI-Echo-backend")


def test_session_scopes_nest_and_each_end_tells_the_server_once() -> None:
    connection = StickyConnection()
    client = HttpClient(ConformanceService, "http://sticky", connection=connection, headers={"X-Principal": "alice"})
    client.call("echo_int", 1)
    assert "VGI-Session-Accept" not in connection.requests[-1][2]  # outside every scope: no opt-in
    assert connection.requests[-1][2]["X-Principal"] == "alice"
    client.begin_session()
    client.call("echo_int", 2)
    assert client.session_token() == "t1" and client.session_echo_headers() == {"backend": "b1"}
    client.begin_session()
    client.call("echo_int", 3)
    assert client.session_token() == "t2"
    client.call("echo_int", 4)
    assert sent_session(connection) == ("t2", "b2")
    client.end_session()
    assert connection.requests[-1][:2] == ("DELETE", "/__session__")
    assert connection.requests[-1][2]["VGI-Session"] == "t2"
    client.call("echo_int", 5)
    assert sent_session(connection) == ("t1", "b1")  # the enclosing scope applies again
    assert client.detach_session() == "t1"
    client.end_session()
    assert connection.requests[-1][0] != "DELETE"  # detached: it outlives the scope
    client.end_session()  # an empty stack: nothing to end
    client.begin_session("t9")
    client.call("echo_int", 6)
    assert sent_session(connection) == ("t9", None)
    client.close()
    assert connection.requests[-1][:2] == ("DELETE", "/__session__")  # close drains the stack
    assert connection.requests[-1][2]["VGI-Session"] == "t9"


def test_a_session_close_header_clears_the_token() -> None:
    connection = StickyConnection()
    client = HttpClient(ConformanceService, "http://sticky", connection=connection)
    client.begin_session()
    client.call("echo_int", 1)
    assert client.session_token() == "t1"
    with pytest.raises(RpcError):
        client.call("close_counter")  # no counter is open here; the close header still applies
    assert client.session_token() is None and client.session_echo_headers() == {}
    client.end_session()
    assert connection.requests[-1][0] != "DELETE"  # no token left to delete


def test_upload_urls_are_requested_and_bounded() -> None:
    client = HttpClient(ConformanceService, "http://sticky", connection=StickyConnection())
    urls = client.request_upload_urls(2)
    assert [u.upload_url for u in urls] == ["http://store/put/0", "http://store/put/1"]
    assert urls[1].download_url == "http://store/get/1" and urls[0].expires_at is not None
    assert urls[0].expires_at.year == 2030
    with pytest.raises(ValueError):
        client.request_upload_urls(0)
    with pytest.raises(ValueError):
        client.request_upload_urls(101)
    plain = HttpClient(ConformanceService, "http://plain", connection=WsgiConnection(lambda e, s: _not_found(s)))
    with pytest.raises(RpcError) as raised:
        plain.request_upload_urls(1)
    assert raised.value.error_type == "NotSupported"


def _not_found(start_response: Any) -> list[bytes]:
    start_response("404 Not Found", [("Content-Type", "text/plain")])
    return [b"no such route"]


def test_capabilities_read_the_sticky_and_upload_headers() -> None:
    caps = Capabilities.from_headers(
        {
            "vgi-sticky-enabled": "true",
            "vgi-sticky-default-ttl": "300",
            "vgi-sticky-echo-headers": "Backend, Zone",
            "vgi-upload-url-support": "true",
            "vgi-max-upload-bytes": "1024",
            "vgi-externalization-enabled": "true",
            "vgi-max-externalized-response-bytes": "77",
            "vgi-supported-encodings": "zstd, gzip",
        }
    )
    assert caps.sticky_enabled and caps.sticky_default_ttl == 300 and caps.sticky_echo_headers == ("Backend", "Zone")
    assert caps.upload_url_support and caps.max_upload_bytes == 1024
    assert caps.externalization_enabled and caps.max_externalized_response_bytes == 77
    assert caps.encodings == ("zstd", "gzip")
    bare = Capabilities.from_headers({})
    assert not bare.sticky_enabled and bare.sticky_echo_headers == () and bare.max_upload_bytes is None
    assert json.dumps(bare.sticky_echo_headers) == "[]"


# -- sticky sessions and upload URLs against vgi-rpc's own server configured for them ------------

REFERENCE_STICKY = """
import warnings, waitress
from vgi_rpc.conformance import ConformanceService, ConformanceServiceImpl
from vgi_rpc.conformance.fake_storage import FakeStorageBackend, serve_in_thread
from vgi_rpc.http import make_wsgi_app
from vgi_rpc.rpc import RpcServer
warnings.simplefilter("ignore")
storage_url, _ = serve_in_thread()
app = make_wsgi_app(
    RpcServer(ConformanceService, ConformanceServiceImpl()),
    upload_url_provider=FakeStorageBackend(storage_url),
    enable_sticky=True,
    sticky_echo_headers={"x-vgi-conformance-echo": "conformance-fixed-marker"},
)
server = waitress.create_server(app, host="127.0.0.1", port=0)
print(f"PORT:{server.effective_port}", flush=True)
server.run()
"""


@pytest.fixture(scope="module")
def sticky_url(request: pytest.FixtureRequest) -> Iterator[str]:
    worker, url = start([str(request.getfixturevalue("oracle_http")), "-c", REFERENCE_STICKY])
    yield url
    stop(worker)


def test_sticky_sessions_against_the_reference(sticky_url: str) -> None:
    client = HttpClient(ConformanceService, sticky_url)
    caps = client.capabilities()
    assert caps.sticky_enabled and "x-vgi-conformance-echo" in caps.sticky_echo_headers
    with pytest.raises(RpcError, match="VGI-Session-Accept"):
        client.call("open_counter", 1)  # outside every scope the client does not opt in
    client.begin_session()
    assert client.call("open_counter", 7) == 7
    outer = client.session_token()
    assert outer is not None
    assert client.session_echo_headers() == {"x-vgi-conformance-echo": "conformance-fixed-marker"}
    assert client.call("increment_counter", 10) == 17
    client.begin_session()  # an inner session of its own
    assert client.call("open_counter", 100) == 100
    assert client.session_token() not in (None, outer)
    client.end_session()
    assert client.call("increment_counter", 10) == 27  # the outer session again
    assert [b.batch.num_rows for b in client.stream("stream_session_counter", 2)] == [1, 1]
    assert client.call("close_counter") >= 27
    assert client.session_token() is None  # the server closed it
    client.end_session()
    # A token the server evicted is refused as a lost session.
    client.begin_session(outer)
    with pytest.raises(RpcError) as lost:
        client.call("increment_counter", 1)
    assert lost.value.error_type == "SessionLostError"
    client.close()


def test_upload_urls_from_the_reference(sticky_url: str) -> None:
    client = HttpClient(ConformanceService, sticky_url)
    assert client.capabilities().upload_url_support
    urls = client.request_upload_urls(2)
    assert len(urls) == 2 and urls[0].upload_url != urls[1].upload_url
    assert all(u.download_url.startswith("http://") and u.expires_at is not None for u in urls)
    driver = Driver()
    assert driver.ask(op="connect", transport="http", target=sticky_url, protocol="ConformanceService")["ok"]
    vended = driver.ask(op="request_upload_urls", count=3)
    assert vended["ok"] and len(vended["urls"]) == 3, vended
    assert all(isinstance(u["expires_at"], int) and u["upload_url"] for u in vended["urls"])
    assert driver.ask(op="shutdown") == {"ok": True}
    assert driver.process.wait(timeout=30) == 0


def test_the_driver_relays_session_scopes(sticky_url: str) -> None:
    driver = Driver()
    assert driver.ask(op="connect", transport="http", target=sticky_url, protocol="ConformanceService")["ok"]
    caps = driver.ask(op="capabilities")["caps"]
    assert caps["sticky_enabled"] is True and isinstance(caps["sticky_default_ttl"], int)
    assert driver.ask(op="session_begin", token=None)["ok"]
    opened = driver.ask(op="unary", request_b64=encode_batch(*request("open_counter", initial=5)))
    assert decode_batch(opened["result_b64"])[0].column("result").to_pylist() == [5]
    token = driver.ask(op="session_token")["token"]
    assert isinstance(token, str) and token
    assert driver.ask(op="session_echo_headers")["headers"] == {"x-vgi-conformance-echo": "conformance-fixed-marker"}
    assert driver.ask(op="session_detach")["token"] == token
    assert driver.ask(op="session_end")["ok"]
    # Detached: the session outlived its scope, so resuming it finds the counter.
    assert driver.ask(op="session_begin", token=token)["ok"]
    bumped = driver.ask(op="unary", request_b64=encode_batch(*request("increment_counter", by=1)))
    assert decode_batch(bumped["result_b64"])[0].column("result").to_pylist() == [6]
    assert driver.ask(op="shutdown") == {"ok": True}
    assert driver.process.wait(timeout=30) == 0
