"""Open HTTP stream calls, held by the serving process between their requests.

Over HTTP a stream call is a chain of requests: ``/init`` opens it, each ``/exchange``
advances it one turn. vgi-rpc seals the stream's state into the tokens it hands the
client; quiver keeps the state object here instead (no serialization, so any Python
state works and a turn costs no encode/decode) and hands out two opaque tokens:

* the **call token** names the call; it is issued once and echoed on every request;
* the **cursor token** names the call and its current turn; every turn replaces it, so
  a replayed or forked cursor is refused instead of advancing the state twice.

The table is bounded: a call unused for ``ttl_s`` expires, and when ``capacity`` calls
are open the least recently used one is dropped. A client that abandons a stream
without cancelling it (closing an HTTP stream sends nothing) costs one slot until then.
Because the state lives in this process, a multi-process deployment must route all of a
stream's requests to the process that opened it.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ...rpc.dispatch import BoundMethod
from ...rpc.stream import Stream

STREAM_TTL_S = 3600.0
STREAMS_MAX = 4096
_ID_BYTES = 16


class StreamTokenError(Exception):
    """A token that does not name an open stream turn (malformed, expired, replayed, foreign)."""


@dataclass(slots=True)
class OpenStream:
    """One stream call between its requests."""

    call_id: bytes
    protocol: str
    bound: BoundMethod
    stream: Stream[Any, Any]
    request_id: str
    metadata: dict[str, str]
    turn: bytes = b""
    last_used: float = field(default_factory=time.monotonic)

    def renew(self) -> None:
        """Starts a new turn: the previous cursor token stops naming this call."""
        self.turn = secrets.token_bytes(_ID_BYTES)

    @property
    def call_token(self) -> str:
        """The token naming this call (sent once, echoed on every request)."""
        return base64.b64encode(self.call_id).decode("ascii")

    @property
    def cursor_token(self) -> str:
        """The token naming this call's current turn."""
        return base64.b64encode(self.call_id + self.turn).decode("ascii")


class StreamTable:
    """Open streams by call id; thread-safe."""

    def __init__(self, *, ttl_s: float = STREAM_TTL_S, capacity: int = STREAMS_MAX) -> None:
        assert ttl_s > 0 and capacity > 0
        self.ttl_s = ttl_s
        self.capacity = capacity
        self._open: OrderedDict[bytes, OpenStream] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    def open(
        self, protocol: str, bound: BoundMethod, stream: Stream[Any, Any], request_id: str, metadata: dict[str, str]
    ) -> OpenStream:
        """A new call, not yet in the table: :meth:`park` it to let a request continue it."""
        return OpenStream(secrets.token_bytes(_ID_BYTES), protocol, bound, stream, request_id, metadata)

    def park(self, entry: OpenStream) -> None:
        """Puts ``entry`` in the table, ready for the turn its cursor names (see :meth:`OpenStream.renew`)."""
        assert entry.turn, "renew() the entry before parking it"
        entry.last_used = time.monotonic()
        with self._lock:
            self._evict(entry.last_used)
            self._open[entry.call_id] = entry

    def take(self, cursor_token: str, call_token: str | None, protocol: str, method: str) -> OpenStream:
        """Removes and returns the call a cursor names, checking the turn and the route.

        The caller owns the entry until it :meth:`park` s it again; meanwhile a second
        request with the same cursor is refused, so a stream advances one turn at a time.
        """
        raw = _decode(cursor_token, "cursor")
        call_id, turn = raw[:_ID_BYTES], raw[_ID_BYTES:]
        if len(call_id) != _ID_BYTES or len(turn) != _ID_BYTES:
            raise StreamTokenError("malformed stream cursor token")
        if call_token is not None and not secrets.compare_digest(_decode(call_token, "call"), call_id):
            raise StreamTokenError("the stream cursor token does not belong to the supplied call token")
        now = time.monotonic()
        with self._lock:
            entry = self._open.get(call_id)
            if entry is None or now - entry.last_used > self.ttl_s:
                self._open.pop(call_id, None)
                raise StreamTokenError("unknown or expired stream (its state is held by the process that opened it)")
            if not secrets.compare_digest(entry.turn, turn):
                raise StreamTokenError("stale stream cursor token: this turn was already taken")
            if entry.protocol != protocol or entry.bound.spec.name != method:
                raise StreamTokenError(f"the stream token belongs to {entry.protocol}.{entry.bound.spec.name}")
            del self._open[call_id]
        return entry

    def _evict(self, now: float) -> None:
        while self._open:
            call_id, oldest = next(iter(self._open.items()))
            if now - oldest.last_used <= self.ttl_s and len(self._open) < self.capacity:
                return
            del self._open[call_id]


def _decode(token: str, what: str) -> bytes:
    try:
        return base64.b64decode(token.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise StreamTokenError(f"malformed stream {what} token") from exc
