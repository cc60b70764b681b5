"""Every error status carries the documented JSON envelope, including the ones answered before
routing (a request target or headers over hyper's own bounds, a head that does not parse); request
ids are random (or the caller's, when well-formed), never a per-process prefix and a counter.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import urllib.parse
from collections.abc import Iterator

import pytest

from gateway_support import WAIT_SECONDS, Gateway, copy_example


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[Gateway]:
    project = copy_example(tmp_path_factory.mktemp("errors"))
    with Gateway.start(project) as running:
        yield running


def raw(url: str, head: bytes) -> tuple[int, dict[str, str], bytes]:
    """Sends a raw request head; the status, headers and body of the answer (read to the close)."""
    parsed = urllib.parse.urlsplit(url)
    with socket.create_connection((parsed.hostname, parsed.port), timeout=WAIT_SECONDS) as sock:
        # The server may answer and close before the whole head is sent.
        with contextlib.suppress(OSError):
            sock.sendall(head)
        reply = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            reply += chunk
            if b"\r\n\r\n" in reply:
                head_part, _, body = reply.partition(b"\r\n\r\n")
                length = re.search(rb"content-length: (\d+)", head_part, re.I)
                if length and len(body) >= int(length[1]):
                    break
    head_part, _, body = reply.partition(b"\r\n\r\n")
    lines = head_part.decode().split("\r\n")
    headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def assert_envelope(status: int, headers: dict[str, str], body: bytes, expected: int, family: str) -> None:
    assert status == expected, (status, body)
    assert headers.get("content-type") == "application/json; charset=utf-8", headers
    assert headers.get("x-content-type-options") == "nosniff", headers
    parsed = json.loads(body)
    assert parsed["error"]["family"] == family, parsed
    assert parsed["error"]["message"]
    assert parsed["meta"]["request_id"] == headers["x-request-id"]


@pytest.mark.parametrize("length", [10_000, 70_000])
def test_a_long_target_is_414_with_the_envelope(gateway, length):
    target = "/v1/endpoints/product_catalog?q=" + "a" * length
    reply = raw(gateway.http_url, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert_envelope(*reply, 414, "uri_too_long")


@pytest.mark.parametrize(
    "headers",
    [
        "X-Big: " + "y" * 20_000 + "\r\n",  # over the gateway's 16 KiB
        "".join(f"X-H{i}: v\r\n" for i in range(200)),  # over hyper's header count
        "X-Huge: " + "y" * 600_000 + "\r\n",  # over hyper's read buffer
    ],
    ids=["20k", "200-headers", "600k"],
)
def test_large_headers_are_431_with_the_envelope(gateway, headers):
    reply = raw(gateway.http_url, f"GET /v1/endpoints/product_catalog HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
    assert_envelope(*reply, 431, "headers_too_large")


def test_an_unparsable_head_is_400_with_the_envelope(gateway):
    reply = raw(gateway.http_url, b"GET /v1/endpoints/x HTTP/1.1\r\nBad Header Line\r\n\r\n")
    assert_envelope(*reply, 400, "bad_request")


def test_request_ids_are_random_or_the_callers(gateway):
    ids = [gateway.get("/nowhere").header("x-request-id") for _ in range(20)]
    # offloader's form: 20 base64url characters.
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{20}", request_id) for request_id in ids), ids
    assert len(set(ids)) == len(ids)
    assert len({request_id[:8] for request_id in ids}) > 1, "no per-process prefix"
    assert len({request_id[-8:] for request_id in ids}) > 1
    # A caller's id of 20 to 200 visible characters is kept (offloader's bounds); others are not.
    kept = "trace-1.a:b/c+d=0123456789"
    assert gateway.get("/nowhere", x_request_id=kept).header("x-request-id") == kept
    for refused in ("trace-1.a:b", "has space but long enough", "x" * 201):
        assert gateway.get("/nowhere", x_request_id=refused).header("x-request-id") != refused
