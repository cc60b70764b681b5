"""The gateway's ports under slow and idle connections: hundreds of silent or trickling connections
are closed by the server while clients that ask at once keep getting answers on both ports; a
kept-alive connection left idle is closed; a peer over its connection bound is refused.

Every assertion is on an outcome (a connection closed by the server, a request answered), never
on how long something took: the deadlines are set small through the project file and waited on
with generous bounds.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest

from gateway_support import ACME, WAIT_SECONDS, Gateway, copy_example, endpoint_path, poll

MAY = {"from": "2026-05-01", "to": "2026-05-31"}
FLOOD = 300


def with_connections(project, settings: str) -> None:
    project_file = project / "offloader.yml"
    project_file.write_text(project_file.read_text() + f"  connections: {{ {settings} }}\n")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[Gateway]:
    project = copy_example(tmp_path_factory.mktemp("connections"))
    with_connections(project, "header_read_timeout_ms: 1000, per_peer_max: 64")
    with Gateway.start(project) as running:
        yield running


def address(url: str) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(url)
    return parsed.hostname, parsed.port


@contextmanager
def open_sockets(url: str, count: int) -> Iterator[list[socket.socket]]:
    sockets = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection(address(url), timeout=WAIT_SECONDS))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed its end: a read sees the end of the stream (or a reset)."""
    sock.settimeout(0.0)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def answers(url: str, path: str, headers: dict[str, str] | None = None) -> int:
    host, port = address(url)
    connection = http.client.HTTPConnection(host, port, timeout=WAIT_SECONDS)
    try:
        connection.request("GET", path, headers=headers or {})
        reply = connection.getresponse()
        reply.read()
        return reply.status
    finally:
        connection.close()


def answered_or_none(url: str) -> int | None:
    try:
        return answers(url, "/nowhere")
    except (http.client.RemoteDisconnected, ConnectionError):
        return None


def test_silent_connections_leave_the_admin_port_answering_and_are_closed(gateway):
    with open_sockets(gateway.admin_url, FLOOD) as silent:
        for _ in range(5):
            assert answers(gateway.admin_url, "/live") == 200
            assert answers(gateway.admin_url, "/ready") == 200
        poll(lambda: all(closed_by_server(sock) for sock in silent), "the server to close every silent connection")
    connections = gateway.status()["connections"]["admin"]
    assert connections["displaced"] > 0, connections


def test_trickling_connections_are_closed_while_clients_keep_getting_answers(gateway):
    stop = threading.Event()
    with open_sockets(gateway.http_url, FLOOD) as trickling:
        for sock in trickling:
            sock.sendall(b"GET /v1/endpoints/customer_usage_summary HTTP/1.1\r\nHost: x\r\nX-Slow: ")

        def trickle() -> None:
            while not stop.is_set():
                for sock in trickling:
                    with suppress(OSError):
                        sock.send(b"a")
                time.sleep(0.2)

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        try:
            path = endpoint_path("customer_usage_summary", **MAY)
            for _ in range(10):
                assert answers(gateway.http_url, path, {"Authorization": f"Bearer {ACME}"}) == 200
                assert answers(gateway.admin_url, "/live") == 200
            poll(
                lambda: all(closed_by_server(sock) for sock in trickling),
                "the server to close every trickling connection",
            )
        finally:
            stop.set()
            sender.join(WAIT_SECONDS)


def test_an_idle_kept_alive_connection_is_closed(gateway):
    with open_sockets(gateway.http_url, 1) as (sock,):
        sock.sendall(b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = sock.recv(65536)
            assert chunk, "the answer arrives before the connection closes"
            reply += chunk
        assert reply.startswith(b"HTTP/1.1 404"), reply[:100]
        sock.settimeout(WAIT_SECONDS)
        # The rest of the answer, then the end of the stream: the server closed the idle connection.
        while sock.recv(65536):
            pass


def test_a_peer_over_its_bound_is_refused_and_served_again_once_under(tmp_path):
    project = copy_example(tmp_path)
    with_connections(project, "header_read_timeout_ms: 120000, per_peer_max: 8")
    with Gateway.start(project) as gateway:
        host, port = address(gateway.http_url)
        kept = [http.client.HTTPConnection(host, port, timeout=WAIT_SECONDS) for _ in range(8)]
        try:
            for connection in kept:
                connection.request("GET", "/nowhere")
                reply = connection.getresponse()
                reply.read()
                assert reply.status == 404
            # Every connection of this peer has asked something: none is displaced, the ninth is refused.
            with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
                answers(gateway.http_url, "/nowhere")
            assert gateway.status()["connections"]["public"]["refused"] >= 1
            # The kept connections still work.
            kept[0].request("GET", "/nowhere")
            assert kept[0].getresponse().status == 404
            kept[0].close()
            poll(lambda: answered_or_none(gateway.http_url) == 404, "the closed connection's slot to free")
        finally:
            for connection in kept:
                connection.close()
