"""HTTP: vgi-rpc's conformance CLI, the HTTP client against two servers, the app in process.

The conformance CLI runs against the Python worker and against vgi-rpc's own HTTP
server, for the pass counts to match; the HTTP client runs against both servers; the
application's status codes, tokens, caps and codings are checked in process.

The conformance and cross-implementation tests need vgi-rpc's ``[http]`` extra in the
oracle venv (falcon, waitress, httpx2); without it they are skipped.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pytest

from quiver import CallContext, ExchangeState, LogRecord, Output, ProducerState, RpcError, Server, Stream
from quiver.conformance import ConformanceService
from quiver.conformance.types import Point, Status
from quiver.rpc import protocol_spec
from quiver.transport.http import HttpClient, HttpConnection, HttpServer, WsgiApp, http_connect
from quiver.transport.http.codec import decode, encode
from quiver.wire import keys
from quiver.wire.writer import encode_stream

EXCLUDE = "!large_payload.echo_binary_over_int32_max"
CAP_BYTES = 65536
REFERENCE_WITH_CAP = """
import warnings, waitress
from vgi_rpc.conformance import ConformanceService, ConformanceServiceImpl
from vgi_rpc.http import make_wsgi_app
from vgi_rpc.rpc import RpcServer
warnings.simplefilter("ignore")
app = make_wsgi_app(RpcServer(ConformanceService, ConformanceServiceImpl()), max_response_bytes={cap})
server = waitress.create_server(app, host="127.0.0.1", port=0)
print(f"PORT:{{server.effective_port}}", flush=True)
server.run()
"""


# -- workers ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def oracle_http(oracle_cli: Path) -> Path:
    """The oracle's Python, once it is known to have vgi-rpc's HTTP extra."""
    python = oracle_cli.with_name("python")
    probe = subprocess.run([str(python), "-c", "import falcon, waitress, httpx2"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the oracle venv lacks vgi-rpc[http] (falcon, waitress, httpx2)")
    return python


def start(command: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Starts an HTTP worker; the worker and its base URL (from its ``PORT:<n>`` line)."""
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert worker.stdout is not None
    line = worker.stdout.readline().strip()
    if not line.startswith("PORT:"):
        worker.kill()
        pytest.fail(f"{command} announced {line!r}")
    return worker, f"http://127.0.0.1:{line[len('PORT:') :]}"


def stop(worker: subprocess.Popen[str]) -> None:
    worker.terminate()
    worker.wait(timeout=10)


def suite(oracle_cli: Path, url: str, *exclude: str, prefix: str = "") -> tuple[int, int, int]:
    """(passed, failed, skipped) of vgi-rpc-test against ``url``."""
    patterns = ",".join([EXCLUDE, *exclude])
    command = [str(oracle_cli), "--url", url, "--prefix", prefix, "--filter", patterns, "--format", "json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"vgi-rpc-test printed no JSON (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    failures = [result for result in report["results"] if not result["passed"] and not result["skipped"]]
    assert not failures, json.dumps(failures, indent=2)
    return report["passed"], report["failed"], report["skipped"]


@pytest.fixture(scope="module")
def reference_counts(oracle_cli: Path, oracle_http: Path) -> dict[str, tuple[int, int, int]]:
    """What vgi-rpc's own HTTP server scores, without and with a 64 KiB response cap."""
    counts = {}
    worker, url = start([str(oracle_cli.with_name("vgi-rpc-conformance")), "--http", "0"])
    try:
        counts["plain"] = suite(oracle_cli, url)
    finally:
        stop(worker)
    worker, url = start([str(oracle_http), "-c", REFERENCE_WITH_CAP.format(cap=CAP_BYTES)])
    try:
        counts["capped"] = suite(oracle_cli, url, "!large_payload.echo_binary_4mib")
    finally:
        stop(worker)
    return counts


def test_conformance_suite(
    oracle_cli: Path,
    oracle_http: Path,
    python_worker: list[str],
    worker_env: dict[str, str],
    reference_counts: dict[str, tuple[int, int, int]],
) -> None:
    worker, url = start([*python_worker, "--http"], worker_env)
    try:
        assert suite(oracle_cli, url) == reference_counts["plain"] == (106, 0, 6)
    finally:
        stop(worker)


def test_conformance_suite_with_response_cap(
    oracle_cli: Path,
    oracle_http: Path,
    python_worker: list[str],
    worker_env: dict[str, str],
    reference_counts: dict[str, tuple[int, int, int]],
) -> None:
    """With a cap, the four wire-cap tests run too (the two externalisation ones still skip).

    The 4 MiB echo is left out: it cannot fit 64 KiB on either server.
    """
    command = [*python_worker, "--http", "--prefix", "/vgi", "--max-response-bytes", str(CAP_BYTES)]
    worker, url = start(command, worker_env)
    try:
        counts = suite(oracle_cli, url, "!large_payload.echo_binary_4mib", prefix="/vgi")
        assert counts == reference_counts["capped"] == (109, 0, 2)
    finally:
        stop(worker)


# -- the HTTP client against both servers ---------------------------------------------------


@pytest.fixture(scope="module", params=["quiver", "reference"])
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "quiver":
        env = request.getfixturevalue("worker_env")
        command = [*request.getfixturevalue("python_worker"), "--http"]
    else:
        request.getfixturevalue("oracle_http")
        env = None
        command = [str(Path(request.getfixturevalue("oracle_cli")).with_name("vgi-rpc-conformance")), "--http", "0"]
    worker, url = start(command, env)
    yield url
    stop(worker)


def test_client_unary(server_url: str) -> None:
    logs: list[LogRecord] = []
    with http_connect(ConformanceService, server_url, on_log=logs.append) as api:
        svc: Any = api
        assert svc.echo_string("héllo") == "héllo"
        assert svc.echo_enum(Status.PENDING) is Status.PENDING
        assert svc.echo_point(Point(1.5, 2.5)) == Point(1.5, 2.5)
        assert svc.echo_with_multi_logs("m") == "m"
        assert [r.level.value for r in logs] == ["DEBUG", "INFO", "WARN"]
        with pytest.raises(RpcError) as caught:
            svc.raise_type_error("type error")
        assert caught.value.error_type == "TypeError"
        assert svc.echo_large_binary(b"\x5a" * (4 << 20)) == b"\x5a" * (4 << 20)


def test_client_streams(server_url: str) -> None:
    with http_connect(ConformanceService, server_url) as api:
        svc: Any = api
        assert [b.batch.to_pydict() for b in svc.produce_n(3)] == [{"index": [i], "value": [i * 10]} for i in range(3)]
        call = svc.produce_tick_metadata(2)
        assert call.tick() is not None
        seen = call.tick({"vgi.conformance.tick": "updated"})
        assert seen.batch.column("seen").to_pylist() == ["updated"]
        call = svc.produce_with_header(2)
        assert call.header.total_expected == 2 and len(list(call)) == 2
        with pytest.raises(RpcError, match="intentional error"):
            list(svc.produce_error_mid_stream(1))
        with svc.exchange_accumulate() as call:
            call.exchange(pa.RecordBatch.from_pydict({"value": [1.0, 2.0]}))
            answer = call.exchange(pa.RecordBatch.from_pydict({"value": [10.0]}))
            assert answer.batch.to_pydict() == {"running_sum": [13.0], "exchange_count": [2]}
            assert keys.STREAM_STATE not in answer.metadata
        svc.reset_cancel_probe()
        call = svc.cancellable_exchange()
        call.exchange(pa.RecordBatch.from_pydict({"value": [1.0]}))
        call.cancel()
        assert svc.cancel_probe_counters() == [0, 1, 1]


def test_client_compression(server_url: str) -> None:
    for coding in ("zstd", "gzip"):
        client = HttpClient(ConformanceService, server_url, compression=coding)
        assert client.call("echo_bytes", b"\x01" * 100_000) == b"\x01" * 100_000
        client.close()


def test_client_response_cap(server_url: str) -> None:
    client = HttpClient(ConformanceService, server_url, accept_max_response_bytes=CAP_BYTES)
    assert client.call("echo_int", 5) == 5
    with pytest.raises(RpcError) as caught:
        client.call("oversized_unary", 4 * CAP_BYTES)
    assert caught.value.error_type == "ResponseTooLargeError" and "max_response_bytes" in str(caught.value)
    assert client.call("echo_int", 6) == 6
    client.close()


# -- in process -----------------------------------------------------------------------------


class Demo:
    protocol_version: ClassVar[str] = "1.0.0"

    def add(self, a: float, b: float) -> float: ...
    def count(self, n: int) -> Stream[ProducerState, None]: ...
    def scale(self, factor: float) -> Stream[ExchangeState, None]: ...


class Count(ProducerState):
    def __init__(self, n: int) -> None:
        self.n, self.i = n, 0

    def produce(self, out: Output, ctx: CallContext) -> None:
        if self.i == self.n:
            return out.finish()
        out.emit_pydict({"i": [self.i]})
        self.i += 1


class Scale(ExchangeState):
    def __init__(self, factor: float) -> None:
        self.factor = factor

    def exchange(self, input: Any, out: Output, ctx: CallContext) -> None:
        out.emit_arrays([pa.compute.multiply(input.batch.column("x"), self.factor)])


X = pa.schema([("x", pa.float64())])


class DemoImpl:
    def add(self, a: float, b: float) -> float:
        return a + b

    def count(self, n: int) -> Stream[Any, None]:
        return Stream(pa.schema([("i", pa.int64())]), Count(n))

    def scale(self, factor: float) -> Stream[Any, None]:
        return Stream(X, Scale(factor), input_schema=X)


@pytest.fixture
def demo() -> Iterator[tuple[WsgiApp, str]]:
    app = WsgiApp(Server(Demo, DemoImpl()), streams_max=4)
    with HttpServer(app) as server:
        server.start()
        yield app, f"http://127.0.0.1:{server.port}"


def request_body(method: str, batch: pa.RecordBatch, **extra: str) -> bytes:
    metadata = {keys.METHOD: method, keys.REQUEST_VERSION: "1", keys.PROTOCOL: "Demo", keys.PROTOCOL_VERSION: "1.0.0"}
    metadata.update(extra)
    return encode_stream(batch, metadata).to_pybytes()


ADD = protocol_spec(Demo).methods["add"].request_batch({"a": 1.0, "b": 2.0})
ARROW = {"Content-Type": "application/vnd.apache.arrow.stream"}


def test_status_codes(demo: tuple[WsgiApp, str]) -> None:
    _, url = demo
    with HttpConnection(url) as http:
        assert http.request("POST", "/Demo/add", [request_body("add", ADD)], ARROW).status == 200
        assert http.request("POST", "/Demo/nope", [request_body("nope", ADD)], ARROW).status == 404
        assert http.request("POST", "/Other/add", [request_body("add", ADD)], ARROW).status == 404
        assert (
            http.request("POST", "/Demo/add", [request_body("add", ADD)], {"Content-Type": "text/plain"}).status == 415
        )
        assert http.request("POST", "/Demo/add", [b"not arrow"], ARROW).status == 400
        assert http.request("POST", "/Demo/count", [request_body("count", ADD)], ARROW).status == 400
        assert http.request("POST", "/Demo/add/init", [request_body("add", ADD)], ARROW).status == 400
        assert http.request("GET", "/Demo/add").status == 405
        health = http.request("GET", "/health")
        assert health.status == 200 and json.loads(health.body)["protocol"] == "Demo"
        options = http.request("OPTIONS", "/health")
        assert options.header("vgi-accept-max-response-bytes-support") == "true"
        bad_cap = {**ARROW, "VGI-Accept-Max-Response-Bytes": "012"}
        assert http.request("POST", "/Demo/add", [request_body("add", ADD)], bad_cap).status == 400
        gzipped = {**ARROW, "Content-Encoding": "gzip"}
        assert http.request("POST", "/Demo/add", [encode([request_body("add", ADD)], "gzip")], gzipped).status == 200
        assert http.request("POST", "/Demo/add", [b"x"], {**ARROW, "Content-Encoding": "br"}).status == 415


def test_stream_tokens(demo: tuple[WsgiApp, str]) -> None:
    app, url = demo
    client = HttpClient(Demo, url)
    call = client.stream("count", 3)
    assert call.tick().batch.to_pydict() == {"i": [0]}  # type: ignore[union-attr]
    stale = call._cursor
    assert call.tick().batch.to_pydict() == {"i": [1]}  # type: ignore[union-attr]
    call._cursor = stale  # a replayed cursor does not advance the stream a second time
    with pytest.raises(RpcError, match="stale stream cursor"):
        call.tick()
    calls = [client.stream("scale", 2.0) for _ in range(6)]
    assert len(app.streams) == 4, "the least recently used streams are dropped beyond capacity"
    with pytest.raises(RpcError, match="unknown or expired"):
        calls[0].exchange(pa.RecordBatch.from_pydict({"x": [1.0]}, schema=X))
    assert calls[-1].exchange(pa.RecordBatch.from_pydict({"x": [1.0]}, schema=X)).batch.to_pydict() == {"x": [2.0]}
    assert list(b.batch.column(0)[0].as_py() for b in client.stream("count", 2)) == [0, 1]
    client.close()


def test_keep_alive_and_reconnect(demo: tuple[WsgiApp, str]) -> None:
    _, url = demo
    client = HttpClient(Demo, url)
    assert client.call("add", 1.0, 2.0) == 3.0
    first = client.connection._connection
    assert client.call("add", 2.0, 2.0) == 4.0
    assert client.connection._connection is first, "one connection serves every call"
    assert first is not None
    first.socket.shutdown(socket.SHUT_RDWR)  # as if the server had closed an idle connection
    assert client.call("add", 3.0, 2.0) == 5.0
    client.close()


def test_http_framing(demo: tuple[WsgiApp, str]) -> None:
    """HTTP/1.0 without keep-alive, chunked request bodies, and 100-continue, from a raw socket."""
    _, url = demo
    port = int(url.rsplit(":", 1)[1])
    body = request_body("add", ADD)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:10], body[10:])) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST /Demo/add HTTP/1.1\r\nHost: x\r\nContent-Type: application/vnd.apache.arrow.stream\r\n"
            b"Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(chunked)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += sock.recv(4096)
        assert reply.startswith(b"HTTP/1.1 200 OK")
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):  # the server closes an HTTP/1.0 connection
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in reply


def test_any_wsgi_server(demo: tuple[WsgiApp, str]) -> None:
    """The app needs nothing of HttpServer: wsgiref serves it too (bytes bodies, wsgi.input)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    app, _ = demo
    with make_server("127.0.0.1", 0, app, handler_class=Quiet) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        with http_connect(Demo, f"http://127.0.0.1:{httpd.server_port}") as api:
            assert api.add(1.0, 4.0) == 5.0
            with api.scale(3.0) as call:  # type: ignore[attr-defined]
                assert call.exchange(pa.RecordBatch.from_pydict({"x": [2.0]}, schema=X)).batch.to_pydict() == {
                    "x": [6.0]
                }
        httpd.shutdown()


# -- response codings and request ids ---------------------------------------------------


def call_app(app: WsgiApp, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One POST straight into the WSGI app: its status, headers (lower-case names) and raw body."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "CONTENT_TYPE": ARROW["Content-Type"],
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    environ.update({"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()})
    started: list[Any] = []
    chunks = app(environ, lambda status, response_headers: started.extend([status, response_headers]))
    fields = {name.lower(): value for name, value in started[1]}
    return int(started[0].split(" ", 1)[0]), fields, b"".join(chunks)


def result_rows(body: bytes) -> list[dict[str, Any]]:
    return pa.ipc.open_stream(body).read_all().to_pylist()


@pytest.mark.parametrize(
    ("accept", "coding", "stamp"),
    [
        ({}, None, None),
        ({"Accept-Encoding": "identity"}, None, None),
        ({"Accept-Encoding": "gzip"}, "gzip", "content-encoding"),
        ({"Accept-Encoding": "br"}, None, None),  # no codec the server produces: a plain body
        ({"Accept-Encoding": "", "X-VGI-Accept-Encoding": "zstd"}, "zstd", "x-vgi-content-encoding"),
        ({"Accept-Encoding": "", "X-VGI-Accept-Encoding": "gzip"}, "gzip", "x-vgi-content-encoding"),
        # cpp-httplib's own gzip-first header loses to VGI's stated preference
        (
            {"Accept-Encoding": "deflate, gzip, br, zstd", "X-VGI-Accept-Encoding": "zstd, gzip"},
            "zstd",
            "content-encoding",
        ),
        ({"Accept-Encoding": "gzip, zstd", "X-VGI-Accept-Encoding": "identity"}, None, None),
        ({"Accept-Encoding": "zstd;q=1.0, gzip;q=0.5"}, "zstd", "content-encoding"),
    ],
)
def test_response_coding_negotiation(
    demo: tuple[WsgiApp, str], accept: dict[str, str], coding: str | None, stamp: str | None
) -> None:
    app, _ = demo
    status, headers, body = call_app(app, "/Demo/add", request_body("add", ADD), accept)
    assert status == 200
    stamps = {name: headers.get(name) for name in ("content-encoding", "x-vgi-content-encoding")}
    assert stamps == {name: coding if name == stamp else None for name in stamps}, stamps
    if coding is not None:
        body = decode(body, coding, 1 << 20)
    assert result_rows(body) == [{"result": 3.0}]


def test_client_reads_a_body_coded_under_the_custom_header(demo: tuple[WsgiApp, str]) -> None:
    _, url = demo
    asks = {**ARROW, "Accept-Encoding": "identity", "X-VGI-Accept-Encoding": "gzip"}
    with HttpConnection(url) as http:
        response = http.request("POST", "/Demo/add", [request_body("add", ADD)], asks)
    assert response.header("x-vgi-content-encoding") == "gzip"
    assert result_rows(response.body) == [{"result": 3.0}]


def test_request_id_is_echoed_or_minted(demo: tuple[WsgiApp, str]) -> None:
    app, _ = demo
    mine = "client-request-id-0123456789"
    _, headers, _ = call_app(app, "/Demo/add", request_body("add", ADD), {"X-Request-ID": mine})
    assert headers["x-request-id"] == mine
    minted = {call_app(app, "/Demo/add", request_body("add", ADD), {})[1]["x-request-id"] for _ in range(3)}
    assert len(minted) == 3 and all(len(i) == 16 and int(i, 16) >= 0 for i in minted), minted
    # Without the header, the id the request's own metadata names is the one the call runs under.
    _, headers, _ = call_app(app, "/Demo/add", request_body("add", ADD, **{keys.REQUEST_ID: "from-metadata"}), {})
    assert headers["x-request-id"] == "from-metadata"
    _, headers, _ = call_app(app, "/Demo/add", request_body("add", ADD), {"X-Request-ID": "x" * 5000})
    assert headers["x-request-id"] != "x" * 5000 and len(headers["x-request-id"]) == 16


def test_refusals_carry_the_echoed_request_id(demo: tuple[WsgiApp, str]) -> None:
    app, _ = demo
    status, headers, body = call_app(app, "/Demo/nope", request_body("nope", ADD), {"X-Request-ID": "refused-1"})
    assert status == 404 and headers["x-request-id"] == "refused-1"
    _, metadata = pa.ipc.open_stream(body).read_next_batch_with_custom_metadata()
    assert metadata[keys.REQUEST_ID.encode()] == b"refused-1"
    status, headers, body = call_app(app, "/Demo/nope", request_body("nope", ADD), {})
    _, metadata = pa.ipc.open_stream(body).read_next_batch_with_custom_metadata()
    assert metadata[keys.REQUEST_ID.encode()].decode() == headers["x-request-id"]


def test_a_server_that_compresses_nothing_still_reads_compressed_requests() -> None:
    app = WsgiApp(Server(Demo, DemoImpl()), response_codings=())
    asks = {"Accept-Encoding": "zstd, gzip", "X-VGI-Accept-Encoding": "zstd, gzip"}
    for coding in ("zstd", "gzip"):
        body = encode([request_body("add", ADD)], coding)
        status, headers, reply = call_app(app, "/Demo/add", body, {**asks, "Content-Encoding": coding})
        assert status == 200 and headers["vgi-supported-encodings"] == ""
        assert "content-encoding" not in headers and "x-vgi-content-encoding" not in headers
        assert result_rows(reply) == [{"result": 3.0}]
    gzip_only = WsgiApp(Server(Demo, DemoImpl()), response_codings=("gzip",))
    _, headers, _ = call_app(gzip_only, "/Demo/add", request_body("add", ADD), asks)
    assert headers["vgi-supported-encodings"] == "gzip" and headers["content-encoding"] == "gzip"
    with pytest.raises(ValueError, match="response_codings"):
        WsgiApp(Server(Demo, DemoImpl()), response_codings=("br",))
